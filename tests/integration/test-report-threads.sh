#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit report prints lines on several threads (-j): the text must be
# the one thread's, byte for byte, whatever the thread count, the filters
# and the file (.dat, and perf.data converted from it). Built with ThreadSanitizer (make check's build-tsan, where
# this runs too) any data race ends the run with an error.
#
# Environment: TRACEKIT, BENCH_REPORT (bench/bench-report, which writes a
# file of N generated sched/irq/timer/print events with real formats),
# TK_SOURCE_DIR. Needs neither root nor tracefs.
set -u
TRACEKIT=${TRACEKIT:?}
BENCH_REPORT=${BENCH_REPORT:?}
TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d /tmp/tk-report-threads.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

# 60 k events: fifteen jobs of 4096 lines, so workers print side by side.
"$BENCH_REPORT" --events 60000 --keep "$tmp/t.dat" --no-trace-cmd --no-perf --tracekit /bin/true \
	>"$tmp/gen.out" 2>&1 || { echo "FAIL: bench-report could not write the file"; cat "$tmp/gen.out"; exit 1; }

# same FILE LABEL ARGS...: -j 1 against -j 2, 3 and 8.
same() {
	local file=$1 label=$2
	shift 2
	if ! "$TRACEKIT" report -j 1 "$@" "$file" >"$tmp/one" 2>"$tmp/one.err"; then
		fail "$label: report -j 1 failed: $(head -c 300 "$tmp/one.err")"
		return
	fi
	for j in 2 3 8; do
		if ! "$TRACEKIT" report -j $j "$@" "$file" >"$tmp/many" 2>"$tmp/many.err"; then
			fail "$label: report -j $j failed: $(head -c 600 "$tmp/many.err")"
		elif ! cmp -s "$tmp/one" "$tmp/many"; then
			fail "$label: report -j $j differs from -j 1: $(cmp "$tmp/one" "$tmp/many")"
		else
			ok "$label: -j $j prints what -j 1 prints ($(wc -l <"$tmp/one") lines)"
		fi
	done
}

same "$tmp/t.dat" "generated"
# A time window that starts mid-file: every worker's streams seek to it too.
mid=$("$TRACEKIT" report -j 1 "$tmp/t.dat" 2>/dev/null | sed -n '30000p' | grep -oE '[0-9]+\.[0-9]{6}:' | tr -d :)
if [ -n "$mid" ]; then
	same "$tmp/t.dat" "generated --start mid-file" --start "$mid"
else
	fail "no timestamp on line 30000 to start from"
fi
same "$tmp/t.dat" "generated --cpu 1" --cpu 1
same "$tmp/t.dat" "generated -F sched" -F sched
same "$tmp/t.dat" "generated -t" -t
same "$tmp/t.dat" "generated --start/--end" --start 0 --end 1000000
if [ -f "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" ]; then
	same "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" "sample (zstd)"
fi
# The modes that print in the merge thread take -j and still print the same.
same "$tmp/t.dat" "generated --stat" --stat
same "$tmp/t.dat" "generated -R" -R

# Without -j a report of 4 MiB of CPU data or more prints on one thread per
# CPU (up to 4): that default must print what one thread prints.
"$BENCH_REPORT" --events 150000 --keep "$tmp/big.dat" --no-trace-cmd --no-perf --tracekit /bin/true \
	>"$tmp/gen.out" 2>&1 || { echo "FAIL: bench-report could not write the big file"; cat "$tmp/gen.out"; exit 1; }
if ! "$TRACEKIT" report -j 1 "$tmp/big.dat" >"$tmp/one" 2>"$tmp/one.err"; then
	fail "big file: report -j 1 failed: $(head -c 300 "$tmp/one.err")"
elif ! "$TRACEKIT" report "$tmp/big.dat" >"$tmp/many" 2>"$tmp/many.err"; then
	fail "big file: report (default threads) failed: $(head -c 600 "$tmp/many.err")"
elif ! cmp -s "$tmp/one" "$tmp/many"; then
	fail "big file: the default thread count prints other text than -j 1: $(cmp "$tmp/one" "$tmp/many")"
else
	ok "big file: the default thread count prints what -j 1 prints ($(wc -l <"$tmp/one") lines)"
fi

# perf.data: the same file converted (tracepoint samples, FINISHED_ROUNDs),
# printed as perf script prints it, on 1 thread and on several.
if "$TRACEKIT" convert -q "$tmp/t.dat" -o "$tmp/t.data" >"$tmp/conv.out" 2>&1; then
	same "$tmp/t.data" "perf.data"
	same "$tmp/t.data" "perf.data --cpu 1" --cpu 1
	same "$tmp/t.data" "perf.data -F sched_switch" -F sched_switch
	same "$tmp/t.data" "perf.data --ns" --ns
else
	fail "convert to perf.data failed: $(head -c 300 "$tmp/conv.out")"
fi
if "$TRACEKIT" convert -q "$tmp/big.dat" -o "$tmp/big.data" >"$tmp/conv.out" 2>&1; then
	if ! "$TRACEKIT" report -j 1 "$tmp/big.data" >"$tmp/one" 2>"$tmp/one.err"; then
		fail "big perf.data: report -j 1 failed: $(head -c 300 "$tmp/one.err")"
	elif ! "$TRACEKIT" report "$tmp/big.data" >"$tmp/many" 2>"$tmp/many.err"; then
		fail "big perf.data: report failed: $(head -c 600 "$tmp/many.err")"
	elif ! cmp -s "$tmp/one" "$tmp/many"; then
		fail "big perf.data: the default thread count prints other text than -j 1"
	else
		ok "big perf.data: the default thread count prints what -j 1 prints ($(wc -l <"$tmp/one") lines)"
	fi
else
	fail "convert of the big file failed: $(head -c 300 "$tmp/conv.out")"
fi

echo "TK-COUNTS: passed=$passed failed=$failed skipped=0"
[ $failed -eq 0 ]
