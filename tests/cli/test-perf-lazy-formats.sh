#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# cli-perf-lazy-formats: report parses a perf.data file's TRACING_DATA
# formats when a sample of their event first prints (issue 22), not all at
# open: a `perf record -e 'syscalls:*'` file carries ~700 formats and
# samples a few dozen. What a damaged format of a sampled event does must
# not change with it: the same damage line at the format's offset, in the
# place of the list it had when every format was parsed at the first
# sample (before the damage met while printing), with -j 1 and with
# workers alike; --strict still stops before any output. A format whose id
# no event of the file samples is never parsed, so its damage goes unseen.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-lazyfmt.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
good=$TK_SOURCE_DIR/fuzz/corpus/perfdata/tracepoint.data

# mutate KIND DST: a copy of $good; prints the damaged format's offset.
#   fmt2:   a 0xff byte in the second format's (sched_switch's) print fmt
#   fmt2-s: that, and the second SAMPLE cut to 31 bytes
#   unused: that, with the format's id changed to one no event has
mutate() {
	local actions=(fmt:sched_switch)
	case $1 in
	fmt2-s) actions+=(cut-sample:2) ;;
	unused) actions+=(unused:sched_switch) ;;
	esac
	python3 "$TK_SOURCE_DIR/tests/cli/perfdata-damage.py" "$good" "$2" "${actions[@]}"
}

run report "$good"
check "report: the intact file prints cleanly" eval 'rc_is 0 && err_empty'
intact=$(grep -c . "$tmp/out")
switches=$(grep -c "sched:sched_switch: " "$tmp/out")

f=$tmp/fmt2.data
off=$(mutate fmt2 "$f") || exit 1
for j in 1 2; do
	run report -j $j "$f"
	check "report -j $j: a sampled event's bad format is one damage line at its offset" \
		eval 'rc_is 1 && err_lines 1 &&
			err_has "^tracekit report: $f: offset 0x$off: event format of system sched: .* (its events print without fields) (skipped 0 bytes, events lost unknown)$" &&
			[ "$(grep -c . "$tmp/out")" -eq "$intact" ] &&
			[ "$(grep -c "sched:sched_switch: $" "$tmp/out")" -eq "$switches" ] &&
			out_has "sched:sched_wakeup: comm="'
done
run report --strict "$f"
check "report --strict: the bad format of a later event is the one error line, no output" \
	eval 'rc_is 1 && err_lines 1 && [ ! -s "$tmp/out" ] &&
		err_has "offset 0x$off: event format of system sched"'

f=$tmp/fmt2-s.data
off=$(mutate fmt2-s "$f") || exit 1
for j in 1 2; do
	run report -j $j "$f"
	check "report -j $j: the format's line comes first, then the short SAMPLE's" \
		eval 'rc_is 1 && err_lines 2 &&
			head -n 1 "$tmp/err" | grep -q "offset 0x$off: event format of system sched" &&
			tail -n 1 "$tmp/err" | grep -q "too short for its sample fields"'
done

f=$tmp/unused.data
mutate unused "$f" >/dev/null || exit 1
run report "$f"
check "report: a format whose id no event samples is not parsed (no damage line)" \
	eval 'rc_is 0 && err_empty && [ "$(grep -c . "$tmp/out")" -eq "$intact" ]'

finish
