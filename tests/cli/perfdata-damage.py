#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Damage a copy of a perf.data file in ways its framing does not show.

perfdata-damage.py SRC DST ACTION...   (applied in order)
  fmt[:EVENT]    a 0xff byte two bytes into a print fmt literal of
                 TRACING_DATA: EVENT's format, or the first one
  unused:EVENT   EVENT's format id rewritten to 9s, an id no event samples
  cut-sample:N   the Nth SAMPLE record of the data section says 31 bytes
  scramble:SEED  one to three runs of 1-16 random bytes inside the data
                 section, the same for the same SEED

Prints the offset (hex) of the last format an action touched, so a test
can expect the damage line's offset; a SAMPLE that is not there is an
error (exit 1), never a silently intact copy.
"""
import random
import struct
import sys


def format_at(d, event):
    if not event:
        return d.index(b'print fmt: "')
    return d.index(b'name: %s\nID: ' % event.encode())


def cut_sample(d, nth_wanted):
    off, size = struct.unpack_from('<QQ', d, 40)
    end, nth = off + size, 0
    while off + 8 <= end:
        typ, _misc, rsize = struct.unpack_from('<IHH', d, off)
        if typ == 9:
            nth += 1
            if nth == nth_wanted:
                struct.pack_into('<H', d, off + 6, 31)
                return
        if rsize == 0:
            break
        off += rsize
    sys.exit('no SAMPLE number %d' % nth_wanted)


def scramble(d, seed):
    off, size = struct.unpack_from('<QQ', d, 40)
    rnd = random.Random(seed)
    for _ in range(rnd.randint(1, 3)):
        at = off + rnd.randrange(size)
        for i in range(rnd.randint(1, 16)):
            if at + i < off + size:
                d[at + i] = rnd.randrange(256)


def main():
    src, dst, actions = sys.argv[1], sys.argv[2], sys.argv[3:]
    d = bytearray(open(src, 'rb').read())
    touched = None
    for action in actions:
        kind, _, arg = action.partition(':')
        if kind == 'fmt':
            touched = format_at(d, arg)
            p = d.index(b'print fmt: "', touched) + len('print fmt: "') + 2
            d[p] = 0xff
        elif kind == 'unused':
            touched = format_at(d, arg)
            idp = touched + len('name: %s\nID: ' % arg)
            n = d.index(b'\n', idp) - idp
            d[idp:idp + n] = b'9' * n
        elif kind == 'cut-sample':
            cut_sample(d, int(arg))
        elif kind == 'scramble':
            scramble(d, int(arg))
        else:
            sys.exit('unknown action %s' % action)
    open(dst, 'wb').write(d)
    if touched is not None:
        print('%x' % touched)


main()
