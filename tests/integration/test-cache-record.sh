#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit record -e %PROVIDER/EVENT and sdt_PROVIDER:EVENT: the uprobes come
# from a private build-id cache, the semaphore-guarded probe fires only
# because the kernel raises its semaphore (the program exits 3 otherwise),
# every hit is recorded exactly once, an SDT name used at two places is
# recorded under two names (plain, plain_1), and afterwards neither the
# uprobes nor the instance remain. Touches tracefs: not parallel.
set -u
TRACEKIT=${TRACEKIT:?}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for tracefs"
TRACEFS=/sys/kernel/tracing
[ -e "$TRACEFS/uprobe_events" ] || mount -t tracefs nodev "$TRACEFS" 2>/dev/null
[ -w "$TRACEFS/uprobe_events" ] || TRACEFS=/sys/kernel/debug/tracing
[ -w "$TRACEFS/uprobe_events" ] || skip "no writable uprobe_events (tracefs, CONFIG_UPROBE_EVENTS)"
command -v cc >/dev/null || skip "cc not installed"
[ -e /usr/include/x86_64-linux-gnu/sys/sdt.h ] || [ -e /usr/include/sys/sdt.h ] ||
	skip "<sys/sdt.h> missing (systemtap-sdt-dev)"
command -v trace-cmd >/dev/null || skip "trace-cmd not installed (the report oracle)"

T=$(mktemp -d /tmp/tk-test-cache-record-XXXXXX)
INST=tk-cache-record-$$
trap 'for e in guarded plain plain_1; do echo "-:sdt_tkrec/$e" >> "$TRACEFS/uprobe_events"; done 2>/dev/null
      rmdir "$TRACEFS/instances/$INST" 2>/dev/null; rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# guarded: K = 7 hits, only while the semaphore is raised; plain: J = 5 hits
# at two places of another object file, which has no semaphores.
cat > "$T/prog.c" <<'C'
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short tkrec_guarded_semaphore __attribute__((section(".probes")));
void plain_twice(int i);
int main(void)
{
	int g = 0;

	for (int i = 0; i < 7; i++)
		if (tkrec_guarded_semaphore) {
			STAP_PROBE1(tkrec, guarded, i);
			g++;
		}
	for (int i = 0; i < 3; i++)
		plain_twice(i);
	return g == 7 ? 0 : 3;
}
C
cat > "$T/plain.c" <<'C'
#include <sys/sdt.h>
void plain_twice(int i);
void plain_twice(int i)
{
	DTRACE_PROBE1(tkrec, plain, i);
	if (i)
		DTRACE_PROBE1(tkrec, plain, i + 100);
}
C
cc -O1 -o "$T/prog" "$T/prog.c" "$T/plain.c" || exit 1
"$T/prog"; [ $? = 3 ] || fail "the semaphore is raised without tracing"

"$TRACEKIT" cache --cache-dir "$T/cache" --add "$T/prog" >/dev/null || fail "cache --add"
grep -q '(0x[0-9a-f]*) ' "$T/cache$T/prog/"*/probes || fail "no semaphore in the cached probe"

count() { trace-cmd report -i "$1" 2>/dev/null | grep -c " $2: "; }

# %P/E and sdt_P:E from $TRACEKIT_CACHE_DIR; %P:E repeats %P/E and is taken once.
out=$(TRACEKIT_CACHE_DIR="$T/cache" "$TRACEKIT" record -B "$INST" -e %tkrec/guarded \
	-e sdt_tkrec:plain -e %tkrec:guarded -o "$T/a.dat" -- "$T/prog" 2>&1) ||
	fail "record from \$TRACEKIT_CACHE_DIR: $out"
[[ $out == *"exited with status"* ]] && fail "guarded probe did not fire: $out"
[ "$(count "$T/a.dat" guarded)" = 7 ] || fail "guarded: $(count "$T/a.dat" guarded) events, want 7"
p0=$(count "$T/a.dat" plain) p1=$(count "$T/a.dat" plain_1)
[ "$p0" = 3 ] && [ "$p1" = 2 ] || fail "plain: $p0 + $p1 events, want 3 + 2"
grep -q sdt_tkrec "$TRACEFS/uprobe_events" && fail "uprobes left: $(cat "$TRACEFS/uprobe_events")"
[ -e "$TRACEFS/instances/$INST" ] && fail "instance $INST left"

# report --sym: each probe event names the function it fired in, through
# the cache (the uprobes are gone by now), also once the binary is moved away.
sym_check() {
	"$TRACEKIT" report --sym --cache-dir "$T/cache" "$T/a.dat" >"$T/sym.txt" 2>"$T/sym.err" ||
		fail "report --sym ($1): $(cat "$T/sym.err")"
	g=$(grep -c " guarded: .* <main+0x[0-9a-f]* ($T/prog)>\$" "$T/sym.txt")
	p=$(grep -c " plain\(_1\)\?: .* <plain_twice+0x[0-9a-f]* ($T/prog)>\$" "$T/sym.txt")
	[ "$g" = 7 ] && [ "$p" = 5 ] || fail "report --sym ($1): $g guarded in main, $p plain in plain_twice; want 7 and 5"
}
sym_check "binary in place"
mv "$T/prog" "$T/prog.moved"
sym_check "binary moved away"
mv "$T/prog.moved" "$T/prog"

# --cache-dir wins over $TRACEKIT_CACHE_DIR; the default instance goes too.
before=$(ls "$TRACEFS/instances" | grep -c '^tracekit-')
TRACEKIT_CACHE_DIR="$T/nothing" "$TRACEKIT" record -q --cache-dir "$T/cache" \
	-e sdt_tkrec:guarded -o "$T/b.dat" -- "$T/prog" || fail "record --cache-dir"
[ "$(count "$T/b.dat" guarded)" = 7 ] || fail "--cache-dir: $(count "$T/b.dat" guarded) events, want 7"
[ "$(count "$T/b.dat" plain)" = 0 ] || fail "--cache-dir: plain recorded unasked"
grep -q sdt_tkrec "$TRACEFS/uprobe_events" && fail "uprobes left after the second record"
[ "$(ls "$TRACEFS/instances" | grep -c '^tracekit-')" -le "$before" ] || fail "instance left"

# Not cached: exit 1 naming the spec, nothing created; a bad spec is a usage error.
out=$("$TRACEKIT" record -q --cache-dir "$T/cache" -e %tkrec/nosuch -o "$T/c.dat" -- true 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"%tkrec/nosuch"* ]] || fail "uncached probe: rc $rc: $out"
"$TRACEKIT" record -q --cache-dir "$T/cache" -e %tkrec -o "$T/c.dat" -- true 2>/dev/null
[ $? = 2 ] || fail "'%tkrec' is not a usage error"
"$TRACEKIT" record -q --perf --cache-dir "$T/cache" -e %tkrec/guarded -o "$T/c.data" -- true \
	2>/dev/null
[ $? = 2 ] || fail "--perf with a cached probe is not a usage error"
grep -q sdt_tkrec "$TRACEFS/uprobe_events" && fail "uprobes left after the failures"

[ $fails = 0 ] && echo "ok: record -e %tkrec/guarded, sdt_tkrec:plain from the cache"
exit $((fails > 0))
