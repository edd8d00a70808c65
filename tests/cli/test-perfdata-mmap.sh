#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# perfdata-mmap: a perf.data file is read in place through a mapping on
# several printing threads (issue 22: no copy of the data section, records
# queued where they lie), and on one through a kept window of pread()
# copies (records queued where they were read); pipes, and
# TK_PERFDATA_NO_MMAP, read through pread() windows. The paths
# must print the same text, the same damage lines and the same exit status,
# on one and on two printing threads, with and without --strict: over every
# perf.data of the fuzz corpus and tests/data/perf, and over damaged copies
# of a tracepoint file (bytes overwritten in its data section at seeded
# places, so the resync and the queue of a salvaged file are compared too).
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-pd-mmap.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# same FILE ARGS...: both readers, on -j 1 and -j 2, print the same.
same() {
	local f=$1 j
	shift
	for j in 1 2; do
		"$TRACEKIT" report -j $j "$@" -i "$f" >"$tmp/m.out" 2>"$tmp/m.err"
		echo "rc=$?" >>"$tmp/m.out"
		TK_PERFDATA_NO_MMAP=1 "$TRACEKIT" report -j $j "$@" -i "$f" \
			>"$tmp/p.out" 2>"$tmp/p.err"
		echo "rc=$?" >>"$tmp/p.out"
		if ! cmp -s "$tmp/m.out" "$tmp/p.out" || ! cmp -s "$tmp/m.err" "$tmp/p.err"; then
			fail "$(basename "$f") $* -j $j" \
				"$(diff "$tmp/m.out" "$tmp/p.out" | head -5) $(diff "$tmp/m.err" \
					"$tmp/p.err" | head -5)"
			return
		fi
	done
	pass "$(basename "$f") $*: mapped and read print the same"
}

for f in "$TK_SOURCE_DIR"/fuzz/corpus/perfdata/*.data "$TK_SOURCE_DIR"/tests/data/perf/*.data; do
	[ -f "$f" ] || continue
	same "$f"
done
good=$TK_SOURCE_DIR/fuzz/corpus/perfdata/tracepoint.data
same "$good" --strict

# A pipe is never mapped: the same text from stdin as from the file.
"$TRACEKIT" report -i - <"$good" >"$tmp/pipe.out" 2>/dev/null
"$TRACEKIT" report -i "$good" >"$tmp/file.out" 2>/dev/null
if [ -s "$tmp/file.out" ] && cmp -s "$tmp/pipe.out" "$tmp/file.out"; then
	pass "a file-mode perf.data on stdin prints as the file"
elif grep -q "seekable" <("$TRACEKIT" report -i - <"$good" 2>&1); then
	pass "a file-mode perf.data on stdin is refused as before (needs a seekable input)"
else
	fail "a file-mode perf.data on stdin" "$(head -c 300 "$tmp/pipe.out")"
fi

if command -v python3 >/dev/null 2>&1; then
	for seed in $(seq 1 24); do
		python3 "$TK_SOURCE_DIR/tests/cli/perfdata-damage.py" "$good" "$tmp/d$seed.data" \
			"scramble:$seed"
		same "$tmp/d$seed.data"
		same "$tmp/d$seed.data" --strict
	done
else
	skip "damaged copies" "python3 is not installed"
fi

finish
