#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Make raw-mem.data: a memory-access profile as perf mem / numatop record it.

This machine has no hardware PMU, so `perf record -e cpu/mem-loads/pp` cannot
run here. From a cpu-clock file recorded with every memory sample field
(`perf record -d -W --phys-data --data-page-size --code-page-size -e cpu-clock`)
this makes the event a raw PMU event (attr.type 4, PERF_TYPE_RAW, in the
attrs section and in EVENT_DESC), for which perf script prints addr,
data_src, weight, ins_lat, phys_addr and the page sizes by default, and gives
the samples a spread of data_src, weight and page-size values (every field of
perf_mem_data_src, the two numatop values of the public corpus) so that the
text of each decoder is exercised. perf script 6.1 on the result is the
oracle (tests/integration/test-perf-corpus.sh).

usage: to-raw-mem.py IN OUT
"""
import struct
import sys

SAMPLE = 9
BITS = ['IP', 'TID', 'TIME', 'ADDR', 'READ', 'CALLCHAIN', 'ID', 'CPU', 'PERIOD', 'STREAM_ID',
        'RAW', 'BRANCH_STACK', 'REGS_USER', 'STACK_USER', 'WEIGHT', 'DATA_SRC', 'IDENTIFIER',
        'TRANSACTION', 'REGS_INTR', 'PHYS_ADDR', 'AUX', 'CGROUP', 'DATA_PAGE_SIZE',
        'CODE_PAGE_SIZE', 'WEIGHT_STRUCT']
BIT = {n: 1 << i for i, n in enumerate(BITS)}
# perf's order of the fixed-size sample fields (none of the variable ones is set here).
ORDER = ['IDENTIFIER', 'IP', 'TID', 'TIME', 'ADDR', 'ID', 'STREAM_ID', 'CPU', 'PERIOD',
         'WEIGHT', 'DATA_SRC', 'TRANSACTION', 'PHYS_ADDR', 'CGROUP', 'DATA_PAGE_SIZE',
         'CODE_PAGE_SIZE']


def data_src(op=0, lvl=0, snoop=0, lock=0, dtlb=0, lvl_num=0, remote=0, snoopx=0, blk=0,
             hops=0):
    return (op | lvl << 5 | snoop << 19 | lock << 24 | dtlb << 26 | lvl_num << 33 |
            remote << 37 | snoopx << 38 | blk << 40 | hops << 43)


SOURCES = [0x68100142, 0x6a100142, 0,
           data_src(op=1, lvl=1, snoop=1, lock=1, dtlb=1, blk=1),
           data_src(op=4, lvl=0x2 | 0x8, snoop=0x4, dtlb=0x2 | 0x8),
           data_src(op=8, lvl=0x1 | 0x40, snoop=0x10, dtlb=0x4 | 0x10),
           data_src(op=16, lvl=0x2 | 0x80 | 0x100, snoop=0x8 | 0x2, lock=2, dtlb=0x40),
           data_src(op=2, lvl=0x2 | 0x20, lvl_num=2, snoop=2, dtlb=0x2 | 0x8, blk=2),
           data_src(op=2, lvl=0x4 | 0x1000, lvl_num=0xb, remote=1, hops=1, snoopx=1, blk=4),
           data_src(op=2, lvl=0x2 | 0x2000, lvl_num=0xc, remote=1, hops=3, snoopx=2, blk=6),
           data_src(op=2, lvl=0x2, lvl_num=0xd, hops=2, snoop=0x10 | 0x4),
           data_src(op=2, lvl=0x4, lvl_num=0xe, remote=1, dtlb=0x20),
           data_src(op=2, lvl=0x2, lvl_num=0xf),
           data_src(op=3, lvl=0x400 | 0x800 | 0x200, lvl_num=1, hops=4, snoopx=3),
           data_src(op=2, lvl=0x10, lvl_num=3, snoop=0x1f, lock=3, dtlb=0x7f, blk=7),
           data_src(op=2, lvl=0x2 | 0x2000, lvl_num=8, snoop=0x2),
           data_src(op=4, lvl=0x4 | 0x1000, lvl_num=0xa, dtlb=0x4 | 0x20),
           data_src(op=2, lvl=0x2, lvl_num=4, remote=1, snoopx=2),
           data_src(op=2, lvl=0x2 | 0x40, lvl_num=7, hops=5),
           data_src(op=0x1f, lvl=0x3fff, lvl_num=9, remote=1, hops=7, snoopx=3, blk=1)]
PAGES = [4096, 0, 2 << 20, 1024, 2048, 1 << 30, 3 << 30, 8192 * 1024]


def main(src, dst):
    d = bytearray(open(src, 'rb').read())
    attrs_off, attrs_size = struct.unpack_from('<QQ', d, 24)
    attr_size = struct.unpack_from('<Q', d, 16)[0]
    data_off, data_size = struct.unpack_from('<QQ', d, 40)
    sample_type = None
    for a in range(attrs_off, attrs_off + attrs_size, attr_size):
        struct.pack_into('<I', d, a, 4)  # PERF_TYPE_RAW
        sample_type = struct.unpack_from('<Q', d, a + 24)[0]
    # EVENT_DESC (feature 12): nr, attr size, then per event its attr.
    feats = struct.unpack_from('<Q', d, 72)[0]
    sec = data_off + data_size
    for bit in range(64):
        if not feats >> bit & 1:
            continue
        off, size = struct.unpack_from('<QQ', d, sec)
        sec += 16
        if bit == 12:
            nr, sz = struct.unpack_from('<II', d, off)
            p = off + 8
            for _ in range(nr):
                struct.pack_into('<I', d, p, 4)
                p += sz
                nids = struct.unpack_from('<I', d, p)[0]
                slen = struct.unpack_from('<I', d, p + 4)[0]
                p += 8 + slen + 8 * nids
    weight = 'WEIGHT' if sample_type & BIT['WEIGHT'] else 'WEIGHT_STRUCT'
    fields = [f for f in ORDER if sample_type & BIT[f if f != 'WEIGHT' else weight]]
    where = {f: 8 + 8 * i for i, f in enumerate(fields)}
    off, n = data_off, 0
    while off + 8 <= data_off + data_size:
        typ, misc, size = struct.unpack_from('<IHH', d, off)
        if size < 8:
            break
        if typ == SAMPLE:
            struct.pack_into('<Q', d, off + where['DATA_SRC'], SOURCES[n % len(SOURCES)])
            w = (n * 37) % 1000 + (100000 if n % 7 == 0 else 0)
            if weight == 'WEIGHT_STRUCT':
                w |= ((n * 13) % 70000 & 0xffff) << 32 | (n % 5) << 48
            struct.pack_into('<Q', d, off + where['WEIGHT'], w)
            struct.pack_into('<Q', d, off + where['DATA_PAGE_SIZE'], PAGES[n % len(PAGES)])
            struct.pack_into('<Q', d, off + where['CODE_PAGE_SIZE'], PAGES[(n + 3) % len(PAGES)])
            n += 1
        off += size
    open(dst, 'wb').write(d)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
