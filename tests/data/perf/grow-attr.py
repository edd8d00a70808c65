#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
import struct, sys
# grow-attr.py IN OUT EXTRA: attrs EXTRA bytes longer (zeros, as a newer perf's
# fields left unset), file mode: the attrs section moves to the end of the file;
# pipe mode: each HEADER_ATTR record grows.
inp, out, extra = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = bytearray(open(inp, 'rb').read())
if struct.unpack_from('<Q', d, 8)[0] == 16:
    o = bytearray(d[:16]); p = 16
    while p + 8 <= len(d):
        t, misc, sz = struct.unpack_from('<IHH', d, p)
        ext = b''
        if t == 66:
            ext = d[p + sz:p + sz + ((struct.unpack_from('<I', d, p + 8)[0] + 7) & ~7)]
        if t == 64:
            asz = struct.unpack_from('<I', d, p + 12)[0]
            attr = bytearray(d[p + 8:p + 8 + asz] + b'\0' * extra)
            struct.pack_into('<I', attr, 4, asz + extra)
            o += struct.pack('<IHH', t, misc, sz + extra) + attr + d[p + 8 + asz:p + sz]
        else:
            o += d[p:p + sz] + ext
        p += sz + len(ext)
    open(out, 'wb').write(o); sys.exit()
old = struct.unpack_from('<Q', d, 16)[0]
aoff, asize = struct.unpack_from('<QQ', d, 24)
n = asize // old
new = b''
for i in range(n):
    e = d[aoff + i * old:aoff + (i + 1) * old]
    attr = bytearray(e[:old - 16] + b'\0' * extra)
    struct.pack_into('<I', attr, 4, old - 16 + extra)
    new += bytes(attr) + e[old - 16:]
at = len(d)
d += new
struct.pack_into('<QQQ', d, 16, old + extra, at, len(new))
open(out, 'wb').write(d)
