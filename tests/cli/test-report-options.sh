#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# report-options: the trace-cmd report options a trace-cmd user types
# (issue 17), each run as a user runs it and compared with what Debian's
# trace-cmd report 3.1.6 prints on the same file: -v -F, --pid,
# --ts-diff, --first-event, --last-event, -q, -O, several -i, --stat's
# buffer statistics, and their usage errors; perf.data --fields against
# perf script -F. Then the smaller promises of the same issue: dump
# --section writes a text section without its length field, cache --add
# names what it added.
#
# The golden files are the committed samples (tests/data/README.md): the
# make-sample.sh trace and trace-cmd 3.4's v7-zstd.dat and v6.dat (top
# buffer only: trace-cmd 3.1.6 crashes on -F or --pid with an instance,
# so instance files have no oracle here). Without trace-cmd 3.1.x the
# comparisons are skipped; nothing here touches tracefs.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-ropts.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

SAMPLE=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat
TC34=$TK_SOURCE_DIR/tests/data/tc34

oracle=
if command -v trace-cmd >/dev/null 2>&1 && trace-cmd --version 2>&1 | grep -q 'version 3\.1\.'; then
	oracle=trace-cmd
fi

# same_as_tc NAME FILE ARGS...: tracekit report ARGS FILE prints on stdout
# byte for byte what trace-cmd report ARGS FILE prints, and exits 0.
same_as_tc() {
	local name=$1 file=$2
	shift 2
	if [ -z "$oracle" ]; then
		skip "$name" "trace-cmd 3.1.x is not installed"
		return
	fi
	# FILE "" : the arguments name the files (-i A -i B).
	trace-cmd report "$@" ${file:+"$file"} >"$tmp/tc" 2>/dev/null
	run report "$@" ${file:+"$file"}
	if [ "$rc" -eq 0 ] && cmp -s "$tmp/tc" "$tmp/out" && [ -s "$tmp/out" ]; then
		pass "$name"
	else
		fail "$name" "rc=$rc; $(diff "$tmp/tc" "$tmp/out" | head -n 6 | tr '\n' '|')"
	fi
}

for f in "$SAMPLE" "$TC34/v7-zstd.dat" "$TC34/v6.dat"; do
	b=$(basename "$f")
	same_as_tc "$b: -v -F sched_switch hides the switches" "$f" -v -F sched_switch
	same_as_tc "$b: -v -F with a filter hides only what it matches" "$f" \
		-v -F 'sched_switch:prev_pid==0'
	same_as_tc "$b: -F before -v selects, -F after it hides" "$f" -F sched -v -F sched_switch
	same_as_tc "$b: --ts-diff" "$f" --ts-diff
	same_as_tc "$b: --ts-diff -t" "$f" --ts-diff -t
	same_as_tc "$b: --ts-diff -l" "$f" --ts-diff -l
	same_as_tc "$b: --ts-diff --cpu 1" "$f" --ts-diff --cpu 1
	same_as_tc "$b: --first-event" "$f" --first-event
	same_as_tc "$b: --last-event" "$f" --last-event
	same_as_tc "$b: --first-event --last-event -t" "$f" --first-event --last-event -t
	same_as_tc "$b: -q keeps the text (and cpus=N)" "$f" -q
done

# -O: libtraceevent's plugin options, the same text as trace-cmd's; an
# option no plugin has is an error (trace-cmd ignores it).
for o in ftrace:parent=0 parent=1 ftrace:indent=0 ftrace:offset; do
	same_as_tc "sample: -O $o" "$SAMPLE" -O "$o"
done
run report -O nosuch:opt "$SAMPLE"
check "-O of an unknown option is a usage error naming the known ones" eval 'rc_is 2 && err_has "nosuch:opt" && err_has "ftrace:parent" && [ ! -s "$tmp/out" ]'
# trace-cmd's own fgraph:tailprint and fgraph:depth: test-report-tc.sh.
same_as_tc "sample: -O fgraph:tailprint" "$SAMPLE" -O fgraph:tailprint

# Several -i: merged by time, each line after the file's base name, as
# trace-cmd prints two files (here trace-cmd 3.4's sample and the
# make-sample.sh one, recorded apart: the merge puts one after the other,
# and trace-cmd 3.4's v6 copy of the first, which interleaves with it).
A=$SAMPLE B=$TC34/v7-zstd.dat C=$TC34/v6.dat
same_as_tc "-i A -i B merges two files" "" -i "$A" -i "$B"
same_as_tc "-i B -i A (the other order)" "" -i "$B" -i "$A"
same_as_tc "-i B -i C (same events: ties go to the first)" "" -i "$B" -i "$C"
same_as_tc "three files" "" -i "$A" -i "$C" -i "$B"
same_as_tc "two files -t -l" "" -i "$A" -i "$B" -t -l
same_as_tc "two files -R" "" -i "$A" -i "$B" -R
same_as_tc "two files --ts-diff (across files)" "" -i "$A" -i "$B" --ts-diff
run report -i "$A" -i "$TC34/inst-v7-zstd.dat"
check "two files, one with instances: usage error, nothing printed" eval 'rc_is 2 && err_has "instances" && [ ! -s "$tmp/out" ]'
run report --stat -i "$A" -i "$B"
check "two files --stat: usage error" eval 'rc_is 2 && [ ! -s "$tmp/out" ]'
run report -i "$A" -i "$TK_SOURCE_DIR/tests/data/cpu-clock-cpu1.data"
check "a .dat and a perf.data: usage error" eval 'rc_is 2 && err_has "cpu-clock-cpu1.data"'

# --stat: the counts, most first, then (from the first blank line) what
# trace-cmd report --stat prints after cpus=N, byte for byte.
for f in "$SAMPLE" "$TC34/v7-zstd.dat" "$TC34/v6.dat" "$TC34/inst-v7-zstd.dat"; do
	b=$(basename "$f")
	run report --stat "$f"
	check "$b: --stat counts come most first" eval 'rc_is 0 && sed -n "2,/^$/p" "$tmp/out" | awk "/^ *[0-9]+  /" | sort -s -k1,1nr | cmp -s - <(sed -n "2,/^$/p" "$tmp/out" | awk "/^ *[0-9]+  /")'
	if [ -n "$oracle" ]; then
		trace-cmd report --stat "$f" 2>/dev/null | tail -n +2 >"$tmp/tc"
		check "$b: --stat ends with trace-cmd's buffer statistics" eval 'sed -n "/^$/,\$p" "$tmp/out" | cmp -s - "$tmp/tc"'
	else
		skip "$b: --stat ends with trace-cmd's buffer statistics" "trace-cmd 3.1.x is not installed"
	fi
done

# --pid: the pids the sample's own lines name, busiest first.
pids=$("$TRACEKIT" report "$SAMPLE" 2>/dev/null | sed -n 's/^ *[^ ].*-\([0-9][0-9]*\) *\[[0-9]*\].*/\1/p' |
	sort | uniq -c | sort -rn | awk 'NR <= 3 {print $2}')
set -- $pids
if [ $# -ge 2 ]; then
	same_as_tc "--pid $1 (common_pid, pid, next_pid)" "$SAMPLE" --pid "$1"
	same_as_tc "--pid $1,$2 (a list)" "$SAMPLE" --pid "$1,$2"
	same_as_tc "--pid $1 --pid $2 (repeated)" "$SAMPLE" --pid "$1" --pid "$2"
	same_as_tc "-F sched_switch --pid $1 (the two add up)" "$SAMPLE" -F sched_switch --pid "$1"
	same_as_tc "--pid $1 -v -F print" "$SAMPLE" --pid "$1" -v -F print
	# -P is trace-cmd's printk list now (test-report-tcopts.sh); --pid took over the pids.
	run report -P "$1" "$SAMPLE"
	check "-P takes no pid (it lists printk formats)" eval 'rc_is 2 && [ ! -s "$tmp/out" ]'
else
	fail "the sample names pids" "got '$pids'"
fi

# Usage errors: exit 2, one line naming the problem, nothing on stdout.
run report -v -v -F sched_switch "$SAMPLE"
check "a second -v is a usage error" eval 'rc_is 2 && err_has "only one -v" && [ ! -s "$tmp/out" ]'
run report -v -F no_such_event "$SAMPLE"
check "-v -F of an unknown event is a usage error" eval 'rc_is 2 && err_has "no_such_event" && [ ! -s "$tmp/out" ]'
run report -v -F 'sched_switch:no_such_field==1' "$SAMPLE"
check "-v -F of an unknown field is a usage error" eval 'rc_is 2 && err_has "no_such_field"'
run report --pid 12x "$SAMPLE"
check "--pid 12x is a usage error" eval 'rc_is 2 && err_has "bad pid"'
run report --pid 1, "$SAMPLE"
check "--pid 1, is a usage error" eval 'rc_is 2 && err_has "bad pid"'

# -q: the lost-event warnings of a file that lost events go away, the text stays.
run report "$TC34/v7-none.dat"
cp "$tmp/out" "$tmp/loud"
check "a file with losses warns" eval 'rc_is 0 && err_has "lost events"'
run report -q "$TC34/v7-none.dat"
check "-q: no warnings, the same text" eval 'rc_is 0 && err_empty && cmp -s "$tmp/loud" "$tmp/out"'

# The options are in --help and the man page.
run report --help
check "report --help lists the new options" eval 'rc_is 0 && out_has "^  -v  " && out_has -- "--ts-diff" && out_has -- "--first-event" && out_has -- "--last-event" && out_has "^  -q  " && out_has "^  -O " && out_has -- "--fields LIST"'
man=$TK_SOURCE_DIR/docs/man/tracekit-report.1
check "the man page has them" eval 'grep -q "ts\\\\-diff" "$man" && grep -q "first\\\\-event" "$man" && grep -q "^\.B \\\\-v$" "$man" && grep -q "^\.B \\\\-q$" "$man" && grep -q "^\.BI \\\\-O " "$man"'

# perf.data --fields: perf script -F's fields, on the cpu-clock perf.data in
# the tree (kernel samples) when perf is there to compare with.
PDATA=$TK_SOURCE_DIR/tests/data/cpu-clock-cpu1.data
if command -v perf >/dev/null 2>&1 && [ -s "$PDATA" ] && perf script -i "$PDATA" >/dev/null 2>&1; then
	for f in comm,tid,pid,time,cpu,event,ip,sym,dso,period comm,ip,sym,symoff,dso \
		pid,comm time,cpu,comm event,period comm,sym dso,sym,ip,comm trace tid,ip; do
		perf script -i "$PDATA" -F "$f" >"$tmp/perf" 2>/dev/null
		run report --fields "$f" "$PDATA"
		check "perf.data --fields $f is perf script -F $f" eval 'rc_is 0 && cmp -s "$tmp/perf" "$tmp/out"'
	done
else
	skip "perf.data --fields against perf script -F" "perf or $PDATA missing"
fi
run report --fields comm,bogus "$PDATA"
check "--fields of an unknown field is a usage error" eval 'rc_is 2 && err_has "invalid field requested: .bogus."'
run report --fields ip,symoff "$PDATA"
check "--fields symoff without sym is a usage error" eval 'rc_is 2 && err_has "symbol is not selected"'
run report --fields comm "$SAMPLE"
check "--fields on a .dat file is a usage error" eval 'rc_is 2 && err_has "perf.data"'

# dump --section: the text sections without their binary length.
run dump --section cmdlines "$SAMPLE"
check "dump --section cmdlines is 'PID COMM' text" eval 'rc_is 0 && [ "$(head -c 1 "$tmp/out" | tr "0-9" "d")" = d ] && ! grep -qa "[[:cntrl:]]" <(tr -d "\n" <"$tmp/out")'
run dump --section kallsyms "$SAMPLE"
check "dump --section kallsyms starts with an address" eval 'rc_is 0 && head -n 1 "$tmp/out" | grep -Eq "^[0-9a-f]{16} [A-Za-z] "'
run dump --section printk "$SAMPLE"
check "dump --section printk starts with a format's address" eval 'rc_is 0 && head -n 1 "$tmp/out" | grep -q "^0x[0-9a-f]* : "'

# cache --add: one "BUILD-ID PATH" line per file added.
elf=$(type -P true)
bid=$(readelf -n "$elf" 2>/dev/null | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -n 1)
if [ -n "$bid" ]; then
	run cache --cache-dir "$tmp/cache" --add "$elf"
	check "cache --add prints the build id and path" eval 'rc_is 0 && [ "$(cat "$tmp/out")" = "$bid $elf" ]'
else
	skip "cache --add prints the build id and path" "$elf has no build id (or no readelf)"
fi

# --sym on every golden .dat (issue 21: it once crashed on any ordinary
# trace): exit 0 and, where no event is a probe, the plain report's text.
for f in "$TK_SOURCE_DIR"/tests/data/*.dat "$TK_SOURCE_DIR"/tests/data/*/*.dat; do
	"$TRACEKIT" report "$f" >"$tmp/plain.txt" 2>/dev/null
	run report --sym "$f"
	check "report --sym $(basename "$(dirname "$f")")/$(basename "$f")" \
		eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/plain.txt"'
done


# perf script's field syntax given to -F on a perf.data: it names no event,
# so it is a usage error pointing at --fields, never an empty success.
run report -F comm,pid,time "$TK_SOURCE_DIR/tests/data/perf/plain.data"
check "report -F comm,pid,time on a perf.data: usage error naming --fields, nothing printed" \
	eval 'rc_is 2 && err_has "comm,pid,time" && err_has "perf script" && [ ! -s "$tmp/out" ]'

finish
