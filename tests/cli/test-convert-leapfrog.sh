#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# convert-leapfrog: a compressed .dat converted with two CPUs (its chunks
# decoded ahead on a second thread and, leapfrogging, in the convert
# thread too: convert.c) gives the same bytes, the same warnings and the
# same exit status as with one CPU (taskset: one reader, in order), intact
# and with damaged chunks before, at and after the ends of the stretches
# (8 chunks read ahead, then 4 decoded here), or off the page grid. The input is bench-report's
# generated trace (50 k events, ~25 chunks per CPU) made v7 zstd by
# tracekit; the damage xors a chunk's zstd frame magic or raises its usize,
# at offsets tests/integration/mutate.py's Layout finds on its own.
set -u
. "$(dirname "$0")/../lib.sh"

TK_BUILD_DIR=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}
BENCH=$TK_BUILD_DIR/bench/bench-report
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
command -v taskset >/dev/null 2>&1 || { echo "SKIP: taskset is not installed"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: one CPU: convert never leapfrogs here"; exit 77; }
[ -x "$BENCH" ] || { echo "SKIP: $BENCH is not built (it writes the input)"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-leapfrog.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
"$BENCH" --tracekit "$TRACEKIT" --quick --convert-only --events 50000 --keep "$tmp/none.dat" \
	>/dev/null 2>&1 || { echo "FAIL: bench-report could not write the input"; exit 1; }
"$TRACEKIT" convert -q "$tmp/none.dat" -o "$tmp/zstd.dat" ||
	{ echo "FAIL: cannot make the zstd input"; exit 1; }

# damage IN OUT SPEC...: SPEC is CPU:CHUNK:magic, CPU:CHUNK:usize (a page more) or
# CPU:CHUNK:odd (100 bytes more: the chunks after it are off the page grid).
damage() {
	python3 - "$TK_SOURCE_DIR/tests/integration" "$@" <<'EOF'
import struct, sys
sys.path.insert(0, sys.argv[1])
from mutate import Layout
src, out, specs = sys.argv[2], sys.argv[3], sys.argv[4:]
data = bytearray(open(src, "rb").read())
lay = Layout(bytes(data))
frames = {name.split()[-2] + " " + name.split()[-1]: (off, usize) for name, off, _, usize in lay.frames
          if "chunk" in name}
for spec in specs:
    cpu, chunk, how = spec.split(":")
    off, usize = frames[f"cpu{cpu} chunk{chunk}"]
    if how == "magic":
        for i in range(4):
            data[off + i] ^= 0xFF
    else:
        struct.pack_into(lay.e + "I", data, off - 4, usize + (4096 if how == "usize" else 100))
open(out, "wb").write(data)
EOF
}

# same NAME IN ARGS...: two-CPU and one-CPU converts of IN agree.
same() {
	local name=$1 in=$2
	shift 2
	"$TRACEKIT" convert -q "$in" -o "$tmp/two.dat" "$@" >/dev/null 2>"$tmp/two.err"
	local rc2=$?
	taskset -c 0 "$TRACEKIT" convert -q "$in" -o "$tmp/one.dat" "$@" >/dev/null 2>"$tmp/one.err"
	local rc1=$?
	if [ "$rc2" -ne "$rc1" ]; then
		fail "$name" "exit status $rc2 on two CPUs, $rc1 on one"
	elif ! cmp -s "$tmp/two.err" "$tmp/one.err"; then
		fail "$name" "warnings differ: $(diff "$tmp/one.err" "$tmp/two.err" | head -6)"
	elif [ "$rc2" -le 1 ] && ! cmp -s "$tmp/two.dat" "$tmp/one.dat"; then
		fail "$name" "the outputs differ"
	else
		pass "$name (exit $rc2, $(wc -l <"$tmp/two.err") warning lines)"
	fi
}

for args in "--file-version 6" "--compression none"; do
	# shellcheck disable=SC2086 # two words of options
	same "intact, $args" "$tmp/zstd.dat" $args
done
for specs in "0:7:magic" "0:8:magic" "1:11:magic" "1:12:magic" "0:7:magic 0:8:magic" \
	"0:3:magic 0:9:magic 1:15:magic 1:20:magic" "0:11:usize" "1:8:usize 1:19:magic" "0:2:odd" "1:9:odd 1:14:magic"; do
	damage "$tmp/zstd.dat" "$tmp/bad.dat" $specs || { fail "damage $specs" "mutate failed"; continue; }
	# shellcheck disable=SC2086
	same "damaged chunks $specs, v6" "$tmp/bad.dat" --file-version 6
done
damage "$tmp/zstd.dat" "$tmp/bad.dat" 0:9:magic
run convert -q "$tmp/bad.dat" -o "$tmp/two.dat" --file-version 6
check "a damaged chunk gives exit 1" rc_is 1
check "and one warning line" err_lines 1
check "the warning names the input and an offset" err_has "^tracekit convert: $tmp/bad.dat: offset 0x"
finish
