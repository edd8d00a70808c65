#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# make-counters.sh TRACEKIT OUTDIR: record the counter fixtures of
# tests/cli/test-export-counters.sh (README.md here says what each holds).
# Needs root, tracefs and perf; run it under flock /tmp/tracefs.lock.
#   idle.dat     tracekit record of power:cpu_idle, power:cpu_frequency and
#                sched:sched_switch around `sleep 2`. A CPU idles only when
#                it has nothing to run: on a busy machine there are few
#                cpu_idle events (retry when uptime's load is below 1). The
#                kallsyms the file saves is cut to three lines (a private
#                mount namespace binds a copy over /proc/kallsyms): these
#                events print no kernel address, and the file stays ~80 KB
#                instead of ~1.1 MB.
#   rss.dat      tracekit record -F of kmem:rss_stat, sched_process_fork and
#                sched_process_exec around `ls` and a python3 that takes
#                8 MB (kallsyms cut the same way).
#   group-s.data perf record -s of the group {task-clock,page-faults}:S at
#                200 Hz around a short python3 loop: every sample carries the
#                group's PERF_SAMPLE_READ values (read_format GROUP, ID,
#                TOTAL_TIME_ENABLED/RUNNING, LOST) and no CPU.
#   group-a.data perf record -a of {cpu-clock,page-faults}:S at 100 Hz
#                around `sleep 0.3`: READ values (GROUP, ID, LOST) with the
#                CPU of each sample.
#   ungrouped.data perf record of two ungrouped counting events,
#                task-clock and page-faults, at 200 Hz with --sample-cpu
#                around a python3 that takes 30 MB and loops: each event
#                samples on its own, with its own periods.
set -eu
tk=$(realpath "$1")
out=$(realpath "$2")
command -v perf >/dev/null || { echo "SKIP: perf is not installed"; exit 77; }
[ -d /sys/kernel/tracing/events/power ] || { echo "SKIP: no tracefs power events"; exit 77; }
ks=$(mktemp)
trap 'rm -f "$ks"' EXIT
head -3 /proc/kallsyms >"$ks"
unshare -m sh -c "mount --bind '$ks' /proc/kallsyms && '$tk' record -o '$out/idle.dat' \
	-e power:cpu_idle -e power:cpu_frequency -e sched:sched_switch sleep 2"
unshare -m sh -c "mount --bind '$ks' /proc/kallsyms && '$tk' record -F -o '$out/rss.dat' \
	-e kmem:rss_stat -e sched:sched_process_fork -e sched:sched_process_exec -- \
	sh -c 'ls /usr >/dev/null; python3 -c \"x = bytearray(8000000)\"'"
perf record -o "$out/group-s.data" -F 200 -e '{task-clock,page-faults}:S' -s -- \
	python3 -c 'x = [i * i for i in range(2000000)]; sum(x)'
perf record -o "$out/group-a.data" --synth=task -a -F 100 -e '{cpu-clock,page-faults}:S' -- sleep 0.3
perf record -o "$out/ungrouped.data" --sample-cpu -F 200 -e task-clock -e page-faults -- \
	python3 -c 'x = bytearray(30000000); y = [i * i for i in range(1500000)]; sum(y)'
