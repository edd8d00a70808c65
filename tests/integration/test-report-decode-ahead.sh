#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# report-decode-ahead: a compressed .dat (v7 zstd, zlib) printed with its
# chunks decoded ahead on a second thread (-j 2 and the default) prints
# what one thread prints, byte for byte, on stdout and stderr and with the
# same exit status: plain, with a time window, filters and the modes that
# print in the merge thread, and on copies with a damaged chunk (salvage:
# one damage line and the rest printed; --strict: the same one error).
# Built with ThreadSanitizer (make check's build-tsan, where this runs too)
# any data race ends the run with an error.
#
# Environment: TRACEKIT, BENCH_REPORT (bench/bench-report, which writes a
# file of N generated sched/irq/timer/print events with real formats),
# TK_SOURCE_DIR. Needs neither root nor tracefs.
set -u
TRACEKIT=${TRACEKIT:?}
BENCH_REPORT=${BENCH_REPORT:?}
TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d /tmp/tk-decode-ahead.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1"; }

# same FILE LABEL ARGS...: -j 1 against -j 2 and -j 3: stdout, stderr, status.
same() {
	local file=$1 label=$2 rc1 rc
	shift 2
	"$TRACEKIT" report -j 1 "$@" "$file" >"$tmp/one" 2>"$tmp/one.err"
	rc1=$?
	if [ $rc1 -gt 1 ]; then
		fail "$label: report -j 1 exited $rc1: $(head -c 300 "$tmp/one.err")"
		return
	fi
	for j in 2 3; do
		"$TRACEKIT" report -j $j "$@" "$file" >"$tmp/many" 2>"$tmp/many.err"
		rc=$?
		if [ $rc -ne $rc1 ]; then
			fail "$label: -j $j exited $rc, -j 1 $rc1: $(head -c 600 "$tmp/many.err")"
		elif ! cmp -s "$tmp/one" "$tmp/many"; then
			fail "$label: -j $j prints other text than -j 1: $(cmp "$tmp/one" "$tmp/many")"
		elif ! cmp -s "$tmp/one.err" "$tmp/many.err"; then
			fail "$label: -j $j warns otherwise than -j 1: $(diff "$tmp/one.err" "$tmp/many.err" | head -5)"
		else
			ok "$label: -j $j prints what -j 1 prints ($(wc -l <"$tmp/one") lines, exit $rc)"
		fi
	done
}

# 60 k events, 2.5 MB of CPU data: a few hundred chunks per CPU.
"$BENCH_REPORT" --events 60000 --keep "$tmp/t.dat" --no-trace-cmd --no-perf --tracekit /bin/true \
	>"$tmp/gen.out" 2>&1 || { echo "FAIL: bench-report could not write the file"; cat "$tmp/gen.out"; exit 1; }
for comp in zstd zlib; do
	"$TRACEKIT" convert -q "$tmp/t.dat" -o "$tmp/$comp.dat" --compression $comp ||
		{ fail "convert to $comp failed"; continue; }
	same "$tmp/$comp.dat" "$comp"
done
z=$tmp/zstd.dat
mid=$("$TRACEKIT" report -j 1 "$z" 2>/dev/null | sed -n '30000p' | grep -oE '[0-9]+\.[0-9]{6}:' | tr -d :)
if [ -n "$mid" ]; then
	same "$z" "zstd --start mid-file" --start "$mid"
else
	fail "no timestamp on line 30000 to start from"
fi
same "$z" "zstd --cpu 1" --cpu 1
same "$z" "zstd -F sched" -F sched
same "$z" "zstd --stat" --stat
same "$z" "zstd -R" -R
same "$z" "zstd --header" --header
# --header's first pass left the streams unplaced for the workers' first job (a crash, found here).
same "$tmp/t.dat" "uncompressed --header" --header

# Without -j, a compressed report of 16 MiB of CPU data (decoded) or more
# decodes ahead when the process may use two CPUs (500 k events: ~20 MB):
# the same text again.
"$BENCH_REPORT" --events 500000 --keep "$tmp/big.dat" --no-trace-cmd --no-perf --tracekit /bin/true \
	>"$tmp/gen.out" 2>&1 || { echo "FAIL: bench-report could not write the big file"; cat "$tmp/gen.out"; exit 1; }
if ! "$TRACEKIT" convert -q "$tmp/big.dat" -o "$tmp/bigz.dat"; then
	fail "convert of the big file failed"
elif ! "$TRACEKIT" report -j 1 "$tmp/bigz.dat" >"$tmp/one" 2>"$tmp/one.err"; then
	fail "big file: report -j 1 failed: $(head -c 300 "$tmp/one.err")"
elif ! "$TRACEKIT" report "$tmp/bigz.dat" >"$tmp/many" 2>"$tmp/many.err"; then
	fail "big file: report (default threads) failed: $(head -c 600 "$tmp/many.err")"
elif ! cmp -s "$tmp/one" "$tmp/many"; then
	fail "big file: the default thread count prints other text than -j 1: $(cmp "$tmp/one" "$tmp/many")"
else
	ok "big file: the default thread count prints what -j 1 prints ($(wc -l <"$tmp/one") lines)"
fi

# One allowed CPU (taskset): the default is one thread, the same text.
if command -v taskset >/dev/null 2>&1 && [ -s "$tmp/one" ]; then
	if ! taskset -c 0 "$TRACEKIT" report "$tmp/bigz.dat" >"$tmp/many" 2>"$tmp/many.err"; then
		fail "taskset -c 0: report failed: $(head -c 600 "$tmp/many.err")"
	elif ! cmp -s "$tmp/one" "$tmp/many"; then
		fail "taskset -c 0: the default prints other text than -j 1"
	else
		ok "taskset -c 0: the default prints what -j 1 prints"
	fi
fi

# feed_same FILE LABEL CMD...: an analysis of FILE (its feed decodes
# compressed chunks ahead when two CPUs are allowed) against the same on one
# allowed CPU: stdout, stderr and status.
feed_same() {
	local file=$1 label=$2 rc1 rc
	shift 2
	taskset -c 0 "$TRACEKIT" "$@" "$file" >"$tmp/one" 2>"$tmp/one.err"
	rc1=$?
	"$TRACEKIT" "$@" "$file" >"$tmp/many" 2>"$tmp/many.err"
	rc=$?
	if [ $rc1 -gt 1 ]; then
		fail "$label: $* on one CPU exited $rc1: $(head -c 300 "$tmp/one.err")"
	elif [ $rc -ne $rc1 ]; then
		fail "$label: $* exited $rc, on one CPU $rc1: $(head -c 600 "$tmp/many.err")"
	elif ! cmp -s "$tmp/one" "$tmp/many" || ! cmp -s "$tmp/one.err" "$tmp/many.err"; then
		fail "$label: $* decoding ahead prints otherwise than on one CPU: $(diff "$tmp/one" "$tmp/many" | head -3)"
	else
		ok "$label: $* decoding ahead prints what one CPU prints ($(wc -l <"$tmp/one") lines, exit $rc)"
	fi
}
if command -v taskset >/dev/null 2>&1; then
	feed_same "$tmp/bigz.dat" "big file" report --profile
	feed_same "$tmp/bigz.dat" "big file" report -w
	feed_same "$tmp/bigz.dat" "big file" sched latency
	feed_same "$tmp/bigz.dat" "big file" sched timehist
	feed_same "$tmp/bigz.dat" "big file" flamegraph --off-cpu --folded
	feed_same "$tmp/zlib.dat" "zlib" report --profile
else
	echo "skip: the analyses' decode ahead (taskset is not installed)"
fi

# Damaged chunks (tests/integration/mutate.py derives them from the layout).
if command -v python3 >/dev/null 2>&1; then
	MUTATE=$TK_SOURCE_DIR/tests/integration/mutate.py
	names=$(python3 "$MUTATE" list "$z" | grep -E '^cpu[01]-chunk(1|7)-(frame|usize-0xa001|csize-0x7fff)' |
		head -10)
	[ -n "$names" ] || fail "mutate.py lists no chunk damage for $z"
	for name in $names; do
		python3 "$MUTATE" write "$z" "$name" "$tmp/bad.dat" || { fail "$name: mutate.py"; continue; }
		same "$tmp/bad.dat" "$name"
		same "$tmp/bad.dat" "$name --strict" --strict
		command -v taskset >/dev/null 2>&1 && feed_same "$tmp/bad.dat" "$name" report --profile
	done
else
	echo "skip: damaged chunks (python3 is not installed)"
fi

echo "TK-COUNTS: passed=$passed failed=$failed skipped=0"
[ $failed -eq 0 ]
