#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-bigendian: perf.data of a big-endian machine (issue 16). The
# files tests/data/perf/be-*.data (made by make-bigendian.py, README.md
# there) must read as their little-endian originals do, in every command
# that reads records: report, dump, profile, flamegraph, and convert to
# .dat (a big-endian .dat, which must print the same) and to Perfetto.
# perf-corpus compares them with perf script; this test needs no perf.
# Then what is not supported is refused in one line, never printed wrong
# (a stream of the other order through a pipe, a branch-stack sample), and a damaged
# big-endian file is salvaged under the policy of issue 21.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
tmp=$(mktemp -d /tmp/tk-anywhere-be.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
if ! command -v python3 >/dev/null; then
	echo "SKIP: python3 is not installed"
	exit 77
fi

same_as_le() { # CMD ARGS... with LE and BE in place of the file
	local f=$1
	shift
	"$TRACEKIT" "$@" "$data/$f.data" >"$tmp/le.out" 2>"$tmp/le.err"
	local r1=$?
	"$TRACEKIT" "$@" "$data/be-$f.data" >"$tmp/be.out" 2>"$tmp/be.err"
	local r2=$?
	sed -i "s#$data/be-#$data/#g" "$tmp/be.out" "$tmp/be.err"
	[ "$r1" = "$r2" ] && cmp -s "$tmp/le.out" "$tmp/be.out" && cmp -s "$tmp/le.err" "$tmp/be.err"
}

n=0
for f in "$data"/be-*.data; do
	name=$(basename "$f" .data)
	name=${name#be-}
	n=$((n + 1))
	check "be-$name: report prints what it prints for $name.data" same_as_le "$name" report
	check "be-$name: dump prints the same" same_as_le "$name" dump
	check "be-$name: profile prints the same" same_as_le "$name" profile
done
check "there are big-endian files" [ "$n" -ge 10 ]
check "be-g: flamegraph prints the same" same_as_le g flamegraph
check "be-tracepoints: profile --sort sym prints the same" same_as_le tracepoints profile \
	--sort sym

# The kind is told from the byte-swapped magic.
run dump "$data/be-plain.data"
check "dump names a big-endian file a perf.data" eval 'rc_is 0 && out_has "PERFILE2\|perf.data"'

# convert: Perfetto the same bytes; .dat a big-endian one that prints the same.
for f in tracepoints g; do
	"$TRACEKIT" convert "$data/$f.data" -o "$tmp/le-$f.pftrace" 2>/dev/null
	run convert "$data/be-$f.data" -o "$tmp/be-$f.pftrace"
	check "be-$f: convert to Perfetto writes the same bytes" \
		eval 'rc_is 0 && cmp -s "$tmp/le-$f.pftrace" "$tmp/be-$f.pftrace"'
done
"$TRACEKIT" convert "$data/tracepoints.data" -o "$tmp/le.dat" 2>/dev/null
run convert "$data/be-tracepoints.data" -o "$tmp/be.dat"
check "be-tracepoints: convert to .dat" rc_is 0
"$TRACEKIT" report "$tmp/le.dat" >"$tmp/le.txt" 2>&1
run report "$tmp/be.dat"
check "be-tracepoints: its .dat prints what the little-endian one's prints" \
	eval 'rc_is 0 && cmp -s "$tmp/le.txt" "$tmp/out"'
if command -v trace-cmd >/dev/null; then
	trace-cmd report "$tmp/le.dat" >"$tmp/tc-le.txt" 2>&1
	trace-cmd report "$tmp/be.dat" >"$tmp/tc-be.txt" 2>&1
	check "be-tracepoints: trace-cmd reads its .dat as the little-endian one" \
		cmp -s "$tmp/tc-le.txt" "$tmp/tc-be.txt"
else
	skip "trace-cmd reads the big-endian .dat" "trace-cmd is not installed"
fi

# A pipe's stream of the other byte order reads from a file (above: be-pipe*);
# from a pipe, which cannot be read twice, it is refused in one line.
run report - <"$data/be-pipe.data"
check "a big-endian stream on stdin from a file reads" \
	eval 'rc_is 0 && "$TRACEKIT" report "$data/pipe.data" 2>/dev/null | cmp -s - "$tmp/out"'
cat "$data/be-pipe.data" | "$TRACEKIT" report - >"$tmp/out" 2>"$tmp/err"
rc=$?
check "a big-endian stream through a pipe is refused in one line" \
	eval 'rc_is 1 && err_lines 1 && err_has "pipe stream in big-endian byte order" && [ ! -s "$tmp/out" ]'

# A sample layout the swap does not know (BRANCH_STACK): refused, not misread.
python3 - "$data/be-plain.data" "$tmp/be-branch.data" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
aoff = struct.unpack_from('>Q', d, 24)[0]
st = struct.unpack_from('>Q', d, aoff + 24)[0]
struct.pack_into('>Q', d, aoff + 24, st | 1 << 11)
open(sys.argv[2], 'wb').write(d)
PY
run report "$tmp/be-branch.data"
check "a big-endian branch-stack file is refused in one line" \
	eval 'rc_is 1 && err_lines 1 && err_has "BRANCH_STACK in a perf.data of the other byte order (big-endian): not supported yet"'

# Damage (issue 21): a record's size zeroed in the middle of the data. The
# records before and after it print, one warning, exit 1; --strict fails.
python3 - "$data/be-plain.data" "$tmp/be-damaged.data" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
doff, dsize = struct.unpack_from('>QQ', d, 40)
p, k = doff, 0
while p < doff + dsize:
    typ, misc, size = struct.unpack_from('>IHH', d, p)
    if typ == 9:
        k += 1
        if k == 30:
            struct.pack_into('>H', d, p + 6, 0)
            break
    p += size
open(sys.argv[2], 'wb').write(d)
PY
"$TRACEKIT" report "$data/plain.data" >"$tmp/plain.txt" 2>/dev/null
run report "$tmp/be-damaged.data"
check "a damaged big-endian file: what is intact prints, one warning, exit 1" \
	eval 'rc_is 1 && err_lines 1 && err_has "be-damaged.data: offset 0x" &&
	      [ "$(wc -l <"$tmp/out")" -ge 60 ] && head -29 "$tmp/plain.txt" | cmp -s - <(head -29 "$tmp/out")'
run report --strict "$tmp/be-damaged.data"
check "a damaged big-endian file with --strict: one error, no events" \
	eval 'rc_is 1 && err_lines 1 && [ ! -s "$tmp/out" ]'
finish
