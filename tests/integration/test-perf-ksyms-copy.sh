#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# perf22 (issue 22): the %ps names of perf.data tracepoint samples come
# from the kept copy of the kernel image's lines of /proc/kallsyms
# (.tk-kallsyms/<kernel build id> in the build-id cache, ksyms-copy.c)
# instead of the whole /proc/kallsyms, which the kernel formats anew for
# each reader. On timer events of this machine (timer_start prints
# "function=%ps"), every report prints what perf script prints: the first
# one, which finds no copy and keeps one; the next, which reads it (a name
# changed in it shows); with a damaged copy and one of another load
# address (both ignored, then rewritten); and without a cache directory
# (none is made).
set -u
. "$(dirname "$0")/../lib.sh"
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
if [ "$(uname -m)" != x86_64 ]; then echo "SKIP: the copy is kept on x86-64 only"; exit 77; fi
if [ "$(head -c 16 /proc/kallsyms)" = 0000000000000000 ]; then
	echo "SKIP: /proc/kallsyms shows no addresses here"
	exit 77
fi
dir=$(mktemp -d /tmp/tk-perf-ksyms-copy.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tmp=$dir
export HOME=$dir/home
mkdir -p "$HOME/.debug"
cache=$HOME/.debug

perf record -q -e timer:timer_start -e timer:hrtimer_start -a -o "$dir/t.data" -- \
	sleep 0.5 >/dev/null 2>&1 || { echo "SKIP: perf record of timer events failed"; exit 77; }
kbid=$(perf buildid-list -i "$dir/t.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
[ -n "$kbid" ] || kbid=$(perf buildid-list -k 2>/dev/null)
[ -n "$kbid" ] || { echo "SKIP: no kernel build id"; exit 77; }
perf script -i "$dir/t.data" >"$dir/perf.txt" 2>/dev/null || { fail "perf script"; finish; }
grep -q 'function=[a-z_]' "$dir/perf.txt" || { echo "SKIP: no timer function named"; exit 77; }
copy=$cache/.tk-kallsyms/$kbid

report() { # report NAME: tracekit report into $dir/NAME.txt, compared with perf script
	"$TRACEKIT" report -i "$dir/t.data" >"$dir/$1.txt" 2>"$dir/$1.err"
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
textlen=$(od -An -t u8 -j 16 -N 8 "$copy" | tr -d ' ')
size=$(stat -c %s "$copy")
textoff=$((size - textlen))
tail -c "$textlen" "$copy" >"$dir/copy.txt"
cmp -n "$textlen" "$dir/copy.txt" /proc/kallsyms >/dev/null 2>&1 &&
	pass "the copy holds the beginning of /proc/kallsyms" ||
	fail "the copy is not the beginning of /proc/kallsyms"
report second

# A timer function the report printed, past the copy's first page, renamed in it.
name=$(grep -o 'function=[a-z_][a-z0-9_]*' "$dir/first.txt" | sed 's/^function=//' |
	sort | uniq -c | sort -rn | awk '{ print $2 }' |
	while read -r n; do
		at=$(grep -b " $n\$" "$dir/copy.txt" | head -1 | cut -d: -f1)
		[ -n "$at" ] && [ "$at" -gt 8192 ] && [ ${#n} -ge 4 ] && { echo "$n $at"; break; }
	done)
cp "$copy" "$dir/saved"
if [ -n "$name" ]; then
	set -- $name
	line=$(dd if="$dir/copy.txt" bs=1 skip="$2" count=300 2>/dev/null | head -1)
	off=$((textoff + $2 + ${#line} - ${#1}))
	printf 'ZZ' | dd of="$copy" bs=1 seek="$off" conv=notrunc 2>/dev/null
	poison=ZZ${1:2}
	"$TRACEKIT" report -i "$dir/t.data" >"$dir/poisoned.txt" 2>/dev/null
	grep -q "function=$poison" "$dir/poisoned.txt" &&
		pass "a report reads the copy, not /proc/kallsyms" ||
		fail "a name changed in the copy ($1 -> $poison) does not show"
	cp "$dir/saved" "$copy"
else
	skip "copy read" "no printed timer function lies past the copy's first page"
fi

# Cut short: ignored (the text comes from /proc/kallsyms), then rewritten.
head -c $((size - 100)) "$dir/saved" >"$copy"
report damaged
cmp -s "$copy" "$dir/saved" && pass "a damaged copy is rewritten" ||
	fail "the damaged copy was not rewritten"

# Another load address: its first line differs; ignored, then rewritten.
printf 'x' | dd of="$copy" bs=1 seek=$((textoff + 10)) conv=notrunc 2>/dev/null
report other-load-address
cmp -s "$copy" "$dir/saved" && pass "a copy of another load address is rewritten" ||
	fail "the copy of another load address was not rewritten" "$(cmp "$copy" "$dir/saved" 2>&1)"

# No cache directory: none is made.
HOME=$dir/nohome "$TRACEKIT" report -i "$dir/t.data" >"$dir/nocache.txt" 2>/dev/null
cmp -s "$dir/nocache.txt" "$dir/perf.txt" && [ ! -e "$dir/nohome" ] &&
	pass "without a cache directory: the same text, no directory made" ||
	fail "without a cache directory" "$(ls -la "$dir/nohome" 2>&1 | head -3)"
finish
