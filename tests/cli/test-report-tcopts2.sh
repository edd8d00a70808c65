#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# report-tcopts2: the rest of trace-cmd report 3.1.6's options (issue 17),
# each run by Debian's trace-cmd and by tracekit on the golden files
# (tests/data/*.dat, tc34/*.dat, public/*.dat) and compared byte for byte,
# standard output and exit status:
#   - --events and --event REGEX (format texts), on v6 files; on v7 files,
#     where trace-cmd 3.1.6 prints nothing, tracekit prints every non-ftrace
#     format -E lists;
#   - -p (page sizes);
#   - -H (the hook line, then the report), -G and --by-comm, which change
#     only --profile;
#   - --kallsyms FILE (a kallsyms text joined to the file's);
#   - --comm NAME (the pids the saved command lines give NAME, as --pid);
# then the usage errors: what trace-cmd crashes on or tracekit does not
# support is exit 2 with one message. Nothing here touches tracefs.
set -u
. "$(dirname "$0")/../lib.sh"

command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
trace-cmd report -h 2>&1 | grep -q "version 3\.1\." ||
	{ echo "SKIP: trace-cmd is not 3.1.x (the oracle these outputs are checked against)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-report-tcopts2.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
data=$TK_SOURCE_DIR/tests/data

# same NAME ARGS...: trace-cmd report ARGS and tracekit report ARGS print
# the same standard output and exit with the same status.
same() {
	local name=$1
	shift
	run report "$@"
	check "$name: as trace-cmd report" tc_report_same "$tmp/out" "$rc" "$@"
}

files=()
for f in "$data"/*.dat "$data"/tc34/*.dat "$data"/public/*.dat; do
	trace-cmd report --cpus "$f" >/dev/null 2>&1 && files+=("$f")
done
[ ${#files[@]} -ge 8 ] || fail "golden files trace-cmd reads" "only ${#files[@]}"

# Regular files: trace-cmd reads as many bytes of --kallsyms as stat() tells.
cp /proc/kallsyms "$tmp/kallsyms" 2>/dev/null
ksyms=("$data/perf/kallsyms-usbnet.txt")
[ -s "$tmp/kallsyms" ] && ksyms+=("$tmp/kallsyms")

for f in "${files[@]}"; do
	b=${f#"$data"/}
	version=$(dd if="$f" bs=1 skip=10 count=1 2>/dev/null)
	for o in --events "--event sched_switch" "--event sched" "--event SCHED:" "--event irq:.*entry" \
		"--event ^sched_w" "--event timer:sched" "--event ftrace" "--event function" \
		"--event :sched_switch" "--event nomatch"; do
		if [ "$version" = 6 ]; then
			# shellcheck disable=SC2086 # the options are words
			same "$o $b" $o "$f"
		fi
	done
	if [ "$version" != 6 ]; then
		# trace-cmd 3.1.6 and 3.4 print nothing from a v7 file: every
		# non-ftrace format -E lists, each after its "name:" line.
		run report --events "$f"
		want=$(trace-cmd report -E "$f" 2>/dev/null | grep -vc "^ftrace:")
		check "--events $b (v7): every non-ftrace format" eval 'rc_is 0 && [ "$(grep -c "^name: " "$tmp/out")" -eq "$want" ] && [ "$(head -c 9 "$tmp/out")" = "$(printf "\nsystem: ")" ]'
	fi
	same "-p $b" -p "$f"
	same "-H $b" -H "sched:sched_waking,pid,5/sched:sched_switch,next_pid,PGS" "$f"
	same "-H -H -G --by-comm $b" -H "sched_waking,pid/sched_switch,next_pid" -G --by-comm \
		-H ",x:y,z/a,b" "$f"
	for k in "${ksyms[@]}"; do
		same "--kallsyms $(basename "$k") $b" --kallsyms "$k" "$f"
		same "--kallsyms $(basename "$k") -t $b" --kallsyms "$k" -t "$f"
	done
done

# --comm: the pids the saved command lines give the name, as --pid (trace-cmd
# 3.1.6 crashes on it with instances: those files are left out).
for f in "${files[@]}"; do
	b=${f#"$data"/}
	case $b in tc34/inst*) continue ;; esac
	for c in sleep bash "kworker/0:1"; do
		if "$TRACEKIT" dump --section cmdlines "$f" 2>/dev/null | grep -qx "[0-9]* $c"; then
			same "--comm $c $b" --comm "$c" "$f"
			same "--comm $c --pid 1 -t $b" --comm "$c" --pid 1 -t "$f"
		else
			run report --comm "$c" "$f"
			check "--comm $c $b: no such task, a usage error" eval 'rc_is 2 && err_has "no task of that name" && [ ! -s "$tmp/out" ]'
		fi
	done
done

# Usage errors: one message, exit 2, nothing on standard output.
f=$data/tc34/v6.dat
usage() {
	local name=$1
	shift
	run report "$@"
	check "$name: usage error" eval 'rc_is 2 && err_lines 2 && [ ! -s "$tmp/out" ]'
}
usage "-H that does not split (trace-cmd crashes)" -H bad "$f"
usage "-H without an end (trace-cmd crashes)" -H sched_switch,prev_pid/sched_wakeup "$f"
usage "--profile -G (not supported)" --profile -G "$f"
usage "--profile --by-comm (not supported)" --profile --by-comm "$f"
usage "--profile -H (not supported)" --profile -H "a,b/c,d" "$f"
usage "--event with a bad regex" --event 'sched[' "$f"
usage "--events with another listing" --events -E "$f"
usage "-p on perf.data" -p "$data/perf/tracepoints.data"
usage "-G on perf.data" -G "$data/perf/tracepoints.data"
usage "--comm with several -i (not supported)" --comm sleep -i "$f" -i "$f"
usage "trace-cmd's --boundary (not supported)" --boundary "$f"
usage "trace-cmd's --debug (not supported)" --debug "$f"
usage "--kallsyms with a listing" --kallsyms "$data/perf/kallsyms-usbnet.txt" -f "$f"
run report --kallsyms "$tmp/no-such-file" "$f"
check "--kallsyms of a missing file names it" eval 'rc_is 1 && err_has "no-such-file"'

# --events and --event on perf.data read its TRACING_DATA.
run report --event sched_process_exec "$data/perf/tracepoints.data"
check "--event on perf.data's TRACING_DATA" eval 'rc_is 0 && out_has "^name: sched_process_exec$" && [ "$(grep -c "^name: " "$tmp/out")" -eq 1 ]'

# The options are in --help and the man page.
run report --help
check "report --help lists them" eval 'rc_is 0 && out_has -- "--events" && out_has -- "--event REGEX" && out_has "^  -p  " && out_has "^  -G  " && out_has -- "--by-comm" && out_has "^  -H HOOK"'
man=$TK_SOURCE_DIR/docs/man/tracekit-report.1
check "the man page has them" eval 'grep -q "^\.B \\\\-\\\\-events$" "$man" && grep -q "^\.BI \\\\-\\\\-event " "$man" && grep -q "^\.B \\\\-p$" "$man" && grep -q "by\\\\-comm" "$man"'

finish
