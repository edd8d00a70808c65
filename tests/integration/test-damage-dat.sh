#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# damage-dat: a seeded damage campaign (issue 21). The committed sample is
# turned into the .dat files the oracle tests read (v7 zstd as committed,
# v7 uncompressed and v6 by trace-cmd convert), and damage.py writes 80
# damaged copies of each with a fixed seed: truncations, byte flips (in the
# CPU data and anywhere), zeroed ranges and swapped pages. For every copy
# `tracekit report` must not crash or hang, must not lose events silently,
# and must print at least as many of the trace's events as Debian's
# trace-cmd 3.1.6 does. The summary line gives the cases, crashes, hangs,
# silent losses, cases below trace-cmd, and each tool's event totals.
# The criteria are defined against trace-cmd, so without it the test skips.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
TK_BUILD_DIR=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}
TRACEKIT=${TRACEKIT:-$TK_BUILD_DIR/src/cli/tracekit}
SAMPLE=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
tc=$(command -v trace-cmd) || { echo "SKIP: trace-cmd is not installed (the oracle)"; exit 77; }
[ -x "$TRACEKIT" ] || { echo "tracekit binary not found at $TRACEKIT" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-damage.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

cp "$SAMPLE" "$tmp/v7-zstd.dat" || exit 1
if ! "$tc" convert --compression none -i "$SAMPLE" -o "$tmp/v7-none.dat" >/dev/null 2>&1 ||
	! "$tc" convert --file-version 6 --compression none -i "$SAMPLE" \
		-o "$tmp/v6.dat" >/dev/null 2>&1; then
	echo "not ok - trace-cmd convert could not make the v7-none and v6 inputs"
	echo "TK-COUNTS: passed=0 failed=1 skipped=0"
	exit 1
fi

export TK_KEEP_DIR=$TK_BUILD_DIR/meson-logs/damage-dat
rm -rf "$TK_KEEP_DIR"
export TK_TIMEOUT=20 TK_TRACE_CMD=$tc
python3 "$here/damage.py" "$TRACEKIT" "$tmp/v7-zstd.dat" "$tmp/v7-none.dat" "$tmp/v6.dat" \
	>"$tmp/damage.out" 2>"$tmp/damage.err"
rc=$?
cat "$tmp/damage.out"
summary=$(grep -E '^# damage-summary:' "$tmp/damage.out")
if [ -z "$summary" ]; then
	echo "not ok - damage.py did not finish (exit $rc)"
	sed 's/^/#   /' "$tmp/damage.err" | head -n 20
	echo "TK-COUNTS: passed=0 failed=1 skipped=0"
	exit 1
fi
cases=$(echo "$summary" | sed -E 's/.*cases=([0-9]+).*/\1/')
bad=$(grep -c '^not ok' "$tmp/damage.out")
[ "$bad" -eq 0 ] || echo "# failing copies kept in $TK_KEEP_DIR"
echo "TK-COUNTS: passed=$((cases - bad)) failed=$bad skipped=0"
[ "$bad" -eq 0 ] && [ "$rc" -eq 0 ]
