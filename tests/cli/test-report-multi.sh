#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# report-multi: several -i inputs with filters, as trace-cmd report 3.1.6
# reads them (issue 17). Each -F belongs to the input before it; those
# before any -i go to the first input (3.1.6 hands them to it; 3.2 made
# them global); -v turns every -F after it into one that hides. The
# oracle is Debian's trace-cmd on the same command line.
set -u
. "$(dirname "$0")/../lib.sh"

command -v trace-cmd >/dev/null 2>&1 || { echo "SKIP: trace-cmd is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-report-multi.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" "$tmp/a.dat"
cp "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" "$tmp/c.dat"
cd "$tmp" || exit 1

while IFS= read -r args; do
	# shellcheck disable=SC2086 # the options are words
	trace-cmd report $args >"$tmp/tc.out" 2>&1
	# shellcheck disable=SC2086
	run report $args
	check "report $args: as trace-cmd report" \
		eval 'rc_is 0 && [ -s "$tmp/out" ] && cmp -s "$tmp/tc.out" "$tmp/out"'
done <<'CASES'
-i a.dat -F sched_switch -i c.dat
-F sched_switch -i a.dat -F sched_wakeup -i c.dat
-v -F sched_switch -i a.dat -i c.dat -F sched_wakeup
-i a.dat -F sched_switch -i c.dat -v -F sched_switch
-F sched_switch -i a.dat -i c.dat -F sched_wakeup
-i a.dat -i c.dat
CASES

finish
