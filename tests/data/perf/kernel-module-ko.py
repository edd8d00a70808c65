#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# kernel-module-ko.py IN OUT [no-build-id] [ext=gz|xz|zst]: a copy of a file-mode perf.data recorded here
# (sample_type IP|TID|TIME[|CALLCHAIN]|PERIOD) that looks as if the module
# usbdemo.ko (this folder; see README.md) had been loaded at MOD_START:
#  - the kernel MMAP record perf record writes for a loaded module (type
#    MMAP, pid -1, misc KERNEL, the path of the .ko as perf names it from
#    /lib/modules, the id trailer of the kernel's own MMAP record) is put
#    right after the kernel's;
#  - the BUILD_ID feature gets the module's entry (pid -1, misc KERNEL with
#    BUILD_ID_SIZE, name padded to 64 as perf writes it), unless
#    no-build-id is given (a file without it: perf then reads the .ko at
#    the path, whatever its build id, and names the dso "[usbdemo]");
#  - ext=E names the module usbdemo.ko.E, as a distribution shipping
#    compressed modules has it (perf 6.1 inflates .ko.gz and .ko.xz);
#  - the first samples become kernel samples at the addresses of IPS (no
#    callchain) or, with callchains, CHAINS' kernel frames before the
#    sample's own user chain.
# Addresses are MOD_START plus a .text offset of usbdemo.ko (perf places a
# module's .text at the address /proc/modules gives): demo_helper 0x0
# (size 10, value 0), demo_probe 0xa (52), demo_xmit 0x3e (12), demo_poll
# 0x4a (26); .text ends at 0x64; demo_init is in .init.text.
# (The machines this corpus is made on load no modules.)
import struct, sys

MOD_START, MOD_LEN = 0xffffffffc0a3d000, 0x3000
MOD_PATH = b'/lib/modules/6.1.0-27-amd64/kernel/drivers/net/usb/usbdemo.ko'
MOD_BID = bytes.fromhex('5eb1d0c0ffee0000000000000000000000000001')
KERNEL_IP = 0xffffffff8158e81f  # filemap_map_pages+0x23f of this kernel
M = lambda off: MOD_START + off
IPS = [M(0x3), KERNEL_IP, M(0xc), M(0x40), M(0x50), M(0x63), M(0x66), M(0x2000),
       M(MOD_LEN + 0x10), M(0)]
CHAINS = [[M(0x3), M(0x2c), M(0x45), M(0x5a), KERNEL_IP],
          [KERNEL_IP, M(0x40), M(0x2000), M(0x50)],
          [M(0x66), M(MOD_LEN + 0x10), M(0xa)],
          [M(0x3), M(0x3), M(0x45)]]
CTX_KERNEL, CTX_USER = 2**64 - 128, 2**64 - 512

inp, out = sys.argv[1], sys.argv[2]
no_bid = 'no-build-id' in sys.argv[3:]
for a in sys.argv[3:]:
    if a.startswith('ext='):
        MOD_PATH += b'.' + a[4:].encode()
d = open(inp, 'rb').read()
assert d[:8] == b'PERFILE2'
hsize, attr_size, aoff, asize, doff, dsize = struct.unpack_from('<QQQQQQ', d, 8)
sample_type = struct.unpack_from('<Q', d, aoff + 24)[0]
IP, TID, TIME, CALLCHAIN, PERIOD = 1, 2, 4, 32, 256
assert sample_type & ~CALLCHAIN == IP | TID | TIME | PERIOD, hex(sample_type)
chains = bool(sample_type & CALLCHAIN)

recs, p, added, nsample = [], doff, False, 0
while p < doff + dsize:
    t, misc, sz = struct.unpack_from('<IHH', d, p)
    r = bytearray(d[p:p + sz])
    p += sz
    if t == 9 and not chains and nsample < len(IPS):
        struct.pack_into('<H', r, 4, 1)  # PERF_RECORD_MISC_KERNEL
        struct.pack_into('<Q', r, 8, IPS[nsample])
        nsample += 1
    elif t == 9 and chains and nsample < len(CHAINS):
        # IP, TID(8), TIME(8), PERIOD, CALLCHAIN nr + ips
        nr = struct.unpack_from('<Q', r, 40)[0]
        user = list(struct.unpack_from('<%dQ' % nr, r, 48))
        if user and user[0] != CTX_USER:
            continue  # only user chains are rewritten
        k = CHAINS[nsample]
        nsample += 1
        chain = [CTX_KERNEL] + k + user
        body = r[8:40] + struct.pack('<Q%dQ' % len(chain), len(chain), *chain) + r[48 + 8 * nr:]
        r = bytearray(struct.pack('<IHH', 9, 1, 8 + len(body))) + body
        struct.pack_into('<Q', r, 8, k[0])
    recs.append(bytes(r))
    if t == 1 and not added and struct.unpack_from('<i', r, 8)[0] == -1 and \
            r[40:63] == b'[kernel.kallsyms]_text\0':
        trailer = r[64:]
        name = MOD_PATH + b'\0' * (8 - len(MOD_PATH) % 8)
        body = struct.pack('<iiQQQ', -1, 0, MOD_START, MOD_LEN, 0) + name + trailer
        recs.append(struct.pack('<IHH', 1, 1, 8 + len(body)) + body)
        added = True
assert added and nsample == (len(CHAINS) if chains else len(IPS))
data = b''.join(recs)

# Feature sections: every one copied after the new data, BUILD_ID extended.
bits = struct.unpack_from('<4Q', d, 72)
feats = [b for b in range(256) if bits[b // 64] >> (b % 64) & 1]
tab = doff + dsize
secs = []
for i, b in enumerate(feats):
    off, size = struct.unpack_from('<QQ', d, tab + 16 * i)
    s = d[off:off + size]
    if b == 2 and not no_bid:  # HEADER_BUILD_ID
        name = MOD_PATH + b'\0' * (64 - len(MOD_PATH) % 64)
        e = struct.pack('<i', -1) + MOD_BID + bytes([len(MOD_BID)]) + b'\0' * 3 + name
        s += struct.pack('<IHH', 0, 1 | 1 << 15, 8 + len(e)) + e
    secs.append(s)
new_tab = doff + len(data)
at = new_tab + 16 * len(feats)
table, blobs = b'', b''
for s in secs:
    table += struct.pack('<QQ', at + len(blobs), len(s))
    blobs += s
hdr = bytearray(d[:doff])
struct.pack_into('<QQ', hdr, 40, doff, len(data))
open(out, 'wb').write(bytes(hdr) + data + table + blobs)
