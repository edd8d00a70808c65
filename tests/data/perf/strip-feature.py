#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
import struct, sys
# strip-feat.py IN OUT BIT: a file-mode perf.data without feature BIT (its
# bitmap bit cleared, its entry dropped from the feature table).
d = bytearray(open(sys.argv[1], 'rb').read()); bit = int(sys.argv[3])
doff, dsize = struct.unpack_from('<QQ', d, 40)
bits = list(struct.unpack_from('<4Q', d, 72))
assert bits[bit // 64] >> (bit % 64) & 1
set_bits = [b for b in range(256) if bits[b // 64] >> (b % 64) & 1]
t = doff + dsize
ents = [struct.unpack_from('<QQ', d, t + 16 * i) for i in range(len(set_bits))]
del ents[set_bits.index(bit)]
ents.append((0, 0))
for i, e in enumerate(ents):
    struct.pack_into('<QQ', d, t + 16 * i, *e)
bits[bit // 64] &= ~(1 << (bit % 64))
struct.pack_into('<4Q', d, 72, *bits)
open(sys.argv[2], 'wb').write(d)
