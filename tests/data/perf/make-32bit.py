#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""make-32bit.py IN OUT: a little-endian file-mode perf.data of tracepoints
rewritten as perf on a 32-bit x86 machine (i686 kernel and perf) writes it.

What differs on such a machine is only the tracing side: TRACING_DATA says
long size 4, header_page describes 4-byte commit fields, and every event
field of type long, size_t or pointer is 4 bytes wide, so the fields after
it move (laid out as the i386 ABI does: no member aligned past 4 bytes) and
tracepoint RAW payloads shrink. Those fields keep their low 32 bits
(kernel addresses thus name nothing: perf and tracekit print them raw).
Records (whose u64 fields are the kernel's ABI on every machine), attrs
and the other features keep their bytes; ARCH says i686. The data
section is rebuilt with the new record sizes and the feature sections
follow it at their new offsets.

Refused (an error, not a wrong file): pipe mode, COMPRESSED records,
__rel_loc fields and dynamic arrays of longs.
"""
import re
import struct
import sys

d = open(sys.argv[1], 'rb').read()


def die(msg):
    sys.exit('make-32bit.py: %s: %s' % (sys.argv[1], msg))


def u(fmt, off):
    return struct.unpack_from('<' + fmt, d, off)


if d[:8] != b'PERFILE2' or u('Q', 8)[0] != 104:
    die('not a little-endian file-mode perf.data')
attr_size, aoff, asize, doff, dsize = u('5Q', 16)
feat_bits = int.from_bytes(d[72:104], 'little')
bits = [b for b in range(256) if feat_bits >> b & 1]
toff = doff + dsize
sections = [u('QQ', toff + 16 * k) for k in range(len(bits))]
feat = dict(zip(bits, sections))
if 1 not in feat:
    die('no TRACING_DATA')

attrs = []
id2attr = {}
for i in range(asize // attr_size):
    a = aoff + i * attr_size
    size = u('I', a + 4)[0]
    typ, _, config, _, st = u('IIQQQ', a)
    ioff, isz = u('QQ', a + size)
    at = dict(type=typ, config=config, st=st)
    attrs.append(at)
    for k in range(isz // 8):
        id2attr[u('Q', ioff + 8 * k)[0]] = at

LONGS = ('long', 'unsigned long', 'size_t', 'ssize_t', 'uintptr_t', 'ptrdiff_t', 'long int',
         'unsigned long int', 'long unsigned int', 'unsigned int long')
FIELD = re.compile(r'^\tfield:(.*?);\toffset:(\d+);\tsize:(\d+);\tsigned:(\d+);$')
layouts = {}  # tracepoint id -> (old fields, new fields, old fixed end, new fixed end)


def is_long(typ, name):
    t = typ.replace('const ', '').replace('volatile ', '').strip()
    return '*' in t or t in LONGS


def relayout(text):
    """An event format as the 32-bit kernel prints it; records the layouts."""
    lines = text.decode('latin-1').split('\n')
    fid = None
    old, new = [], []
    pos = 8  # after the common fields, which do not change
    out = []
    for line in lines:
        m = FIELD.match(line)
        if line.startswith('ID: '):
            fid = int(line[4:])
        if not m:
            out.append(line)
            continue
        decl, off, size, signed = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        name = decl.split()[-1]
        typ = decl[:len(decl) - len(name)].strip()
        count = 1
        if '[' in name:
            count = int(name.split('[')[1].split(']')[0] or 0) or 1
        elem = size // count if count else size
        if '__rel_loc' in typ:
            die('__rel_loc field %s is not converted' % name)
        if '__data_loc' in typ and 'long' in typ:
            die('dynamic array of longs %s is not converted' % name)
        if off < 8:
            nsize, noff = size, off
        else:
            nelem = 4 if elem == 8 and is_long(typ.split('[')[0], name) and \
                '__data_loc' not in typ else elem
            nsize = nelem * count
            align = min(nelem, 4)
            pos = (pos + align - 1) // align * align
            noff = pos
            pos += nsize
        old.append((off, size, elem, typ))
        new.append((noff, nsize, nsize // count if count else nsize))
        out.append('\tfield:%s;\toffset:%d;\tsize:%d;\tsigned:%s;' % (decl, noff, nsize, signed))
    if fid is not None:
        oend = max([o + s for o, s, _, _ in old] + [8])
        nend = max([o + s for o, s, _ in new] + [8])
        layouts[fid] = (old, new, oend, nend)
    return '\n'.join(out).encode('latin-1')


def convert_tracing_data(blob):
    b = bytearray()
    p = 10
    end = blob.index(b'\0', p)
    version = blob[p:end].decode()
    b += blob[:end + 1]
    p = end + 1
    b += bytes([blob[p], 4]) + blob[p + 2:p + 6]  # endian, long size 4, page size
    p += 6
    for name in (b'header_page\0', b'header_event\0'):
        n = struct.unpack_from('<Q', blob, p + len(name))[0]
        text = blob[p + len(name) + 8:p + len(name) + 8 + n]
        if name == b'header_page\0':
            t = text.decode()
            t = re.sub(r'(local_t commit;\toffset:8;\tsize:)8', r'\g<1>4', t)
            t = re.sub(r'(char data;\toffset:)16(;\tsize:)(\d+)',
                       lambda m: '%s12%s%d' % (m.group(1), m.group(2), int(m.group(3)) + 4), t)
            text = t.encode()
        b += name + struct.pack('<Q', len(text)) + text
        p += len(name) + 8 + n
    for is_sys in (False, True):
        cnt = struct.unpack_from('<I', blob, p)[0]
        b += blob[p:p + 4]
        p += 4
        systems = cnt if is_sys else 1
        for _ in range(systems):
            if is_sys:
                end = blob.index(b'\0', p)
                b += blob[p:end + 1]
                p = end + 1
                cnt = struct.unpack_from('<I', blob, p)[0]
                b += blob[p:p + 4]
                p += 4
            for _ in range(cnt):
                n = struct.unpack_from('<Q', blob, p)[0]
                text = relayout(blob[p + 8:p + 8 + n])
                b += struct.pack('<Q', len(text)) + text
                p += 8 + n
    b += blob[p:]  # kallsyms, printk formats, saved cmdlines
    return bytes(b)


def convert_raw(fid, payload):
    old, new, oend, nend = layouts[fid]
    out = bytearray(nend)
    delta = oend - nend
    for (off, size, elem, typ), (noff, nsize, nelem) in zip(old, new):
        for k in range(size // elem if elem else 0):
            v = payload[off + k * elem:off + (k + 1) * elem]
            out[noff + k * nelem:noff + (k + 1) * nelem] = v[:nelem]
        if '__data_loc' in typ:
            loc = struct.unpack_from('<I', payload, off)[0]
            struct.pack_into('<I', out, noff, (loc >> 16) << 16 | ((loc & 0xffff) - delta))
    out += payload[oend:]
    return bytes(out)


IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD, READ, CALLCHAIN, RAW = \
    1 << 16, 1, 2, 4, 8, 64, 512, 128, 256, 16, 32, 1024


def convert_sample(rec):
    at = attrs[0]
    st = at['st']
    if len(attrs) > 1:
        if st & IDENTIFIER:
            at = id2attr[struct.unpack_from('<Q', rec, 8)[0]]
        else:
            q = 8 + 8 * sum(1 for b in (IP, TID, TIME, ADDR) if st & b)
            at = id2attr[struct.unpack_from('<Q', rec, q)[0]]
        st = at['st']
    if not st & RAW or at['type'] != 2:
        return rec
    if st & ~(IDENTIFIER | IP | TID | TIME | ADDR | ID | STREAM_ID | CPU | PERIOD | CALLCHAIN | RAW):
        die('sample_type 0x%x: fields after RAW are not converted' % st)
    p = 8 + 8 * sum(1 for b in (IDENTIFIER, IP, TID, TIME, ADDR, ID, STREAM_ID, CPU, PERIOD)
                    if st & b)
    if st & CALLCHAIN:
        p += 8 * (1 + struct.unpack_from('<Q', rec, p)[0])
    n = struct.unpack_from('<I', rec, p)[0]
    payload = convert_raw(at['config'], rec[p + 4:p + 4 + n])
    pad = (-(4 + len(payload))) % 8
    payload += bytes(pad)
    body = rec[:p] + struct.pack('<I', len(payload)) + payload
    return body[:6] + struct.pack('<H', len(body)) + body[8:]


toff_old = toff
td_off, td_size = feat[1]
new_td = convert_tracing_data(d[td_off:td_off + td_size])

data = bytearray()
p = doff
while p < doff + dsize:
    typ, misc, size = u('IHH', p)
    rec = d[p:p + size]
    if typ == 9:
        rec = convert_sample(rec)
    elif typ in (81, 83):
        die('COMPRESSED records are not converted')
    data += rec
    p += size

out = bytearray(d[:doff]) + data
ntoff = len(out)
struct.pack_into('<Q', out, 48, len(data))
payloads = []
for bit, (off, size) in zip(bits, sections):
    body = d[off:off + size]
    if bit == 1:
        body = new_td
    elif bit == 6:  # ARCH: the same u32 len, "i686" in it
        n = struct.unpack_from('<I', body, 0)[0]
        body = body[:4] + b'i686'.ljust(n, b'\0')
    payloads.append(body)
out += bytes(16 * len(bits))
# perf leaves slack entries of failed features between the table and the payloads.
slack = min(off for off, _ in sections) - (toff_old + 16 * len(bits)) if sections else 0
out += bytes(max(slack, 0))
for k, body in enumerate(payloads):
    struct.pack_into('<QQ', out, ntoff + 16 * k, len(out), len(body))
    out += body
open(sys.argv[2], 'wb').write(out)
