#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# make-sample.sh OUTDIR: record a short real trace and write it three ways:
#   OUTDIR/sample-v7-zstd.dat   trace-cmd extract (v7, zstd: its default)
#   OUTDIR/sample-v6.dat        trace-cmd convert --file-version 6 --compression none
#   OUTDIR/sample-v7-none.dat   trace-cmd convert --compression none
#
# Function tracing and `trace-cmd record` are refused on the machines this
# project targets (spec section 7.2), so the trace is made the way that
# works there: enable sched, irq and timer events in the top instance, turn
# tracing on around a small workload, then let `trace-cmd extract` read the
# ring buffer. The per-CPU buffer is shrunk to 64 KiB so the file stays near
# 1 MB (the kallsyms section dominates it).
#
# Tracing state is global: tracing_on, buffer_size_kb and the set of enabled
# events are saved first and restored on exit, whatever happens; the buffer
# is cleared and no instance is created.
#
# Exit status: 0 done, 77 skipped (not root, no tracefs, no trace-cmd), 1 failed.
set -u

outdir=${1:?usage: make-sample.sh OUTDIR}
T=/sys/kernel/tracing

skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "make-sample.sh needs root to use tracefs"
command -v trace-cmd >/dev/null 2>&1 || skip "trace-cmd is not installed"
if [ ! -e "$T"/tracing_on ]; then
	mount -t tracefs nodev "$T" 2>/dev/null || skip "cannot mount tracefs at $T"
	[ -e "$T"/tracing_on ] || skip "no tracefs at $T"
fi
[ -w "$T"/tracing_on ] || skip "$T/tracing_on is not writable"
for sys in sched irq timer; do
	[ -e "$T"/events/$sys/enable ] || skip "kernel has no $sys events"
done
mkdir -p "$outdir" || exit 1

saved_on=$(cat "$T"/tracing_on)
saved_kb=$(cat "$T"/buffer_size_kb)
saved_events=$(cat "$T"/set_event)

# shellcheck disable=SC2317 # runs from the EXIT trap
restore() {
	echo 0 > "$T"/tracing_on
	echo 0 > "$T"/events/enable
	: > "$T"/trace
	# buffer_size_kb reads "7 (expanded: 1408)" before the first resize.
	echo "${saved_kb%% *}" > "$T"/buffer_size_kb 2>/dev/null
	if [ -n "$saved_events" ]; then
		while read -r ev; do
			echo "$ev" >> "$T"/set_event
		done <<< "$saved_events"
	fi
	echo "$saved_on" > "$T"/tracing_on
}
trap restore EXIT
trap 'exit 1' INT TERM HUP

fail() { echo "make-sample.sh: $*" >&2; exit 1; }

echo 0 > "$T"/tracing_on
echo 0 > "$T"/events/enable
echo 64 > "$T"/buffer_size_kb || fail "cannot set buffer_size_kb"
: > "$T"/trace
for sys in sched irq timer; do
	echo 1 > "$T"/events/$sys/enable || fail "cannot enable $sys events"
done

echo 1 > "$T"/tracing_on
echo "tracekit-sample: start" > "$T"/trace_marker
# A small workload of about 0.3 s: short sleeps make timer and sched_switch
# events on both CPUs, forks make sched_process_* events.
for i in 1 2 3 4 5 6; do
	echo "tracekit-sample: marker $i" > "$T"/trace_marker
	sleep 0.03 &
	/bin/true
	sleep 0.02
	wait
done
echo "tracekit-sample: stop" > "$T"/trace_marker
echo 0 > "$T"/tracing_on

zstd_file=$outdir/sample-v7-zstd.dat
rm -f "$zstd_file" "$outdir/sample-v6.dat" "$outdir/sample-v7-none.dat"
trace-cmd extract -o "$zstd_file" > "$outdir/extract.log" 2>&1 ||
	fail "trace-cmd extract failed: $(tail -n 3 "$outdir/extract.log")"
rm -f "$outdir/extract.log"
trace-cmd convert --file-version 6 --compression none -i "$zstd_file" \
	-o "$outdir/sample-v6.dat" >/dev/null 2>&1 || fail "trace-cmd convert to v6 failed"
trace-cmd convert --compression none -i "$zstd_file" \
	-o "$outdir/sample-v7-none.dat" >/dev/null 2>&1 || fail "trace-cmd convert to v7 none failed"
exit 0
