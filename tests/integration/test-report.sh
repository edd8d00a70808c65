#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# Golden test of `tracekit report` against the real `trace-cmd report`
# (3.1.6): both must print identical text for
#   - the committed sample (v7 zstd) and its v6 / v7-none conversions made
#     with `tracekit convert`;
#   - fresh recordings made on the spot with tests/data/make-sample.sh
#     (needs root and tracefs; skipped with the reason otherwise);
# each in the default form and with -t, --cpu N, -l, -R, -F EVENT and
# --cpu N -F sched_switch, and with --slow (every event through
# libtraceevent), which must equal the compiled printer's text. A failing
# comparison shows the head of a unified diff. Also checks that --stat and
# --json run and that corrupt input fails cleanly; that with --strict a
# file whose CPU data ends early prints what trace-cmd prints, exits 1 and
# says "file is incomplete" (stderr, --header, --stat), and a truncated file
# exits 1 with nothing printed (without --strict both are salvaged: see
# test-dat-bad-input.sh and test-damage-dat.sh); and that a lossy recording (`tracekit record -b 4`)
# keeps trace-cmd's text while stderr, --header and --stat give the lost
# counts per CPU.
#
# Environment: TRACEKIT (the binary), TK_SOURCE_DIR (source tree).
# Ends with "TK-COUNTS: passed=N failed=N skipped=N"; exit 1 if a check
# failed, 77 if all were skipped, else 0.
set -u

. "$(dirname "$0")/../lib.sh"
src=$TK_SOURCE_DIR
tk=$TRACEKIT
sample=$src/tests/data/sample-v7-zstd.dat
# libtraceevent 1.7.1 leaks a few bytes while it parses -F filters. Under
# ASan, runs with a filter leave leak checking off, and one run (leak_check
# below) checks with those leaks suppressed: the slow unwinder that finds the
# library makes a run ~20x slower, too slow for every filter run.
filter_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0")
leak_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS:-}:fast_unwind_on_malloc=0"
	"LSAN_OPTIONS=${LSAN_OPTIONS:-}:suppressions=$src/tests/lsan-libtraceevent.supp")
# tkr ARGS...: tracekit, with filter_env when a filter (SPEC with ':') is given.
tkr() {
	case " $* " in
	*" -F "*:*) "${filter_env[@]}" "$tk" "$@" ;;
	*) "$tk" "$@" ;;
	esac
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# libtraceevent 1.7 leaks a few bytes while parsing some formats; that
# leak is not ours and must not fail the ASan build.
echo "leak:libtraceevent.so" > "$tmp/lsan.supp"
export LSAN_OPTIONS="suppressions=$tmp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

if ! command -v trace-cmd >/dev/null 2>&1; then
	skip "all" "trace-cmd is not installed"
	finish
fi

# same_text NAME WANT GOT WHY [LINES]: pass when the two files are equal,
# else fail saying WHY, with the first LINES (default 20) lines of the diff.
same_text() {
	if cmp -s "$2" "$3"; then
		pass "$1"
	else
		fail "$1" "$4"
		diff -u "$2" "$3" | head -"${5:-20}"
	fi
}

# compare NAME FILE ARGS...: trace-cmd report and tracekit report agree
compare() {
	local name=$1 file=$2
	shift 2
	trace-cmd report "$@" -i "$file" > "$tmp/want" 2> "$tmp/want.err"
	if ! tkr report "$@" -i "$file" > "$tmp/got" 2> "$tmp/got.err"; then
		fail "$name" "tracekit report failed: $(head -c 300 "$tmp/got.err")"
		return
	fi
	same_text "$name ($(wc -l < "$tmp/want") lines)" "$tmp/want" "$tmp/got" \
		"output differs from trace-cmd report"
}

# same_as_slow NAME FILE ARGS...: the compiled printer equals libtraceevent's
same_as_slow() {
	local name=$1 file=$2
	shift 2
	"$tk" report "$@" -i "$file" > "$tmp/fast" 2>/dev/null
	"$tk" report --slow "$@" -i "$file" > "$tmp/slow" 2>/dev/null
	same_text "$name" "$tmp/slow" "$tmp/fast" "compiled and libtraceevent text differ"
}

# sym_adds_nothing NAME FILE: --sym on a file with no probe events prints
# the plain report (it once crashed on every ordinary trace).
sym_adds_nothing() {
	"$tk" report -i "$2" > "$tmp/plain" 2>/dev/null
	if ! "$tk" report --sym -i "$2" > "$tmp/sym" 2> "$tmp/sym.err"; then
		fail "$1 --sym" "exit $?: $(head -c 300 "$tmp/sym.err")"
	else
		same_text "$1 --sym adds nothing to events that are not probes" "$tmp/plain" \
			"$tmp/sym" "text differs from the plain report" 10
	fi
}

# A filter tracekit cannot take is one line and exit 2, never an empty report
# (trace-cmd crashes on several of them: see event-check.c).
bad_filters() {
	local f
	for f in nosuchevent 'sched_switch:nofield>1' 'sched_switch:prev_pid>' \
		'sched_switch:(prev_pid>0' 'sched_switch:"open' 'sched_switch:(prev_pid & 3) == 1' \
		'sched_switch:(prev_pid == 1) == 1' 'sched_switch:prev_pid>0 || next_pid' \
		'sched_switch:prev_pid>0 || !next_pid' 'sched_switch:prev_pid>0 || next_pid == prev_pid == 1' \
		'sched_switch:prev_comm == "é"' 'sched_switch:prev_pid>0 || next_pid == cpu22'; do
		"${filter_env[@]}" "$tk" report -F "$f" -i "$1" >"$tmp/bf.out" 2>"$tmp/bf.err"
		rc=$?
		if [ $rc = 2 ] && [ "$(grep -c "^tracekit report:" "$tmp/bf.err")" = 1 ] &&
		   grep -q -- "-F '" "$tmp/bf.err" && [ ! -s "$tmp/bf.out" ]; then
			pass "bad filter $f: exit 2, one line"
		else
			fail "bad filter $f" "rc=$rc $(head -c 300 "$tmp/bf.err")"
		fi
	done
}

check_file() {
	local tag=$1 file=$2
	sym_adds_nothing "$tag" "$file"
	compare "$tag default" "$file"
	compare "$tag -t" "$file" -t
	compare "$tag --cpu 0" "$file" --cpu 0
	compare "$tag --cpu 1 -t" "$file" --cpu 1 -t
	compare "$tag -l" "$file" -l
	compare "$tag -R" "$file" -R
	compare "$tag -F sched_switch" "$file" -F sched_switch
	compare "$tag -F sched" "$file" -F sched
	# trace-cmd's filter language (libtraceevent's, as trace-cmd runs it).
	compare "$tag -F sched_switch:prev_pid>0" "$file" -F 'sched_switch:prev_pid>0'
	compare "$tag -F two events, a filter" "$file" -F 'sched_switch,sched_wakeup:prev_pid>0 || pid>100'
	compare "$tag -F && ! () and a glob" "$file" -F 'sched_switch:prev_pid>0&&!(next_pid==0)&&prev_comm~"*"'
	compare "$tag -F system/event" "$file" -F 'sched/sched_switch'
	compare "$tag -F two specs" "$file" -F 'sched_wakeup:pid==15' -F 'sched_switch:prev_prio<120'
	# One CPU's switches usually start with the idle task's: libtraceevent's
	# name table then takes the plugin's names as duplicates (event.c).
	compare "$tag --cpu 0 -F sched_switch" "$file" --cpu 0 -F sched_switch
	compare "$tag --cpu 1 -F sched_switch" "$file" --cpu 1 -F sched_switch
	same_as_slow "$tag compiled == slow" "$file"
}

# check_incomplete FILE (v7 uncompressed): a CPU whose data ends early, and a
# file cut short.
check_incomplete() {
	local good=$1 off rc n
	if [ ! -r "$good" ]; then
		skip "incomplete" "no uncompressed sample"
		return
	fi
	# The clean file: --header adds no line there, stderr stays quiet.
	trace-cmd report -i "$good" > "$tmp/inc.want" 2>/dev/null
	if "$tk" report --header -i "$good" > "$tmp/inc.got" 2> "$tmp/inc.err" &&
	   cmp -s "$tmp/inc.want" "$tmp/inc.got" && [ ! -s "$tmp/inc.err" ]; then
		pass "--header on a complete, lossless file adds nothing"
	else
		fail "--header on a clean file" "$(diff "$tmp/inc.want" "$tmp/inc.got" | head -5)"
	fi
	# CPU 1's fifth page gets a commit size past the page: its data ends there.
	off=$("$tk" dump -i "$good" 2>/dev/null |
	      awk '$1 == "cpu" && $2 == "1:" { sub("offset=", "", $3); print $3; exit }')
	if [ -z "$off" ]; then
		fail "incomplete" "tracekit dump gave no offset for cpu 1"
		return
	fi
	cp "$good" "$tmp/cut.dat"
	printf '\xff\xff\x00\x00' |
		dd of="$tmp/cut.dat" bs=1 seek=$((off + 4 * 4096 + 8)) conv=notrunc 2>/dev/null
	trace-cmd report -i "$tmp/cut.dat" > "$tmp/cut.want" 2>/dev/null
	"$tk" report --strict -i "$tmp/cut.dat" > "$tmp/cut.got" 2> "$tmp/cut.err"
	rc=$?
	if [ "$rc" -eq 1 ] && cmp -s "$tmp/cut.want" "$tmp/cut.got" &&
	   grep -q "file is incomplete: buffer (top) cpu 1: read 0x4000 of 0x8000 bytes" \
		"$tmp/cut.err" && grep -q "offset 0x$(printf %x $((off + 4 * 4096)))" "$tmp/cut.err"
	then
		n=$(wc -l < "$tmp/cut.got")
		pass "cut CPU data: trace-cmd's $n lines, exit 1, stderr says where"
	else
		fail "cut CPU data" "exit $rc: $(head -c 300 "$tmp/cut.err"; diff "$tmp/cut.want" \
			"$tmp/cut.got" | head -5)"
	fi
	"$tk" report --strict --header -i "$tmp/cut.dat" > "$tmp/cut.hdr" 2>/dev/null
	if [ "$(sed -n 2p "$tmp/cut.hdr" | cut -c1-60)" = \
	     "# file is incomplete: buffer (top) cpu 1: read 0x4000 of 0x8" ] &&
	   cmp -s <(tail -n +3 "$tmp/cut.hdr") <(tail -n +2 "$tmp/cut.want")
	then
		pass "cut CPU data: --header line 2 says so, the rest as trace-cmd"
	else
		fail "cut CPU data --header" "$(head -3 "$tmp/cut.hdr")"
	fi
	if "$tk" report --strict --stat -i "$tmp/cut.dat" 2>/dev/null |
	   grep -q "^cpu 1: .*; incomplete: read 0x4000 of 0x8000 bytes"; then
		pass "cut CPU data: --stat says so"
	else
		fail "cut CPU data --stat" "$("$tk" report --strict --stat -i "$tmp/cut.dat" 2>&1 |
			tail -3)"
	fi
	# A file cut in half: its CPU table points past the end. trace-cmd 3.1.6
	# prints nothing and exits 0 for v7; --strict refuses it with the offset.
	head -c $(($(stat -c %s "$good") / 2)) "$good" > "$tmp/half.dat"
	"$tk" report --strict -i "$tmp/half.dat" > "$tmp/half.got" 2> "$tmp/half.err"
	rc=$?
	if [ "$rc" -eq 1 ] && [ ! -s "$tmp/half.got" ] &&
	   grep -q "half.dat: offset 0x[0-9a-f]*: .*exceeds file size" "$tmp/half.err"; then
		pass "truncated file: exit 1, no lines, $(head -c 120 "$tmp/half.err")"
	else
		fail "truncated file" "exit $rc, $(wc -l < "$tmp/half.got") lines: $(head -c 300 \
			"$tmp/half.err")"
	fi
}

if [ -r "$sample" ]; then
	check_file "sample v7-zstd" "$sample"
	bad_filters "$sample"
	# Our filter code frees what it takes (libtraceevent's own leaks aside).
	if "${leak_env[@]}" "$tk" report -F 'sched_switch:prev_pid>0&&prev_comm~"*"' -i "$sample" \
		>/dev/null 2>"$tmp/leak.err"; then
		pass "-F with a filter leaks nothing of tracekit's"
	else
		fail "-F leak check" "$(grep -m3 -E 'leak|ERROR' "$tmp/leak.err")"
	fi
	if "$tk" convert --file-version 6 -i "$sample" -o "$tmp/v6.dat" >/dev/null 2>&1; then
		check_file "sample v6" "$tmp/v6.dat"
	else
		fail "convert to v6"
	fi
	if "$tk" convert --compression none -i "$sample" -o "$tmp/v7n.dat" >/dev/null 2>&1; then
		check_file "sample v7-none" "$tmp/v7n.dat"
	else
		fail "convert to v7-none"
	fi

	# Options of our own: they must run and say something sensible.
	if "$tk" report --stat -i "$sample" > "$tmp/stat" 2>&1 &&
	   grep -q "sched:sched_switch" "$tmp/stat" && grep -q "^cpu 1:" "$tmp/stat"; then
		pass "--stat"
	else
		fail "--stat" "$(head -c 300 "$tmp/stat")"
	fi
	want_events=$(($(trace-cmd report -i "$sample" 2>/dev/null | wc -l) - 1))
	if "$tk" report --json -i "$sample" > "$tmp/json" 2> "$tmp/json.err" &&
	   [ "$(wc -l < "$tmp/json")" -eq "$want_events" ] &&
	   python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/json"; then
		pass "--json: $want_events objects that parse"
	else
		fail "--json" "$(head -c 300 "$tmp/json")"
	fi
	# The time window: --start/--end keep exactly the lines inside it.
	trace-cmd report -i "$sample" 2>/dev/null | awk 'NR > 1 {
		match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/); t = substr($0, RSTART, RLENGTH);
		sub(/^\[[0-9]+\] +/, "", t); sub(/:$/, "", t);
		if (t >= 1645.43 && t < 1645.45) print }' > "$tmp/win.want"
	"$tk" report --start 1645.43 --end 1645.45 -i "$sample" 2>/dev/null | tail -n +2 \
		> "$tmp/win.got"
	if [ -s "$tmp/win.want" ] && cmp -s "$tmp/win.want" "$tmp/win.got"; then
		pass "--start/--end"
	else
		fail "--start/--end" "$(diff "$tmp/win.want" "$tmp/win.got" | head -5)"
	fi
	# Corrupt data: a clear error, no crash.
	cp "$tmp/v7n.dat" "$tmp/bad.dat" 2>/dev/null
	size=$(stat -c %s "$tmp/bad.dat" 2>/dev/null || echo 0)
	if [ "$size" -gt 100000 ]; then
		printf '\xff\xff\xff\xff\xff\xff\xff\xff' |
			dd of="$tmp/bad.dat" bs=1 seek=$((size - 40000)) conv=notrunc 2>/dev/null
		"$tk" report -i "$tmp/bad.dat" > /dev/null 2> "$tmp/bad.err"
		rc=$?
		if [ "$rc" -le 1 ]; then
			pass "corrupt data exits $rc"
		else
			fail "corrupt data" "exit $rc: $(head -c 300 "$tmp/bad.err")"
		fi
	fi
	check_incomplete "$tmp/v7n.dat"
else
	skip "sample" "$sample is missing"
fi

# Fresh recordings: root, tracefs and trace-cmd (make-sample.sh says why not).
out=$(bash "$src/tests/data/make-sample.sh" "$tmp/fresh" 2>&1)
rc=$?
if [ "$rc" -eq 77 ]; then
	skip "fresh recording" "${out#SKIP: }"
elif [ "$rc" -ne 0 ]; then
	fail "fresh recording" "$out"
else
	for f in sample-v7-zstd sample-v6 sample-v7-none; do
		check_file "fresh $f" "$tmp/fresh/$f.dat"
	done
fi

# Fresh recordings of other systems, made with `tracekit record` in its own
# instance (no global state is touched): raw_syscalls, syscalls openat,
# workqueue, block (fsync'd writes), a uprobe with a number and a string
# argument, and a file with two buffer instances made by `trace-cmd
# extract`. Each: default and -t against trace-cmd, and the compiled
# printer against libtraceevent; the events these kernels use must all be
# compiled (no record through libtraceevent).
T=/sys/kernel/tracing

# compiled NAME FILE: --fallbacks counts no record printed by libtraceevent
compiled() {
	if "$tk" report --fallbacks -i "$2" 2>&1 >/dev/null |
	   grep -q ": 0 records printed by libtraceevent"; then
		pass "$1 all compiled"
	else
		fail "$1 all compiled" "$("$tk" report --fallbacks -i "$2" 2>&1 >/dev/null |
					  head -c 300)"
	fi
}

check_rec() {
	local tag=$1 file=$2
	sym_adds_nothing "$tag" "$file"
	compare "$tag default" "$file"
	compare "$tag -t" "$file" -t
	same_as_slow "$tag compiled == slow" "$file"
}

# file_off PROG SYMBOL: the file offset of SYMBOL (what a uprobe takes)
file_off() {
	local a typ o va fs ms rest
	a=$(nm "$1" 2>/dev/null | awk -v s="$2" '$3 == s { print $1 }')
	[ -n "$a" ] || return 1
	a=$((16#$a))
	while read -r typ o va _ fs ms rest; do
		[ "$typ" = LOAD ] || continue
		if [ "$a" -ge $((va)) ] && [ "$a" -lt $((va + ms)) ]; then
			printf '0x%x\n' $((a - va + o))
			return 0
		fi
	done < <(readelf -lW "$1")
	return 1
}

record_more() {
	local r=$tmp/rec
	mkdir -p "$r"
	if "$tk" record -q -e raw_syscalls -o "$r/raw.dat" -- ls / >/dev/null 2>&1; then
		check_rec "raw_syscalls" "$r/raw.dat"
		compare "raw_syscalls --cpu 0" "$r/raw.dat" --cpu 0
		compiled "raw_syscalls" "$r/raw.dat"
	else
		fail "record raw_syscalls"
	fi
	if "$tk" record -q -e syscalls:sys_enter_openat -e syscalls:sys_exit_openat \
		-o "$r/openat.dat" -- cat /etc/hostname >/dev/null 2>&1; then
		check_rec "openat" "$r/openat.dat"
		compiled "openat" "$r/openat.dat"
	else
		skip "openat" "cannot record syscalls:sys_enter_openat"
	fi
	if "$tk" record -q -e workqueue -o "$r/wq.dat" -- sh -c 'sync; sleep 0.1' \
		>/dev/null 2>&1; then
		check_rec "workqueue" "$r/wq.dat"
		compiled "workqueue" "$r/wq.dat"
	else
		fail "record workqueue"
	fi
	if "$tk" record -q -e block -o "$r/block.dat" -- sh -c "dd if=/dev/zero \
		of='$r/blk' bs=64k count=16 conv=fsync 2>/dev/null; rm -f '$r/blk'; sync" \
		>/dev/null 2>&1; then
		check_rec "block" "$r/block.dat"
		if [ "$(trace-cmd report -i "$r/block.dat" 2>/dev/null | wc -l)" -gt 1 ]; then
			compiled "block" "$r/block.dat"
		else
			skip "block all compiled" "no block events (no block device under $tmp?)"
		fi
	else
		fail "record block"
	fi
	record_uprobe "$r"
	record_instances "$r"
	record_lossy "$r"
}

# A 4 KiB buffer per CPU under a burst of syscalls: the kernel overwrites
# pages before they are read. trace-cmd's text (with its "CPU:C [N EVENTS
# DROPPED]" lines) stays as it is; stderr, --header and --stat count the
# losses per CPU, and the counts agree with the DROPPED lines.
record_lossy() {
	local r=$1 dropped hdr
	if ! "$tk" record -q -b 4 -e raw_syscalls -e sched -o "$r/lossy.dat" -- \
		sh -c 'ls -lR /usr/share/doc /usr/include >/dev/null 2>&1' >/dev/null 2>&1; then
		fail "record lossy"
		return
	fi
	dropped=$(trace-cmd report -i "$r/lossy.dat" 2>/dev/null |
		  awk '/^CPU:[0-9]+ \[[0-9]+ EVENTS DROPPED\]$/ { sub(/^CPU:[0-9]+ \[/, "");
		       n += $1 } END { print n + 0 }')
	if [ "$dropped" -eq 0 ]; then
		skip "lossy" "a 4 KiB buffer lost no event this time"
		return
	fi
	compare "lossy default" "$r/lossy.dat"
	if "$tk" report -i "$r/lossy.dat" 2>&1 >/dev/null |
	   grep -q "the kernel counted [0-9]* lost events"; then
		pass "lossy: stderr gives the kernel's counts"
	else
		fail "lossy stderr" "$("$tk" report -i "$r/lossy.dat" 2>&1 >/dev/null | head -3)"
	fi
	"$tk" report --header -i "$r/lossy.dat" > "$tmp/lossy.hdr" 2>/dev/null
	hdr=$(awk 'NR > 1 && /^# events lost: cpu [0-9]+: / {
		match($0, /pages: [0-9]+ flagged, [0-9]+ counted/); t = substr($0, RSTART, RLENGTH);
		split(t, w, " "); n += w[4] } !/^#/ && NR > 1 { exit } END { print n + 0 }' \
		"$tmp/lossy.hdr")
	if [ "$hdr" -eq "$dropped" ] &&
	   cmp -s <(grep -v '^# ' "$tmp/lossy.hdr") \
		<(trace-cmd report -i "$r/lossy.dat" 2>/dev/null)
	then
		pass "lossy: --header counts $dropped dropped events, the rest is trace-cmd's text"
	else
		fail "lossy --header" \
			"header says $hdr, trace-cmd $dropped: $(head -4 "$tmp/lossy.hdr")"
	fi
	if "$tk" report --stat -i "$r/lossy.dat" 2>/dev/null |
	   grep -q "^cpu [0-9]*: [0-9]* events, [1-9][0-9]* lost, .*; kernel: [1-9][0-9]* overrun"
	then
		pass "lossy: --stat gives lost and overrun counts"
	else
		fail "lossy --stat" "$("$tk" report --stat -i "$r/lossy.dat" 2>&1 | tail -3)"
	fi
}

record_uprobe() {
	local r=$1 name=tkrep$$ off1 off2
	if ! command -v cc >/dev/null 2>&1 || [ ! -w "$T/uprobe_events" ]; then
		skip "uprobe" "no C compiler or no writable uprobe_events"
		return
	fi
	cat > "$r/prog.c" <<'PROG'
#include <stdio.h>
__attribute__((noinline)) int tkr_num(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 2;
}
__attribute__((noinline)) int tkr_str(const char *s, int n)
{
	__asm__ volatile("" : "+r"(s), "+r"(n));
	return s[0] + n;
}
int main(void)
{
	static const char *const w[] = {"alpha", "", "a longer string with spaces"};
	int s = 0;

	for (int i = -3; i < 5; i++)
		s += tkr_num(i * 1000);
	for (int i = 0; i < 3; i++)
		s += tkr_str(w[i], i - 1);
	printf("%d\n", s);
	return 0;
}
PROG
	if ! cc -O1 -o "$r/prog" "$r/prog.c" 2>/dev/null ||
	   ! off1=$(file_off "$r/prog" tkr_num) || ! off2=$(file_off "$r/prog" tkr_str); then
		fail "uprobe" "cannot build the probed program"
		return
	fi
	# Appended (never truncated: other probes may exist), removed at once after.
	if ! echo "p:tkt/${name}n $r/prog:$off1 x=%di:s32" >> "$T/uprobe_events" 2>/dev/null; then
		skip "uprobe" "the kernel refused the uprobe"
		return
	fi
	if ! echo "p:tkt/${name}s $r/prog:$off2 s=+0(%di):string n=%si:s32" \
		>> "$T/uprobe_events" 2>/dev/null; then
		echo "-:tkt/${name}n" >> "$T/uprobe_events"
		skip "uprobe" "the kernel refused the string uprobe"
		return
	fi
	"$tk" record -q -e "tkt:${name}n" -e "tkt:${name}s" -o "$r/up.dat" -- "$r/prog" \
		>/dev/null 2>&1
	rc=$?
	echo "-:tkt/${name}n" >> "$T/uprobe_events"
	echo "-:tkt/${name}s" >> "$T/uprobe_events"
	if [ "$rc" -ne 0 ]; then
		fail "record uprobe"
		return
	fi
	if [ "$(trace-cmd report -i "$r/up.dat" 2>/dev/null | grep -c ') [xs]=')" -ne 11 ]; then
		fail "uprobe" "expected 11 probe hits: $(trace-cmd report -i "$r/up.dat" 2>&1 |
							 head -c 300)"
		return
	fi
	check_rec "uprobe" "$r/up.dat"
	compiled "uprobe" "$r/up.dat"
}

# Two instances of our own, read by `trace-cmd extract -B` (which removes
# them); the top buffer is neither read nor changed.
record_instances() {
	local r=$1 a=tkrepa$$ b=tkrepb$$ i
	for i in "$a" "$b"; do
		if ! mkdir "$T/instances/$i" 2>/dev/null; then
			skip "instances" "cannot create a tracefs instance"
			return
		fi
		echo 64 > "$T/instances/$i/buffer_size_kb"
	done
	echo 1 > "$T/instances/$a/events/sched/enable"
	echo 1 > "$T/instances/$b/events/irq/enable"
	echo 1 > "$T/instances/$b/events/sched/sched_switch/enable"
	sleep 0.2
	for i in "$a" "$b"; do echo 0 > "$T/instances/$i/tracing_on"; done
	trace-cmd extract -B "$a" -B "$b" -o "$r/inst.dat" >/dev/null 2>&1
	rc=$?
	for i in "$a" "$b"; do
		if [ -d "$T/instances/$i" ]; then
			echo 0 > "$T/instances/$i/events/enable"
			rmdir "$T/instances/$i"
		fi
	done
	if [ "$rc" -ne 0 ]; then
		fail "instances" "trace-cmd extract failed"
		return
	fi
	check_rec "instances" "$r/inst.dat"
	# trace-cmd 3.1.6 prints no instance record under --cpu (report.c).
	compare "instances --cpu 0" "$r/inst.dat" --cpu 0
	# (-F crashes trace-cmd 3.1.6 on files with instances: not compared.)
}

if [ "$(id -u)" -ne 0 ] || [ ! -w "$T/tracing_on" ]; then
	skip "tracekit record files" "needs root and tracefs at $T"
elif ! "$tk" record --help >/dev/null 2>&1; then
	skip "tracekit record files" "tracekit record is not available"
else
	record_more
fi

finish
