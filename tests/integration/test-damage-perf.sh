#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# A seeded damage campaign on perf.data files (issue 21): copies of the
# fuzz corpus's perf.data files, and when perf and root are here of one
# file-mode, one pipe-mode and one zstd recording made once, are damaged
# (truncated, bytes flipped, ranges zeroed, record sizes rewritten) and
# each copy is reported. Each must end without a crash (exit < 128, no
# sanitizer report) or hang (20 s), must not lose samples silently (fewer
# sample lines than the intact file and exit 0), and must print at least
# as many sample lines as perf script whenever perf script reads it (exit
# 0). The seed is fixed, so a failure names a case that replays.
set -u
. "$(dirname "$0")/../lib.sh"
SEED=${TK_DAMAGE_SEED:-21}
PER_FILE=${TK_DAMAGE_CASES:-40}
tmp=$(mktemp -d /tmp/tk-damage-perf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

inputs=()
for f in tracepoint callchain cpu-clock compressed printk-no-colon; do
	cp "$TK_SOURCE_DIR/fuzz/corpus/perfdata/$f.data" "$tmp/in-$f.data"
	inputs+=("$tmp/in-$f.data")
done
have_perf=false
if command -v perf >/dev/null && [ "$(id -u)" = 0 ]; then
	have_perf=true
	perf record -q -e sched:sched_switch -a -o "$tmp/in-rec.data" -- sleep 0.2 >/dev/null 2>&1 &&
		inputs+=("$tmp/in-rec.data")
	perf record -q -e sched:sched_switch -a -o - -- sleep 0.2 >"$tmp/in-pipe.data" 2>/dev/null &&
		inputs+=("$tmp/in-pipe.data")
	perf record -q -z -e sched:sched_switch -a -o "$tmp/in-z.data" -- sleep 0.2 >/dev/null 2>&1 &&
		inputs+=("$tmp/in-z.data")
else
	skip "comparison with perf script" "perf or root missing"
fi

# Sample lines: the lines of perf script's and tracekit report's texts
# that hold a sample's time ("4617.297366:"); callchain frames and blank
# separators have none. Counted by the time, not by lines: where a damaged
# EVENT_DESC leaves perf 6.1 an event name of uninitialised bytes, a
# newline among them splits one sample into two lines.
count_samples() { grep -c -E '[0-9]+\.[0-9]{6,9}: ' "$1"; }

# Offsets of the records of an uncompressed file (pipe or file mode).
record_offsets() {
	od -A n -t u1 -v "$1" | awk '
	{ for (i = 1; i <= NF; i++) b[n++] = $i }
	function u16(o) { return b[o] + 256 * b[o + 1] }
	function u32(o) { return u16(o) + 65536 * u16(o + 2) }
	END {
		if (u32(8) == 16) { off = 16; end = n }
		else { off = u32(40); end = off + u32(48); if (end > n || end == off) end = n }
		while (off + 8 <= end) {
			size = u16(off + 6)
			if (size < 8) break
			print off
			if (u32(off) == 66) size += int((u32(off + 8) + 7) / 8) * 8
			off += size
		}
	}'
}

# TK_DAMAGE_KEEP=DIR keeps the copies that fail a check there.
keep() { [ -n "${TK_DAMAGE_KEEP:-}" ] && cp "$c" "$TK_DAMAGE_KEEP/case-$cases.data"; }
# rnd N: R becomes a number below N. Not $RANDOM in $(...): bash 5.1+
# seeds each subshell afresh, so a campaign drawn that way differs from
# run to run and its cases do not replay.
rng=$SEED
rnd() {
	rng=$(((rng * 1103515245 + 12345) % 2147483648))
	R=$((rng / 16 % $1))
}
put_byte() { printf "\\$(printf %03o "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }

cases=0 crashes=0 hangs=0 silent=0 below=0 damaged=0
for in in "${inputs[@]}"; do
	"$TRACEKIT" report "$in" >"$tmp/intact.out" 2>"$tmp/intact.err"
	rc=$?
	# A live recording on a busy machine may have lost events: perf's own
	# warning, exit 1, and no damaged region (no "offset 0x" line).
	if [ "$rc" = 1 ] && grep -q 'lost' "$tmp/intact.err" && ! grep -q 'offset 0x' "$tmp/intact.err"; then
		rc=0
	fi
	if [ "$rc" != 0 ]; then
		fail "$(basename "$in"): the intact file does not report cleanly" "$(head -3 "$tmp/intact.err")"
		continue
	fi
	intact=$(count_samples "$tmp/intact.out")
	size=$(stat -c %s "$in")
	mapfile -t recs < <(record_offsets "$in")
	# A pipe-mode stream has no length: one cut where a record begins is a
	# shorter stream, whole, which perf script and tracekit both print with
	# exit 0. Such a cut is no silent loss (it landed on one of the ~2 k
	# record starts of a recording now and then: 0 of 25 samples, exit 0).
	pipe=false
	[ "$(od -A n -t u8 -j 8 -N 8 "$in" | tr -d ' ')" = 16 ] && pipe=true
	declare -A starts=()
	for o in "${recs[@]}"; do starts[$o]=1; done
	for ((k = 0; k < PER_FILE; k++)); do
		c="$tmp/case.data"
		cp "$in" "$c"
		kind=$((k % 4))
		case $kind in
		0) rnd $((size - 16)); at=$((16 + R)); truncate -s "$at" "$c"; what="truncate at $at" ;;
		1) what="flip"
		   rnd 4; nflips=$R
		   for ((j = 0; j <= nflips; j++)); do
			rnd "$size"; at=$R; rnd 255; v=$((1 + R))
			old=$(od -A n -t u1 -j "$at" -N 1 "$c")
			put_byte "$c" "$at" $((old ^ v)); what="$what $at^$v"
		   done ;;
		2) rnd "$size"; at=$R; rnd 256; len=$((1 + R))
		   dd if=/dev/zero of="$c" bs=1 seek="$at" count="$len" conv=notrunc 2>/dev/null
		   what="zero $len at $at" ;;
		3) if [ ${#recs[@]} -eq 0 ]; then rnd "$size"; at=$R; else rnd ${#recs[@]}; at=$((${recs[$R]} + 6)); fi
		   rnd 65536; v=$R; [ $((k % 8)) = 3 ] && v=$(((v % 4) * 4))
		   put_byte "$c" "$at" $((v % 256)); put_byte "$c" $((at + 1)) $((v / 256))
		   what="size $v at $at" ;;
		esac
		cases=$((cases + 1))
		name="$(basename "$in") case $k ($what)"
		timeout 20 "$TRACEKIT" report "$c" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		[ "$rc" = 1 ] && damaged=$((damaged + 1))
		if [ "$rc" = 124 ]; then
			hangs=$((hangs + 1)); fail "$name: hangs"; continue
		fi
		if [ "$rc" -ge 128 ] || grep -q -e 'Sanitizer' -e 'runtime error:' "$tmp/err"; then
			crashes=$((crashes + 1)); fail "$name: crashes" "rc=$rc $(head -c 300 "$tmp/err")"
			keep
			continue
		fi
		n=$(count_samples "$tmp/out")
		if [ "$rc" = 0 ] && [ "$n" -lt "$intact" ] &&
			! { $pipe && [ "$kind" = 0 ] && [ -n "${starts[$at]:-}" ]; }; then
			silent=$((silent + 1)); fail "$name: $n of $intact samples, exit 0"
			keep
		fi
		if $have_perf; then
			# perf 6.1 crashes on some damaged copies: its exit status is all
			# we need (sh -c keeps bash's "Segmentation fault" line out).
			prc=$(sh -c 'timeout 20 perf script -i "$1" >"$2" 2>/dev/null; echo $?' sh "$c" "$tmp/perf.out" 2>/dev/null)
			pn=$(count_samples "$tmp/perf.out")
			if [ "$prc" = 0 ] && [ "$n" -lt "$pn" ]; then
				below=$((below + 1)); fail "$name: $n sample lines, perf script $pn"
				keep
			fi
		fi
	done
done
echo "summary: cases=$cases crashes=$crashes hangs=$hangs silent_losses=$silent below_perf=$below (exit 1 on $damaged)"
[ "$cases" -gt 0 ] && [ "$crashes" = 0 ] && [ "$hangs" = 0 ] && [ "$silent" = 0 ] && [ "$below" = 0 ] &&
	pass "damage campaign: $cases cases"
finish
