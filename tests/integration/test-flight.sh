#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# The flight recorder against the real kernel: tracekit start leaves a
# small overwrite buffer (-b 64) of sched events recording; a workload
# pinned to CPU 0 writes a first mark, then enough marks to overflow the
# buffer many times, then a last mark; tracekit extract must hold the last
# mark and not the first, trace-cmd report must read the file and find as
# many events as tracekit report; show and stat describe the buffer; stop
# turns it off; reset removes it, after which the tracefs state this test
# can see (the instance list, and set_event, tracing_on, buffer_size_kb,
# current_tracer of the top buffer) is exactly as before start.
#
# Needs root and tracefs; otherwise prints "SKIP: reason" and exits 77.
# The trace-cmd checks skip alone when it is missing. Not parallel: it
# owns the instance "tracekit" while it runs. Ends with
# "TK-COUNTS: passed=N failed=N skipped=N".

set -u

. "$(dirname "$0")/../lib.sh"
TRACEFS=/sys/kernel/tracing
INST=$TRACEFS/instances/tracekit

if [ "$(id -u)" -ne 0 ]; then
	skip "not root" "the flight recorder needs root"
	finish
fi
if [ ! -d $TRACEFS/instances ]; then
	mount -t tracefs nodev $TRACEFS 2>/dev/null
	if [ ! -d $TRACEFS/instances ]; then
		skip "no tracefs at $TRACEFS" "it cannot be mounted"
		finish
	fi
fi
if [ -d "$INST" ]; then
	skip "flight recorder" "$INST exists already: someone's flight recorder runs"
	finish
fi
if ! command -v taskset >/dev/null; then
	skip "flight recorder" "taskset is not installed (the workload must stay on one CPU)"
	finish
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-flight.XXXXXX") || exit 1
# Whatever happens, the instances this test made go.
trap 'rmdir "$INST" $TRACEFS/instances/tk-flight-b-$$ 2>/dev/null; rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

have_tc=false
command -v trace-cmd >/dev/null && have_tc=true

# What must be the same after reset as before start. The unit tests make
# and remove instances of their own (tk-unit-PID-N) while they run, without
# the tracefs lock: those come and go regardless of us.
state() {
	ls $TRACEFS/instances | grep -v '^tk-unit-'
	for f in set_event tracing_on buffer_size_kb current_tracer set_event_pid; do
		echo "$f: $(cat $TRACEFS/$f 2>/dev/null)"
	done
}
state >before

# Event lines of a report (header lines like "cpus=2" have no timestamp).
event_lines() { grep -c '\] *[0-9]*\.[0-9]*: ' "$1"; }
no_side_files() { ! compgen -G "$1.cpu*" >/dev/null && ! compgen -G "$1.tk*" >/dev/null; }

run start -e sched -b 64
check "start: exit 0, silent" eval 'rc_is 0 && [ ! -s "$tmp/out" ] && err_empty'
check "start made the instance, tracing on, overwrite mode" \
	eval '[ -d "$INST" ] && [ "$(cat $INST/tracing_on)" = 1 ] && [ "$(cat $INST/options/overwrite)" = 1 ]'
check "start set the buffer size (64 KiB, rounded up to pages)" \
	eval 'kb=$(cat $INST/buffer_size_kb); [ "${kb%% *}" -ge 64 ] && [ "${kb%% *}" -lt 128 ]'
check "start enabled sched in the instance, the top buffer untouched" \
	eval '[ "$(cat $INST/events/sched/enable)" = 1 ] && diff -q <(grep : before) <(state | grep :) >/dev/null'
run start -e sched
check "a second start is refused, the running one kept" \
	eval 'rc_is 1 && err_lines 1 && err_has "exists already" && [ "$(cat $INST/events/sched/enable)" = 1 ]'

run stat
check "stat names the instance, the events, the size, tracing on" \
	eval 'rc_is 0 && out_has "^Instance: tracekit" && out_has "^ Individual systems:" &&
	      out_has "^   sched$" && out_has "^Buffer size in kilobytes (per cpu):" &&
	      out_has "^Tracing is enabled"'
if $have_tc; then
	trace-cmd stat -B tracekit >tc-stat.txt 2>&1
	check "stat prints what trace-cmd stat -B tracekit prints" cmp -s tc-stat.txt "$tmp/out"
fi

# Each mark is ~60 bytes: 4000 of them fill a 64 KiB buffer several times
# over. The recorder is stopped right after the last mark, as a user stops
# it when the problem shows: the sched events of other processes on CPU 0
# (this machine is shared) would otherwise push the last mark out too.
taskset -c 0 bash -c "
	echo flight-first > $INST/trace_marker
	for i in \$(seq 4000); do echo flight-filler-\$i > $INST/trace_marker; done
	echo flight-last > $INST/trace_marker
	'$TRACEKIT' stop" >stop.out 2>&1
rc=$?
check "stop: exit 0, silent, tracing off, instance and events kept" \
	eval 'rc_is 0 && [ ! -s stop.out ] && [ "$(cat $INST/tracing_on)" = 0 ] && [ "$(cat $INST/events/sched/enable)" = 1 ]'

run stat
check "stat after stop says tracing is disabled" eval 'rc_is 0 && out_has "^Tracing is disabled"'
run show
check "show prints the kernel's text with the last mark, not the first" \
	eval 'rc_is 0 && out_has "^# tracer: nop" && out_has "flight-last" && ! out_has "flight-first"'
if $have_tc; then
	trace-cmd show -B tracekit >tc-show.txt 2>&1
	check "show prints what trace-cmd show -B tracekit prints" cmp -s tc-show.txt "$tmp/out"
fi
run show -c 0
check "show -c 0 prints CPU 0" eval 'rc_is 0 && out_has "flight-last"'
run show -c 1
check "show -c 1 does not print CPU 0's marks" eval 'rc_is 0 && ! out_has "flight-last"'

run extract -o flight.dat
check "extract: exit 0, one summary line counting overwritten events" \
	eval 'rc_is 0 && err_lines 1 && err_has "flight.dat (v7, zstd): [1-9][0-9]* events.*[1-9][0-9]* older events were overwritten"'
check "extract leaves no side file" no_side_files flight.dat
check "extract leaves a stopped recorder stopped" eval '[ "$(cat $INST/tracing_on)" = 0 ]'
"$TRACEKIT" report flight.dat >tk.txt 2>tk.err
rc=$?
check "tracekit report reads the file" rc_is 0
check "the file holds the last mark" grep -q 'flight-last' tk.txt
check "the file lost the first mark (overwritten)" eval '! grep -q "flight-first" tk.txt'
n_tk=$(event_lines tk.txt)
if $have_tc; then
	trace-cmd report -i flight.dat >tc.txt 2>tc.err
	rc=$?
	check "trace-cmd report reads the file" eval 'rc_is 0 && [ ! -s tc.err ]'
	n_tc=$(event_lines tc.txt)
	check "trace-cmd report finds the events tracekit report finds ($n_tc = $n_tk)" \
		eval '[ "$n_tc" -gt 0 ] && [ "$n_tc" -eq "$n_tk" ]'
	check "trace-cmd report finds the last mark, not the first" \
		eval 'grep -q flight-last tc.txt && ! grep -q flight-first tc.txt'
else
	skip "trace-cmd report of the extract" "trace-cmd is not installed"
fi

# On again. Extract consumes: a second one has only what came after the
# first, and leaves a running recorder running.
run restart
check "restart: exit 0, tracing on" eval 'rc_is 0 && err_empty && [ "$(cat $INST/tracing_on)" = 1 ]'
echo flight-second >$INST/trace_marker
run extract -o second.dat --file-version 6
check "a second extract (v6) works" eval 'rc_is 0 && err_has "second.dat (v6, none)"'
check "extract turns tracing back on (the recorder goes on)" eval '[ "$(cat $INST/tracing_on)" = 1 ]'
"$TRACEKIT" report second.dat >tk2.txt 2>/dev/null
check "the second extract holds the new mark, not the consumed ones" \
	eval 'grep -q flight-second tk2.txt && ! grep -q flight-last tk2.txt'
if $have_tc; then
	check "trace-cmd reads the v6 extract" eval 'trace-cmd report -i second.dat 2>/dev/null | grep -q flight-second'
fi
run extract -o third.dat -q
check "extract -q prints nothing" eval 'rc_is 0 && err_empty && [ -s third.dat ]'

run reset
check "reset removes the flight recorder" \
	eval 'rc_is 0 && out_has "removed $INST (flight recorder)" && [ ! -d "$INST" ]'
state >after
check "after reset tracefs is as before start" eval "diff before after >diff.txt || { cat diff.txt >&2; false; }"
run extract -o none.dat
check "extract after reset: one-line error, exit 1" \
	eval 'rc_is 1 && err_lines 1 && err_has "no flight recorder" && [ ! -e none.dat ]'

# -B NAME: another instance, removed by reset -B NAME only.
b=tk-flight-b-$$
run start -B "$b" -e sched:sched_switch -f 'prev_pid != 0' -e irq -C mono -P $$
check "start -B NAME makes that instance" eval 'rc_is 0 && [ -d $TRACEFS/instances/$b ] && [ ! -d "$INST" ]'
run stat -B "$b"
check "stat -B shows the systems, the single event, its filter, clock and pids" \
	eval 'rc_is 0 && out_has "^ Individual events:" && out_has "^        sched_switch" &&
	      out_has "sched:sched_switch \"prev_pid != 0\"" && out_has "^Clock: mono" &&
	      out_has "^Filtered event PIDs:" && out_has "^$$\$"'
if $have_tc; then
	trace-cmd stat -B "$b" >tc-stat-b.txt 2>&1
	check "stat -B prints what trace-cmd stat -B prints (filters, clock, pids)" \
		cmp -s tc-stat-b.txt "$tmp/out"
fi
run reset -B "$b"
check "reset -B NAME removes it" eval 'rc_is 0 && [ ! -d $TRACEFS/instances/$b ]'
state >after-b
check "after reset -B tracefs is as before" eval "diff before after-b >diff-b.txt || { cat diff-b.txt >&2; false; }"

finish
