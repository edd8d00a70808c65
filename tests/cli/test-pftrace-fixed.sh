#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# pftrace-fixed: `convert -o X.pftrace` reads a perf.data tracepoint sample's
# time, CPU and payload at the offsets its event fixes (perfdata-fixed.c)
# when every event's layout allows it; TK_PFTRACE_NO_FIXED makes every
# sample go through the general decoder. Both must write the same bytes,
# print the same and exit alike: over every perf.data of the fuzz corpus
# and tests/data/perf (plain and --strict), and over damaged copies of a
# tracepoint file (bytes overwritten in its data section at seeded places,
# so samples the view refuses, short ones and ones of no event, are
# compared too).
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-pft-fixed.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# same FILE ARGS...: both ways write, print and exit the same.
same() {
	local f=$1
	shift
	"$TRACEKIT" convert "$@" "$f" -o "$tmp/a.pftrace" --compression none >"$tmp/a.out" \
		2>"$tmp/a.err"
	echo "rc=$?" >>"$tmp/a.out"
	TK_PFTRACE_NO_FIXED=1 "$TRACEKIT" convert "$@" "$f" -o "$tmp/b.pftrace" \
		--compression none >"$tmp/b.out" 2>"$tmp/b.err"
	echo "rc=$?" >>"$tmp/b.out"
	sed -i "s|$tmp/[ab].pftrace|OUT|; s/ in [0-9.]* s//" "$tmp/a.out" "$tmp/b.out" \
		"$tmp/a.err" "$tmp/b.err"
	if ! cmp -s "$tmp/a.out" "$tmp/b.out" || ! cmp -s "$tmp/a.err" "$tmp/b.err"; then
		fail "$(basename "$f") $*" "$(diff "$tmp/a.out" "$tmp/b.out" | head -5) $(diff \
			"$tmp/a.err" "$tmp/b.err" | head -5)"
	elif [ -f "$tmp/a.pftrace" ] && ! cmp -s "$tmp/a.pftrace" "$tmp/b.pftrace"; then
		fail "$(basename "$f") $*" "the traces differ"
	else
		pass "$(basename "$f") $*: both ways write the same"
	fi
	rm -f "$tmp/a.pftrace" "$tmp/b.pftrace"
}

for f in "$TK_SOURCE_DIR"/fuzz/corpus/perfdata/* "$TK_SOURCE_DIR"/tests/data/perf/*.data; do
	[ -f "$f" ] || continue
	same "$f"
done
good=$TK_SOURCE_DIR/fuzz/corpus/perfdata/tracepoint.data
same "$good" --strict

# The file the damaged copies come from has tracepoint events to read.
"$TRACEKIT" convert "$good" -o "$tmp/g.pftrace" >"$tmp/g.out" 2>&1
if grep -Eq ': [1-9][0-9]* events on ' "$tmp/g.out"; then
	pass "tracepoint.data converts its tracepoint events"
else
	fail "tracepoint.data converts its tracepoint events" "$(head -c 300 "$tmp/g.out")"
fi

if command -v python3 >/dev/null 2>&1; then
	for seed in $(seq 1 24); do
		python3 "$TK_SOURCE_DIR/tests/cli/perfdata-damage.py" "$good" "$tmp/d$seed.data" \
			"scramble:$seed"
		same "$tmp/d$seed.data"
	done
else
	skip "damaged copies" "python3 is not installed"
fi

finish
