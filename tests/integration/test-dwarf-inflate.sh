#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The inflated copy of libc's debug file (dwarfinline, issue 16). perf 6.1
# names libc's inline frames (msort_with_tmp inside qsort) with addr2line
# on libc's separate debug file, whose sections libc6-dbg ships
# compressed; tracekit reads that DWARF from an inflated copy it keeps in
# the build-id cache as .tk-inflated/<build id>.debug. On a --call-graph
# dwarf profile of a program sorting with qsort: the first report makes
# the copy, the second reuses it (same file), a copy of another build id
# is ignored and remade, a cache directory that does not exist is not
# created; every report prints what perf script prints, libc's inlined
# frames included.
set -u
. "$(dirname "$0")/../lib.sh"
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
if ! command -v cc >/dev/null; then echo "SKIP: no C compiler to build the test program"; exit 77; fi
dir=$(mktemp -d /tmp/tk-dwarf-inflate.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tmp=$dir
export HOME=$dir/home
mkdir -p "$HOME/.debug"
cache=$HOME/.debug

cat >"$dir/prog.c" <<'PROG'
#include <stdlib.h>
static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}
__attribute__((noinline)) void sorter(unsigned *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned)(i * 2654435761u);
	qsort(v, n, sizeof(*v), cmp);
}
int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 0) : 100;
	unsigned *v = malloc(20000 * sizeof(*v));
	for (unsigned long i = 0; i < rounds && v; i++)
		sorter(v, 20000);
	free(v);
	return 0;
}
PROG
cc -O2 -g -fomit-frame-pointer -o "$dir/prog" "$dir/prog.c" || { fail "cannot build the test program"; finish; }
(cd "$dir" && perf record -q -N -e cpu-clock -F 2000 --call-graph dwarf,4096 -o "$dir/d.data" \
	./prog 150 >/dev/null 2>&1) || { fail "perf record --call-graph dwarf"; finish; }

# libc's build id as the profile recorded it, and its debug file here.
bid=$(perf buildid-list -i "$dir/d.data" 2>/dev/null | awk '$2 ~ /\/libc\.so/ { print $1; exit }')
debug=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
if [ -z "$bid" ] || [ ! -r "$debug" ]; then echo "SKIP: no libc debug file (libc6-dbg)"; exit 77; fi
if ! readelf -SW "$debug" | grep -q '\.debug_info .* C '; then
	echo "SKIP: libc's debug file has no compressed sections"
	exit 77
fi
copy=$cache/.tk-inflated/$bid.debug
perf script -i "$dir/d.data" >"$dir/perf.txt" 2>/dev/null || { fail "perf script failed"; finish; }
grep -q 'msort_with_tmp+0x[0-9a-f]* (inlined)' "$dir/perf.txt" ||
	{ echo "SKIP: perf script shows no inlined libc frame here"; exit 77; }

# report NAME [OPTIONS...]: tracekit report prints what perf script prints.
report() {
	local name=$1
	shift
	"$TRACEKIT" report "$@" "$dir/d.data" >"$dir/$name.tk" 2>"$dir/$name.err" ||
		fail "$name: tracekit report failed" "$(head -3 "$dir/$name.err")"
	if cmp -s "$dir/perf.txt" "$dir/$name.tk"; then
		pass "$name: tracekit report prints what perf script prints"
	else
		fail "$name: tracekit report differs from perf script" \
			"$(diff "$dir/perf.txt" "$dir/$name.tk" | head -10)"
	fi
}

report first --cache-dir "$cache"
if [ -f "$copy" ] && readelf -n "$copy" | grep -q "Build ID: $bid" &&
	! readelf -SW "$copy" | grep -q '\.debug_info .* C '; then
	pass "first: the inflated copy of libc's debug file is in the cache"
else
	fail "first: no inflated copy at $copy" "$(ls -la "$cache/.tk-inflated" 2>&1 | head -5)"
fi
ino=$(stat -c %i "$copy" 2>/dev/null)
report second --cache-dir "$cache"
[ -n "$ino" ] && [ "$(stat -c %i "$copy")" = "$ino" ] &&
	pass "second: the copy is reused, not rewritten" || fail "second: the copy was rewritten"
[ "$(find "$cache/.tk-inflated" -name '.*' -type f | wc -l)" = 0 ] &&
	pass "no temporary file is left in .tk-inflated" || fail "a temporary file is left"

# Another file under the name (another build id): never read, replaced.
cp "$dir/prog" "$copy"
report replaced --cache-dir "$cache"
readelf -n "$copy" | grep -q "Build ID: $bid" &&
	pass "replaced: a copy of another build id is remade" || fail "replaced: the wrong copy stays"

# A cache directory that does not exist stays so.
report nocache --cache-dir "$dir/none"
[ ! -e "$dir/none" ] && pass "nocache: no cache directory is created" ||
	fail "nocache: $dir/none was created"
finish
