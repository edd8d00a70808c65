#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# dat-bad-input: tracekit must reject broken .dat files cleanly with
# --strict, and read what is intact without it.
#
# The committed sample is converted by tracekit to v7-none, v7-zstd and v6;
# mutate.py parses each (independently of tracekit, from the spec layout) and
# makes a broken copy per structure: truncation at every boundary and in the
# middle of every part and of the CPU data, oversized sizes and counts,
# offsets past EOF, an OPTIONS loop, bad magic / version / codec, corrupt
# compressed blocks, page commits beyond the page. For each copy
# `tracekit dump --strict` must exit 1 with one stderr line "tracekit dump: ..."
# naming the file and "offset 0x", no sanitizer report, within 20 s.
# A few copies also go through `tracekit convert --strict`, which must exit 1
# and leave no output file.
#
# Salvage (issue 21): every copy also goes through `tracekit report` without
# --strict, which must exit 0 or 1 without a crash or hang, print at least
# one warning naming the file and "offset 0x" when it exits 1, never exit 0
# with fewer events than the intact file, and print at least as many event
# lines as Debian's trace-cmd 3.1.6 (`trace-cmd report -i`) whenever that
# prints events (mutate.py salvage). A few damaged copies are converted
# without --strict: convert exits 1, and what it wrote passes `tracekit
# check` (no corrupt page was copied).
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
TK_BUILD_DIR=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build-it}
TRACEKIT=${TRACEKIT:-$TK_BUILD_DIR/src/cli/tracekit}
MUTATE=$TK_SOURCE_DIR/tests/integration/mutate.py
SAMPLE=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat

passed=0 failed=0 skipped=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
finish() {
	echo "TK-COUNTS: passed=$passed failed=$failed skipped=$skipped"
	[ "$failed" -eq 0 ] || exit 1
	exit 0
}

command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
if [ ! -x "$TRACEKIT" ]; then
	echo "tracekit binary not found at $TRACEKIT" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-bad-input.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

declare -A args=(
	[v7-none]="--file-version 7 --compression none"
	[v7-zstd]="--file-version 7 --compression zstd"
	[v6]="--file-version 6 --compression none"
)
inputs=()
for kind in v7-none v7-zstd v6; do
	f=$tmp/$kind.dat
	# shellcheck disable=SC2086
	if err=$(timeout 120 "$TRACEKIT" convert "$SAMPLE" -o "$f" ${args[$kind]} -q 2>&1) &&
		timeout 120 "$TRACEKIT" dump "$f" >/dev/null 2>&1; then
		ok "valid $kind input made and readable"
		inputs+=("$f")
	else
		not_ok "making the valid $kind input: $(echo "$err" | head -n 1)"
	fi
done
[ ${#inputs[@]} -gt 0 ] || finish

# Failing copies are kept beside the test log so they can be replayed.
export TK_KEEP_DIR=$TK_BUILD_DIR/meson-logs/dat-bad-input
rm -rf "$TK_KEEP_DIR"
export TK_TIMEOUT=20
python3 "$MUTATE" check "$TRACEKIT" "${inputs[@]}" >"$tmp/mutate.out" 2>"$tmp/mutate.err"
rc=$?
cat "$tmp/mutate.out"
counts=$(grep -E '^# mutate-counts:' "$tmp/mutate.out")
if [ -z "$counts" ]; then
	not_ok "mutate.py check did not finish (exit $rc)"
	sed 's/^/#   /' "$tmp/mutate.err" | head -n 20
else
	read -r p f s <<<"$(echo "$counts" | sed -E 's/.*passed=([0-9]+) failed=([0-9]+) skipped=([0-9]+).*/\1 \2 \3/')"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -eq 0 ] || echo "# failing copies kept in $TK_KEEP_DIR"
fi

# Salvage: report reads what is intact, and as much as trace-cmd does.
tc=$(command -v trace-cmd || true)
[ -n "$tc" ] || echo "# trace-cmd is not installed: salvage counts are not compared with it"
TK_TRACE_CMD=$tc python3 "$MUTATE" salvage "$TRACEKIT" "${inputs[@]}" >"$tmp/salvage.out" 2>"$tmp/salvage.err"
rc=$?
grep -v '^ok - ' "$tmp/salvage.out"
counts=$(grep -E '^# mutate-counts:' "$tmp/salvage.out")
if [ -z "$counts" ]; then
	not_ok "mutate.py salvage did not finish (exit $rc)"
	sed 's/^/#   /' "$tmp/salvage.err" | head -n 20
else
	read -r p f s <<<"$(echo "$counts" | sed -E 's/.*passed=([0-9]+) failed=([0-9]+) skipped=([0-9]+).*/\1 \2 \3/')"
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	[ "$f" -eq 0 ] || echo "# failing copies kept in $TK_KEEP_DIR"
fi

# convert --strict must fail too, and leave nothing behind.
convert_rejects() { # SRC MUTATION ARGS...
	local src=$1 name=$2 bad out err rc
	shift 2
	bad=$tmp/$(basename "$src" .dat)--$name.dat
	out=$tmp/converted.dat
	rm -f "$out"
	if ! python3 "$MUTATE" write "$src" "$name" "$bad"; then
		not_ok "convert rejects $name: mutation not available"
		return
	fi
	err=$(timeout 20 "$TRACEKIT" convert --strict "$bad" -o "$out" "$@" 2>&1 >/dev/null)
	rc=$?
	if [ $rc -eq 1 ] && [ ! -e "$out" ] && [[ $err == "tracekit convert: "* ]] &&
		[[ $err != *"runtime error"* && $err != *Sanitizer* ]]; then
		ok "convert --strict rejects $(basename "$bad") and leaves no output"
	else
		not_ok "convert $(basename "$bad"): exit $rc, output $([ -e "$out" ] && echo kept || echo absent)"
		echo "$err" | sed 's/^/#   /' | head -n 5
	fi
	rm -f "$bad" "$out"
}
# convert without --strict writes what it read: exit 1, a warning, and a
# file that checks clean.
convert_salvages() { # SRC MUTATION ARGS...
	local src=$1 name=$2 bad out err rc chk
	shift 2
	bad=$tmp/$(basename "$src" .dat)--$name.dat
	out=$tmp/salvaged.dat
	rm -f "$out"
	if ! python3 "$MUTATE" write "$src" "$name" "$bad"; then
		not_ok "convert salvages $name: mutation not available"
		return
	fi
	err=$(timeout 20 "$TRACEKIT" convert -q "$bad" -o "$out" "$@" 2>&1 >/dev/null)
	rc=$?
	chk=$(timeout 20 "$TRACEKIT" check "$out" 2>&1)
	if [ $rc -eq 1 ] && [ -s "$out" ] && [[ $err == *"offset 0x"* ]] &&
		[[ $chk == *": ok ("* ]] && [[ $err != *"runtime error"* && $err != *Sanitizer* ]]; then
		ok "convert salvages $(basename "$bad"): exit 1, output checks clean"
	else
		not_ok "convert $(basename "$bad") without --strict: exit $rc, check: $chk"
		echo "$err" | sed 's/^/#   /' | head -n 5
	fi
	rm -f "$bad" "$out"
}
for f in "${inputs[@]}"; do
	case $(basename "$f") in
	v7-none.dat)
		convert_salvages "$f" cpu0-page0-commit-cuts-record --compression zstd
		convert_salvages "$f" truncate-cpu1-data-mid --file-version 6
		convert_rejects "$f" magic-byte --compression zstd
		convert_rejects "$f" truncate-mid-section-18-body --compression zstd
		convert_rejects "$f" cpu0-page0-commit-beyond-page --file-version 6
		convert_rejects "$f" truncate-cpu1-data-mid --compression zstd
		;;
	v7-zstd.dat)
		convert_salvages "$f" cpu0-chunk0-frame-magic --compression none
		convert_rejects "$f" cpu0-chunk0-frame-magic --file-version 6 --compression none
		convert_rejects "$f" section-19-frame-magic --compression none
		;;
	v6.dat)
		convert_salvages "$f" truncate-cpu1-data-mid --compression zstd
		convert_rejects "$f" version-8 --compression zstd
		convert_rejects "$f" cpu1-data-size-0xffffffffffffffff --compression none
		;;
	esac
done

finish
