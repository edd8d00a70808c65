#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-32bit: perf.data of a 32-bit machine (issue 16), made by
# tests/data/perf/make-32bit.py (README.md there; the files are in its
# wordsize/): long and pointer fields of 4 bytes, TRACING_DATA's long size
# 4. With perf installed each prints what perf script prints; and, without
# perf: the fields that are not longs print as
# in the 64-bit recording they were made from, the longs as their low 32
# bits, and the converters remake every committed derived file byte for
# byte (so the files are what their README says).
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
ws=$data/wordsize
tmp=$(mktemp -d /tmp/tk-anywhere-32.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
if ! command -v python3 >/dev/null; then
	echo "SKIP: python3 is not installed"
	exit 77
fi

"$TRACEKIT" report "$ws/tracepoints-long.data" >"$tmp/64.txt" 2>&1
run report "$ws/i686-tracepoints-long.data"
check "i686: report reads it" eval 'rc_is 0 && err_empty'
check "i686: sched_switch (a long prev_state) prints as in the 64-bit file" \
	eval 'diff <(grep sched_switch "$tmp/64.txt") <(grep sched_switch "$tmp/out") >/dev/null'
check "i686: the exec's __data_loc string moved with its fields" \
	out_has 'sched_process_exec: filename=/usr/bin/sleep pid=13638 old_pid=13638'
check "i686: pointers print as their low 32 bits, an unnamed %ps raw" \
	out_has 'hrtimer=0x66cbac0 function=0x814204b0 expires=33778659059176 softexpires=33778659009176 mode=0x1'
run report "$ws/be-i686-tracepoints-long.data"
check "big-endian i686: prints what the little-endian one prints" \
	eval 'rc_is 0 && "$TRACEKIT" report "$ws/i686-tracepoints-long.data" 2>/dev/null | cmp -s - "$tmp/out"'

python3 "$data/make-32bit.py" "$ws/tracepoints-long.data" "$tmp/i686.data"
check "make-32bit.py remakes i686-tracepoints-long.data" \
	cmp -s "$tmp/i686.data" "$ws/i686-tracepoints-long.data"
for f in "$data"/be-*.data "$ws"/be-*.data; do
	name=$(basename "$f" .data)
	python3 "$data/make-bigendian.py" "$(dirname "$f")/${name#be-}.data" "$tmp/$name.data"
	check "make-bigendian.py remakes $name.data" cmp -s "$tmp/$name.data" "$f"
done

# The oracle: perf script on each (perf 6.1 reads 32-bit and big-endian files).
if command -v perf >/dev/null; then
	for f in "$ws"/*.data; do
		perf script -i "$f" >"$tmp/perf.out" 2>/dev/null
		run report "$f"
		check "$(basename "$f"): report prints what perf script prints" \
			eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
	done
else
	skip "comparison with perf script" "perf is not installed"
fi

# What the converter cannot express stops it, rather than writing a wrong file.
python3 "$data/make-32bit.py" "$data/pipe.data" "$tmp/x.data" 2>"$tmp/err"
check "make-32bit.py refuses a pipe" grep -q 'not a little-endian file-mode perf.data' "$tmp/err"
python3 "$data/make-bigendian.py" "$data/z.data" "$tmp/x.data" 2>"$tmp/err"
check "make-bigendian.py refuses COMPRESSED records" grep -q 'type 81 is not converted' "$tmp/err"
finish
