#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit report --profile and -w against trace-cmd 3.1.6's:
#   1. the .dat files of tests/data (no root needed) and a .dat recorded by
#      'tracekit record -e sched -e irq -e raw_syscalls' around 'perf bench
#      sched messaging' ('trace-cmd record' is refused on these machines;
#      its --profile recording mode needs the function tracer);
#   2. -w byte for byte, also with --cpu and -F (it times printed lines);
#   3. --profile line for line, except the order of lines that tie on event
#      and total time, which trace-cmd takes from a hash of its heap
#      addresses: runs of such lines are compared sorted;
#   4. --json parses; --percentiles/--hist add lines after -w's summary;
#      the usage errors.
# Without root or tracefs, part 1's recording is skipped (the rest runs).
set -u
TRACEKIT=${TRACEKIT:-tracekit}
SRC=${TK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
if ! command -v trace-cmd >/dev/null; then echo "SKIP: trace-cmd is not installed"; exit 77; fi
dir=$(mktemp -d /tmp/tk-profile-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Sort each run of "  Event:" lines with the same event and the same Total.
cat >"$dir/norm.py" <<'PY'
import re, sys
out, run, key = [], [], None
for l in open(sys.argv[1]):
    m = re.match(r'  Event: ([^:]+):', l)
    t = re.search(r' Total: (\d+)', l)
    k = (m.group(1), t.group(1) if t else None) if m else None
    if k is None or k != key:
        out.extend(sorted(run)); run = []
    key = k
    (run if k else out).append(l)
out.extend(sorted(run))
sys.stdout.write(''.join(out))
PY

profile() { # NAME FILE
	local name=$1 f=$2
	if ! trace-cmd report --profile -i "$f" >"$dir/p.txt" 2>/dev/null; then
		echo "ok: $name: trace-cmd cannot profile it, skipped"
		return
	fi
	if ! "$TRACEKIT" report --profile "$f" >"$dir/t.txt" 2>"$dir/t.err"; then
		fail "$name: tracekit report --profile failed: $(head -2 "$dir/t.err")"
		return
	fi
	python3 "$dir/norm.py" "$dir/p.txt" >"$dir/pn.txt"
	python3 "$dir/norm.py" "$dir/t.txt" >"$dir/tn.txt"
	if cmp -s "$dir/pn.txt" "$dir/tn.txt"; then
		echo "ok: $name --profile ($(grep -c '^task:' "$dir/t.txt") tasks, $(wc -l <"$dir/t.txt") lines)"
	else
		fail "$name: --profile differs from trace-cmd's"
		diff "$dir/pn.txt" "$dir/tn.txt" | head -10
	fi
}

wakeup() { # NAME FILE [OPTIONS]
	local name=$1 f=$2
	shift 2
	trace-cmd report -w "$@" -i "$f" >"$dir/p.txt" 2>/dev/null || { echo "ok: $name: trace-cmd fails, skipped"; return; }
	"$TRACEKIT" report -w "$@" "$f" >"$dir/t.txt" 2>"$dir/t.err" ||
		{ fail "$name: tracekit report -w failed: $(head -2 "$dir/t.err")"; return; }
	if cmp -s "$dir/p.txt" "$dir/t.txt"; then
		echo "ok: $name -w $* ($(grep -c ' Latency: ' "$dir/t.txt") latencies)"
	else
		fail "$name: -w $* differs from trace-cmd's"
		diff "$dir/p.txt" "$dir/t.txt" | head -10
	fi
}

for f in "$SRC"/tests/data/sample-v7-zstd.dat "$SRC"/tests/data/public/*.dat \
	"$SRC"/tests/data/tc34/v6.dat "$SRC"/tests/data/tc34/v7-none.dat "$SRC"/tests/data/tc34/v7-zstd.dat \
	"$SRC"/tests/data/tc34/btf-v7-zstd.dat; do
	[ -f "$f" ] || continue
	profile "$(basename "$f")" "$f"
	wakeup "$(basename "$f")" "$f"
done

rec=
if [ "$(id -u)" = 0 ] && command -v perf >/dev/null &&
	{ [ -d /sys/kernel/tracing/events/sched ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; } &&
	"$TRACEKIT" record -q -e sched -e irq -e raw_syscalls -o "$dir/r.dat" -- \
		perf bench sched messaging -g 2 -l 20 >/dev/null 2>"$dir/rec.err"; then
	rec=$dir/r.dat
	profile "recorded" "$rec"
	wakeup "recorded" "$rec"
	wakeup "recorded" "$rec" --cpu 0
	wakeup "recorded" "$rec" -F sched_switch
else
	echo "ok: no root, perf or tracefs: the recorded file is skipped"
fi
f=${rec:-$SRC/tests/data/tc34/v6.dat}

# 4. --json, --percentiles, --hist
if "$TRACEKIT" report --profile --json "$f" >"$dir/j.json"; then
	jt=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(len(d["tasks"]), sum(e["count"] for t in d["tasks"] for e in t["events"]))' "$dir/j.json")
	"$TRACEKIT" report --profile "$f" >"$dir/t.txt"
	tt="$(grep -c '^task:' "$dir/t.txt") $(sed -n 's/^  Event: .* (\([0-9]*\)).*/\1/p' "$dir/t.txt" | awk '{ s += $1 } END { print s }')"
	[ "$jt" = "$tt" ] && echo "ok: --profile --json agrees with the text ($jt)" || fail "--profile --json '$jt' != text '$tt'"
else
	fail "--profile --json failed"
fi
"$TRACEKIT" report -w "$f" >"$dir/w.txt"
"$TRACEKIT" report -w --percentiles --hist "$f" >"$dir/wp.txt" || fail "-w --percentiles --hist failed"
if grep -q 'Average wakeup latency' "$dir/w.txt"; then
	head -n "$(wc -l <"$dir/w.txt")" "$dir/wp.txt" | cmp -s - "$dir/w.txt" &&
		grep -q 'p99.9' "$dir/wp.txt" && grep -q ' ns ' "$dir/wp.txt" &&
		echo "ok: --percentiles --hist follow trace-cmd's text" || fail "--percentiles/--hist text"
fi

# Usage errors
"$TRACEKIT" report --profile -F sched_switch "$f" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: --profile with a filter is a usage error" || fail "--profile -F: rc $rc"
"$TRACEKIT" report --percentiles "$f" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: --percentiles without -w is a usage error" || fail "--percentiles alone: rc $rc"
"$TRACEKIT" report --profile -w "$f" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: --profile -w is a usage error" || fail "--profile -w: rc $rc"
if [ -f "$SRC/tests/data/perf/T.data" ]; then
	"$TRACEKIT" report --profile "$SRC/tests/data/perf/T.data" >/dev/null 2>&1; rc=$?
	[ $rc -eq 2 ] && echo "ok: --profile on a perf.data is a usage error" || fail "--profile perf.data: rc $rc"
fi

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
