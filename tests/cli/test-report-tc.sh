#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# report-tc: command lines of trace-cmd report that tracekit report takes
# as they are (issue 17), with Debian's trace-cmd 3.1.6 on the same
# command line as the oracle:
#   - several -i inputs with filters: each -F belongs to the input before
#     it, those before any -i to the first (3.1.6 hands them to it; 3.2
#     made them global); -v turns every -F after it into one that hides;
#   - function_graph files read together (each entry looks ahead in its
#     own file), --ts-diff in the unit trace-cmd picks per file (us only
#     with a TRACECLOCK option);
#   - trace-cmd's own function graph options, -O fgraph:tailprint and
#     fgraph:depth, on the function_graph files of tests/data/public (and
#     not applied when several files are read, as in trace-cmd 3.1.6).
set -u
. "$(dirname "$0")/../lib.sh"

command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-report-multi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" "$tmp/a.dat"
cp "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" "$tmp/c.dat"
cp "$TK_SOURCE_DIR/tests/data/public/funcgraph-made.dat" "$tmp/f1.dat"
cp "$TK_SOURCE_DIR/tests/data/public/wsdias-LabSisOp-trace.dat" "$tmp/f2.dat"
cd "$tmp" || exit 1
TC_HEAP_BYTE_FILES=f2.dat # tc_report_same: a copy of wsdias-LabSisOp-trace.dat

# No "!(...)" among the filters: libtraceevent 1.7.1 leaks the two bytes of
# its "!" token there, from code LeakSanitizer cannot unwind (no frame
# pointers), so tests/lsan.supp cannot name it and make check's ASan run
# would fail on libtraceevent's leak.

while IFS= read -r args; do
	# shellcheck disable=SC2086 # the options are words
	run report $args
	check "report $args: as trace-cmd report" \
		eval 'rc_is 0 && [ -s "$tmp/out" ] && tc_report_same "$tmp/out" merged $args'
done <<'CASES'
-i a.dat -F sched_switch -i c.dat
-F sched_switch -i a.dat -F sched_wakeup -i c.dat
-v -F sched_switch -i a.dat -i c.dat -F sched_wakeup
-i a.dat -F sched_switch -i c.dat -v -F sched_switch
-F sched_switch -i a.dat -i c.dat -F sched_wakeup
-i a.dat -i c.dat
-i f1.dat -i f2.dat
-i f1.dat -i a.dat --ts-diff
-i f1.dat --ts-diff
-t -i f1.dat --ts-diff
-i f1.dat -i f2.dat -O fgraph:depth
-F sched_switch:prev_pid==0x10||next_pid<1e3 -i a.dat
-F sched_switch:prev_pid>5||(next_pid==0&&prev_comm~"k*") -i a.dat
CASES

for f in "$TK_SOURCE_DIR"/tests/data/public/*.dat; do
	for o in "-O fgraph:tailprint" "-O fgraph:depth" "-O fgraph:depth -O fgraph:tailprint" \
		"-O fgraph:depth=1 -O fgraph:depth=false" "-O fgraph:tailprint -j 1"; do
		# shellcheck disable=SC2086
		run report $o "$f"
		check "report $o $(basename "$f"): as trace-cmd report" \
			eval 'rc_is 0 && [ -s "$tmp/out" ] && tc_report_same "$tmp/out" merged ${o% -j 1} "$f"'
	done
done
run report -O fgraph:bogus "$TK_SOURCE_DIR/tests/data/public/funcgraph-made.dat"
check "report -O fgraph:bogus: a usage error naming the fgraph options (trace-cmd ignores it)" \
	eval 'rc_is 2 && err_has "fgraph:tailprint, fgraph:depth"'

finish
