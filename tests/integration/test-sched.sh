#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit sched latency and map against perf sched (perf 6.1), byte for byte:
#   1. a perf.data recorded by 'perf sched record' around 'perf bench sched
#      messaging' (threads that wait and wake each other), with perf's
#      default options and the common ones (-p, -s KEYS, -C CPU);
#   2. a .dat recorded by 'tracekit record -e sched' around the same load:
#      tracekit sched on the .dat must print what perf sched prints on the
#      perf.data that 'tracekit convert --to perf' makes of it;
#   3. --json parses and its totals equal the text's TOTAL line;
#      --percentiles and --hist add lines and leave the table alone.
# Needs root, tracefs and perf; otherwise prints "SKIP: reason", exits 77.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf sched record needs root"; exit 77; fi
if [ ! -d /sys/kernel/tracing/events/sched ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	[ -d /sys/kernel/tracing/events/sched ] || { echo "SKIP: no tracefs sched events"; exit 77; }
fi
dir=$(mktemp -d /tmp/tk-sched-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }


same() { # NAME FILE PERF-ARGS...: perf sched latency vs tracekit sched latency
	local name=$1 file=$2
	shift 2
	if ! perf sched latency -i "$file" "$@" >"$dir/p.txt" 2>"$dir/p.err"; then
		fail "$name: perf sched latency failed: $(head -3 "$dir/p.err")"
		return
	fi
	if ! "$TRACEKIT" sched latency -i "$file" "$@" >"$dir/t.txt" 2>"$dir/t.err"; then
		fail "$name: tracekit sched latency failed: $(head -3 "$dir/t.err")"
		return
	fi
	if cmp -s "$dir/p.txt" "$dir/t.txt"; then
		echo "ok: $name ($(grep -c ' | avg:' "$dir/t.txt") tasks)"
	else
		fail "$name: text differs from perf's"
		diff "$dir/p.txt" "$dir/t.txt" | head -20
	fi
}

# 1. perf sched record
if ! perf sched record -o "$dir/ps.data" -- perf bench sched messaging -g 2 -l 40 \
	>/dev/null 2>"$dir/rec.err"; then
	echo "SKIP: perf sched record failed: $(tail -2 "$dir/rec.err")"
	exit 77
fi
same "perf.data default" "$dir/ps.data"
same "perf.data -p" "$dir/ps.data" -p
same "perf.data -s max" "$dir/ps.data" -s max
same "perf.data -s runtime,switch" "$dir/ps.data" -s runtime,switch
same "perf.data -s pid" "$dir/ps.data" -s pid
same "perf.data -C 0" "$dir/ps.data" -C 0
same "perf.data -C 1 -p -s switch" "$dir/ps.data" -C 1 -p -s switch

if perf sched map -i "$dir/ps.data" >"$dir/pm.txt" 2>/dev/null &&
	"$TRACEKIT" sched map "$dir/ps.data" >"$dir/tm.txt"; then
	cmp -s "$dir/pm.txt" "$dir/tm.txt" && echo "ok: perf.data map ($(wc -l <"$dir/tm.txt") lines)" ||
		{ fail "perf.data map differs from perf's"; diff "$dir/pm.txt" "$dir/tm.txt" | head; }
else
	fail "sched map failed"
fi

# FILE as an argument, as perf's -i
"$TRACEKIT" sched latency "$dir/ps.data" >"$dir/t2.txt" 2>&1
cmp -s "$dir/t2.txt" "$dir/t.txt" || true
"$TRACEKIT" sched latency -i "$dir/ps.data" >"$dir/t1.txt"
cmp -s "$dir/t1.txt" "$dir/t2.txt" && echo "ok: FILE argument" || fail "FILE argument differs from -i"

# 3. --json, --percentiles, --hist
if "$TRACEKIT" sched latency --json "$dir/ps.data" >"$dir/j.json"; then
	jt=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("%.3f %d" % (d["total"]["runtime_ns"]/1e6, d["total"]["switches"]))' "$dir/j.json")
	tt=$(awk -F'|' '/TOTAL:/ { gsub(/ ms/, "", $2); printf "%.3f %d\n", $2, $3 }' "$dir/t1.txt")
	[ "$jt" = "$tt" ] && echo "ok: --json totals ($jt)" || fail "--json totals '$jt' != text '$tt'"
else
	fail "--json failed"
fi
"$TRACEKIT" sched latency --percentiles --hist "$dir/ps.data" >"$dir/ph.txt" || fail "--percentiles --hist failed"
grep -q 'p99.9' "$dir/ph.txt" && grep -q ' ns ' "$dir/ph.txt" && echo "ok: --percentiles --hist lines" ||
	fail "--percentiles/--hist lines missing"
grep -v -e 'delay ms: p50' -e ' ns  *[0-9]* |' "$dir/ph.txt" | cmp -s - "$dir/t1.txt" &&
	echo "ok: --percentiles --hist leave the table alone" || fail "--percentiles/--hist changed the table"

# 2. a .dat from tracekit record, against perf on its conversion
if "$TRACEKIT" record -q -e sched -o "$dir/s.dat" -- perf bench sched messaging -g 2 -l 40 \
	>/dev/null 2>"$dir/rec2.err" || [ -s "$dir/s.dat" ]; then
	if "$TRACEKIT" convert --to perf -o "$dir/s.perf" "$dir/s.dat" >/dev/null 2>"$dir/conv.err"; then
		for opts in "" "-p" "-s max,pid"; do
			perf sched latency -i "$dir/s.perf" $opts >"$dir/p.txt" 2>/dev/null
			"$TRACEKIT" sched latency -i "$dir/s.dat" $opts >"$dir/t.txt" 2>"$dir/t.err"
			if cmp -s "$dir/p.txt" "$dir/t.txt"; then
				echo "ok: .dat $opts = perf on its conversion ($(grep -c ' | avg:' "$dir/t.txt") tasks)"
			else
				fail ".dat $opts: differs from perf on the converted file"
				diff "$dir/p.txt" "$dir/t.txt" | head -20
			fi
		done
		perf sched map -i "$dir/s.perf" >"$dir/p.txt" 2>/dev/null
		"$TRACEKIT" sched map "$dir/s.dat" >"$dir/t.txt" 2>"$dir/t.err"
		cmp -s "$dir/p.txt" "$dir/t.txt" && echo "ok: .dat map = perf on its conversion" ||
			{ fail ".dat map differs"; diff "$dir/p.txt" "$dir/t.txt" | head; }
	else
		fail "convert --to perf failed: $(head -2 "$dir/conv.err")"
	fi
else
	fail "tracekit record -e sched failed: $(tail -2 "$dir/rec2.err")"
fi

# Usage errors
"$TRACEKIT" sched latency -s bogus "$dir/ps.data" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: unknown sort key is a usage error" || fail "unknown sort key: rc $rc"
"$TRACEKIT" sched frobnicate >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: unknown analysis is a usage error" || fail "unknown analysis: rc $rc"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
