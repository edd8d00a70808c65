#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# report-tcopts: trace-cmd report 3.1.6's options with trace-cmd's
# meanings (issue 17), each run by Debian's trace-cmd and by tracekit on
# the same golden files (tests/data/*.dat, tc34/*.dat, public/*.dat) and
# compared byte for byte, standard output and exit status:
#   - the listings: -e, -P (printk formats), -f (functions), -E (event
#     formats), --cpus (with --first-event/--last-event), --uname,
#     --version, --check-events;
#   - -I, -S, -T (filter strings), -r and -n, -N and -L;
#   - the time options --ts-offset, --ts2secs, --raw-ts, --align-ts,
#     --nodate, --ts-check, alone, with -t and --ts-diff, and per file
#     with several -i;
# then what trace-cmd cannot show: -V keeps the report as it is, perf.data
# listings from TRACING_DATA, and the usage errors (exit 2, one message).
# Files trace-cmd 3.1.6 cannot read (zlib) have no oracle and are left
# out; wsdias-LabSisOp-trace.dat has a malformed TRACECLOCK option that
# trace-cmd reads from uninitialised memory, so its time options are not
# compared. Nothing here touches tracefs.
set -u
. "$(dirname "$0")/../lib.sh"

command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
trace-cmd report -h 2>&1 | grep -q "version 3\.1\." ||
	{ echo "SKIP: trace-cmd is not 3.1.x (the oracle these outputs are checked against)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-report-tcopts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
data=$TK_SOURCE_DIR/tests/data

# same NAME ARGS...: trace-cmd report ARGS and tracekit report ARGS print
# the same standard output and exit with the same status; where trace-cmd
# dies (exit 22 or 255: a filter it cannot make), tracekit's is a usage
# error (2).
same() {
	local name=$1 statuses
	shift
	run report "$@"
	statuses=$rc
	[ "$rc" -eq 2 ] && statuses="2 22 255"
	check "$name: as trace-cmd report" tc_report_same "$tmp/out" "$statuses" "$@"
}

files=()
for f in "$data"/*.dat "$data"/tc34/*.dat "$data"/public/*.dat; do
	# The oracle reads it, or the file is not one to compare on.
	trace-cmd report --cpus "$f" >/dev/null 2>&1 && files+=("$f")
done
[ ${#files[@]} -ge 8 ] || fail "golden files trace-cmd reads" "only ${#files[@]}"

for f in "${files[@]}"; do
	b=${f#"$data"/}
	for o in -e -P -f -E --cpus --uname --version --check-events "--cpus --first-event" \
		"--last-event --cpus"; do
		# shellcheck disable=SC2086 # the options are words
		same "$o $b" $o "$f"
	done
	for o in -I -S "-I -S" -N "-r sched_switch" "-n sched_switch -n sched_wak.*" \
		"-r sched -n irq" "-n ftrace" "-r funcgraph_.*" "-n funcgraph_exit" \
		"-r ftrace -n funcgraph_entry" "-T" "-T -F sched_switch:prev_pid>0" \
		"-T --pid 7,8 -F sched_switch -v -F sched_switch:next_pid==0" \
		"-T -F sched_switch,sched_wakeup:prev_pid>0&&next_prio<100 -F sched/sched_waking" \
		"-T -F .*:common_pid==1" "-T -F irq.*"; do
		# shellcheck disable=SC2086
		same "$o $b" $o "$f"
	done
	case $b in public/wsdias*) continue ;; esac
	for o in --nodate --raw-ts --align-ts --ts-check "--ts2secs 1000" "--ts2secs 3" \
		"--raw-ts -t" "--align-ts -t" "--ts2secs 1000 -t" "--ts2secs 1000 --ts-diff" \
		"--raw-ts --first-event" "--raw-ts --ts-diff" "--align-ts --ts-diff" \
		"--ts2secs 1000 --cpus --first-event --last-event"; do
		# shellcheck disable=SC2086
		same "$o $b" $o "$f"
	done
done

# Clocks trace-cmd does not show in microseconds (tests/data/clock): the
# count whole in 12 columns, with or without -t.
for f in "$data"/clock/*.dat; do
	b=${f#"$data"/}
	for o in "" -t --ts-diff "--cpus --first-event --last-event" --raw-ts --align-ts; do
		# shellcheck disable=SC2086
		same "${o:-(default)} $b" $o "$f"
	done
done

# -L: as -N while the user's plugin directories hold no plugin.
if ! ls "$HOME"/.trace-cmd/plugins/*.so "$HOME"/.local/lib/traceevent/plugins/*.so \
	>/dev/null 2>&1; then
	for f in "$data/sample-v7-zstd.dat" "$data/public/funcgraph-made.dat"; do
		same "-L ${f#"$data"/}" -L "$f"
	done
else
	skip "-L" "this user has libtraceevent plugins of their own"
fi

# Several inputs: --ts-offset and --ts2secs belong to the -i before them.
cp "$data/tc34/v6.dat" "$tmp/a.dat"
cp "$data/tc34/v7-zstd.dat" "$tmp/b.dat"
cp "$data/sample-v7-zstd.dat" "$tmp/c.dat"
cd "$tmp" || exit 1
while IFS= read -r args; do
	# shellcheck disable=SC2086
	same "$args" $args
done <<'CASES'
-i a.dat -i b.dat --ts-offset 1000000000
-i a.dat -i b.dat --ts-offset -500000
-i a.dat --ts2secs 1000 -i b.dat
-i a.dat -i b.dat --ts2secs 1000
--align-ts -i a.dat -i c.dat
-i a.dat -i c.dat --align-ts --ts-offset 100
--nodate -i a.dat -i b.dat
--raw-ts -i a.dat -i b.dat
-i a.dat -I -S -i b.dat
-N -i a.dat -i b.dat
-r sched_switch -i a.dat -i b.dat
CASES

sample=$data/sample-v7-zstd.dat
# -V: trace-cmd also prints libtraceevent's plugin registrations on stdout; tracekit's stdout
# stays the report.
"$TRACEKIT" report "$sample" >"$tmp/plain" 2>/dev/null
run report -V "$sample"
check "-V: the report as it is" eval 'rc_is 0 && cmp -s "$tmp/plain" "$tmp/out"'
run report --verbose=warn "$sample"
check "--verbose=warn: the report as it is" eval 'rc_is 0 && cmp -s "$tmp/plain" "$tmp/out"'

# --ts-offset on a single file: applied (trace-cmd 3.1.6 drops it there).
run report -i "$sample" --ts-offset 1000000000
check "--ts-offset on the only file shifts it by a second" \
	eval 'rc_is 0 && [ "$(sed -n 2p "$tmp/out" | grep -o "[0-9]*\.[0-9]*:" | head -1)" = \
		"$(sed -n 2p "$tmp/plain" | grep -o "[0-9]*\.[0-9]*:" | head -1 | \
		awk -F. "{printf \"%d.%s\", \$1 + 1, \$2}")" ]'

# perf.data: the listings that need only the tracing metadata read TRACING_DATA.
pd=$data/perf/tracepoints.data
run report -E "$pd"
check "-E on perf.data: its TRACING_DATA's events" eval 'rc_is 0 && out_has "^sched:sched_process_exec$"'
run report -P "$pd"
check "-P on perf.data: its printk formats" eval 'rc_is 0 && [ -s "$tmp/out" ] && err_empty'
run report -e "$pd"
check "-e on perf.data" eval 'rc_is 0 && out_has "^file is little endian and host is little endian$"'
run report --check-events "$pd"
check "--check-events on perf.data" eval 'rc_is 0 && [ ! -s "$tmp/out" ]'
run report -f "$pd"
check "-f on perf.data without kallsyms: a usage error" \
	eval 'rc_is 2 && err_has "holds no kallsyms" && [ ! -s "$tmp/out" ]'
run report -E "$data/perf/R.data"
check "-E on perf.data without TRACING_DATA: a usage error" \
	eval 'rc_is 2 && err_has "no TRACING_DATA" && [ ! -s "$tmp/out" ]'
for o in --cpus --uname --version -I -S -N "--raw-ts" "--align-ts" "-r sched_switch"; do
	# shellcheck disable=SC2086
	run report $o "$pd"
	check "$o on perf.data: a usage error" eval 'rc_is 2 && [ ! -s "$tmp/out" ]'
done

# Usage errors: exit 2, the option named, nothing on stdout.
run report -P 123 "$sample"
check "-P takes no pid now (--pid does)" eval 'rc_is 2 && [ ! -s "$tmp/out" ]'
run report -P -f "$sample"
check "two listings: a usage error" eval 'rc_is 2 && err_has "-P and -f" && [ ! -s "$tmp/out" ]'
run report -E --stat "$sample"
check "a listing with --stat: a usage error" eval 'rc_is 2 && [ ! -s "$tmp/out" ]'
run report -E -i "$sample" -i "$sample"
check "a listing of several files: a usage error" eval 'rc_is 2 && [ ! -s "$tmp/out" ]'
run report --ts-offset 5 "$sample"
check "--ts-offset before any -i: a usage error" eval 'rc_is 2 && err_has "after -i"'
run report --ts2secs 0 "$sample"
check "--ts2secs 0: a usage error" eval 'rc_is 2 && err_has "ts2secs"'
run report -V9 "$sample"
check "-V9: a usage error" eval 'rc_is 2 && err_has "verbose level"'
run report -T -F nosuch "$sample"
check "-T -F nosuch: a usage error naming the filter" \
	eval 'rc_is 2 && err_has "nosuch" && [ ! -s "$tmp/out" ]'
run report -T --comm bash -F sched_switch "$sample"
check "-T with --comm: a usage error" eval 'rc_is 2 && err_has "comm"'

finish
