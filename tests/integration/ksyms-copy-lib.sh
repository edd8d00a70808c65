# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# What test-ksyms-copy.sh (kernel frames of a -g profile) and
# test-perf-ksyms-copy.sh (%ps of timer tracepoints) both check of the copy
# of the kernel image's lines of /proc/kallsyms that tracekit keeps in the
# build-id cache as .tk-kallsyms/<kernel build id> (ksyms-copy.c): every
# report prints what perf script prints, with no copy (the first keeps
# one), with the copy (really read: a name changed in it shows), with a
# damaged copy and one of another load address (both ignored, then
# rewritten), and without a cache directory (none is made).
#
# ksyms_copy_setup NAME: the skips every such test shares, then $dir (removed
# at exit) and $HOME with an empty .debug cache ($cache).
# ksyms_copy_checks DATA KBID: the checks above on perf.data DATA, whose
# perf script text is $dir/perf.txt; the caller defines printed_names FILE
# (the kernel names a report printed, one a line, most frequent first or
# any order) and shows_name NAME FILE (whether the report FILE printed NAME
# where the copy's names show).

ksyms_copy_setup() {
	if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
	if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
	if [ "$(uname -m)" != x86_64 ]; then echo "SKIP: the copy is kept on x86-64 only"; exit 77; fi
	if [ "$(head -c 16 /proc/kallsyms)" = 0000000000000000 ]; then
		echo "SKIP: /proc/kallsyms shows no addresses here"
		exit 77
	fi
	dir=$(mktemp -d "/tmp/$1.XXXXXX")
	trap 'rm -rf "$dir"' EXIT
	tmp=$dir
	export HOME=$dir/home
	mkdir -p "$HOME/.debug"
	cache=$HOME/.debug
}

# ksyms_report NAME: tracekit report of $data into $dir/NAME.txt, compared with perf script.
ksyms_report() {
	"$TRACEKIT" report -i "$data" >"$dir/$1.txt" 2>"$dir/$1.err"
	if cmp -s "$dir/$1.txt" "$dir/perf.txt"; then
		pass "$1: prints what perf script prints"
	else
		fail "$1: differs from perf script" "$(diff "$dir/perf.txt" "$dir/$1.txt" | head -5)"
	fi
}

ksyms_copy_checks() {
	data=$1
	local copy=$cache/.tk-kallsyms/$2 textlen size textoff name line off poison

	ksyms_report first
	if [ -s "$copy" ]; then
		pass "the first report keeps a copy"
	else
		fail "no copy at $copy" "$(ls -la "$cache" 2>&1 | head -5)"
		return
	fi
	# The file: a 24-byte header (magic, entries, text length), the index, the text.
	textlen=$(od -An -t u8 -j 16 -N 8 "$copy" | tr -d ' ')
	size=$(stat -c %s "$copy")
	textoff=$((size - textlen))
	tail -c "$textlen" "$copy" >"$dir/copy.txt"
	[ "$(head -c 8 "$copy")" = TKKSYM01 ] &&
		cmp -n "$textlen" "$dir/copy.txt" /proc/kallsyms >/dev/null 2>&1 &&
		! grep -q "$(printf '\t')\[" "$dir/copy.txt" &&
		pass "the copy holds /proc/kallsyms up to its first module line" ||
		fail "the copy does not hold the kernel image's lines of /proc/kallsyms" \
			"$(head -c 8 "$copy"; cmp -n "$textlen" "$dir/copy.txt" /proc/kallsyms 2>&1)"
	ksyms_report second

	# A name the report printed, in the copy past its first page, changed to one of the same length.
	name=$(printed_names "$dir/first.txt" | sort | uniq -c | sort -rn | awk '{ print $2 }' |
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
		"$TRACEKIT" report -i "$data" >"$dir/poisoned.txt" 2>/dev/null
		shows_name "$poison" "$dir/poisoned.txt" &&
			pass "a report reads the copy, not /proc/kallsyms" ||
			fail "a name changed in the copy ($1 -> $poison) does not show"
		cp "$dir/saved" "$copy"
	else
		skip "copy read" "no printed kernel name lies past the copy's first page"
	fi

	# Cut short: ignored (the text comes from /proc/kallsyms), then rewritten.
	head -c $((size - 100)) "$dir/saved" >"$copy"
	ksyms_report damaged
	cmp -s "$copy" "$dir/saved" && pass "a damaged copy is rewritten" ||
		fail "the damaged copy was not rewritten"

	# Another load address: its first line differs; ignored, then rewritten.
	printf 'x' | dd of="$copy" bs=1 seek=$((textoff + 10)) conv=notrunc 2>/dev/null
	ksyms_report other-load-address
	cmp -s "$copy" "$dir/saved" && pass "a copy of another load address is rewritten" ||
		fail "the copy of another load address was not rewritten" "$(cmp "$copy" "$dir/saved" 2>&1)"

	# No cache directory: none is made.
	HOME=$dir/nohome "$TRACEKIT" report -i "$data" >"$dir/nocache.txt" 2>/dev/null
	cmp -s "$dir/nocache.txt" "$dir/perf.txt" && [ ! -e "$dir/nohome" ] &&
		pass "without a cache directory: the same text, no directory made" ||
		fail "without a cache directory" "$(ls -la "$dir/nohome" 2>&1 | head -3)"
}
