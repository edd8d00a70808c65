#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# kernel-module.py IN OUT [kernel-first]: a copy of a kernel-only file-mode
# perf.data (sample_type IP first, as -e task-clock:k writes) that looks as
# if a module had been loaded: the first user MMAP2 record becomes the
# kernel MMAP perf record writes for a module (pid -1, misc KERNEL,
# "/m/usbnet.ko" at 0xffffffffc0000000, 128 KiB), the first sample's ip
# falls in it and the third's in the module area past it. kernel-first
# swaps the first two samples' ips, so that a kernel address comes first.
# (The machines this corpus is made on load no modules.)
import struct, sys
inp, out = sys.argv[1], sys.argv[2]
kernel_first = len(sys.argv) > 3 and sys.argv[3] == 'kernel-first'
d = bytearray(open(inp, 'rb').read())
doff, dsize = struct.unpack_from('<QQ', d, 40)
p, mmap_done, samples = doff, False, []
while p < doff + dsize:
    t, misc, sz = struct.unpack_from('<IHH', d, p)
    if t == 10 and not mmap_done and struct.unpack_from('<i', d, p + 8)[0] != -1 and sz >= 104:
        struct.pack_into('<H', d, p + 4, 1)
        struct.pack_into('<iiQQQ', d, p + 8, -1, 0, 0xffffffffc0000000, 0x20000, 0)
        name = b'/m/usbnet.ko'
        d[p + 72:p + 88] = name + b'\0' * (16 - len(name))
        mmap_done = True
    if t == 9 and len(samples) < 3:
        samples.append(p + 8)
    p += sz
assert mmap_done and len(samples) == 3
ips = [0xffffffffc0001234, struct.unpack_from('<Q', d, samples[1])[0], 0xffffffffc0030000]
if kernel_first:
    ips[0], ips[1] = ips[1], ips[0]
for at, ip in zip(samples, ips):
    struct.pack_into('<Q', d, at, ip)
open(out, 'wb').write(d)
