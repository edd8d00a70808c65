#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# DWARF unwinding (issue 16), with perf script 6.1 as the oracle: a
# program built with -O2 -g and no frame pointers (only its CFI can unwind
# it), recorded with --call-graph dwarf; tracekit report must print every
# sample as perf script prints it, the user frames unwound from the stack
# copy and the functions inlined at them, and with --no-inline as perf
# script --no-inline. Rebuilt with another build id after the recording,
# the program's frames are [unknown] (perf's too), and tracekit, which
# takes no CFI from a binary of another build id, stops there: each of its
# samples is then the start of perf's.
# The program keeps its frames small; stacks larger than the stack copy,
# and functions without CFI, are test-dwarf-edges.sh's.
set -u
. "$(dirname "$0")/../lib.sh"
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
if ! command -v cc >/dev/null; then echo "SKIP: no C compiler to build the test program"; exit 77; fi
dir=$(mktemp -d /tmp/tk-dwarf-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tmp=$dir
export HOME=$dir/home
mkdir -p "$HOME/.debug"

cat >"$dir/prog.c" <<'PROG'
#include <stdlib.h>
#include <unistd.h>
volatile unsigned long sink;
static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}
__attribute__((noinline)) static unsigned long leaf(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i ^ (s >> 3);
	return s;
}
static inline unsigned long middle(unsigned long n) { return leaf(n) + leaf(n / 2); }
__attribute__((noinline)) unsigned long outer(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned k = 0; k < 4; k++)
		s += middle(n + k + (sink & 1));
	return s;
}
__attribute__((noinline)) void sorter(unsigned *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned)(i * 2654435761u);
	qsort(v, n, sizeof(*v), cmp);
}
__attribute__((noinline)) void sys(void)
{
	for (int i = 0; i < 200; i++)
		sink += (unsigned long)getppid();
}
int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 0) : 100;
	unsigned *v = malloc(20000 * sizeof(*v));
	for (unsigned long i = 0; i < rounds && v; i++) {
		sink += outer(100000 + i);
		sorter(v, 20000);
		sys();
	}
	free(v);
	return 0;
}
PROG
cc -O2 -g -fomit-frame-pointer -o "$dir/prog" "$dir/prog.c" || { fail "cannot build the test program"; finish; }
(cd "$dir" && perf record -q -N -e cpu-clock -F 2000 --call-graph dwarf,4096 -o "$dir/d.data" \
	./prog 200 >/dev/null 2>&1) || fail "perf record --call-graph dwarf"

# samples FILE: one line per sample (its lines joined by |), for counting.
samples() { awk 'BEGIN { RS = ""; FS = "\n" } { gsub("\n", "|"); print }' "$1"; }

# compare NAME [OPTIONS...]: perf script and tracekit report print the same samples.
compare() {
	local name=$1 total same
	shift
	perf script "$@" -i "$dir/d.data" >"$dir/$name.perf" 2>/dev/null || fail "$name: perf script failed"
	"$TRACEKIT" report --cache-dir "$HOME/.debug" "$@" "$dir/d.data" >"$dir/$name.tk" \
		2>"$dir/$name.err" || fail "$name: tracekit report failed" "$(head -3 "$dir/$name.err")"
	samples "$dir/$name.perf" >"$dir/$name.perf.s"
	samples "$dir/$name.tk" >"$dir/$name.tk.s"
	total=$(wc -l <"$dir/$name.perf.s")
	same=$(paste -d '\n' "$dir/$name.perf.s" "$dir/$name.tk.s" | awk 'NR % 2 { a = $0; next } a == $0 { n++ } END { print n + 0 }')
	echo "$name: $same of $total samples identical"
	if [ "$total" -gt 0 ] && cmp -s "$dir/$name.perf" "$dir/$name.tk"; then
		pass "$name: tracekit report prints what perf script $* prints"
	else
		fail "$name: tracekit report differs from perf script $*" \
			"$(diff "$dir/$name.perf" "$dir/$name.tk" | head -20)"
	fi
}

compare inline
grep -q 'middle+0x[0-9a-f]* (inlined)' "$dir/inline.tk" &&
	grep -q 'outer+0x[0-9a-f]* (.*/prog)' "$dir/inline.tk" &&
	grep -q 'main+0x[0-9a-f]* (.*/prog)' "$dir/inline.tk" &&
	pass "inline: the program's frames are unwound, the inlined function shown" ||
	fail "inline: no unwound frame of the program or no inlined frame"
compare noinline --no-inline
grep -q '(inlined)' "$dir/noinline.tk" && fail "noinline: an inlined frame is printed"
# The inline names come from dwarf-read (our own DWARF reader) where it
# answers; TRACEKIT_DWARF_READ=check asks libdw too on every address.
TRACEKIT_DWARF_READ=check "$TRACEKIT" report --cache-dir "$HOME/.debug" "$dir/d.data" \
	>"$dir/check.tk" 2>"$dir/check.err"
if grep -q 'dwarf-read check: [0-9]* addresses, [1-9][0-9]* answered by the reader, 0 differ' \
	"$dir/check.err" && cmp -s "$dir/check.tk" "$dir/inline.tk"; then
	pass "dwarf-read: every address it answers named as libdw names it"
else
	fail "dwarf-read: differs from libdw" "$(grep dwarf-read "$dir/check.err" | head -5)"
fi

# A profile with 1 MiB of records or more is reported by a second process
# with malloc's heap on huge pages (src/cli/unwind-heap.c): one more
# execve, the same text; none for --no-inline, standard input, a user's own
# glibc.malloc.hugetlb, or a smaller file.
if command -v strace >/dev/null; then
	data_size=$(od -An -t u8 -j 48 -N 8 "$dir/d.data" | tr -d ' ')
	execs() { # execs NAME ARGS...: how many execve() tracekit report made
		local name=$1
		shift
		strace -f -qq -e trace=execve -e signal=none -o "$dir/$name.strace" \
			"$@" >"$dir/$name.out" 2>"$dir/$name.err2"
		grep -c 'execve(' "$dir/$name.strace"
	}
	want=1
	[ "$data_size" -ge 1048576 ] && want=2
	n=$(execs reexec "$TRACEKIT" report --cache-dir "$HOME/.debug" "$dir/d.data")
	[ "$n" = "$want" ] && cmp -s "$dir/reexec.out" "$dir/inline.tk" &&
		pass "report of $data_size bytes of records: $n execve, the same text" ||
		fail "report of $data_size bytes of records: $n execve (want $want) or another text"
	n=$(execs stdin sh -c "exec \"\$0\" report --cache-dir \"\$HOME/.debug\" - <\"\$1\"" \
		"$TRACEKIT" "$dir/d.data")
	[ "$n" = 2 ] && cmp -s "$dir/stdin.out" "$dir/inline.tk" &&
		pass "report of standard input: no second process, the same text" ||
		fail "report of standard input: $n execve (want sh's and tracekit's) or another text"
	n=$(execs user env GLIBC_TUNABLES=glibc.malloc.hugetlb=0 "$TRACEKIT" report \
		--cache-dir "$HOME/.debug" "$dir/d.data")
	[ "$n" = 2 ] && cmp -s "$dir/user.out" "$dir/inline.tk" &&
		pass "the user's own glibc.malloc.hugetlb: no second process" ||
		fail "the user's own glibc.malloc.hugetlb: $n execve (want env's and tracekit's)"
	n=$(execs noinl "$TRACEKIT" report --cache-dir "$HOME/.debug" --no-inline "$dir/d.data")
	[ "$n" = 1 ] && cmp -s "$dir/noinl.out" "$dir/noinline.tk" &&
		pass "--no-inline: no second process" || fail "--no-inline: $n execve (want 1)"
else
	skip "the report's second process" "strace is not installed"
fi

# Rebuilt with another build id, the same code: its names and CFI are not used.
cc -O2 -g -fomit-frame-pointer -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 \
	-o "$dir/prog" "$dir/prog.c" || fail "cannot rebuild the test program"
perf script -i "$dir/d.data" >"$dir/rebuilt.perf" 2>/dev/null || fail "rebuilt: perf script failed"
"$TRACEKIT" report --cache-dir "$HOME/.debug" "$dir/d.data" >"$dir/rebuilt.tk" \
	2>"$dir/rebuilt.err" || fail "rebuilt: tracekit report failed" "$(head -3 "$dir/rebuilt.err")"
grep -q '[a-z]+0x[0-9a-f]* (.*/prog)' "$dir/rebuilt.tk" && fail "rebuilt: named from a binary of another build id"
grep -q '\[unknown\] (.*/prog)' "$dir/rebuilt.tk" || fail "rebuilt: no [unknown] frame of the program"
samples "$dir/rebuilt.perf" >"$dir/rebuilt.perf.s"
samples "$dir/rebuilt.tk" >"$dir/rebuilt.tk.s"
if [ "$(wc -l <"$dir/rebuilt.perf.s")" -gt 0 ] &&
	paste -d '\n' "$dir/rebuilt.perf.s" "$dir/rebuilt.tk.s" |
	awk 'NR % 2 { a = $0; next } substr(a, 1, length($0)) != $0 { bad++ } END { exit bad > 0 }'; then
	pass "rebuilt: every sample is the start of perf script's, the program's frames [unknown]"
else
	fail "rebuilt: a sample is not the start of perf script's" \
		"$(paste -d '\n' "$dir/rebuilt.perf.s" "$dir/rebuilt.tk.s" |
			awk 'NR % 2 { a = $0; next } substr(a, 1, length($0)) != $0 {
				print "perf:     " a; print "tracekit: " $0; exit }')" \
		"$(head -3 "$dir/rebuilt.err")"
fi
finish
