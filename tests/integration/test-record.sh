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

. "$(dirname "$0")/../lib.sh"
TRACEFS=/sys/kernel/tracing

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

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-record.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

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

# ------------------------------------------------ tracers (-p)

# -p spells trace-cmd's option. The function tracers may be refused by the
# kernel (§7 of the spec: EPERM on these machines); that must be one line
# naming the file, the errno and what to do, and leave nothing behind.
run record -p function -o pf.dat -- sh -c "$(marks 10)"
if [ "$rc" -eq 1 ] && err_has "EPERM"; then
	check "-p function refused: exit 1, one line naming the file, EPERM and what to do" \
		eval 'err_lines 1 && err_has "current_tracer\|ftrace_enabled" && err_has "locked down" && err_has "with -e instead"'
	check "-p function refused: no instance, no output, no side file" \
		eval 'no_instances && [ ! -e pf.dat ] && no_spool pf.dat'
	skipped=$((skipped + 1))
	echo "SKIP: function tracer refused by this kernel (EPERM)"
else
	check "-p function: exit 0" rc_is 0
	if $have_tc; then
		n=$(tc_count pf.dat " function: ")
		check "-p function: trace-cmd report finds function events (got $n)" [ "$n" -gt 0 ]
	fi
	check "no instance left after -p function" no_instances
fi

# Only a function tracer may touch /proc/sys/kernel/ftrace_enabled.
if command -v strace >/dev/null; then
	# LeakSanitizer cannot run under ptrace.
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -e trace=openat -o "$tmp/strace" "$TRACEKIT" record -q -e sched:sched_switch \
		-p nop -o st.dat -- true >/dev/null 2>&1
	rc=$?
	check "record -p nop never opens /proc/sys/kernel/ftrace_enabled" \
		eval 'rc_is 0 && ! grep -q ftrace_enabled "$tmp/strace"'
else
	skip "ftrace_enabled untouched" "strace is not installed"
fi

K=200
run record -p nop -o pnop.dat -- sh -c "$(marks $K)"
check "-p nop: exit 0, no instance left" eval 'rc_is 0 && no_instances'
if $have_tc; then
	n=$(tc_count pnop.dat "tk-mark-")
	check "-p nop: trace-cmd report finds exactly $K marks (got $n)" [ "$n" -eq $K ]
fi

run record -p no_such_tracer -o bad.dat -- true
check "unknown tracer: exit 1, one line listing the available tracers" \
	eval 'rc_is 1 && err_lines 1 && err_has "available_tracers: no tracer .no_such_tracer. (available: .*nop"'
check "no instance after an unknown tracer" eval 'no_instances && [ ! -e bad.dat ]'

# A tracer that only the top-level buffer offers (blk here): an instance
# refuses it with a pointer to --top, and --top records with it.
top_only=
if mkdir "$TRACEFS/instances/tk-probe-$$" 2>/dev/null; then
	for t in $(cat $TRACEFS/available_tracers); do
		grep -qw -- "$t" "$TRACEFS/instances/tk-probe-$$/available_tracers" || top_only=$t
	done
	rmdir "$TRACEFS/instances/tk-probe-$$"
fi
if [ -n "$top_only" ]; then
	run record -p "$top_only" -o bad.dat -- true
	check "-p $top_only in an instance: exit 1, one line pointing to --top" \
		eval 'rc_is 1 && err_lines 1 && err_has "use --top"'
	check "no instance after a tracer the instance lacks" no_instances
	top_was=$(cat $TRACEFS/tracing_on)
	run record -q --top -p "$top_only" -o ptop.dat -- \
		sh -c 'echo tk-ptop > $TRACEKIT_INSTANCE/trace_marker'
	check "--top -p $top_only (a non-function tracer): exit 0, tracer back to nop" \
		eval 'rc_is 0 && [ "$(cat $TRACEFS/current_tracer)" = nop ] && [ "$(cat $TRACEFS/tracing_on)" = "$top_was" ]'
else
	skip "top-only tracer" "every tracer of the top buffer is offered by instances"
fi

# ------------------------------------------------ dynamic probes (--probe)

# uprobe_events and kprobe_events are machine-wide: after every run the
# probes record created must be gone, and probes of other users must stay.
no_probe() { ! grep -q "^[pr]:$1 " $TRACEFS/uprobe_events; }

if command -v cc >/dev/null && command -v nm >/dev/null && command -v readelf >/dev/null; then
	cat >"$tmp/probe-prog.c" <<'PROG'
#include <stdlib.h>
#include <unistd.h>
__attribute__((noinline)) int tk_probe_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 2 + 1;
}
int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 0;
	volatile int s = 0;

	for (int i = 0; i < k; i++)
		s += tk_probe_target(i * 3 - 7);
	if (argc > 2)
		sleep((unsigned)atoi(argv[2]));
	return 0;
}
PROG
	prog=$tmp/probe-prog
	off=
	if cc -O0 -o "$prog" "$tmp/probe-prog.c" 2>/dev/null; then
		vaddr=$(nm "$prog" | awk '$3 == "tk_probe_target" { print $1 }')
		# The file offset: vaddr - segment vaddr + segment offset, in the
		# LOAD segment that holds the address.
		if [ -n "$vaddr" ]; then
			while read -r type o v _ n _; do
				[ "$type" = LOAD ] || continue
				if ((16#$vaddr >= v && 16#$vaddr < v + n)); then
					off=$(printf '0x%x' $((16#$vaddr - v + o)))
					break
				fi
			done < <(readelf -lW "$prog")
		fi
	fi
	if [ -n "$off" ]; then
		K=37
		seq 0 $((K - 1)) | awk '{ print $1 * 3 - 7 }' >"$tmp/probe-want"
		# Someone else's probe in the same file: it must survive.
		echo "p:tkother$$/keep $prog:$off" >>$TRACEFS/uprobe_events
		run record --probe "p:tkt/target $prog:$off x=%di:s32" -o probe.dat -- "$prog" $K
		check "--probe uprobe: exit 0, no instance, no spool file" \
			eval 'rc_is 0 && no_instances && no_spool probe.dat'
		check "--probe uprobe: the probe is gone from uprobe_events after the run" \
			eval 'no_probe tkt/target && [ ! -d $TRACEFS/events/tkt/target ]'
		check "--probe uprobe: another user's probe in uprobe_events survives" \
			eval '! no_probe tkother$$/keep'
		if $have_tc; then
			n=$(tc_count probe.dat " target: ")
			check "--probe uprobe: trace-cmd report finds exactly $K calls (got $n)" \
				[ "$n" -eq $K ]
			grep " target: " "$tmp/report" | sed 's/.* x=//' >"$tmp/probe-got"
			check "--probe uprobe: the recorded x values are the arguments, in order" \
				cmp -s "$tmp/probe-want" "$tmp/probe-got"
		fi
		d=$(dump_events probe.dat)
		check "--probe uprobe: tracekit dump reads the $K events (events=$d)" \
			eval '[ -n "$d" ] && [ "$d" -ge $K ]'

		# Default names: group tracekit, event from the basename and offset.
		run record -q --probe "r $prog:$off" -o probe-ret.dat -- "$prog" 3
		check "--probe with a derived name: exit 0, tracekit/probe_prog_${off}__return removed" \
			eval 'rc_is 0 && no_probe "tracekit/probe_prog_${off}__return" && ! grep -q "^r:tracekit/" $TRACEFS/uprobe_events'
		if $have_tc; then
			n=$(tc_count probe-ret.dat "probe_prog_${off}__return: ")
			check "--probe r (return probe): 3 returns recorded (got $n)" [ "$n" -eq 3 ]
		fi

		# A name that exists is refused in one line, and theirs stays.
		run record --probe "p:tkother$$/keep $prog:$off" -o probe-dup.dat -- "$prog" 1
		check "--probe with an existing name: exit 1, one line" \
			eval 'rc_is 1 && err_lines 1 && err_has "tkother$$/keep already exists" && err_has uprobe_events'
		check "--probe with an existing name: theirs kept, nothing else left" \
			eval '! no_probe tkother$$/keep && no_instances && [ ! -e probe-dup.dat ] && no_spool probe-dup.dat'

		# The kernel refuses the second probe: the first goes too.
		run record --probe "p:tkt/first $prog:$off" --probe "p:tkt/second $prog:$off x=%nosuchreg" \
			-o probe-bad.dat -- "$prog" 1
		check "--probe refused by the kernel: exit 1, one line with its reason" \
			eval 'rc_is 1 && err_lines 1 && err_has "uprobe_events: Invalid argument (EINVAL)" && err_has "register"'
		check "--probe refused by the kernel: no probe, instance or file left" \
			eval 'no_probe tkt/first && no_probe tkt/second && no_instances && [ ! -e probe-bad.dat ]'

		run record --probe "q:tkt/x $prog:$off" -o probe-bad.dat
		check "--probe with a malformed definition is a usage error" \
			eval 'rc_is 2 && err_has "expected .p. or .r."'

		# probe_recording GROUP/EVENT CALLS OUT [ARGS]: a recorder of the probe
		# in the background ($pid), once the probe exists.
		probe_recording() {
			"$TRACEKIT" record -q --probe "p:$1 $prog:$off${4:+ $4}" -o "$3" -- \
				"$prog" "$2" 30 >"$tmp/out" 2>"$tmp/err" &
			pid=$!
			for _ in $(seq 50); do
				[ -d "$TRACEFS/events/$1" ] && break
				sleep 0.1
			done
		}

		# Ctrl-C: a complete file, and the probe removed.
		probe_recording tkt/target 5 probe-int.dat x=%di:s32
		sleep 0.5
		check "--probe: the probe exists while recording" eval '! no_probe tkt/target'
		kill -INT $pid
		wait $pid
		rc=$?
		check "--probe, SIGINT: exit 0, probe removed, no instance left" \
			eval 'rc_is 0 && no_probe tkt/target && no_instances && no_spool probe-int.dat'
		if $have_tc; then
			n=$(tc_count probe-int.dat " target: ")
			check "--probe, SIGINT: the 5 calls before the signal are in the file (got $n)" \
				[ "$n" -eq 5 ]
		fi

		"$TRACEKIT" record -q --probe "p:tkt/target $prog:$off" -o probe-term.dat -- \
			"$prog" 1 30 >"$tmp/out" 2>"$tmp/err" &
		pid=$!
		sleep 1
		kill -TERM $pid
		wait $pid
		rc=$?
		check "--probe, SIGTERM: exit 0, probe removed, no instance left" \
			eval 'rc_is 0 && no_probe tkt/target && no_instances'

		# SIGKILL: the probe stays behind, noted in the recorder's ledger,
		# and reset removes it after the instance (a ledger of our own).
		export TRACEKIT_RUN_DIR=$tmp/run
		# A run that failed here before may have left its probe: not ours to keep.
		[ -d $TRACEFS/events/tkt/killed ] && echo "-:tkt/killed" >>$TRACEFS/uprobe_events
		probe_recording tkt/killed 1 probe-kill.dat
		sleep 0.3
		kill -KILL $pid
		wait $pid 2>/dev/null
		check "--probe, SIGKILL: the probe is left, noted in the ledger" \
			eval '! no_probe tkt/killed && grep -qx "uprobe_events tkt/killed" $tmp/run/probes-$pid-*'
		run reset -n
		check "reset -n names the probe and removes nothing" \
			eval 'rc_is 0 && out_has "would remove probe uprobe_events tkt/killed (pid $pid is gone)" && ! no_probe tkt/killed'
		run reset
		check "reset removes the killed recorder's instance and probe" \
			eval 'rc_is 0 && out_has "removed probe uprobe_events tkt/killed (pid $pid is gone)" && no_probe tkt/killed && no_instances'
		check "reset drops the dead recorder's ledger" \
			eval '! compgen -G "$tmp/run/probes-$pid-*" >/dev/null'
		run reset
		check "a second reset finds nothing" \
			eval 'rc_is 0 && out_has "no instance or probe left by a dead recorder"'
		run record -q --probe "p:tkt/target $prog:$off" -o probe-led.dat -- "$prog" 1
		check "a recorder that exits normally leaves no ledger" \
			eval 'rc_is 0 && no_probe tkt/target && ! compgen -G "$tmp/run/probes-*" >/dev/null'
		rm -f probe-kill.dat.* probe-led.dat
		unset TRACEKIT_RUN_DIR

		echo "-:tkother$$/keep" >>$TRACEFS/uprobe_events
	else
		skip "--probe uprobe" "cannot build the probe target or find its offset (cc, nm, readelf)"
	fi
else
	skip "--probe uprobe" "no C compiler, nm or readelf"
fi

# kprobes: refused on these machines (kprobe_events is absent or EPERM);
# that is one line naming the file and the errno, and nothing left behind.
run record --probe 'p:tkt/k do_sys_openat2' -o kp.dat -- cat /dev/null
if [ "$rc" -eq 1 ] && err_has "EPERM\|EACCES\|ENOENT"; then
	check "--probe kprobe refused: exit 1, one line naming kprobe_events, the errno and what to do" \
		eval 'err_lines 1 && err_has "kprobe_events: " && err_has "instead"'
	check "--probe kprobe refused: no instance, no output, no probe left" \
		eval 'no_instances && [ ! -e kp.dat ] && no_spool kp.dat && ! grep -qs "tkt/k " $TRACEFS/kprobe_events'
	e=$(grep -o 'EPERM\|EACCES\|ENOENT' "$tmp/err" | head -1)
	skipped=$((skipped + 1))
	echo "SKIP: kprobes refused by this kernel ($e)"
else
	check "--probe kprobe: exit 0, probe removed" \
		eval 'rc_is 0 && no_instances && ! grep -q "tkt/k " $TRACEFS/kprobe_events'
	if $have_tc; then
		n=$(tc_count kp.dat " k: ")
		check "--probe kprobe: trace-cmd report finds do_sys_openat2 calls (got $n)" [ "$n" -gt 0 ]
	fi
fi

# ------------------------------------------------ --top and -B NAME

# The top-level buffer is shared: other processes may write markers into
# it or consume it (trace-cmd extract), so the markers carry this run's pid.
top_orig=$(cat $TRACEFS/tracing_on)
top_kb=$(cut -d' ' -f1 $TRACEFS/buffer_size_kb)
for before in 1 0; do
	echo $before >$TRACEFS/tracing_on
	K=300
	# Its own buffer size: what others left in the top buffer (once 7 KB) must not matter.
	run record --top -b 1024 -e sched:sched_wakeup -o top$before.dat -- sh -c \
		"for i in \$(seq $K); do echo tk-top$$-$before-\$i > \$TRACEKIT_INSTANCE/trace_marker; done"
	check "--top (tracing_on was $before): exit 0" eval 'rc_is 0 && [ -s top$before.dat ]'
	if $have_tc; then
		n=$(tc_count top$before.dat "tk-top$$-$before-")
		check "--top: trace-cmd report finds exactly $K top-level marks (got $n)" [ "$n" -eq $K ]
	fi
	check "--top: tracing_on back to $before, events off, no pid filter, tracer nop" \
		eval '[ "$(cat $TRACEFS/tracing_on)" = $before ] && [ "$(cat $TRACEFS/events/enable)" = 0 ] && [ -z "$(cat $TRACEFS/set_event_pid)" ] && [ "$(cat $TRACEFS/current_tracer)" = nop ]'
	check "--top: no instance created" no_instances
	check "--top -b: the top buffer's size is back to $top_kb KB" \
		eval '[ "$(cut -d" " -f1 $TRACEFS/buffer_size_kb)" = "$top_kb" ]'
done
run record -q --top -P $$ -e sched:sched_switch --duration 0.2 -o topp.dat
check "--top -P: the top buffer's set_event_pid is cleared after" \
	eval 'rc_is 0 && [ -z "$(cat $TRACEFS/set_event_pid)" ] && [ "$(cat $TRACEFS/tracing_on)" = 0 ]'
echo "$top_orig" >$TRACEFS/tracing_on

# (not "name": check() has a local of that name, which eval would see)
inst=tk-named-$$
K=250
run record -B $inst -o named.dat -- sh -c \
	"[ \"\$TRACEKIT_INSTANCE\" = $TRACEFS/instances/$inst ] && [ -d \$TRACEKIT_INSTANCE ] || exit 3; $(marks $K)"
check "-B $inst: records in that instance (exit 0, the command saw it)" \
	eval 'rc_is 0 && ! err_has "status 3"'
check "-B $inst: the instance is removed at the end" test ! -d "$TRACEFS/instances/$inst"
if $have_tc; then
	n=$(tc_count named.dat "tk-mark-")
	check "-B: trace-cmd report finds exactly $K marks (got $n)" [ "$n" -eq $K ]
fi
mkdir "$TRACEFS/instances/$inst"
run record -B $inst -o bad.dat -- true
check "-B of an existing instance: exit 1, one line saying so" \
	eval 'rc_is 1 && err_lines 1 && err_has "already exists"'
check "-B of an existing instance: the instance is left alone, no output" \
	eval '[ -d "$TRACEFS/instances/$inst" ] && [ ! -e bad.dat ]'
rmdir "$TRACEFS/instances/$inst"

# ------------------------------------------------ clocks (-C)

K=100
run record -C mono -o mono.dat -- sh -c "$(marks $K)"
check "-C mono: exit 0; the file says clock mono" \
	eval 'rc_is 0 && "$TRACEKIT" dump mono.dat | grep -q "clock: \"mono\""'
if $have_tc; then
	n=$(tc_count mono.dat "tk-mark-")
	check "-C mono: trace-cmd report finds exactly $K marks (got $n)" [ "$n" -eq $K ]
fi
check "-C mono: no TSC2NSEC option" eval '! "$TRACEKIT" dump mono.dat | grep -q TSC2NSEC'

if grep -qw x86-tsc $TRACEFS/trace_clock; then
	run record -C x86-tsc -o tsc.dat -- sh -c \
		'echo tk-tsc-mark1 > $TRACEKIT_INSTANCE/trace_marker; sleep 0.5; echo tk-tsc-mark2 > $TRACEKIT_INSTANCE/trace_marker'
	"$TRACEKIT" dump tsc.dat >"$tmp/dump" 2>&1
	check "-C x86-tsc: exit 0, the file carries TSC2NSEC (tracekit dump)" \
		eval 'rc_is 0 && grep -q " 14 TSC2NSEC .*mult=[1-9]" "$tmp/dump" && grep -q "clock: \"x86-tsc\"" "$tmp/dump"'
	if $have_tc; then
		n=$(tc_count tsc.dat "tk-tsc-mark")
		t1=$(sed -n 's/.*\] *\([0-9]*\.[0-9]*\): *print: .*tk-tsc-mark1.*/\1/p' "$tmp/report")
		t2=$(sed -n 's/.*\] *\([0-9]*\.[0-9]*\): *print: .*tk-tsc-mark2.*/\1/p' "$tmp/report")
		# The TSC's origin is the host's business (on some VMs it was
		# reset at guest boot, on others it counts the host's uptime), so
		# the check is on an interval: converted, 0.5 s of sleep reads as
		# about 0.5 s; raw, it would be a cycle count without a point.
		check "-C x86-tsc: trace-cmd report shows ns-converted time (marks at $t1 and $t2 s, 0.5 s apart)" \
			eval '[ "$n" -eq 2 ] && [ -n "$t1" ] && [ -n "$t2" ] && awk -v a="$t1" -v b="$t2" "BEGIN { exit !(b - a > 0.45 && b - a < 3) }"'
	fi
else
	skip "-C x86-tsc" "the kernel offers no x86-tsc clock"
fi

# ------------------------------------------------ CPU stats in the file

ncpu=$(ls -d $TRACEFS/per_cpu/cpu* | wc -l)
for f in marks-v7-zstd.dat marks-v6.dat; do
	"$TRACEKIT" dump "$f" >"$tmp/dump" 2>&1
	n=$(grep -c " 2 CPUSTAT " "$tmp/dump")
	ok=true
	for c in $(seq 0 $((ncpu - 1))); do
		grep -q " 2 CPUSTAT .*first_line=\"CPU: $c\"" "$tmp/dump" || ok=false
	done
	check "$f: one CPUSTAT option per CPU ($n of $ncpu)" eval '[ "$n" -eq "$ncpu" ] && $ok'
done

# ------------------------------------------------ -e globs

# glob_record SPEC FILE SLEEPS LABEL: record -e SPEC around SLEEPS short
# sleeps; the wakeups are in FILE and sched_switch, which SPEC leaves out, is not.
glob_record() {
	local n m
	run record -e "$1" -o "$2" -- sh -c "for i in \$(seq $3); do sleep 0.01; done"
	check "-e '$1'$4: exit 0" rc_is 0
	if $have_tc; then
		n=$(tc_count "$2" " sched_wak")
		m=$(grep -c " sched_switch: " "$tmp/report")
		check "-e '$1': wakeup events recorded ($n), no sched_switch ($m)" \
			eval '[ "$n" -gt 0 ] && [ "$m" -eq 0 ]'
	fi
}
glob_record 'sched:sched_wak*' glob.dat 5 ""
glob_record 'sched_wak*' glob2.dat 3 " (bare event glob, any system)"
check "no instance left after the glob runs" no_instances

# ------------------------------------------------ -P PID

# Two processes make getppid calls once released through a FIFO; -P names
# only the first. The recorder's command releases both and waits for them.
if [ -x "$tmp/gp" ] && [ -n "${nr:-}" ]; then
	cat >"$tmp/gpw.c" <<'EOF'
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv)
{
	char b;
	int fd = open(argv[2], O_RDONLY);
	long n = argc > 3 ? atol(argv[1]) : 0;

	if (fd < 0 || read(fd, &b, 1) < 0)
		return 1;
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	close(open(argv[3], O_WRONLY | O_CREAT, 0644));
	return 0;
}
EOF
	if cc -O2 -o "$tmp/gpw" "$tmp/gpw.c" 2>/dev/null; then
		K=3000
		mkfifo go1 go2
		"$tmp/gpw" $K go1 done1 &
		pa=$!
		"$tmp/gpw" $((K * 2)) go2 done2 &
		pb=$!
		run record -P $pa -e raw_syscalls:sys_enter -f "id == $nr" -o pid.dat -- sh -c \
			"echo > go1; echo > go2; while [ ! -e done1 ] || [ ! -e done2 ]; do sleep 0.01; done"
		wait $pa $pb
		check "-P PID: exit 0" rc_is 0
		if $have_tc; then
			n=$(tc_count pid.dat "sys_enter: *NR $nr ")
			na=$(grep "sys_enter: *NR $nr " "$tmp/report" | grep -c -- "-$pa *\[")
			check "-P $pa: exactly its $K getppid calls, none of pid $pb (got $n, $na of $pa)" \
				eval '[ "$n" -eq $K ] && [ "$na" -eq $K ]'
		fi
		check "no instance left after -P" no_instances
	else
		skip "-P PID" "the C compiler failed"
	fi
else
	skip "-P PID" "no getppid helper (no C compiler)"
fi

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
# A pid with no process would record nothing: refused, nothing left.
run record -q -P 999999 -e sched:sched_switch -o "$tmp/nopid.dat" --duration 0.2
check "record -P 999999: exit 1, one line, nothing left" eval 'rc_is 1 && err_lines 1 && err_has "no process with pid 999999" && [ ! -e "$tmp/nopid.dat" ] && no_spool "$tmp/nopid.dat" && no_instances'

# recover removes only what it knows it wrote: a .tkmeta that is not the
# start of a .dat stays, and the message says so.
head -c 3000 /dev/urandom >"$tmp/garbage.dat.tkmeta"
run recover "$tmp/garbage.dat"
check "recover of a garbage .tkmeta: exit 1, says it is left, keeps it" eval 'rc_is 1 && err_lines 1 && err_has "left as it is" && [ -s "$tmp/garbage.dat.tkmeta" ]'
rm -f "$tmp/garbage.dat.tkmeta"

# ------------------------------------------------ -o onto what is not a file
# Refused before tracing starts: one line, nothing created, no instance.
mkdir -p "$tmp/o/sub"
run record -q -e sched:sched_switch -o "$tmp/o/sub" -- true
check "record -o DIRECTORY: exit 1, one line, nothing left" eval 'rc_is 1 && err_lines 1 && err_has "is a directory" && [ -z "$(ls "$tmp/o/sub")" ] && no_instances'
run record -q -e sched:sched_switch -o "$tmp/o/nodir/x.dat" -- true
check "record into a missing directory names the directory" eval 'rc_is 1 && err_lines 1 && err_has "directory .*/o/nodir does not exist" && no_instances'
mkfifo "$tmp/o/fifo"
run record -q -e sched:sched_switch -o "$tmp/o/fifo" -- true
check "record -o FIFO: exit 1, says why, the FIFO stays" eval 'rc_is 1 && err_lines 1 && err_has "needs a regular file" && [ -p "$tmp/o/fifo" ] && no_spool "$tmp/o/fifo"'
ln -s sub/real.dat "$tmp/o/link.dat"
run record -q -e sched:sched_switch -o "$tmp/o/link.dat" -- true
check "record -o SYMLINK writes the target, keeps the link" eval 'rc_is 0 && [ -L "$tmp/o/link.dat" ] && [ -s "$tmp/o/sub/real.dat" ] && no_spool "$tmp/o/sub/real.dat"'

# ------------------------------------------------ the command's life
# A command that cannot run is refused before anything is created.
run record -q -e sched:sched_switch -o "$tmp/noexec.dat" -- /nonexistent/prog
check "record -- /nonexistent: exit 1, one line, nothing left" eval 'rc_is 1 && err_lines 1 && err_has "cannot run ./nonexistent/prog." && [ ! -e "$tmp/noexec.dat" ] && no_spool "$tmp/noexec.dat" && no_instances'
run record -q -e sched:sched_switch -o "$tmp/noexec.dat" -- true
check "the same output name records next time" eval 'rc_is 0 && [ -s "$tmp/noexec.dat" ] && no_spool "$tmp/noexec.dat"'
# A command that fails makes the exit status 1, and says how it ended.
run record -q -e sched:sched_switch -o "$tmp/false.dat" -- false
check "record -- false: exit 1, the command's status named" eval 'rc_is 1 && err_has "command exited with status 1" && [ -s "$tmp/false.dat" ]'
run record -q --perf -e sched:sched_switch -o "$tmp/false.data" -- false
check "record --perf -- false: exit 1 too" eval 'rc_is 1 && err_has "command exited with status 1" && [ -s "$tmp/false.data" ]'
# --duration ends the command too (SIGTERM), and the recorder returns on time.
start=$(date +%s%N)
run record -q -e sched:sched_switch -o "$tmp/dur.dat" --duration 1 -- sleep 41
end=$(date +%s%N)
check "--duration 1 -- sleep 41: exit 0 within 4 s, sleep stopped" eval 'rc_is 0 && [ $(( (end - start) / 1000000 )) -lt 4000 ] && ! pgrep -x -f "sleep 41" >/dev/null'
# SIGINT to the recorder alone (not its process group): a background job
# ignores SIGINT, so the command needs SIGKILL after the grace period.
"$TRACEKIT" record -q -e sched:sched_switch -o "$tmp/int.dat" -- sleep 42 >/dev/null 2>&1 &
recorder=$!
sleep 1
kill -INT $recorder
wait $recorder
rc=$?
check "SIGINT to the recorder alone: complete file, command stopped" eval 'rc_is 0 && [ -s "$tmp/int.dat" ] && no_spool "$tmp/int.dat" && ! pgrep -x -f "sleep 42" >/dev/null'
"$TRACEKIT" record -q --perf -e sched:sched_switch -o "$tmp/int.data" -- sleep 43 >/dev/null 2>&1 &
recorder=$!
sleep 1
kill -INT $recorder
wait $recorder
rc=$?
check "--perf: SIGINT to the recorder alone stops the command" eval 'rc_is 0 && [ -s "$tmp/int.data" ] && ! pgrep -x -f "sleep 43" >/dev/null'

check "no instance left at the end" no_instances

finish
