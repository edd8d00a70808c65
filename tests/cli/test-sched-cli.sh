#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit sched as a user runs it, without recording anything: the sample
# .dat of tests/data against perf sched latency on its conversion (when perf
# is installed), the options' effects, and the usage errors. The recording
# oracle test is tests/integration/test-sched.sh.
set -u
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d /tmp/tk-sched-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dat=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat

run sched latency "$dat"
check "sched latency on a .dat" eval 'rc_is 0 && out_has "^  TOTAL:" && err_empty'
cp "$tmp/out" "$tmp/default.txt"
run sched latency -i "$dat"
check "-i FILE prints what FILE prints" eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/default.txt"'

if command -v perf >/dev/null; then
	"$TRACEKIT" convert --to perf -o "$tmp/s.perf" "$dat" >/dev/null 2>&1
	for o in "" "-p" "-s max,pid" "-s runtime -C 0"; do
		perf sched latency -i "$tmp/s.perf" $o >"$tmp/p.txt" 2>/dev/null
		run sched latency $o "$dat"
		check "sched latency $o = perf sched latency $o on the converted file" \
			eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/p.txt"'
	done
	perf sched map -i "$tmp/s.perf" >"$tmp/p.txt" 2>/dev/null
	run sched map "$dat"
	check "sched map = perf sched map on the converted file" \
		eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/p.txt"'
else
	skip "sched latency against perf" "perf is not installed"
fi

run sched latency --json "$dat"
check "--json is one JSON document" eval 'rc_is 0 && python3 -m json.tool "$tmp/out" >/dev/null'
run sched latency --percentiles --hist "$dat"
check "--percentiles --hist add lines" eval 'rc_is 0 && out_has "p99.9" && out_has " ns "'

run sched latency -s bogus "$dat"
check "unknown sort key exits 2" eval 'rc_is 2 && err_has "bogus"'
run sched frobnicate "$dat"
check "unknown analysis exits 2" eval 'rc_is 2 && err_has "frobnicate"'
run sched
check "no analysis exits 2" eval 'rc_is 2'
run sched latency "$tmp/none.dat"
check "missing file exits 1 naming it" eval 'rc_is 1 && err_has "none.dat"'
printf 'not a trace' >"$tmp/junk"
run sched latency "$tmp/junk"
check "a file that is no trace exits 1" eval 'rc_is 1 && err_has "junk"'
run sched map -s max "$dat"
check "map refuses latency's options" eval 'rc_is 2'
run sched --help
check "sched --help prints its usage" eval 'rc_is 0 && out_has "^usage: tracekit sched"'

finish
