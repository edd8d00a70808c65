#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# tracekit record, list and reset against the real kernel.
#
# Each recording runs around a command that makes a known number K of
# marked events (K trace_marker writes into the recorder's own instance,
# found through $TRACEKIT_INSTANCE, or K getppid syscalls with
# raw_syscalls enabled), and the real trace-cmd report must find exactly K
# in the file. After every recording no tracekit instance may remain and
# no spool file may be left beside the output.
#
# Needs root and tracefs; otherwise prints "SKIP: reason" and exits 77.
# Checks that need trace-cmd or a C compiler skip alone when those are
# missing. Ends with "TK-COUNTS: passed=N failed=N skipped=N".
#
# Another test may run "trace-cmd extract", which consumes the top-level
# buffer and deletes instances; this test records only in its own
# instances, so that cannot steal its events, but a deleted instance would
# show up as a failed check: rerun before suspecting tracekit.

set -u

TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TRACEKIT=${TRACEKIT:-./build/src/cli/tracekit}
case $TRACEKIT in
*/*) [ "${TRACEKIT#/}" = "$TRACEKIT" ] && TRACEKIT=$PWD/$TRACEKIT ;;
esac
TRACEFS=/sys/kernel/tracing

passed=0
failed=0
skipped=0

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root: recording needs root"
	echo "TK-COUNTS: passed=0 failed=0 skipped=1"
	exit 77
fi
if [ ! -d $TRACEFS/instances ]; then
	mount -t tracefs nodev $TRACEFS 2>/dev/null
	if [ ! -d $TRACEFS/instances ]; then
		echo "SKIP: no tracefs at $TRACEFS and it cannot be mounted"
		echo "TK-COUNTS: passed=0 failed=0 skipped=1"
		exit 77
	fi
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-record.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1${2:+: $2}"; }
skip() { skipped=$((skipped + 1)); echo "SKIP: $1: $2"; }

run() {
	"$TRACEKIT" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
last() { printf 'rc=%s stdout=[%s] stderr=[%s]' "$rc" "$(head -c 600 "$tmp/out")" \
	"$(head -c 900 "$tmp/err")"; }
check() {
	local name=$1
	shift
	if "$@"; then pass "$name"; else fail "$name" "$(last)"; fi
}
rc_is() { [ "$rc" -eq "$1" ]; }
err_has() { grep -q -e "$1" "$tmp/err"; }
out_has() { grep -q -e "$1" "$tmp/out"; }
err_lines() { [ "$(wc -l <"$tmp/err")" -eq "$1" ]; }

# No instance of ours (tracekit-<live or dead pid>) remains.
no_instances() { ! ls $TRACEFS/instances | grep -q '^tracekit-'; }
no_spool() { ! compgen -G "$1.cpu*" >/dev/null && ! compgen -G "$1.tk*" >/dev/null; }

have_tc=false
command -v trace-cmd >/dev/null && have_tc=true

# tc_count FILE PATTERN: lines of trace-cmd report matching PATTERN; the
# report must succeed with an empty stderr.
tc_count() {
	local n
	if ! trace-cmd report -i "$1" >"$tmp/report" 2>"$tmp/report-err"; then
		echo "trace-cmd report failed: $(head -c 300 "$tmp/report-err")" >&2
		echo -1
		return
	fi
	if [ -s "$tmp/report-err" ]; then
		echo "trace-cmd report stderr: $(head -c 300 "$tmp/report-err")" >&2
		echo -1
		return
	fi
	n=$(grep -c -e "$2" "$tmp/report")
	echo "$n"
}

# dump_events FILE: total events tracekit dump counts in the file.
dump_events() {
	"$TRACEKIT" dump "$1" 2>/dev/null | sed -n 's/^totals: events=\([0-9]*\).*/\1/p'
}

# marks K: a shell command writing K markers into the recorder's instance.
marks() {
	echo "for i in \$(seq $1); do echo tk-mark-\$i > \$TRACEKIT_INSTANCE/trace_marker; done"
}

# ------------------------------------------------ K markers, every layout

for layout in "v7 zstd:--file-version 7 --compression zstd" \
	"v7 none:--file-version 7 --compression none" \
	"v6:--file-version 6" "default:"; do
	name=${layout%%:*}
	args=${layout#*:}
	K=1000
	f=$tmp/marks-${name// /-}.dat
	# shellcheck disable=SC2086
	run record $args -e sched:sched_switch -o "$f" -- sh -c "$(marks $K)"
	check "record $name: exit 0, summary printed" eval 'rc_is 0 && err_has "events lost" && [ -s "$f" ]'
	check "record $name: no instance and no spool file left" eval 'no_instances && no_spool "$f"'
	if $have_tc; then
		n=$(tc_count "$f" "tk-mark-")
		check "record $name: trace-cmd report finds exactly $K marks (got $n)" [ "$n" -eq $K ]
		trace-cmd report --check-events -i "$f" >/dev/null 2>&1
		rc=$?
		check "record $name: trace-cmd report --check-events accepts the file" rc_is 0
	else
		skip "record $name: trace-cmd count" "trace-cmd is not installed"
	fi
	d=$(dump_events "$f")
	check "record $name: tracekit dump reads every page (events=$d)" eval '[ -n "$d" ] && [ "$d" -ge $K ]'
done

# ------------------------------------------------ the mmap capture path

K=1000
run record --capture mmap -e sched:sched_switch -o mmap.dat -- sh -c "$(marks $K)"
check "record --capture mmap: exit 0, no side file left" eval 'rc_is 0 && no_spool mmap.dat && no_instances'
if $have_tc; then
	n=$(tc_count mmap.dat "tk-mark-")
	check "record --capture mmap: trace-cmd report finds exactly $K marks (got $n)" [ "$n" -eq $K ]
fi

# ------------------------------------------------ K getppid syscalls

if command -v cc >/dev/null; then
	cat >"$tmp/gp.c" <<'EOF'
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}
EOF
	if cc -O2 -o "$tmp/gp" "$tmp/gp.c" 2>/dev/null; then
		K=20000
		nr=$(printf '#include <sys/syscall.h>\nSYS_getppid\n' | cc -E -P - | tail -1)
		run record -b 4096 -e raw_syscalls:sys_enter -f "id == $nr" -F -o sys.dat -- "$tmp/gp" $K
		check "record -F around $K getppid: exit 0, nothing lost" eval 'rc_is 0 && err_has ", 0 events lost"'
		if $have_tc; then
			n=$(tc_count sys.dat "sys_enter: *NR $nr ")
			check "trace-cmd report finds exactly $K getppid (got $n)" [ "$n" -eq $K ]
		fi
		check "no instance left after the syscall run" no_instances
	else
		skip "getppid count" "the C compiler failed"
	fi
else
	skip "getppid count" "no C compiler"
fi

# ------------------------------------------------ stopping

run record -q -e sched --duration 0.5 -o dur.dat
check "record --duration 0.5 stops by itself with exit 0" eval 'rc_is 0 && [ -s dur.dat ]'
check "no instance left after --duration" no_instances

"$TRACEKIT" record -e sched -o int.dat >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 0.6
kill -INT $pid
wait $pid
rc=$?
check "SIGINT finishes a clean file (exit 0)" eval 'rc_is 0 && err_has "int.dat (v7, zstd)"'
if $have_tc; then
	n=$(tc_count int.dat "sched_")
	check "trace-cmd reads the interrupted recording ($n sched events)" [ "$n" -gt 0 ]
fi
check "no instance or spool file left after SIGINT" eval 'no_instances && no_spool int.dat'

"$TRACEKIT" record -q -e sched -o term.dat >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 0.4
kill -TERM $pid
wait $pid
rc=$?
check "SIGTERM finishes a clean file" eval 'rc_is 0 && [ "$(dump_events term.dat)" -ge 0 ]'
check "no instance left after SIGTERM" no_instances

# ------------------------------------------------ two recorders at once

K=500
"$TRACEKIT" record -q -o c1.dat -- sh -c "$(marks $K)" 2>"$tmp/c1-err" &
p1=$!
"$TRACEKIT" record -q -o c2.dat -- sh -c "$(marks $((K * 2)))" 2>"$tmp/c2-err" &
p2=$!
wait $p1
r1=$?
wait $p2
r2=$?
rc=$((r1 + r2))
check "two concurrent recordings both succeed" rc_is 0
if $have_tc; then
	n1=$(tc_count c1.dat "tk-mark-")
	n2=$(tc_count c2.dat "tk-mark-")
	check "each concurrent recording has exactly its own marks ($n1/$K, $n2/$((K * 2)))" \
		eval '[ "$n1" -eq $K ] && [ "$n2" -eq $((K * 2)) ]'
fi
check "no instance left after the concurrent runs" no_instances

# ------------------------------------------------ SIGKILL, then recover

"$TRACEKIT" record -q -e sched -o kill.dat -- sh -c "sleep 0.3; $(marks 2000); sleep 5" \
	>/dev/null 2>&1 &
pid=$!
# Until the recorder has written its metadata, recover may not be tested yet.
for _ in $(seq 50); do [ -s kill.dat.tkmeta ] && break; sleep 0.1; done
run recover kill.dat
check "recover refuses a recording in progress" eval 'rc_is 1 && err_lines 1 && err_has "still writing"'
sleep 1.7
kill -KILL $pid
wait $pid 2>/dev/null
spool_ok=true
spool_bytes=0
for s in kill.dat.cpu*; do
	[ -e "$s" ] || { spool_ok=false; break; }
	sz=$(stat -c %s "$s")
	spool_bytes=$((spool_bytes + sz))
	[ $((sz % 4096)) -eq 0 ] || spool_ok=false
done
rc=0
check "SIGKILL leaves spool files of whole pages ($spool_bytes bytes) and the metadata" \
	eval '$spool_ok && [ "$spool_bytes" -gt 0 ] && [ -s kill.dat.tkmeta ] && [ ! -e kill.dat ]'
check "SIGKILL leaves the instance behind for reset" test -d "$TRACEFS/instances/tracekit-$pid"
run recover kill.dat
check "recover writes the file (exit 0, summary)" eval 'rc_is 0 && out_has "^recovered kill.dat (v7, zstd): "'
check "recover removes the side files" \
	eval 'no_spool kill.dat && [ ! -e kill.dat.tkmeta ] && [ ! -e kill.dat.tkreserve ] && [ ! -e kill.dat.tkpart ]'
d=$(dump_events kill.dat)
r=$(sed -n 's/^recovered .*: \([0-9]*\) events in.*/\1/p' "$tmp/out")
check "the recovered file holds every event of the spooled pages (dump $d = recover $r)" \
	eval '[ -n "$d" ] && [ "$d" = "$r" ] && [ "$d" -gt 0 ]'
if $have_tc; then
	n=$(tc_count kill.dat ": ")
	m=$(grep -c "tk-mark-" "$tmp/report")
	check "trace-cmd report reads every recovered event ($n = $d, $m marks)" \
		eval '[ "$n" -eq "$d" ] && [ "$m" -gt 0 ]'
fi
run reset
check "reset removes the killed recorder's instance" eval 'rc_is 0 && [ ! -d "$TRACEFS/instances/tracekit-$pid" ]'
check "no instance left after the SIGKILL test" no_instances
run recover kill.dat
check "recover with nothing to do: exit 1, one line" eval 'rc_is 1 && err_lines 1 && err_has "nothing to recover"'
run recover
check "recover without a file is a usage error" rc_is 2

# ------------------------------------------------ a full disk

# A tmpfs just big enough for the metadata (~1 MB zstd here, kallsyms
# mostly), the reserve (~3.5 MB) and a little data: the capture fills it.
if mkdir full && mount -t tmpfs -o size=6m tmpfs full 2>/dev/null; then
	run record -e raw_syscalls -o full/f.dat -- \
		sh -c 'dd if=/dev/zero of=/dev/null bs=1 count=400000 2>/dev/null'
	check "full disk: exit 1 with one ENOSPC line naming the spool" \
		eval 'rc_is 1 && [ "$(grep -c ENOSPC "$tmp/err")" -eq 1 ] && err_has "full/f.dat.cpu"'
	check "full disk: the summary still shows what was kept" err_has "full/f.dat (v7, zstd): "
	check "full disk: no side file left" \
		eval 'no_spool full/f.dat && [ -z "$(ls full | grep -v "^f.dat$")" ]'
	d=$(dump_events full/f.dat)
	check "full disk: the file is valid (dump reads $d events)" eval '[ -n "$d" ] && [ "$d" -gt 0 ]'
	if $have_tc; then
		n=$(tc_count full/f.dat ": ")
		check "full disk: trace-cmd report reads all $d events (got $n)" [ "$n" -eq "$d" ]
	fi
	check "no instance left after the full disk" no_instances
	umount full
	rmdir full
else
	skip "full disk" "cannot mount a tmpfs"
fi

# ------------------------------------------------ refusals are one clear line

run record -e no_such_system_xyz -o bad.dat -- true
check "unknown event: exit 1, one line naming it" eval 'rc_is 1 && err_lines 1 && err_has "no_such_system_xyz" && err_has "tracekit list"'
check "no instance and no output after a refused event" eval 'no_instances && [ ! -e bad.dat ] && no_spool bad.dat'

run record -e sched:sched_switch -f 'no_such_field == 1' -o bad.dat -- true
check "bad filter: exit 1, names the filter file and EINVAL" eval 'rc_is 1 && err_lines 1 && err_has "sched_switch/filter" && err_has "EINVAL"'
check "no instance after a refused filter" no_instances

run record -C no_such_clock -o bad.dat -- true
check "unknown clock: exit 1, lists the clocks" eval 'rc_is 1 && err_has "no_such_clock" && err_has "local"'
check "no instance after a refused clock" no_instances

run record -o bad.dat -- /nonexistent/command
check "command that cannot run: exit 1, names it" eval 'rc_is 1 && err_has "/nonexistent/command"'
check "no instance and no output after a failed command" eval 'no_instances && [ ! -e bad.dat ] && no_spool bad.dat'

run record --file-version 6 --compression zstd -o bad.dat
check "v6 with compression is a usage error" rc_is 2

# ------------------------------------------------ list, reset

run list
check "list shows systems, events, clocks and tracers" eval 'rc_is 0 && out_has "^sched$" && out_has "^sched:sched_switch$" && out_has "^\[local\]$" && out_has "^nop$"'
run list --clocks
check "list --clocks shows only clocks" eval 'rc_is 0 && out_has "x86-tsc\|local" && ! out_has "sched"'

dead=$(sh -c 'echo $$')
while kill -0 "$dead" 2>/dev/null; do dead=$((dead + 1)); done
mkdir "$TRACEFS/instances/tracekit-$dead" 2>/dev/null
mkdir "$TRACEFS/instances/tracekit-$$" 2>/dev/null
run reset
check "reset removes the instance of a dead recorder" eval 'rc_is 0 && [ ! -d "$TRACEFS/instances/tracekit-$dead" ] && out_has "tracekit-$dead"'
check "reset keeps the instance of a live process" test -d "$TRACEFS/instances/tracekit-$$"
rmdir "$TRACEFS/instances/tracekit-$$" 2>/dev/null
rmdir "$TRACEFS/instances/tracekit-$dead" 2>/dev/null
check "no instance left at the end" no_instances

echo "TK-COUNTS: passed=$passed failed=$failed skipped=$skipped"
if [ "$failed" -gt 0 ]; then
	exit 1
fi
if [ "$passed" -eq 0 ] && [ "$skipped" -gt 0 ]; then
	exit 77
fi
exit 0
