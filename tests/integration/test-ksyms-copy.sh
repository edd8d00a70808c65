#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The copy of the kernel image's lines of /proc/kallsyms (dwarf21, issue
# 16): the first report of a profile with kernel frames keeps them in the
# build-id cache as .tk-kallsyms/<kernel build id>, later ones read it
# instead of /proc/kallsyms. On a -g profile of dd (kernel frames in most
# samples), every report prints what perf script prints: with no copy,
# with the copy (which is really read: a name changed in it shows), with
# a copy cut in half (addresses above its end read /proc/kallsyms whole),
# with a copy of another load address (ignored and rewritten); a cache
# directory that does not exist is not created.
set -u
. "$(dirname "$0")/../lib.sh"
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
if [ "$(uname -m)" != x86_64 ]; then echo "SKIP: the copy is kept on x86-64 only"; exit 77; fi
if [ "$(head -c 16 /proc/kallsyms)" = 0000000000000000 ]; then
	echo "SKIP: /proc/kallsyms shows no addresses here"
	exit 77
fi
dir=$(mktemp -d /tmp/tk-ksyms-copy.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tmp=$dir
export HOME=$dir/home
mkdir -p "$HOME/.debug"
cache=$HOME/.debug

perf record -q -N -e cpu-clock -F 4000 -g -o "$dir/k.data" -- \
	dd if=/dev/zero of=/dev/null bs=4k count=400000 >/dev/null 2>&1 ||
	{ fail "perf record -g"; finish; }
kbid=$(perf buildid-list -i "$dir/k.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
[ -n "$kbid" ] || { echo "SKIP: the profile recorded no kernel build id"; exit 77; }
perf script -i "$dir/k.data" >"$dir/perf.txt" 2>/dev/null || { fail "perf script"; finish; }
grep -q '(\[kernel.kallsyms\])' "$dir/perf.txt" || { echo "SKIP: no kernel frame named"; exit 77; }
copy=$cache/.tk-kallsyms/$kbid

report() { # report NAME: tracekit report into $dir/NAME.txt, compared with perf script
	"$TRACEKIT" report "$dir/k.data" >"$dir/$1.txt" 2>"$dir/$1.err"
	if cmp -s "$dir/$1.txt" "$dir/perf.txt"; then
		pass "$1: prints what perf script prints"
	else
		fail "$1: differs from perf script" "$(diff "$dir/perf.txt" "$dir/$1.txt" | head -5)"
	fi
}

report first
if [ -s "$copy" ]; then
	pass "the first report keeps a copy"
else
	fail "no copy at $copy" "$(ls -la "$cache" 2>&1 | head -5)"
	finish
fi
len=$(stat -c %s "$copy")
cmp -n "$len" "$copy" /proc/kallsyms >"$dir/cmp.out" 2>&1 && ! grep -q "$(printf '\t')\[" "$copy" &&
	pass "the copy is /proc/kallsyms up to its first module line" ||
	fail "the copy is not the kernel image's lines of /proc/kallsyms" "$(cat "$dir/cmp.out")"
report second

# A name the report printed, in the copy past its first page, changed to one of the same length.
name=$(grep -o ' [a-z_][a-z0-9_]*+0x[0-9a-f]* (\[kernel.kallsyms\])' "$dir/first.txt" |
	sed 's/^ //; s/+0x.*//' | sort | uniq -c | sort -rn | awk '{ print $2 }' |
	while read -r n; do
		l=$(grep -n " $n\$" "$copy" | head -1 | cut -d: -f1)
		[ -n "$l" ] && [ "$(head -n "$l" "$copy" | wc -c)" -gt 8192 ] && [ ${#n} -ge 4 ] &&
			{ echo "$n"; break; }
	done)
if [ -n "$name" ]; then
	cp "$copy" "$dir/saved"
	poison=ZZ${name:2}
	sed -i "s/ $name\$/ $poison/" "$copy"
	"$TRACEKIT" report "$dir/k.data" >"$dir/poisoned.txt" 2>/dev/null
	grep -q " $poison+0x" "$dir/poisoned.txt" &&
		pass "a report reads the copy, not /proc/kallsyms" ||
		fail "a name changed in the copy ($name -> $poison) does not show"
	cp "$dir/saved" "$copy"
else
	skip "copy read" "no printed kernel name lies past the copy's first page"
fi

# Cut in half at a line boundary: the upper addresses come from /proc/kallsyms.
head -n "$(($(wc -l <"$copy") / 2))" "$dir/saved" >"$copy"
report half

# Another load address: its first line differs; ignored, then rewritten.
sed '1s/^\(.\{9\}\)./\1x/' "$dir/saved" >"$copy"
report other-load-address
cmp -s "$copy" "$dir/saved" && pass "a copy of another load address is rewritten" ||
	fail "the copy of another load address was not rewritten"

# No cache directory: none is made.
HOME=$dir/nohome "$TRACEKIT" report "$dir/k.data" >"$dir/nocache.txt" 2>/dev/null
cmp -s "$dir/nocache.txt" "$dir/perf.txt" && [ ! -e "$dir/nohome" ] &&
	pass "without a cache directory: the same text, no directory made" ||
	fail "without a cache directory" "$(ls -la "$dir/nohome" 2>&1 | head -3)"
finish
