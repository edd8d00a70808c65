#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# cli-salvage-perf-fields: damage that perf.data's framing does not show,
# found by the report as it decodes (issue 21). A SAMPLE whose size was
# cut below its sample fields, and an event format in TRACING_DATA that no
# longer parses, are each one damage line (exit 1) while every other sample
# prints; with --strict either is the one error line. Before, the first
# stopped the whole report (nothing printed) and the second printed its
# events with empty text and exit 0. The damage-perf campaign met both.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-salvage-pf.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
good=$TK_SOURCE_DIR/fuzz/corpus/perfdata/tracepoint.data

# Damage a copy: "short-sample" cuts the size of the 20th SAMPLE record of
# the data section to 31 bytes; "format" puts a 0xff byte into the first
# print fmt literal of TRACING_DATA.
damage() {
	local action=fmt
	[ "$1" = short-sample ] && action=cut-sample:20
	python3 "$TK_SOURCE_DIR/tests/cli/perfdata-damage.py" "$good" "$2" "$action" >/dev/null
}

run report "$good"
check "report: the intact file prints cleanly" eval 'rc_is 0 && err_empty'
intact=$(grep -c . "$tmp/out")

short=$tmp/short.data
damage short-sample "$short" || exit 1
run report "$short"
check "report: a SAMPLE cut below its fields is one damage line, the rest prints (exit 1)" \
	eval 'rc_is 1 && err_lines 1 &&
		err_has "^tracekit report: $short: offset 0x[0-9a-f]*: SAMPLE record of 31 bytes is too short for its sample fields .*(skipped [0-9]* bytes, " &&
		[ "$(grep -c . "$tmp/out")" -ge $((intact - 2)) ]'
run report --strict "$short"
# perf.data streams: what came before the damage is out already (as for
# damaged framing); the events after it are not.
check "report --strict: the short SAMPLE is the one error line, nothing after it" \
	eval 'rc_is 1 && err_lines 1 && err_has "too short for its sample fields" &&
		[ "$(grep -c . "$tmp/out")" -lt $((intact - 2)) ]'

run convert -q "$short" -o "$tmp/short.dat"
check "convert: the short SAMPLE is one damage line, the rest converted (exit 1)" \
	eval 'rc_is 1 && err_lines 1 && err_has "^tracekit convert: $short: offset 0x" &&
		[ "$("$TRACEKIT" report "$tmp/short.dat" | grep -c " sched_")" -ge $((intact - 2)) ]'

fmt=$tmp/format.data
damage format "$fmt" || exit 1
run report "$fmt"
check "report: an event format that no longer parses is a damage line naming it (exit 1)" \
	eval 'rc_is 1 && err_lines 1 &&
		err_has "^tracekit report: $fmt: offset 0x[0-9a-f]*: event format of system .* (its events print without fields) (skipped 0 bytes, events lost unknown)$" &&
		[ "$(grep -c . "$tmp/out")" -eq "$intact" ]'
run report --strict "$fmt"
check "report --strict: the bad format is the one error line" \
	eval 'rc_is 1 && err_lines 1 && [ ! -s "$tmp/out" ] && err_has "event format of system"'

finish
