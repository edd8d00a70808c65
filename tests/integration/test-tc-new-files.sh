#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# tc-new-files: the .dat files trace-cmd 3.4 wrote (tests/data/tc34/, see
# tests/data/README.md) open, print, dump and convert.
#
# Each FILE.dat comes with FILE.dat.report-3.4.txt, what `trace-cmd report
# FILE` (3.4, libtraceevent 1.8.4) printed, and, where Debian's trace-cmd
# 3.1.6 could read the file (not the zlib ones: Debian builds it without
# zlib), FILE.dat.report-3.1.6.txt, what that printed. For every file:
#   1. `tracekit report` prints FILE.dat.report-3.1.6.txt exactly; a zlib
#      file holds the same events as its zstd twin and prints that text.
#   2. It prints the 3.4 text too, up to the two ways 3.4's default text
#      differs from 3.1.6's, each checked on its own:
#      - trace-cmd 3.3 added the latency flags after "[CPU]" (upstream
#        1e713bfc): the flags column of the 3.4 text must equal the flags
#        `tracekit report -l` prints, and the rest of the line must equal
#        `tracekit report`;
#      - libtraceevent 1.8 names sched_switch's prev_state from the
#        kernel's print format, 1.7 from a fixed table (Z for X, I for W),
#        so that one letter is left out of this comparison (step 1 checks
#        it against 3.1.6).
#      An empty 3.4 text (btfconv-v7-zstd.dat: 3.4's own convert output,
#      on which 3.4's report prints nothing) skips this step.
#   3. `tracekit dump` succeeds; `tracekit convert` to v6 and to v7 (zstd)
#      succeeds and the copies print the same text; Debian's trace-cmd, if
#      installed, prints that text for each copy too.
# Nothing here touches tracefs.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
TK_BUILD_DIR=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}
TRACEKIT=${TRACEKIT:-$TK_BUILD_DIR/src/cli/tracekit}
DATA=$TK_SOURCE_DIR/tests/data/tc34

passed=0 failed=0 skipped=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
skip() { echo "ok - # SKIP $*"; skipped=$((skipped + 1)); }

if [ ! -x "$TRACEKIT" ]; then
	echo "tracekit binary not found at $TRACEKIT" >&2
	exit 1
fi
command -v perl >/dev/null 2>&1 || { echo "SKIP: perl is not installed"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-tc-new.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# Debian's trace-cmd 3.1.x is the oracle for converted copies, when present.
oracle=
if command -v trace-cmd >/dev/null 2>&1 &&
	trace-cmd --version 2>&1 | grep -q 'version 3\.1\.'; then
	oracle=trace-cmd
fi

# The 3.4 text without its flags column; the flags column alone.
strip_flags() { perl -pe 's/^(.*?\[\d{3,}\]) \S{5}(?= +\d+\.\d{6}: )/$1/' "$1"; }
flags_34() { perl -ne 'print "$1\n" if /^.*?\[\d{3,}\] (\S{5}) +\d+\.\d{6}: /' "$1"; }
# `report -l` glues the flags to the CPU number, just before the time.
flags_l() { perl -ne 'print "$1\n" if /^.*?(\S{5}) +\d+\.\d{6}: /' "$1"; }
mask_state() { perl -pe 's/(\[\d+\] )\S+( ==> )/$1?$2/ if /: sched_switch: /'; }

# first differing line of two files, for the message
first_diff() { diff "$1" "$2" | sed -n '2p;4p' | cut -c1-160 | tr '\n' '|'; }

shopt -s nullglob
files=("$DATA"/*.dat)
[ ${#files[@]} -gt 0 ] || { not_ok "no sample files in $DATA"; }

for f in "${files[@]}"; do
	name=${f##*/}
	exp34=$f.report-3.4.txt
	exp316=$f.report-3.1.6.txt
	[ -e "$exp316" ] || exp316=${f%-zlib.dat}-zstd.dat.report-3.1.6.txt
	out=$tmp/$name.txt

	if ! timeout 120 "$TRACEKIT" report "$f" >"$out" 2>"$tmp/err"; then
		not_ok "$name: tracekit report failed: $(head -n 1 "$tmp/err")"
		continue
	fi
	if [ -e "$exp316" ]; then
		if cmp -s "$out" "$exp316"; then
			ok "$name: report prints what trace-cmd 3.1.6 printed (${exp316##*/})"
		else
			not_ok "$name: report differs from ${exp316##*/}: $(first_diff "$exp316" "$out")"
		fi
	else
		skip "$name: no trace-cmd 3.1.6 text"
	fi

	if [ ! -e "$exp34" ]; then
		not_ok "$name: ${exp34##*/} is missing"
	elif [ ! -s "$exp34" ]; then
		# btfconv: 3.4's convert left its BTF option stale and 3.4's
		# report printed nothing; 3.1.6's text (above) is the oracle.
		skip "$name: trace-cmd 3.4 printed nothing for this file"
	else
		strip_flags "$exp34" | mask_state >"$tmp/e34"
		mask_state <"$out" >"$tmp/o"
		if cmp -s "$tmp/o" "$tmp/e34"; then
			ok "$name: report prints what trace-cmd 3.4 printed, flags column aside"
		else
			not_ok "$name: report differs from the 3.4 text: $(first_diff "$tmp/e34" "$tmp/o")"
		fi
		if timeout 120 "$TRACEKIT" report -l "$f" >"$tmp/lat" 2>/dev/null &&
			flags_34 "$exp34" >"$tmp/f34" && flags_l "$tmp/lat" >"$tmp/fl" &&
			[ -s "$tmp/f34" ] && cmp -s "$tmp/f34" "$tmp/fl"; then
			ok "$name: report -l flags are the 3.4 text's flags column ($(wc -l <"$tmp/f34") events)"
		else
			not_ok "$name: the 3.4 flags column differs: $(first_diff "$tmp/f34" "$tmp/fl")"
		fi
	fi

	if timeout 120 "$TRACEKIT" dump "$f" >/dev/null 2>"$tmp/err"; then
		ok "$name: dump"
	else
		not_ok "$name: dump failed: $(head -n 1 "$tmp/err")"
	fi

	for v in 6 7; do
		c=$tmp/$name.v$v.dat
		if ! timeout 120 "$TRACEKIT" convert -q --file-version "$v" "$f" -o "$c" \
			2>"$tmp/err"; then
			not_ok "$name: convert to v$v failed: $(head -n 1 "$tmp/err")"
			continue
		fi
		if timeout 120 "$TRACEKIT" report "$c" >"$tmp/c.txt" 2>/dev/null &&
			cmp -s "$tmp/c.txt" "$out"; then
			ok "$name: converted to v$v, prints the same"
		else
			not_ok "$name: converted to v$v prints differently: $(first_diff "$out" "$tmp/c.txt")"
		fi
		if [ -z "$oracle" ]; then
			skip "$name v$v: Debian's trace-cmd 3.1 is not installed"
		elif "$oracle" report "$c" >"$tmp/t.txt" 2>/dev/null && cmp -s "$tmp/t.txt" "$out"; then
			ok "$name: trace-cmd 3.1 reads the v$v copy and prints the same"
		else
			not_ok "$name: trace-cmd 3.1 on the v$v copy: $(first_diff "$out" "$tmp/t.txt")"
		fi
		rm -f "$c"
	done
done

echo "TK-COUNTS: passed=$passed failed=$failed skipped=$skipped"
[ "$failed" -eq 0 ]
