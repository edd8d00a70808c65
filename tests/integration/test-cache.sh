#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit cache against perf 6.1, both ways, on private cache directories:
# perf lists what tracekit cached (build ids and SDT probes), tracekit lists
# and queries what perf cached, and both write the same probes file for the
# same SDT binary. Skips (77) without perf, cc or <sys/sdt.h>.
set -u
TRACEKIT=${TRACEKIT:?}
command -v perf >/dev/null || { echo "skip: perf not installed"; exit 77; }
command -v cc >/dev/null || { echo "skip: cc not installed"; exit 77; }
[ -e /usr/include/x86_64-linux-gnu/sys/sdt.h ] || [ -e /usr/include/sys/sdt.h ] ||
	{ echo "skip: <sys/sdt.h> missing (systemtap-sdt-dev)"; exit 77; }

T=$(mktemp -d /tmp/tk-test-cache-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat > "$T/sdtdemo.c" <<'C'
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short tkdemo_start_semaphore __attribute__((section(".probes")));
unsigned short tkdemo_tick_semaphore __attribute__((section(".probes")));
int work(int x, long y);
int work(int x, long y) { STAP_PROBE2(tkdemo, start, x, y);
	if (tkdemo_tick_semaphore) STAP_PROBE1(tkdemo, tick, x * 2); return x + (int)y; }
int main(int argc, char **argv) { (void)argv; int s = 0;
	for (int i = 0; i < argc + 2; i++) s += work(i, 3); return s == 12345; }
C
cat > "$T/plain.c" <<'C'
#include <sys/sdt.h>
int main(int argc, char **argv) { (void)argv; DTRACE_PROBE1(tkplain, hit, argc);
	DTRACE_PROBE1(tkplain, hit, argc + 1); return 0; }
C
cc -O1 -o "$T/sdtdemo" "$T/sdtdemo.c" && cc -O1 -no-pie -o "$T/plain" "$T/plain.c" || exit 1
bid=$(readelf -n "$T/sdtdemo" | sed -n 's/.*Build ID: //p')

# tracekit writes, perf reads.
"$TRACEKIT" cache --cache-dir "$T/tk" --add "$T/sdtdemo,$T/plain" || fail "tracekit cache --add"
perf --buildid-dir "$T/tk" buildid-cache --list > "$T/perf-list" 2>/dev/null
grep -qx "$bid $T/sdtdemo" "$T/perf-list" || fail "perf buildid-cache --list misses sdtdemo"
grep -q " $T/plain\$" "$T/perf-list" || fail "perf buildid-cache --list misses plain"
perf --buildid-dir "$T/tk" probe --cache --list > "$T/perf-probes" 2>/dev/null
grep -qx "sdt_tkdemo:start=start" "$T/perf-probes" || fail "perf probe --cache --list misses start"
grep -qx "sdt_tkplain:hit=hit" "$T/perf-probes" || fail "perf probe --cache --list misses hit"

# perf writes, tracekit reads; the probes files are identical.
perf --buildid-dir "$T/perf" buildid-cache --add "$T/sdtdemo,$T/plain" 2>/dev/null ||
	fail "perf buildid-cache --add"
for b in sdtdemo plain; do
	cmp -s "$T/perf$T/$b/"*/probes "$T/tk$T/$b/"*/probes ||
		fail "$b: probes file differs from perf's: $(diff "$T/perf$T/$b/"*/probes "$T/tk$T/$b/"*/probes)"
done
"$TRACEKIT" cache --cache-dir "$T/perf" --list buildid > "$T/tk-list" || fail "tracekit --list"
cmp -s <(sort "$T/perf-list") <(sort "$T/tk-list") || fail "build-id lists differ"
"$TRACEKIT" cache --cache-dir "$T/perf" --list=probe > "$T/tk-probes" || fail "--list=probe"
cmp -s <(sort "$T/perf-probes") <(sort "$T/tk-probes") || fail "probe lists differ"

# Queries by group, event, path and build id.
q() { "$TRACEKIT" cache --cache-dir "$T/perf" --query "$1" 2>/dev/null | grep -c '^sdt_'; }
[ "$(q '%tkdemo:start')" = 1 ] || fail "query by provider:event"
[ "$(q 'sdt_tkplain:*')" = 1 ] || fail "query by group glob"
[ "$(q "tick@$T/sdtdemo")" = 1 ] || fail "query by path"
[ "$(q "*#${bid:0:12}")" = 2 ] || fail "query by build id"
"$TRACEKIT" cache --cache-dir "$T/perf" --query 'nothing' 2>/dev/null && fail "empty query succeeded"

# Removal and stale entries: perf hides what tracekit hides.
cp "$T/plain" "$T/plain.old"
"$TRACEKIT" cache --cache-dir "$T/tk" --remove "$T/sdtdemo" || fail "--remove"
perf --buildid-dir "$T/tk" buildid-cache --list 2>/dev/null | grep -q sdtdemo && fail "removed entry still listed"

# Malformed input: a clear error naming the file, exit 1.
head -c 100 "$T/sdtdemo" > "$T/trunc"
out=$("$TRACEKIT" cache --cache-dir "$T/tk" --add "$T/trunc" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"$T/trunc"* ]] || fail "truncated ELF: rc $rc: $out"
"$TRACEKIT" cache --cache-dir "$T/tk" --list=bogus 2>/dev/null; [ $? = 2 ] || fail "bad --list arg"

# --stats, --max-size, --gc.
"$TRACEKIT" cache --cache-dir "$T/perf" --stats | grep -q '^entries: *2 (2 valid' || fail "--stats"
"$TRACEKIT" cache --cache-dir "$T/perf" --max-size 1 | grep -q 'evicted 2' || fail "--max-size"
"$TRACEKIT" cache --cache-dir "$T/perf" --gc >/dev/null || fail "--gc"
[ -z "$(perf --buildid-dir "$T/perf" buildid-cache --list 2>/dev/null)" ] || fail "evicted entries listed"

[ $fails = 0 ] && echo "cache: all perf oracle checks passed"
exit $((fails > 0))
