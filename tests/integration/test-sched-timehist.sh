#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit sched timehist against perf sched timehist (perf 6.1), byte for byte:
#   1. a perf.data recorded by 'perf sched record' around 'perf bench sched
#      messaging', with perf's default options and the common ones (-s, -S,
#      -w, -M, -V, --state, -p, -t, -C);
#   2. a .dat recorded by 'tracekit record -e sched' around the same load:
#      tracekit on the .dat must print what perf prints on the perf.data
#      that 'tracekit convert --to perf' makes of it;
#   3. --json parses and agrees with the text's totals; --percentiles and
#      --hist add lines after perf's text and leave it alone.
# Needs root, tracefs and perf; otherwise prints "SKIP: reason", exits 77.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf sched record needs root"; exit 77; fi
if [ ! -d /sys/kernel/tracing/events/sched ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	[ -d /sys/kernel/tracing/events/sched ] || { echo "SKIP: no tracefs sched events"; exit 77; }
fi
dir=$(mktemp -d /tmp/tk-timehist-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

same() { # NAME PERF-FILE OUR-FILE ARGS...: perf sched timehist vs tracekit sched timehist
	local name=$1 pfile=$2 tfile=$3
	shift 3
	if ! perf sched timehist -i "$pfile" "$@" >"$dir/p.txt" 2>"$dir/p.err"; then
		fail "$name: perf sched timehist failed: $(head -3 "$dir/p.err")"
		return
	fi
	if ! "$TRACEKIT" sched timehist -i "$tfile" "$@" >"$dir/t.txt" 2>"$dir/t.err"; then
		fail "$name: tracekit sched timehist failed: $(head -3 "$dir/t.err")"
		return
	fi
	if cmp -s "$dir/p.txt" "$dir/t.txt"; then
		echo "ok: $name ($(wc -l <"$dir/t.txt") lines)"
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
ps=$dir/ps.data
same "perf.data default" "$ps" "$ps"
for opts in "-s" "-S" "-w" "-M" "-V" "--state" "-S --state" "-w -M -V -S" "-C 0 -S" "-C 1 -S"; do
	same "perf.data $opts" "$ps" "$ps" $opts
done
# -p/-t with a thread of the workload: the first sched-messaging line's pid and tid.
tp=$(perf sched timehist -i "$ps" 2>/dev/null | grep -m1 -o 'sched-messaging\[[0-9/]*\]' | tr -dc '0-9/')
if [ -n "$tp" ]; then
	same "perf.data -t ${tp%%/*} -S" "$ps" "$ps" -t "${tp%%/*}" -S
	same "perf.data -p ${tp##*/} -S" "$ps" "$ps" -p "${tp##*/}" -S
	same "perf.data -p ${tp##*/},1 -w" "$ps" "$ps" -p "${tp##*/},1" -w
else
	fail "no sched-messaging thread in perf's output"
fi

# FILE as an argument, as -i
"$TRACEKIT" sched timehist -i "$ps" >"$dir/t1.txt"
"$TRACEKIT" sched timehist "$ps" >"$dir/t2.txt"
cmp -s "$dir/t1.txt" "$dir/t2.txt" && echo "ok: FILE argument" || fail "FILE argument differs from -i"

# 3. --json, --percentiles, --hist
if "$TRACEKIT" sched timehist --json -S -w -M "$ps" >"$dir/j.json"; then
	jt=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["tasks"], d["switches"], sum(1 for e in d["events"] if e["type"] == "switch"))' "$dir/j.json")
	"$TRACEKIT" sched timehist -S "$ps" >"$dir/s.txt"
	tt="$(awk '/unique tasks:/ { t = $NF } /context switches:/ { s = $NF } END { printf "%s %s", t, s }' "$dir/s.txt") $(grep -c '^ *[0-9]*\.[0-9]* \[' "$dir/t1.txt")"
	[ "$jt" = "$tt" ] && echo "ok: --json totals ($jt)" || fail "--json '$jt' != text '$tt'"
else
	fail "--json failed"
fi
"$TRACEKIT" sched timehist --percentiles --hist "$ps" >"$dir/ph.txt" || fail "--percentiles --hist failed"
grep -q 'p99.9' "$dir/ph.txt" && grep -q ' ns ' "$dir/ph.txt" && echo "ok: --percentiles --hist lines" ||
	fail "--percentiles/--hist lines missing"
head -n "$(wc -l <"$dir/t1.txt")" "$dir/ph.txt" | cmp -s - "$dir/t1.txt" &&
	echo "ok: --percentiles --hist leave perf's text alone" || fail "--percentiles/--hist changed the text"

# 2. a .dat from tracekit record, against perf on its conversion
if "$TRACEKIT" record -q -e sched -o "$dir/s.dat" -- perf bench sched messaging -g 2 -l 40 \
	>/dev/null 2>"$dir/rec2.err" || [ -s "$dir/s.dat" ]; then
	if "$TRACEKIT" convert --to perf -o "$dir/s.perf" "$dir/s.dat" >/dev/null 2>"$dir/conv.err"; then
		for opts in "" "-S" "-w -M -V -S" "--state -S" "-C 0 -S"; do
			same ".dat $opts = perf on its conversion" "$dir/s.perf" "$dir/s.dat" $opts
		done
	else
		fail "convert --to perf failed: $(head -2 "$dir/conv.err")"
	fi
else
	fail "tracekit record -e sched failed: $(tail -2 "$dir/rec2.err")"
fi

# Usage errors
"$TRACEKIT" sched timehist -s -w "$ps" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: -s -w is a usage error, as in perf" || fail "-s -w: rc $rc"
"$TRACEKIT" sched timehist -C x "$ps" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: bad CPU list is a usage error" || fail "bad -C: rc $rc"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
