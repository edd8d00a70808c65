#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit record --perf beyond tracepoints, with perf 6.1 as the oracle:
# software events by frequency and by period, callchains, per-command and
# system-wide targets, the side-band records perf needs to resolve symbols,
# build ids, hardware events (or their one-line refusal), and --append.
# Every file must be read by perf script with exactly the samples tracekit
# counted, and tracekit report must agree with perf script on the
# comm/pid/cpu/time/period/event columns and on every ip, symbol and dso
# of the test program and the kernel.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf_event_open of system-wide events needs root"; exit 77; fi
if ! command -v cc >/dev/null || ! command -v readelf >/dev/null; then
	echo "SKIP: needs cc and readelf for the test program"; exit 77
fi
dir=$(mktemp -d /tmp/tk-perf-record-it.XXXXXX)
bg=
trap '[ -n "$bg" ] && kill $bg 2>/dev/null; rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A small busy program: two named functions on the hot path, frame pointers
# for the callchains, a build id. LOOPS x ~1 ms of work.
cat >"$dir/busy.c" <<'EOF'
#include <stdlib.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long tk_leaf_work(unsigned long n)
{
	unsigned long x = 0;
	for (unsigned long i = 0; i < n; i++)
		x += i * i ^ (x >> 3);
	return x;
}
__attribute__((noinline)) unsigned long tk_middle_work(unsigned long n)
{
	return tk_leaf_work(n) + tk_leaf_work(n / 2);
}
int main(int argc, char **argv)
{
	unsigned long loops = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
	for (unsigned long i = 0; i < loops; i++)
		sink += tk_middle_work(1000000 + (i & 1) + (sink & 1));
	/*
	 * Time in the kernel, so that some sample has a kernel ip and the
	 * kernel's build id is written whatever else the machine is doing.
	 */
	for (int i = 0; i < 200000; i++)
		getppid();
	/* Switch out at least once: on an idle machine nothing else preempts us. */
	usleep(2000);
	return 0;
}
EOF
cc -O1 -g -fno-omit-frame-pointer -Wl,--build-id -o "$dir/busy" "$dir/busy.c" || { fail "cc"; exit 1; }
bid=$(readelf -n "$dir/busy" | awk '/Build ID:/ { print $3 }')
[ -n "$bid" ] || fail "busy has no build id"

# SAMPLE count of tracekit dump.
tk_samples() { "$TRACEKIT" dump "$1" 2>/dev/null | awk '/^records:/ { on = 1 } on && $1 == "SAMPLE:" { print $2 }'; }
# Samples perf script prints: one header line per sample (callchain lines start with a tab).
perf_samples() { perf script -i "$1" 2>/dev/null | grep -vc -e '^	' -e '^$'; }
check_counts() {
	local f=$1 ours theirs
	ours=$(tk_samples "$f")
	theirs=$(perf_samples "$f")
	[ -n "$ours" ] && [ "$ours" -gt 0 ] || fail "$f: tracekit counts no samples"
	[ "$ours" = "$theirs" ] || fail "$f: tracekit wrote $ours samples, perf script shows $theirs"
}
# tracekit report against perf script: sample headers whole, and the ip/sym/dso of every
# frame in the test program or the kernel (other libraries need their debug symbols).
check_report() {
	local f=$1
	perf script -i "$f" >"$f.perf" 2>/dev/null || fail "$f: perf script failed"
	"$TRACEKIT" report "$f" >"$f.tk" 2>"$f.err" || fail "$f: tracekit report: $(cat "$f.err")"
	[ "$(wc -l <"$f.perf")" = "$(wc -l <"$f.tk")" ] || fail "$f: report has $(wc -l <"$f.tk") lines, perf script $(wc -l <"$f.perf")"
	grep -v '^	' "$f.perf" | sed 's/ \+[0-9a-f]\+ [^ ]* (.*)$//' >"$f.perf.h"
	grep -v '^	' "$f.tk" | sed 's/ \+[0-9a-f]\+ [^ ]* (.*)$//' >"$f.tk.h"
	cmp -s "$f.perf.h" "$f.tk.h" || { fail "$f: sample headers differ"; diff "$f.perf.h" "$f.tk.h" | head -5; }
	grep -oE '[0-9a-f]+ [^ ]+ \((\[kernel.kallsyms\]|'"$dir"'/busy)\)$' "$f.perf" >"$f.perf.s"
	grep -oE '[0-9a-f]+ [^ ]+ \((\[kernel.kallsyms\]|'"$dir"'/busy)\)$' "$f.tk" >"$f.tk.s"
	[ -s "$f.perf.s" ] || fail "$f: perf script resolved no frame of busy or the kernel"
	cmp -s "$f.perf.s" "$f.tk.s" || { fail "$f: ip/sym/dso differ"; diff "$f.perf.s" "$f.tk.s" | head -5; }
}

# 1. cpu-clock -g around a command (4000 Hz): perf report names the program's functions,
#    perf buildid-list shows its build id.
"$TRACEKIT" record --perf -q -e cpu-clock -g -o "$dir/cg.data" -- "$dir/busy" 100 2>"$dir/cg.err" ||
	fail "record cpu-clock -g: $(cat "$dir/cg.err")"
check_counts "$dir/cg.data"
check_report "$dir/cg.data"
perf report --stdio -i "$dir/cg.data" >"$dir/cg.rep" 2>/dev/null || fail "perf report failed"
for fn in tk_leaf_work main; do
	grep -q "$fn" "$dir/cg.rep" || fail "perf report does not show $fn"
done
grep -q 'busy .*tk_leaf_work' <(perf report --stdio --no-children -i "$dir/cg.data" 2>/dev/null) ||
	fail "perf report: no self samples of tk_leaf_work in busy"
# CMDLINE holds the whole command, as perf stores "perf record ...".
perf report --header-only -i "$dir/cg.data" 2>/dev/null | grep -qF "# cmdline : $(command -v "$TRACEKIT" | xargs readlink -f) record --perf -q -e cpu-clock -g -o $dir/cg.data -- $dir/busy 100" ||
	fail "cmdline: $(perf report --header-only -i "$dir/cg.data" 2>/dev/null | grep cmdline)"
perf buildid-list -i "$dir/cg.data" >"$dir/cg.bid" 2>&1 || fail "perf buildid-list failed"
grep -q "^$bid $dir/busy\$" "$dir/cg.bid" || fail "perf buildid-list lacks busy ($bid): $(cat "$dir/cg.bid")"
grep -q '\[kernel.kallsyms\]' "$dir/cg.bid" || fail "perf buildid-list lacks the kernel"
perf script -i "$dir/cg.data" --show-mmap-events 2>/dev/null | grep -q "PERF_RECORD_MMAP2 .*r-xp $dir/busy" ||
	fail "no MMAP2 of busy"
perf script -i "$dir/cg.data" --show-task-events 2>/dev/null | grep -q 'PERF_RECORD_COMM exec: busy' ||
	fail "no exec COMM of busy"

# 2. page-faults every event (-c 1), task-clock by frequency: counts and report.
"$TRACEKIT" record --perf -q -e page-faults -c 1 -o "$dir/pf.data" -- "$dir/busy" 5 2>"$dir/pf.err" ||
	fail "record page-faults: $(cat "$dir/pf.err")"
check_counts "$dir/pf.data"
check_report "$dir/pf.data"
"$TRACEKIT" record --perf -q -e task-clock --freq 1000 -o "$dir/tc.data" -- "$dir/busy" 30 2>"$dir/tc.err" ||
	fail "record task-clock: $(cat "$dir/tc.err")"
check_counts "$dir/tc.data"
check_report "$dir/tc.data"

# 3. System-wide (-a) while busy runs already: its samples resolve through the
#    synthesized MMAP2 of a process that started before the recording.
"$dir/busy" 100000 &
bg=$!
sleep 0.1
"$TRACEKIT" record --perf -q -a -e cpu-clock -o "$dir/sw.data" --duration 0.3 2>"$dir/sw.err" ||
	fail "record -a: $(cat "$dir/sw.err")"
kill $bg 2>/dev/null
wait $bg 2>/dev/null
bg=
check_counts "$dir/sw.data"
perf script -i "$dir/sw.data" 2>/dev/null | grep -q "busy .*tk_leaf_work.*($dir/busy)" ||
	fail "-a: perf script does not resolve the running busy's samples"
perf script -i "$dir/sw.data" --show-mmap-events 2>/dev/null | grep -q 'PERF_RECORD_MMAP -1/0: .*\[kernel.kallsyms\]_text' ||
	fail "-a: no kernel MMAP"
perf buildid-list -i "$dir/sw.data" 2>/dev/null | grep -q "^$bid " || fail "-a: busy's build id missing"
"$TRACEKIT" report "$dir/sw.data" 2>/dev/null | grep -q "busy .*tk_leaf_work.*($dir/busy)" ||
	fail "-a: tracekit report does not resolve the running busy's samples"

# 4. Hardware events: recorded when the machine has a PMU, else one clear line.
if "$TRACEKIT" record --perf -q -e instructions -o "$dir/hw.data" -- "$dir/busy" 5 2>"$dir/hw.err"; then
	check_counts "$dir/hw.data"
else
	[ $? = 1 ] || fail "instructions: exit status is not 1"
	[ "$(wc -l <"$dir/hw.err")" = 1 ] || fail "instructions: more than one line: $(cat "$dir/hw.err")"
	grep -q 'event instructions: perf_event_open on CPU [0-9]*: ' "$dir/hw.err" ||
		fail "instructions: message '$(cat "$dir/hw.err")'"
	echo "SKIP (part): no hardware PMU here: $(cat "$dir/hw.err")"
fi

# 5. Append: two recordings in one file, perf script shows both; a changed
#    attr is refused and leaves the file as it was.
"$TRACEKIT" record --perf -q -e cpu-clock -o "$dir/ap.data" -- "$dir/busy" 20 2>"$dir/ap.err" ||
	fail "append: first recording: $(cat "$dir/ap.err")"
n1=$(tk_samples "$dir/ap.data")
"$TRACEKIT" record --perf -q --append -e cpu-clock -e sched:sched_switch -o "$dir/ap.data" -- \
	"$dir/busy" 20 2>"$dir/ap.err" || fail "append: $(cat "$dir/ap.err")"
check_counts "$dir/ap.data"
check_report "$dir/ap.data"
pids=$(perf script -i "$dir/ap.data" -F comm,pid 2>/dev/null | awk '$1 == "busy" { print $2 }' | sort -u | wc -l)
[ "$pids" = 2 ] || fail "append: perf script shows $pids busy processes, not 2"
[ "$(tk_samples "$dir/ap.data")" -gt "$n1" ] || fail "append: no new samples"
perf script -i "$dir/ap.data" 2>/dev/null | grep -q 'sched:sched_switch:' || fail "append: no tracepoint samples"
perf buildid-list -i "$dir/ap.data" 2>/dev/null | grep -q "^$bid " || fail "append: busy's build id missing"
# Each refusal names the event and says in words what differs; the file stays as it was.
sum=$(md5sum <"$dir/ap.data")
refuse() {
	local want=$1
	shift
	if "$TRACEKIT" record --perf -q --append -o "$dir/ap.data" "$@" 2>"$dir/ap.err"; then
		fail "append $* accepted"
	else
		[ $? = 1 ] && [ "$(wc -l <"$dir/ap.err")" = 1 ] && grep -qF "$want" "$dir/ap.err" ||
			fail "append $*: message '$(cat "$dir/ap.err")', wanted '$want'"
	fi
	[ "$sum" = "$(md5sum <"$dir/ap.data")" ] || fail "append $* changed the file"
}
refuse "cannot append: event cpu-clock was recorded with other settings: the file sampled at 4000 Hz (--freq), this recording every 100000 events (-c); the file is left as it was" \
	-e cpu-clock -c 100000 -- "$dir/busy" 2
refuse "cannot append: event sched:sched_switch was recorded with other settings: the file was recorded following a command, this recording is system-wide (-a); the file is left as it was" \
	-a -e sched:sched_switch --duration 0.1
refuse "event cpu-clock was recorded with other settings: this recording's samples carry CALLCHAIN (-g), the file's do not;" \
	-g -e cpu-clock -- "$dir/busy" 2

# 6. A recorder killed with SIGKILL mid-recording leaves a file perf and tracekit
#    read, holding every event drained before the last commit (~100 ms). sysc makes
#    K getppid calls (NR 110) once told to, then getpid calls until killed; the
#    recorder follows only sysc's syscalls and is killed while they still stream.
cat >"$dir/sysc.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	int k = atoi(argv[1]);
	while (access(argv[2], F_OK))
		usleep(10000);
	for (int i = 0; i < k; i++)
		syscall(SYS_getppid);
	fclose(fopen(argv[3], "w"));
	for (;;) {
		syscall(SYS_getpid);
		usleep(100);
	}
}
EOF
K=1000
if cc -O2 -o "$dir/sysc" "$dir/sysc.c"; then
	"$dir/sysc" $K "$dir/go" "$dir/done" &
	sp=$!
	"$TRACEKIT" record --perf -q -a -e raw_syscalls:sys_enter -f "common_pid == $sp" \
		-o "$dir/kill.data" 2>"$dir/kill.err" &
	rp=$!
	# Recording has begun once the header's data size (offset 48) is set.
	for _ in $(seq 100); do
		[ "$(od -An -tu8 -j48 -N8 "$dir/kill.data" 2>/dev/null | tr -d ' ')" -gt 0 ] 2>/dev/null && break
		sleep 0.05
	done
	touch "$dir/go"
	for _ in $(seq 100); do [ -e "$dir/done" ] && break; sleep 0.05; done
	sleep 0.3
	kill -9 $rp
	wait $rp 2>/dev/null
	kill $sp
	wait $sp 2>/dev/null
	perf script -i "$dir/kill.data" >"$dir/kill.perf" 2>"$dir/kill.perr" ||
		fail "killed: perf script failed: $(head -3 "$dir/kill.perr")"
	grep -q 'incompatible\|broken\|data size field is 0' "$dir/kill.perr" &&
		fail "killed: perf script says: $(head -3 "$dir/kill.perr")"
	n=$(grep -c " $sp .*NR 110 " "$dir/kill.perf")
	[ "$n" = $K ] || fail "killed: perf script shows $n getppid calls of sysc, not $K"
	grep -q " $sp .*NR 39 " "$dir/kill.perf" || fail "killed: no getpid call after the $K getppid"
	"$TRACEKIT" report "$dir/kill.data" >"$dir/kill.tk" 2>"$dir/kill.tkerr" ||
		fail "killed: tracekit report: $(cat "$dir/kill.tkerr")"
	cmp -s "$dir/kill.perf" "$dir/kill.tk" ||
		{ fail "killed: tracekit report differs from perf script"; diff "$dir/kill.perf" "$dir/kill.tk" | head -5; }
	# Nothing to warn about: the committed table is a valid file state.
	[ ! -s "$dir/kill.tkerr" ] || fail "killed: tracekit report warns: $(head -3 "$dir/kill.tkerr")"
	perf report --header-only -I -i "$dir/kill.data" 2>&1 | grep -q 'name = raw_syscalls:sys_enter' ||
		fail "killed: perf report --header-only does not show the event"
	perf buildid-list -i "$dir/kill.data" >/dev/null 2>&1 || fail "killed: perf buildid-list failed"
	# A converted file's CMDLINE is the convert command (its words in their order).
	"$TRACEKIT" convert -q "$dir/kill.data" -o "$dir/kill.dat" 2>/dev/null &&
		"$TRACEKIT" convert -q "$dir/kill.dat" -o "$dir/conv.data" 2>"$dir/conv.err" ||
		fail "convert of the killed file: $(cat "$dir/conv.err")"
	perf report --header-only -i "$dir/conv.data" 2>/dev/null | grep -q "# cmdline : .*tracekit convert -q $dir/kill.dat -o $dir/conv.data \?$" ||
		fail "convert cmdline: $(perf report --header-only -i "$dir/conv.data" 2>/dev/null | grep cmdline)"
else
	fail "cc sysc.c"
fi

# 7. -k CLOCK as perf spells it: the attrs, CLOCKID and CLOCK_DATA say which clock,
#    perf prints them and converts with them; sample times are that clock's.
hdr_of() { perf report --header-only -I -i "$1" 2>&1; }
"$TRACEKIT" record --perf -q -k mono -a -e sched:sched_switch -o "$dir/mono.data" --duration 0.3 \
	2>"$dir/mono.err" || fail "-k mono: $(cat "$dir/mono.err")"
hdr_of "$dir/mono.data" >"$dir/mono.hdr"
grep -q 'sched:sched_switch.*use_clockid = 1, clockid = 1$' "$dir/mono.hdr" || fail "-k mono: attr lacks clockid 1"
grep -q '^# clockid frequency: [0-9]* MHz$' "$dir/mono.hdr" || fail "-k mono: no clockid frequency line"
grep -q '^# clockid: monotonic (1)$' "$dir/mono.hdr" || fail "-k mono: no clockid line"
ref=$(sed -n 's/^# reference time: .* (TOD) = \([0-9.]*\) (monotonic)$/\1/p' "$dir/mono.hdr")
[ -n "$ref" ] || fail "-k mono: no reference time line: $(grep -i clock "$dir/mono.hdr")"
perf script -i "$dir/mono.data" >"$dir/mono.perf" 2>"$dir/mono.perr" || fail "-k mono: perf script failed"
[ -s "$dir/mono.perf" ] || fail "-k mono: perf script printed nothing: $(head -2 "$dir/mono.perr")"
t=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { sub(":", "", $i); print $i; exit } }' "$dir/mono.perf")
awk -v t="${t:-0}" -v r="${ref:-0}" 'BEGIN { exit !(t >= r && t < r + 2) }' ||
	fail "-k mono: first sample at $t, not just after the monotonic reference $ref"
perf script -F+tod -i "$dir/mono.data" 2>/dev/null | head -1 | grep -q "$(date +%Y-%m-%d) " ||
	fail "-k mono: perf script -F+tod shows no wall-clock date"
"$TRACEKIT" report "$dir/mono.data" >"$dir/mono.tk" 2>/dev/null
cmp -s "$dir/mono.perf" "$dir/mono.tk" || fail "-k mono: tracekit report differs from perf script"
"$TRACEKIT" record --perf -q -k CLOCK_REALTIME -e cpu-clock -o "$dir/rt.data" -- "$dir/busy" 5 \
	2>"$dir/rt.err" || fail "-k realtime: $(cat "$dir/rt.err")"
hdr_of "$dir/rt.data" | grep -q '^# clockid: realtime (0)$' || fail "-k realtime: no clockid line"
check_counts "$dir/rt.data"
t=$(perf script -F time -i "$dir/rt.data" 2>/dev/null | head -1 | tr -d ' :')
awk -v t="${t:-0}" -v now="$(date +%s)" 'BEGIN { exit !(t > now - 30 && t < now + 1) }' ||
	fail "-k realtime: sample time $t is not the time of day $(date +%s)"
# Tracepoints take only NMI-safe clocks: one line, exit 1; an unknown name is a usage error.
"$TRACEKIT" record --perf -q -k boot -e sched:sched_switch -o "$dir/x.data" --duration 0.1 2>"$dir/x.err"
[ $? = 1 ] && [ "$(wc -l <"$dir/x.err")" = 1 ] && grep -q 'need mono or raw' "$dir/x.err" ||
	fail "-k boot on a tracepoint: '$(cat "$dir/x.err")'"
"$TRACEKIT" record --perf -q -k sundial -e cpu-clock -o "$dir/x.data" -- true 2>"$dir/x.err"
[ $? = 2 ] && grep -q "unknown clock 'sundial'" "$dir/x.err" || fail "-k sundial: '$(cat "$dir/x.err")'"
# Without -k nothing changes: no clock features, no use_clockid.
hdr_of "$dir/cg.data" | grep -q '^# missing features: .*CLOCKID.*CLOCK_DATA' || fail "without -k: clock features present"
hdr_of "$dir/cg.data" | grep -q 'use_clockid' && fail "without -k: use_clockid set"
# A .dat on the mono trace clock converts to perf.data with use_clockid and CLOCKID.
"$TRACEKIT" convert -q "$dir/mono.data" -o "$dir/mono.dat" 2>/dev/null &&
	"$TRACEKIT" convert -q "$dir/mono.dat" -o "$dir/mono2.data" 2>"$dir/conv.err" || fail "convert mono: $(cat "$dir/conv.err")"
hdr_of "$dir/mono2.data" >"$dir/mono2.hdr"
grep -q 'use_clockid = 1, clockid = 1$' "$dir/mono2.hdr" && grep -q '^# clockid frequency: ' "$dir/mono2.hdr" ||
	fail "convert mono: clock lost: $(grep -i clock "$dir/mono2.hdr")"

# 8. Usage: perf-only options without --perf, a filter on a counter, --freq with -c.
"$TRACEKIT" record -g -e sched:sched_switch -o "$dir/x.dat" -- true 2>/dev/null
[ $? = 2 ] || fail "-g without --perf is not a usage error"
"$TRACEKIT" record --perf -e cpu-clock --freq 100 -c 10 -o "$dir/x.data" -- true 2>/dev/null
[ $? = 2 ] || fail "--freq with -c is not a usage error"
"$TRACEKIT" record --perf -e cpu-clock -f 'pid == 1' -o "$dir/x.data" -- true 2>"$dir/x.err"
[ $? = 1 ] && grep -q 'tracepoints only' "$dir/x.err" || fail "filter on cpu-clock: '$(cat "$dir/x.err")'"

# 9. record --perf speaks perf: perf's letters and lists, as a user types them.
evl() { perf evlist -v -i "$1" 2>/dev/null; }
# The same cpu-clock profile by perf and by tracekit: every symbol with 2 % or more in
# one report is among the other's top ten.
perf record -q -e cpu-clock -o "$dir/perf.data" -- "$dir/busy" 100 >/dev/null 2>&1 || fail "perf record busy"
"$TRACEKIT" record --perf -q -e cpu-clock -o "$dir/tk.data" -- "$dir/busy" 100 2>"$dir/tk.err" ||
	fail "cpu-clock profile: $(cat "$dir/tk.err")"
top() { perf report --stdio --sort comm,dso,sym -i "$1" 2>/dev/null | grep -v -e '^#' -e '^$' | head -10; }
top "$dir/perf.data" >"$dir/top.perf"
top "$dir/tk.data" >"$dir/top.tk"
for pair in "perf tk" "tk perf"; do
	set -- $pair
	awk '$1 + 0 >= 2 { $1 = ""; print }' "$dir/top.$1" | while read -r line; do
		awk '{ $1 = ""; print }' "$dir/top.$2" | grep -qxF " $line" ||
			echo "FAIL: top symbols: '$line' of $1's recording is not in $2's top ten"
	done
done >"$dir/top.fails"
[ -s "$dir/top.fails" ] && { cat "$dir/top.fails"; fail "top ten differ"; cat "$dir/top.perf" "$dir/top.tk"; }
grep -q 'tk_leaf_work' "$dir/top.tk" || fail "tracekit profile: no tk_leaf_work: $(cat "$dir/top.tk")"
# The host features perf writes: CPU and NUMA topology, PMU mappings, caches and memory
# blocks, printed as perf prints its own.
for f in perf tk; do
	perf report --header-only -I -i "$dir/$f.data" 2>/dev/null |
		grep -e '^# sibling' -e '^# CPU [0-9]*: Core ID' -e '^# node[0-9]* cpu list' -e '^# pmu mappings' \
			-e '^#  L[0-9] ' -e '^# memory nodes' -e '^#  *[0-9]* \[' >"$dir/host.$f"
done
[ -s "$dir/host.tk" ] && cmp -s "$dir/host.perf" "$dir/host.tk" ||
	{ fail "host features differ from perf's"; diff "$dir/host.perf" "$dir/host.tk" | head -5; }
# Tracepoint samples carry IP, so perf script prints ip and sym.
"$TRACEKIT" record --perf -q -e sched:sched_switch -o "$dir/tp.data" -- "$dir/busy" 2 2>"$dir/tp.err" ||
	fail "sched_switch: $(cat "$dir/tp.err")"
perf script -F comm,pid,tid,cpu,time,event,ip,sym -i "$dir/tp.data" >"$dir/tp.out" 2>"$dir/tp.perr" ||
	fail "perf script -F ...,ip,sym: $(head -2 "$dir/tp.perr")"
grep -q 'sched:sched_switch: *[0-9a-f]\+ [a-z_]' "$dir/tp.out" ||
	fail "perf script -F ...,ip,sym: no ip and symbol: $(head -2 "$dir/tp.out")"
evl "$dir/tp.data" | grep -q 'sample_type: IP|TID|TIME|CPU|PERIOD|RAW|IDENTIFIER' ||
	fail "tracepoint sample_type: $(evl "$dir/tp.data" | head -1)"
# -F is the frequency and -e takes comma lists.
"$TRACEKIT" record --perf -q -F 999 -e page-faults,task-clock -o "$dir/fl.data" -- "$dir/busy" 5 \
	2>"$dir/fl.err" || fail "-F 999 -e page-faults,task-clock: $(cat "$dir/fl.err")"
[ "$(evl "$dir/fl.data" | grep -c -e '^page-faults: .*sample_freq }: 999,' -e '^task-clock: .*sample_freq }: 999,')" = 2 ] ||
	fail "-F 999 -e page-faults,task-clock: $(evl "$dir/fl.data")"
check_counts "$dir/fl.data"
# -c is the period.
"$TRACEKIT" record --perf -q -c 50000 -e cpu-clock -o "$dir/c.data" -- "$dir/busy" 5 2>"$dir/c.err" ||
	fail "-c 50000: $(cat "$dir/c.err")"
evl "$dir/c.data" | grep -q '^cpu-clock: .*sample_freq }: 50000,' || fail "-c 50000: $(evl "$dir/c.data")"
evl "$dir/c.data" | grep -q '^cpu-clock: .* freq: 1' && fail "-c 50000: still sampled by frequency"
# {a,b} is a group: perf's header shows it, the member opens enabled under its leader.
"$TRACEKIT" record --perf -q -e '{cpu-clock,page-faults}' -o "$dir/grp.data" -- "$dir/busy" 5 \
	2>"$dir/grp.err" || fail "group: $(cat "$dir/grp.err")"
perf report --header-only -i "$dir/grp.data" 2>/dev/null | grep -q '^# group: {cpu-clock,page-faults}$' ||
	fail "group: no '# group' line: $(perf report --header-only -i "$dir/grp.data" 2>&1 | grep -i group)"
check_counts "$dir/grp.data"
# cycles without a hardware PMU falls back to cpu-clock, with a note; with one it is cycles.
"$TRACEKIT" record --perf -q -e cycles -o "$dir/cy.data" -- "$dir/busy" 5 2>"$dir/cy.err" ||
	fail "cycles: $(cat "$dir/cy.err")"
if grep -q 'falling back' "$dir/cy.err"; then
	grep -qx 'tracekit record: warning: the cycles event is not supported, falling back to cpu-clock' "$dir/cy.err" ||
		fail "cycles fallback note: $(cat "$dir/cy.err")"
	evl "$dir/cy.data" | grep -q '^cpu-clock: type: 1,' || fail "cycles fallback: $(evl "$dir/cy.data")"
else
	evl "$dir/cy.data" | grep -q '^cycles: type: 0,' || fail "cycles: $(evl "$dir/cy.data")"
fi
check_counts "$dir/cy.data"
# -p PID and -t TID follow a running process; -C restricts to CPUs.
"$dir/busy" 100000 &
bg=$!
busy_pid=$bg
sleep 0.1
"$TRACEKIT" record --perf -q -p $bg -e cpu-clock -o "$dir/p.data" --duration 0.3 2>"$dir/p.err" ||
	fail "-p: $(cat "$dir/p.err")"
"$TRACEKIT" record --perf -q -t $bg -e cpu-clock -o "$dir/t.data" --duration 0.3 2>"$dir/t.err" ||
	fail "-t: $(cat "$dir/t.err")"
"$TRACEKIT" record --perf -q -C 0 -e cpu-clock -o "$dir/cpu.data" --duration 0.3 2>"$dir/cpu.err" ||
	fail "-C 0: $(cat "$dir/cpu.err")"
kill $bg 2>/dev/null
wait $bg 2>/dev/null
bg=
for f in p t; do
	perf script -F pid,ip,sym -i "$dir/$f.data" 2>/dev/null >"$dir/$f.out"
	[ -s "$dir/$f.out" ] || fail "-$f: no samples"
	[ "$(awk '{ print $1 }' "$dir/$f.out" | sort -u)" = "$busy_pid" ] ||
		fail "-$f: samples of other processes than $busy_pid: $(awk '{ print $1 }' "$dir/$f.out" | sort -u | head -3)"
	grep -q tk_leaf_work "$dir/$f.out" || fail "-$f: busy's symbols not resolved: $(head -3 "$dir/$f.out")"
	check_counts "$dir/$f.data"
done
[ -z "$(perf script -F cpu -i "$dir/cpu.data" 2>/dev/null | grep -v '^ *\[000\] *$')" ] ||
	fail "-C 0: samples of other CPUs"
# Without --duration, -p records until the process exits, as perf does.
"$dir/busy" 300 &
bg=$!
busy_pid=$bg
timeout 30 "$TRACEKIT" record --perf -q -p $busy_pid -e cpu-clock -o "$dir/pe.data" 2>"$dir/pe.err" ||
	fail "-p until the exit: rc $?: $(cat "$dir/pe.err")"
wait $bg 2>/dev/null
bg=
perf script -F pid,ip,sym -i "$dir/pe.data" 2>/dev/null | grep -q "^ *$busy_pid .*tk_leaf_work" ||
	fail "-p until the exit: no samples of busy"
# --call-graph dwarf: user registers and stack, unwound by perf; fp is -g; lbr needs the CPU's LBR.
"$TRACEKIT" record --perf -q --call-graph dwarf,4096 -e cpu-clock -o "$dir/dw.data" -- "$dir/busy" 20 \
	2>"$dir/dw.err" || fail "--call-graph dwarf: $(cat "$dir/dw.err")"
evl "$dir/dw.data" | grep -q '^cpu-clock: .*REGS_USER|STACK_USER.*sample_regs_user: 0xff0fff, sample_stack_user: 4096' ||
	fail "--call-graph dwarf attr: $(evl "$dir/dw.data" | head -1)"
perf script -i "$dir/dw.data" 2>/dev/null | grep -q 'tk_middle_work' || fail "--call-graph dwarf: perf unwinds no tk_middle_work"
if ! "$TRACEKIT" record --perf -q --call-graph lbr -e cpu-clock -o "$dir/lbr.data" -- true 2>"$dir/lbr.err"; then
	grep -q 'lbr needs a hardware event' "$dir/lbr.err" || fail "--call-graph lbr: '$(cat "$dir/lbr.err")'"
fi

[ $fails = 0 ] && echo "PASS: record --perf: counters, callchains, -a, build ids, append, SIGKILL, -k, perf's options" && exit 0
exit 1
