#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit syscalls against perf trace -s (perf 6.1), byte for byte (perf
# prints its summary on stderr, we on stdout):
#   1. perf.data files recorded by 'perf trace record' around 'ls' (one
#      process) and 'perf bench sched messaging -t' (many threads);
#   2. a .dat recorded by 'tracekit record -e raw_syscalls': tracekit on the
#      .dat must print what perf trace -s prints on its 'tracekit convert
#      --to perf' conversion;
#   3. --json agrees with the text; --percentiles and --hist add lines and
#      leave perf's alone; --compare A B lists each syscall of both.
# Needs root, tracefs and perf; otherwise prints "SKIP: reason", exits 77.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf trace record needs root"; exit 77; fi
if [ ! -d /sys/kernel/tracing/events/raw_syscalls ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	[ -d /sys/kernel/tracing/events/raw_syscalls ] || { echo "SKIP: no tracefs raw_syscalls events"; exit 77; }
fi
dir=$(mktemp -d /tmp/tk-syscalls-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

same() { # NAME PERF-FILE OUR-FILE
	local name=$1 pfile=$2 tfile=$3
	if ! perf trace -i "$pfile" -s 2>"$dir/p.txt" >/dev/null; then
		fail "$name: perf trace -s failed: $(head -3 "$dir/p.txt")"
		return
	fi
	if ! "$TRACEKIT" syscalls "$tfile" >"$dir/t.txt" 2>"$dir/t.err"; then
		fail "$name: tracekit syscalls failed: $(head -3 "$dir/t.err")"
		return
	fi
	if cmp -s "$dir/p.txt" "$dir/t.txt"; then
		echo "ok: $name ($(grep -c ' events, ' "$dir/t.txt") threads, $(wc -l <"$dir/t.txt") lines)"
	else
		fail "$name: text differs from perf's"
		diff "$dir/p.txt" "$dir/t.txt" | head -20
	fi
}

# 1. perf trace record
if ! perf trace record -o "$dir/ls.data" -- ls -la / >/dev/null 2>"$dir/rec.err"; then
	echo "SKIP: perf trace record failed: $(tail -2 "$dir/rec.err")"
	exit 77
fi
same "perf.data ls" "$dir/ls.data" "$dir/ls.data"
if perf trace record -o "$dir/msg.data" -- perf bench sched messaging -g 1 -l 10 -t \
	>/dev/null 2>"$dir/rec.err"; then
	same "perf.data messaging -t" "$dir/msg.data" "$dir/msg.data"
else
	fail "perf trace record of messaging failed: $(tail -2 "$dir/rec.err")"
fi
"$TRACEKIT" syscalls -i "$dir/ls.data" >"$dir/t1.txt"
"$TRACEKIT" syscalls "$dir/ls.data" | cmp -s - "$dir/t1.txt" && echo "ok: -i FILE = FILE" || fail "-i differs"

# 3. --json, --percentiles, --hist, --compare
if "$TRACEKIT" syscalls --json "$dir/ls.data" >"$dir/j.json"; then
	jt=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(s["calls"] for t in d["threads"] for s in t["syscalls"]), sum(s["errors"] for t in d["threads"] for s in t["syscalls"]))' "$dir/j.json")
	tt=$(awk '$1 ~ /^[a-z_0-9]+$/ && NF == 8 && $NF ~ /%$/ { c += $2; e += $3 } END { print c, e }' "$dir/t1.txt")
	[ "$jt" = "$tt" ] && echo "ok: --json calls and errors ($jt)" || fail "--json '$jt' != text '$tt'"
else
	fail "--json failed"
fi
"$TRACEKIT" syscalls --percentiles --hist "$dir/ls.data" >"$dir/ph.txt" || fail "--percentiles --hist failed"
grep -q 'p99.9' "$dir/ph.txt" && grep -q ' ns ' "$dir/ph.txt" && echo "ok: --percentiles --hist lines" ||
	fail "--percentiles/--hist lines missing"
grep -v -e ' ms: p50 ' -e ' ns  *[0-9]* |' "$dir/ph.txt" | cmp -s - "$dir/t1.txt" &&
	echo "ok: --percentiles --hist leave perf's text alone" || fail "--percentiles/--hist changed the text"
if [ -s "$dir/msg.data" ] && "$TRACEKIT" syscalls --compare "$dir/ls.data" "$dir/msg.data" >"$dir/c.txt"; then
	grep -q '^   read ' "$dir/c.txt" && grep -q 'new\|gone\|%' "$dir/c.txt" &&
		echo "ok: --compare ($(grep -c '^   [a-z]' "$dir/c.txt") syscalls)" || fail "--compare text: $(head -5 "$dir/c.txt")"
	"$TRACEKIT" syscalls --compare --json "$dir/ls.data" "$dir/msg.data" | python3 -m json.tool >/dev/null &&
		echo "ok: --compare --json parses" || fail "--compare --json"
else
	fail "--compare failed"
fi

# 2. a .dat from tracekit record, against perf on its conversion
if "$TRACEKIT" record -q -e raw_syscalls -o "$dir/s.dat" -- perf bench sched messaging -g 1 -l 10 -t \
	>/dev/null 2>"$dir/rec2.err" || [ -s "$dir/s.dat" ]; then
	if "$TRACEKIT" convert --to perf -o "$dir/s.perf" "$dir/s.dat" >/dev/null 2>"$dir/conv.err"; then
		same ".dat = perf on its conversion" "$dir/s.perf" "$dir/s.dat"
	else
		fail "convert --to perf failed: $(head -2 "$dir/conv.err")"
	fi
else
	fail "tracekit record -e raw_syscalls failed: $(tail -2 "$dir/rec2.err")"
fi

# Usage errors
"$TRACEKIT" syscalls --compare "$dir/ls.data" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: --compare with one file is a usage error" || fail "--compare one file: rc $rc"
"$TRACEKIT" syscalls a b >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && echo "ok: two files without --compare is a usage error" || fail "two files: rc $rc"

[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all passed"
