#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
import struct, sys
# chain.py IN OUT MODE: edit the callchains of a file-mode perf.data whose
# single event has sample_type IP|TID|TIME|CALLCHAIN|PERIOD.
inp, out, mode = sys.argv[1:4]
d = bytearray(open(inp, 'rb').read())
doff, dsize = struct.unpack_from('<QQ', d, 40)
p = doff; n = 0
while p < doff + dsize:
    t, misc, sz = struct.unpack_from('<IHH', d, p)
    if t == 9:
        cc = p + 8 + 8 + 8 + 8 + 8 + 8  # ip tid time period? order: IP TID TIME CALLCHAIN? PERIOD before CALLCHAIN
        # order: IP, TID, TIME, PERIOD, CALLCHAIN
        cc = p + 8 + 8 + 8 + 8 + 8
        nr = struct.unpack_from('<Q', d, cc)[0]
        n += 1
        if mode == 'neg1' and n % 2 == 0 and nr >= 3:
            struct.pack_into('<Q', d, cc + 8 * 3, (1 << 64) - 1)
        if mode == 'guest' and n % 2 == 0 and nr >= 3:
            struct.pack_into('<Q', d, cc + 8 * 2, (1 << 64) - 2048)
        if mode == 'hv' and n % 2 == 0 and nr >= 3:
            struct.pack_into('<Q', d, cc + 8 * 2, (1 << 64) - 32)
        if mode == 'zero' and n % 2 == 0:
            struct.pack_into('<Q', d, cc, 0)
            # keep the size: the rest becomes trailing garbage perf ignores
    p += sz
open(out, 'wb').write(d)
