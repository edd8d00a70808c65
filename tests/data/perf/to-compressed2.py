#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
import struct, sys
# to-c2.py IN OUT: a pipe-mode perf.data with its COMPRESSED (81) records
# rewritten as perf 6.16's COMPRESSED2 (83): u64 data_size after the header,
# the zstd bytes, zero padding to 8 bytes.
d = open(sys.argv[1], 'rb').read()
assert d[:8] == b'PERFILE2' and struct.unpack_from('<Q', d, 8)[0] == 16
out = bytearray(d[:16]); p = 16
while p + 8 <= len(d):
    t, misc, sz = struct.unpack_from('<IHH', d, p)
    body = d[p + 8:p + sz]
    extra = b''
    if t == 66:  # HEADER_TRACING_DATA: blob after the record
        n = (struct.unpack_from('<I', d, p + 8)[0] + 7) & ~7
        extra = d[p + sz:p + sz + n]
    if t == 81:
        size = (16 + len(body) + 7) & ~7
        out += struct.pack('<IHHQ', 83, misc, size, len(body)) + body + b'\0' * (size - 16 - len(body))
    else:
        out += d[p:p + sz] + extra
    p += sz + len(extra)
open(sys.argv[2], 'wb').write(out)
