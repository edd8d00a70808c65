#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# record finishes on time and loses nothing under a syscall storm (issue 22).
#
# One process per online CPU, pinned to it, calls getppid() in a loop;
# tracekit record -e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid
# --duration 3 runs beside them with the default buffer. Checks: the command
# returns within the duration + 1 s (the pages are compressed while
# recording, so nothing large is left for after the stop), no event is lost
# or the summary names the -b that would have kept them, and trace-cmd
# report reads the file and finds as many getppid events as the summary
# counted.
#
# The wall-time check needs a release build: under ASan or TSan (make check)
# the recorder's own code runs several times slower, so there it is skipped
# with that reason and `meson test -C build record-storm` is what times it.
#
# TK_STORM_TSAN=1 (the tsan suite, a ThreadSanitizer tracekit): one second,
# no timing and no trace-cmd checks; what counts there is that the capture
# and compressor threads run their course without a report (halt_on_error).
#
# Needs root, tracefs and a C compiler; otherwise prints "SKIP: reason" and
# exits 77. The trace-cmd check skips alone without trace-cmd. Touches
# tracefs: not parallel (run it under flock /tmp/tracefs.lock by hand).
# Ends with "TK-COUNTS: passed=N failed=N skipped=N".

set -u

. "$(dirname "$0")/../lib.sh"
TRACEFS=/sys/kernel/tracing
SECONDS_REC=3
TSAN_RUN=${TK_STORM_TSAN:-0}
[ "$TSAN_RUN" = 1 ] && SECONDS_REC=1

if [ "$(id -u)" -ne 0 ]; then
	skip "not root" "recording needs root"
	finish
fi
if [ ! -d $TRACEFS/instances ]; then
	mount -t tracefs nodev $TRACEFS 2>/dev/null
	if [ ! -d $TRACEFS/instances ]; then
		skip "no tracefs at $TRACEFS" "it cannot be mounted"
		finish
	fi
fi
if [ ! -d $TRACEFS/events/syscalls/sys_enter_getppid ]; then
	skip "no syscalls:sys_enter_getppid" "the kernel has no syscall events"
	finish
fi
if ! command -v cc >/dev/null; then
	skip "getppid storm" "no C compiler"
	finish
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-storm.XXXXXX") || exit 1
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

cat >"$tmp/storm.c" <<'CEOF'
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

/* storm SECONDS CPU: getppid() in a loop on CPU for SECONDS. */
int main(int argc, char **argv)
{
	struct timespec t0, t;
	double secs = argc > 2 ? atof(argv[1]) : 1;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(argc > 2 ? atoi(argv[2]) : 0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		for (int i = 0; i < 10000; i++)
			syscall(SYS_getppid);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 > secs)
			return 0;
	}
}
CEOF
if ! cc -O2 -o "$tmp/storm" "$tmp/storm.c" 2>"$tmp/cc.err"; then
	skip "getppid storm" "the C compiler failed: $(head -c 300 "$tmp/cc.err")"
	finish
fi

ncpu=$(nproc)
for ((c = 0; c < ncpu; c++)); do
	"$tmp/storm" $((SECONDS_REC + 5)) $c &
	pids+=($!)
done
sleep 0.5
t0=$(date +%s%N)
run record -e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid \
	--duration $SECONDS_REC -o "$tmp/storm.dat"
t1=$(date +%s%N)
for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null
pids=()
ms=$(((t1 - t0) / 1000000))
echo "record --duration $SECONDS_REC under the storm: ${ms} ms"
grep "tracekit record: $tmp" "$tmp/err"

check "record under a getppid storm: exit 0" rc_is 0
if [ "$TSAN_RUN" = 1 ] || ldd "$TRACEKIT" 2>/dev/null | grep -q 'lib[at]san'; then
	skip "wall time" "sanitizer build (${ms} ms); the release build is timed"
else
	check "record --duration $SECONDS_REC returns within $((SECONDS_REC + 1)) s (took ${ms} ms)" \
		[ "$ms" -le $(((SECONDS_REC + 1) * 1000)) ]
fi
lost=$(sed -n 's/.*, \([0-9]*\) events lost$/\1/p' "$tmp/err")
events=$(sed -n 's/^tracekit record: .*(v7, zstd): \([0-9]*\) events, .*/\1/p' "$tmp/err")
if [ "${lost:-x}" = 0 ]; then
	pass "no event lost with the default buffer"
elif [ -n "$lost" ] && err_has "lost [0-9,]* events on CPU [0-9]* with -b [0-9]*: try -b [0-9]*"; then
	pass "$lost events lost, and the summary names the -b that would have kept them"
else
	fail "no loss, or the advice with the -b to use" "$(last)"
fi
check "the summary counts events (${events:-none})" [ "${events:-0}" -gt 0 ]

if [ "$TSAN_RUN" = 1 ]; then
	skip "trace-cmd report count" "ThreadSanitizer build"
elif command -v trace-cmd >/dev/null; then
	n=$(trace-cmd report -i "$tmp/storm.dat" 2>/dev/null | grep -c "sys_e[a-z]*_getppid:")
	check "trace-cmd report reads the file and finds the ${events:-?} events (got $n)" \
		[ "$n" = "${events:-x}" ]
else
	skip "trace-cmd report count" "no trace-cmd"
fi
finish
