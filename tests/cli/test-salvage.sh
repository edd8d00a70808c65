#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# cli-salvage: damaged .dat files as users meet them (issue 21). Without
# --strict, report, dump and convert read what is intact, print one warning
# line per damaged region ("tracekit CMD: FILE: offset 0xOFF: WHAT (skipped
# N bytes, M events lost|events lost unknown)") and exit 1; with --strict
# the first damage is the one error line and no event is printed. `tracekit
# check` says "FILE: ok (N events)" or lists the damage. The damaged copies
# come from tests/integration/mutate.py, which knows the layout on its own.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-salvage.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
MUTATE=$TK_SOURCE_DIR/tests/integration/mutate.py
good=$tmp/good.dat
"$TRACEKIT" convert -q "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" -o "$good" \
	--compression none || { echo "FAIL: cannot make the input"; exit 1; }
v6=$tmp/good6.dat
"$TRACEKIT" convert -q "$good" -o "$v6" --file-version 6 || { echo "FAIL: no v6 input"; exit 1; }
cut=$tmp/cut-record.dat
python3 "$MUTATE" write "$good" cpu0-page0-commit-cuts-record "$cut" || exit 1
trunc=$tmp/truncated.dat
python3 "$MUTATE" write "$v6" truncate-cpu1-data-mid "$trunc" || exit 1

damage_re='^tracekit report: .*: offset 0x[0-9a-f]*: .* (skipped [0-9]* bytes, \(events lost unknown\|[0-9]* events lost\))$'

# check
run check "$good"
check "check: intact file is ok with its event count" \
	eval 'rc_is 0 && out_has "^$good: ok (1748 events)$" && err_empty'
run check "$cut"
check "check: damaged file lists the region and exits 1" \
	eval 'rc_is 1 && err_has "^tracekit check: $cut: offset 0x[0-9a-f]*: CPU 0 page" &&
		out_has "^$cut: damaged (1 region, [0-9]* events read)$"'
run check "$good" "$cut"
check "check: several files, the worst status wins" \
	eval 'rc_is 1 && out_has "ok (1748 events)" && out_has "damaged"'
run check
check "check: no file is a usage error" rc_is 2
run check --help
check "check: --help" eval 'rc_is 0 && out_has "usage: tracekit check"'
perf=$tmp/x.data
printf 'PERFILE2' >"$perf"
head -c 200 /dev/zero >>"$perf"
run check "$perf"
check "check: an unreadable perf.data header is one error line naming the offset (exit 1)" \
	eval 'rc_is 1 && err_has "x.data: offset 0x8: header size 0"'
run check "$TK_SOURCE_DIR/tests/data/perf/plain.data"
check "check: an intact perf.data is ok with its sample count" \
	eval 'rc_is 0 && out_has "plain.data: ok (68 events)"'
head -c 3000 "$TK_SOURCE_DIR/tests/data/perf/plain.data" >"$tmp/cut.data"
run check "$tmp/cut.data"
check "check: a cut perf.data lists its damaged regions (exit 1)" \
	eval 'rc_is 1 && out_has "cut.data: damaged (2 regions, 46 events read)" && err_has "cut.data: offset 0xbb8: data section"'
run --help
check "tracekit --help lists check" out_has "^   check "

# report: salvage by default, --strict as before
run report "$cut"
check "report: damaged file prints its events, warns and exits 1" \
	eval 'rc_is 1 && [ "$(grep -c "\] *[0-9]*\.[0-9]*: " "$tmp/out")" -ge 1600 ] &&
		err_lines 1 && grep -q "$damage_re" "$tmp/err"'
run report --strict "$cut"
check "report --strict: one error line naming file and offset" \
	eval 'rc_is 1 && err_lines 1 && err_has "$cut: offset 0x" && ! err_has "skipped"'
run report "$trunc"
check "report: truncated v6 file prints what is there" \
	eval 'rc_is 1 && [ "$(grep -c "\] *[0-9]*\.[0-9]*: " "$tmp/out")" -ge 800 ] &&
		err_has "cut by the end of the file"'
run report --strict "$trunc"
check "report --strict: truncated file prints no event" \
	eval 'rc_is 1 && [ "$(grep -c "\] *[0-9]*\.[0-9]*: " "$tmp/out")" -eq 0 ] && err_lines 1'
run report "$good"
check "report: intact file exits 0 without warnings" eval 'rc_is 0 && err_empty'
run report --help
check "report --help shows --strict" out_has "--strict"

# dump
run dump "$cut"
check "dump: damaged file is shown, warns and exits 1" \
	eval 'rc_is 1 && out_has "^totals: events=" && err_has "^tracekit dump: $cut: offset 0x"'
run dump --strict "$cut"
check "dump --strict: one error line" eval 'rc_is 1 && err_lines 1 && err_has "offset 0x"'
run dump --help
check "dump --help shows --strict" out_has "--strict"

# convert
out=$tmp/salvaged.dat
run convert -q "$trunc" -o "$out"
check "convert: writes what it read, warns and exits 1" \
	eval 'rc_is 1 && [ -s "$out" ] && err_has "^tracekit convert: $trunc: offset 0x"'
run check "$out"
check "convert: the salvaged copy checks clean" rc_is 0
rm -f "$out"
run convert -q --strict "$trunc" -o "$out"
check "convert --strict: fails and writes nothing" eval 'rc_is 1 && [ ! -e "$out" ]'
run convert --help
check "convert --help shows --strict" out_has "--strict"

# every damage line of report has the shared form
for m in cpu0-page1-commit-beyond-page truncate-cpu1-data-end; do
	bad=$tmp/$m.dat
	python3 "$MUTATE" write "$good" "$m" "$bad" || continue
	run report "$bad"
	check "report $m: exit 1, every stderr line a damage line" \
		eval 'rc_is 1 && [ "$(grep -vc "$damage_re" "$tmp/err")" -eq 0 ]'
done

finish
