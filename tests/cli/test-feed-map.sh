#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# feed-map: the analyses' feed reads perf.data records in place through a
# mapping and leaves the first record it cannot vouch for to the reader
# (src/lib/analyze/feed.c, "Reading perf.data in place"). Whatever the
# walk took, damage after it must read exactly as through the reader
# alone: each warning once, each damaged region once, the same status. A
# copy of tracepoints.data gets a malformed CPU_TOPOLOGY feature (a warning
# at open) and a record size of 3 in the middle of the data section.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-feed-map.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }
good=$TK_SOURCE_DIR/tests/data/perf/tracepoints.data

python3 - "$good" "$tmp/bad.data" <<'PY'
import struct, sys
src, dst = sys.argv[1:]
d = bytearray(open(src, 'rb').read())
off, size = struct.unpack_from('<QQ', d, 40)
end, n = off + size, 0
while off + 8 <= end:
    n += 1
    if n == 3:
        struct.pack_into('<H', d, off + 6, 3)
        break
    off += struct.unpack_from('<H', d, off + 6)[0]
# The feature table follows the data; its 13th entry is CPU_TOPOLOGY here.
foff, fsize = struct.unpack_from('<QQ', d, struct.unpack_from('<Q', d, 40)[0] +
                                 struct.unpack_from('<Q', d, 48)[0] + 12 * 16)
struct.pack_into('<I', d, foff, 0xffff)
open(dst, 'wb').write(d)
PY

run convert --to sqlite -o "$tmp/good.db" "$good"
if [ "$rc" = 0 ]; then pass "a clean file converts through the mapping"; else
	fail "clean file" "exit $rc: $(head -3 "$tmp/err")"; fi

run convert --to sqlite -o "$tmp/bad.db" "$tmp/bad.data"
nwarn=$(grep -c "is malformed" "$tmp/err")
ndmg=$(grep -c "record size 3 is smaller than its header" "$tmp/err")
if [ "$rc" = 1 ] && [ "$nwarn" = 1 ] && [ "$ndmg" = 1 ]; then
	pass "the open's warning and the damage show once each (exit 1)"
else
	fail "damaged file" "exit $rc, $nwarn warnings, $ndmg damage lines: $(head -5 "$tmp/err")"
fi

finish
