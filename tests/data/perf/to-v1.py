#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
import struct, sys
# to-v1.py IN OUT ATTRSIZE [PERFILE2]: a file-mode perf.data turned into the
# legacy version 1 layout perf wrote before PERFILE2: magic "PERFFILE" and
# attrs of ATTRSIZE bytes (64 = PERF_ATTR_SIZE_VER0, 72 = VER1), each followed
# by its ids section, in the space the longer attrs held. With PERFILE2 the
# magic stays: a version 2 file with the short attrs of perf 3.x.
inp, out, asz = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = bytearray(open(inp, 'rb').read())
old = struct.unpack_from('<Q', d, 16)[0]
aoff, asize = struct.unpack_from('<QQ', d, 24)
n = asize // old
ents = []
for i in range(n):
    e = d[aoff + i * old:aoff + (i + 1) * old]
    attr = bytearray(e[:asz]); struct.pack_into('<I', attr, 4, asz)
    ents.append(bytes(attr) + e[old - 16:])
new = b''.join(ents)
d[aoff:aoff + len(new)] = new
d[0:8] = b'PERFILE2' if sys.argv[4:] == ['PERFILE2'] else b'PERFFILE'
struct.pack_into('<QQQ', d, 16, asz + 16, aoff, len(new))
open(out, 'wb').write(d)
