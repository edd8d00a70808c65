#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""make-bigendian.py IN OUT: a little-endian file-mode perf.data rewritten as
perf on a big-endian machine (s390x, ppc64) writes it.

Every field keeps its place and width; its bytes are reversed: the header
(the magic then reads "2ELIFREP"), attrs and their id arrays, each record by
its type (u32 pairs such as pid/tid stay two u32s), the sample fields that
sample_type selects, the sample_id_all trailers and every feature section.
The attr flag bitfield is not byte-swapped: a big-endian compiler allocates
bitfields from the most significant bit, so each byte keeps its place with
its bits reversed. Tracepoint RAW payloads are what a big-endian kernel
writes: each field of the event's format in big-endian order (strings and
byte arrays untouched), and TRACING_DATA says "big endian" and holds its
numbers in that order. perf reads such a file by swapping it back
(header.c, session.c, evsel.c), libtraceevent decodes the payloads by the
TRACING_DATA byte order: `perf script` prints the same text for both.

Anything this script does not know how to turn (branch stacks, pipe mode,
COMPRESSED records, AUX data, BPF info with programs, CPU_MAP masks)
stops it with an error rather than a wrong file.
"""
import struct
import sys

d = bytes(open(sys.argv[1], 'rb').read())
o = bytearray(d)


def die(msg):
    sys.exit('make-bigendian.py: %s: %s' % (sys.argv[1], msg))


def le(off, n):
    return int.from_bytes(d[off:off + n], 'little')


def sw(off, n):
    """Reverse the n bytes at off: a little-endian field becomes big-endian."""
    o[off:off + n] = d[off:off + n][::-1]


def sw_many(off, n, count):
    for i in range(count):
        sw(off + i * n, n)


if d[:8] != b'PERFILE2':
    die('not a little-endian perf.data')
hsize = le(8, 8)
pipe = hsize == 16
sw_many(0, 8, hsize // 8)
if not pipe:
    attr_size, aoff, asize, doff, dsize = le(16, 8), le(24, 8), le(32, 8), le(40, 8), le(48, 8)
    feat_bits = le(72, 32) if hsize >= 104 else 0
else:
    attr_size = aoff = asize = feat_bits = 0
    doff, dsize = 16, len(d) - 16

# Sizes of the attr fields after the flags, by offset (perf_event_attr).
ATTR_FIELDS = [(0, 4), (4, 4), (8, 8), (16, 8), (24, 8), (32, 8), (48, 4), (52, 4), (56, 8),
               (64, 8), (72, 8), (80, 8), (88, 4), (92, 4), (96, 8), (104, 4), (108, 2),
               (110, 2), (112, 4), (116, 4), (120, 8), (128, 8), (136, 8), (144, 8)]


def sw_attr(off):
    size = le(off + 4, 4) or 64
    for fo, n in ATTR_FIELDS:
        if fo + n <= size:
            sw(off + fo, n)
    # The flag bitfield: bits reversed within each byte, bytes in place.
    for i in range(8):
        o[off + 40 + i] = int('{:08b}'.format(d[off + 40 + i])[::-1], 2)
    return size


attrs = []
id2attr = {}


def register_attr(a, size, ids):
    flags = le(a + 40, 8)
    at = dict(type=le(a, 4), config=le(a + 8, 8), st=le(a + 24, 8), rf=le(a + 32, 8),
              sid=bool(flags >> 18 & 1), regs_user=le(a + 80, 8),
              regs_intr=le(a + 96, 8) if size >= 104 else 0,
              bst=le(a + 72, 8))
    attrs.append(at)
    for i in ids:
        id2attr[i] = at


for i in range(asize // attr_size if attr_size else 0):
    a = aoff + i * attr_size
    size = sw_attr(a)
    sw_many(a + size, 8, 2)
    ioff, isz = le(a + size, 8), le(a + size + 8, 8)
    sw_many(ioff, 8, isz // 8)
    register_attr(a, size, [le(ioff + 8 * k, 8) for k in range(isz // 8)])

# sample_type bits
IP, TID, TIME, ADDR, READ, CALLCHAIN, ID, CPU, PERIOD, STREAM_ID, RAW, BRANCH_STACK, \
    REGS_USER, STACK_USER, WEIGHT, DATA_SRC, IDENTIFIER, TRANSACTION, REGS_INTR, PHYS_ADDR, \
    AUX, CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE, WEIGHT_STRUCT = [1 << b for b in range(25)]

# ------------------------------------------------------------ TRACING_DATA
formats = {}  # tracepoint id -> [(offset, size, type, name)]


def parse_format(text):
    fid = None
    fields = []
    for line in text.decode('latin-1').splitlines():
        line = line.strip()
        if line.startswith('ID:'):
            fid = int(line[3:])
        elif line.startswith('field:'):
            parts = [p.strip() for p in line.split(';')]
            decl = parts[0][len('field:'):].strip()
            kv = dict(p.split(':', 1) for p in parts[1:] if ':' in p)
            name = decl.split()[-1]
            typ = decl[:len(decl) - len(name)].strip()
            fields.append((int(kv['offset']), int(kv['size']), typ, name))
    if fid is not None:
        formats[fid] = fields


def convert_tracing_data(off, size):
    p = off + 10
    end = d.index(b'\0', p)
    version = d[p:end].decode()
    p = end + 1
    o[p] = 1  # big endian
    long_size = d[p + 1]
    p += 2
    sw(p, 4)
    p += 4
    for name in (b'header_page\0', b'header_event\0'):
        if d[p:p + len(name)] != name:
            die('TRACING_DATA: no %r at 0x%x' % (name, p))
        p += len(name)
        n = le(p, 8)
        sw(p, 8)
        p += 8 + n
    cnt = le(p, 4)
    sw(p, 4)
    p += 4
    for _ in range(cnt):
        n = le(p, 8)
        sw(p, 8)
        parse_format(d[p + 8:p + 8 + n])
        p += 8 + n
    nsys = le(p, 4)
    sw(p, 4)
    p += 4
    for _ in range(nsys):
        p = d.index(b'\0', p) + 1
        cnt = le(p, 4)
        sw(p, 4)
        p += 4
        for _ in range(cnt):
            n = le(p, 8)
            sw(p, 8)
            parse_format(d[p + 8:p + 8 + n])
            p += 8 + n
    for _ in range(2):  # kallsyms, printk formats
        n = le(p, 4)
        sw(p, 4)
        p += 4 + n
    if version >= '0.6' and p < off + size:
        sw(p, 8)
    return long_size


def is_chars(typ):
    base = typ.replace('__data_loc', '').replace('__rel_loc', '').split('[')[0]
    return 'char' in base or base.strip() in ('u8', 's8', '__u8', '__s8', 'bool', '_Bool')


def sw_raw(fid, off, n):
    """A tracepoint payload as a big-endian kernel writes it."""
    if fid not in formats:
        die('RAW sample of tracepoint id %d without a format in TRACING_DATA' % fid)
    for fo, fs, typ, name in formats[fid]:
        if fo + fs > n:
            continue
        if '__data_loc' in typ or '__rel_loc' in typ:
            v = le(off + fo, 4)
            sw(off + fo, 4)
            if v >> 16 and not is_chars(typ):
                die('tracepoint %d: dynamic array %s of %s' % (fid, name, typ))
        elif '[' in name:
            count = int(name.split('[')[1].split(']')[0] or 0)
            if count and fs // count > 1:
                sw_many(off + fo, fs // count, count)
        elif fs in (2, 4, 8):
            sw(off + fo, fs)
        elif fs != 1:
            die('tracepoint %d: field %s of %d bytes' % (fid, name, fs))


# ------------------------------------------------------------ features
sections = {}
nfeat = bin(feat_bits).count('1')
toff = doff + dsize
bits = [b for b in range(256) if feat_bits >> b & 1]
for k, bit in enumerate(bits):
    sections[bit] = (le(toff + 16 * k, 8), le(toff + 16 * k + 8, 8))
sw_many(toff, 8, 2 * nfeat)

nr_cpus = 0
if 7 in sections:
    nr_cpus = le(sections[7][0], 4)
# TRACING_DATA first: RAW payloads need its formats.
if 1 in sections:
    convert_tracing_data(*sections[1])


def sw_str(p):
    n = le(p, 4)
    sw(p, 4)
    return p + 4 + n


def sw_strs(p, count):
    for _ in range(count):
        p = sw_str(p)
    return p


def sw_u32_strs(p):
    n = le(p, 4)
    sw(p, 4)
    return sw_strs(p + 4, n)


def sw_feature(bit, off, size):
    global nr_cpus
    end = off + size
    if bit == 1:
        return
    elif bit == 2:  # BUILD_ID: perf_record_header_build_id records
        p = off
        while p < end:
            rs = le(p + 6, 2)
            if rs == 0:
                break
            sw(p, 4)
            sw(p + 4, 2)
            sw(p + 6, 2)
            sw(p + 8, 4)
            sw(p + 34, 2)
            p += rs
    elif bit in (3, 4, 5, 6, 8, 9):
        sw_str(off)
    elif bit == 7:
        nr_cpus = le(off, 4)
        sw_many(off, 4, 2)
    elif bit in (10, 21, 23, 24, 18, 22):  # all u64
        sw_many(off, 8, size // 8)
    elif bit == 11:
        sw_u32_strs(off)
    elif bit == 12:  # EVENT_DESC
        nr, asz = le(off, 4), le(off + 4, 4)
        sw_many(off, 4, 2)
        p = off + 8
        for _ in range(nr):
            sw_attr(p)
            p += asz
            nids = le(p, 4)
            sw(p, 4)
            p = sw_str(p + 4)
            sw_many(p, 8, nids)
            p += 8 * nids
    elif bit == 13:  # CPU_TOPOLOGY
        p = sw_u32_strs(off)
        p = sw_u32_strs(p)
        if p < end:
            sw_many(p, 4, 2 * nr_cpus)
            p += 8 * nr_cpus
        if p < end:
            p = sw_u32_strs(p)
            sw_many(p, 4, (end - p) // 4)
    elif bit == 14:  # NUMA_TOPOLOGY
        nr = le(off, 4)
        sw(off, 4)
        p = off + 4
        for _ in range(nr):
            sw(p, 4)
            sw_many(p + 4, 8, 2)
            p = sw_str(p + 20)
    elif bit in (15, 19, 32):  # empty; 32 ends a pipe's features (perf 6.1)
        pass
    elif bit == 16:  # PMU_MAPPINGS
        nr = le(off, 4)
        sw(off, 4)
        p = off + 4
        for _ in range(nr):
            sw(p, 4)
            p = sw_str(p + 4)
    elif bit == 17:  # GROUP_DESC
        nr = le(off, 4)
        sw(off, 4)
        p = off + 4
        for _ in range(nr):
            p = sw_str(p)
            sw_many(p, 4, 2)
            p += 8
    elif bit == 20:  # CACHE
        cnt = le(off + 4, 4)
        sw_many(off, 4, 2)
        p = off + 8
        for _ in range(cnt):
            sw_many(p, 4, 4)
            p = sw_strs(p + 16, 3)
    elif bit in (25, 26):  # BPF_PROG_INFO, BPF_BTF: perf cannot swap them
        if le(off, 4):
            die('feature %d holds BPF data, which perf does not read swapped' % bit)
        sw(off, 4)
    elif bit == 27:
        sw_many(off, 4, 5)
    elif bit in (28, 30):  # CPU_PMU_CAPS, HYBRID_TOPOLOGY: string pairs
        nr = le(off, 4)
        sw(off, 4)
        sw_strs(off + 4, 2 * nr)
    elif bit == 29:  # CLOCK_DATA
        sw_many(off, 4, 2)
        sw_many(off + 8, 8, 2)
    elif bit == 31:  # PMU_CAPS
        nr = le(off, 4)
        sw(off, 4)
        p = off + 4
        for _ in range(nr):
            ncaps = le(p, 4)
            sw(p, 4)
            p = sw_strs(p + 4, 2 * ncaps + 1)
    else:
        die('feature %d is not converted' % bit)


for bit, (off, size) in sections.items():
    sw_feature(bit, off, size)

# ------------------------------------------------------------ records


def attr_of_sample(p, end):
    first = attrs[0]
    if len(attrs) == 1:
        return first
    st = first['st']
    if st & IDENTIFIER:
        return id2attr[le(p, 8)]
    if not st & ID:
        die('several attrs without ID or IDENTIFIER')
    q = p + 8 * sum(1 for b in (IP, TID, TIME, ADDR) if st & b)
    return id2attr[le(q, 8)]


def trailer_size(at):
    if not at['sid']:
        return 0
    return 8 * sum(1 for b in (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER) if at['st'] & b)


def sw_trailer(rec, end):
    first = attrs[0]
    at = first
    if len(attrs) > 1 and first['st'] & IDENTIFIER and first['sid']:
        at = id2attr.get(le(end - 8, 8), first)
    p = end - trailer_size(at)
    if p < rec + 8:
        die('record at 0x%x is shorter than its sample_id_all trailer' % rec)
    st = at['st']
    for b in (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER):
        if st & b:
            if b in (TID, CPU):
                sw_many(p, 4, 2)
            else:
                sw(p, 8)
            p += 8
    return end - trailer_size(at)


def read_values(rf):
    if rf & 8:  # GROUP: counted after nr
        return None
    return 1 + sum(1 for b in (1, 2, 4, 16) if rf & b)


def sw_read(p, rf):
    if rf & 8:
        nr = le(p, 8)
        n = 1 + sum(1 for b in (1, 2) if rf & b) + nr * (1 + sum(1 for b in (4, 16) if rf & b))
    else:
        n = read_values(rf)
    sw_many(p, 8, n)
    return p + 8 * n


def sw_sample(rec, end):
    p = rec + 8
    at = attr_of_sample(p, end)
    st = at['st']
    for b in (IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD):
        if st & b:
            if b in (TID, CPU):
                sw_many(p, 4, 2)
            else:
                sw(p, 8)
            p += 8
    if st & READ:
        p = sw_read(p, at['rf'])
    if st & CALLCHAIN:
        nr = le(p, 8)
        sw_many(p, 8, nr + 1)
        p += 8 * (nr + 1)
    if st & RAW:
        n = le(p, 4)
        sw(p, 4)
        if at['type'] == 2:
            sw_raw(at['config'], p + 4, n)
        p += 4 + n
    if st & BRANCH_STACK:
        die('record at 0x%x: branch stacks are not converted' % rec)
    for regs_bit, mask in ((REGS_USER, at['regs_user']), (STACK_USER, None)):
        if not st & regs_bit:
            continue
        if mask is not None:
            abi = le(p, 8)
            sw(p, 8)
            p += 8
            if abi:
                k = bin(mask).count('1')
                sw_many(p, 8, k)
                p += 8 * k
        else:
            n = le(p, 8)
            sw(p, 8)
            p += 8 + n
            if n:
                sw(p, 8)
                p += 8
    for b in (WEIGHT | WEIGHT_STRUCT, DATA_SRC, TRANSACTION):
        if st & b:
            sw(p, 8)
            p += 8
    if st & REGS_INTR:
        abi = le(p, 8)
        sw(p, 8)
        p += 8
        if abi:
            k = bin(at['regs_intr']).count('1')
            sw_many(p, 8, k)
            p += 8 * k
    for b in (PHYS_ADDR, CGROUP, DATA_PAGE_SIZE, CODE_PAGE_SIZE):
        if st & b:
            sw(p, 8)
            p += 8
    if st & AUX:
        die('record at 0x%x: AUX samples are not converted' % rec)
    if p != end:
        die('sample at 0x%x: %d bytes parsed of %d' % (rec, p - rec, end - rec))


def sw_cpu_map(p, rec):
    typ = le(p, 2)
    sw(p, 2)
    if typ == 0:
        nr = le(p + 2, 2)
        sw_many(p + 2, 2, nr + 1)
    elif typ == 2:
        sw_many(p + 4, 2, 2)
    else:
        die('record at 0x%x: CPU map of type %d is not converted' % (rec, typ))


p = doff
dend = doff + dsize
while p < dend:
    typ, misc, size = le(p, 4), le(p + 4, 2), le(p + 6, 2)
    if size < 8:
        die('record at 0x%x of size %d' % (p, size))
    end = p + size
    sw(p, 4)
    sw(p + 4, 2)
    sw(p + 6, 2)
    b = p + 8
    if typ == 9:
        sw_sample(p, end)
    elif typ < 64:
        tend = sw_trailer(p, end)
        if typ in (1, 10):  # MMAP, MMAP2
            sw_many(b, 4, 2)
            sw_many(b + 8, 8, 3)
            if typ == 10:
                if misc & 0x4000:
                    sw(b + 34, 2)
                else:
                    sw_many(b + 32, 4, 2)
                    sw_many(b + 40, 8, 2)
                sw_many(b + 56, 4, 2)
        elif typ in (3, 12, 15):  # COMM, ITRACE_START, SWITCH_CPU_WIDE
            sw_many(b, 4, 2)
        elif typ in (4, 7):  # EXIT, FORK
            sw_many(b, 4, 4)
            sw(b + 16, 8)
        elif typ in (2, 5, 6, 11, 13):  # LOST, (UN)THROTTLE, AUX, LOST_SAMPLES
            sw_many(b, 8, (tend - b) // 8)
        elif typ == 8:  # READ
            sw_many(b, 4, 2)
            sw_many(b + 8, 8, (tend - b - 8) // 8)
        elif typ == 14:
            pass
        elif typ == 16:  # NAMESPACES
            sw_many(b, 4, 2)
            nr = le(b + 8, 8)
            sw_many(b + 8, 8, 1 + 2 * nr)
        elif typ == 17:  # KSYMBOL
            sw(b, 8)
            sw(b + 8, 4)
            sw_many(b + 12, 2, 2)
        elif typ == 18:  # BPF_EVENT
            sw_many(b, 2, 2)
            sw(b + 4, 4)
        elif typ == 19:  # CGROUP
            sw(b, 8)
        elif typ == 20:  # TEXT_POKE
            sw(b, 8)
            sw_many(b + 8, 2, 2)
        else:
            die('record at 0x%x: type %d is not converted' % (p, typ))
    elif typ in (68, 82):  # FINISHED_ROUND, FINISHED_INIT
        pass
    elif typ == 64:  # HEADER_ATTR: attr, then its ids
        asz = sw_attr(b)
        n = (end - b - asz) // 8
        sw_many(b + asz, 8, n)
        register_attr(b, asz, [le(b + asz + 8 * k, 8) for k in range(n)])
    elif typ == 80:  # HEADER_FEATURE: u64 id, then the payload as in a file
        fid = le(b, 8)
        sw(b, 8)
        sw_feature(fid, b + 8, end - b - 8)
    elif typ == 66:  # HEADER_TRACING_DATA: u32 size, the blob after the record
        n = le(b, 4)
        sw(b, 4)
        convert_tracing_data(end, n)
        end += (n + 7) & ~7
    elif typ == 67:  # HEADER_BUILD_ID
        sw(b, 4)
        sw(b + 26, 2)
    elif typ in (69, 75, 77):  # ID_INDEX, STAT_CONFIG, STAT_ROUND: u64s
        sw_many(b, 8, (end - b) // 8)
    elif typ == 73:  # THREAD_MAP
        nr = le(b, 8)
        sw(b, 8)
        for k in range(nr):
            sw(b + 8 + 24 * k, 8)
    elif typ == 74:
        sw_cpu_map(b, p)
    elif typ == 76:  # STAT
        sw(b, 8)
        sw_many(b + 8, 4, 2)
        sw_many(b + 16, 8, 3)
    elif typ == 78:  # EVENT_UPDATE
        kind = le(b, 8)
        sw_many(b, 8, 2)
        if kind == 1:
            sw(b + 16, 8)
        elif kind == 3:
            sw_cpu_map(b + 16, p)
    elif typ == 79:  # TIME_CONV
        sw_many(b, 8, min(5, (end - b) // 8))
    else:
        die('record at 0x%x: type %d is not converted' % (p, typ))
    p = end

open(sys.argv[2], 'wb').write(o)
