#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Build a host/guest pair of trace-cmd .dat v7 files, as `trace-cmd record -A` writes them.

    make-guest-pair.py [--variant interp|kvm] [--pages N (1)] [--systems LIST]
                       HOST_SRC GUEST_SRC HOST_OUT GUEST_OUT

A real pair needs a virtual machine and vsock, which the test machines lack,
so the pair is made from two ordinary recordings (uncompressed v7, e.g. from
`tracekit convert --compression none`): their metadata and their first N
pages per CPU are kept, and the options a host/guest session adds are
written the way trace-cmd 3.4 writes them (tracecmd/trace-record.c,
trace-vm.c and lib/trace-cmd/trace-timesync.c; the reader is
lib/trace-cmd/trace-input.c):

  host file   TRACEID (the host session's id) and GUEST (13): the guest's
              name, NUL; u64 the guest session's trace id; u32 vCPU count;
              per vCPU {u32 vcpu, u32 host pid of the thread running it}.
  guest file  TRACEID (the guest session's id), its clock x86-tsc (the
              TRACECLOCK text and the BUFFER option), and appended in a last
              OPTIONS section after the CPU data, as the host adds them when
              the time sync stops: TSC2NSEC (14) {u32 mult, u32 shift, u64
              offset} and TIME_SHIFT (12): u64 the host's trace id; u32
              flags (bit 0: interpolate between samples); u32 vCPU count;
              per vCPU {u32 count; u64 times[count]; s64 offsets[count];
              u64 scalings[count]}; then per vCPU u64 fraction_bits[count].

Variants (both give every vCPU several samples, some events before the
first sample and after the last, and the samples out of time order, which
the reader sorts):
  interp  flags 1 (PTP's protocol): offsets interpolated linearly between
          the two samples around each time; scaling 1, fraction 0.
  kvm     flags 0 (KVM's protocol): the offset of the sample at or before
          the time (the first sample's before it), scaling 5 with 2
          fraction bits (x1.25), applied before the offset.

A guest time shown by trace-cmd is ((raw * scaling) >> fraction + offset)
* mult >> shift (TSC2NSEC), plus --ts-offset; the TSC2NSEC offset field is
stored but not used by report.  Only the systems in --systems (default
sched,irq,timer) keep their formats, and the guest's kallsyms is left
empty, so the files stay small.  The parameters below are fixed: the same
sources give the same bytes.
"""
import argparse
import struct
import sys

MAGIC = b"\x17\x08\x44tracing"

HOST_GUEST_NAME = b"tkguest"
GUEST_TRACE_ID = 0x6775657374c0ffee
VCPU_PIDS = (4242, 4243)  # host threads running vCPU 0 and 1
TSC2NSEC = (0x3F000000, 30, 123456789)  # mult, shift (x0.984375), offset (unused by report)


class Dat:
    """The parts of an uncompressed little-endian v7 file that the pair needs."""

    def __init__(self, path):
        d = open(path, "rb").read()
        self.path = path
        if d[:10] != MAGIC:
            sys.exit(f"{path}: not a trace-cmd .dat file")
        pos = d.index(b"\0", 10)
        if d[10:pos] != b"7":
            sys.exit(f"{path}: version {d[10:pos].decode()} (need 7)")
        pos += 1
        if d[pos] != 0:
            sys.exit(f"{path}: big endian (need little)")
        self.long_size = d[pos + 1]
        self.page_size = struct.unpack_from("<I", d, pos + 2)[0]
        pos += 6
        end = d.index(b"\0", pos)
        if d[pos:end] != b"none":
            sys.exit(f"{path}: compressed ({d[pos:end].decode()}); convert with --compression none")
        pos = d.index(b"\0", end + 1) + 1
        first_opts = struct.unpack_from("<Q", d, pos)[0]
        pos += 8
        self.sections = {}  # id -> (string id, body) of the first of each id
        by_off = {}
        while pos < len(d):
            sid, flags, strid, size = struct.unpack_from("<HHiQ", d, pos)
            by_off[pos] = (sid, size)
            self.sections.setdefault(sid, (strid, d[pos + 16:pos + 16 + size]))
            pos += 16 + size
        self.options = []  # (id, payload), in file order, DONE and 16..22 left out
        self.buffer = None
        off = first_opts
        while off:
            sid, size = by_off[off]
            p, end = off + 16, off + 16 + size
            off = 0
            while p + 6 <= end:
                oid, osize = struct.unpack_from("<HI", d, p)
                pay = d[p + 6:p + 6 + osize]
                p += 6 + osize
                if oid == 0:
                    off = struct.unpack_from("<Q", pay)[0]
                    break
                if oid == 3:
                    self.buffer = pay
                elif not 16 <= oid <= 22:
                    self.options.append((oid, pay))
        self.cpus = self.parse_buffer(d)

    def parse_buffer(self, d):
        pay = self.buffer
        if pay is None:
            sys.exit(f"{self.path}: no BUFFER option")
        p = pay.index(b"\0", 8) + 1
        if pay[8:p - 1]:
            sys.exit(f"{self.path}: the first BUFFER is an instance")
        p = pay.index(b"\0", p) + 1
        _, ncpu = struct.unpack_from("<II", pay, p)
        p += 8
        cpus = []
        for _ in range(ncpu):
            cpu, off, size = struct.unpack_from("<IQQ", pay, p)
            cpus.append((cpu, d[off:off + size]))
            p += 20
        return cpus

    def option(self, oid):
        return next((pay for i, pay in self.options if i == oid), None)


def page_times(data, page_size):
    """First and last raw time of each page's records (type_len 0-28 data, 29 padding,
    30 time extend, 31 absolute time stamp; the commit word is 8 bytes)."""
    out = []
    for at in range(0, len(data), page_size):
        page = data[at:at + page_size]
        ts, commit = struct.unpack_from("<QQ", page)
        commit &= (1 << 27) - 1  # the flags live in the top bits
        first = None
        p = 16
        while p < 16 + commit:
            word = struct.unpack_from("<I", page, p)[0]
            tl, delta = word & 31, word >> 5
            if tl == 29:
                if delta == 0:
                    break
                p += 4 + struct.unpack_from("<I", page, p + 4)[0]
                continue
            if tl == 30:
                ts += delta + (struct.unpack_from("<I", page, p + 4)[0] << 27)
                p += 8
                continue
            if tl == 31:
                ts = (delta + (struct.unpack_from("<I", page, p + 4)[0] << 27)) | (ts & (0x1F << 59))
                p += 8
                continue
            ts += delta
            if first is None:
                first = ts
            if tl == 0:
                p += 4 + struct.unpack_from("<I", page, p + 4)[0]
            else:
                p += 4 + 4 * tl
        if first is not None:
            out.append((first, ts))
    return out


def cstr(s):
    return s.encode() + b"\0" if isinstance(s, str) else s + b"\0"


def keep_systems(body, systems):
    """EVENT_FORMATS body with only the named systems: u32 n, then per system
    {name NUL, u32 count, per event {u64 size, format text}}."""
    n = struct.unpack_from("<I", body)[0]
    p, kept = 4, []
    for _ in range(n):
        end = body.index(b"\0", p)
        name = body[p:end].decode()
        q = end + 1
        count = struct.unpack_from("<I", body, q)[0]
        q += 4
        for _ in range(count):
            q += 8 + struct.unpack_from("<Q", body, q)[0]
        if name in systems:
            kept.append(body[p:q])
        p = q
    return struct.pack("<I", len(kept)) + b"".join(kept)


class Writer:
    def __init__(self, src):
        self.src = src
        self.out = bytearray()
        self.opt_strid = src.sections[0][0]

    def section(self, sid, strid, body):
        off = len(self.out)
        self.out += struct.pack("<HHiQ", sid, 0, strid, len(body)) + body
        return off

    def options(self, opts):
        """An OPTIONS section ending in DONE; returns (section offset, DONE value offset)."""
        body = bytearray()
        for oid, pay in opts:
            body += struct.pack("<HI", oid, len(pay)) + pay
        body += struct.pack("<HI", 0, 8)
        done = len(body)
        body += b"\0" * 8
        off = self.section(0, self.opt_strid, bytes(body))
        return off, off + 16 + done

    def patch(self, at, value):
        self.out[at:at + 8] = struct.pack("<Q", value)

    def write(self, path, clock, first_opts, meta, last_opts, pages, systems):
        src = self.src
        self.out += MAGIC + b"7\0" + bytes([0, src.long_size]) + struct.pack("<I", src.page_size)
        self.out += b"none\0\0"
        first_at = len(self.out)
        self.out += b"\0" * 8
        offs = {}
        for sid in (16, 17, 18, 19, 20, 21):
            strid, body = src.sections[sid]
            if sid == 18:
                body = keep_systems(body, systems)
            if sid == 19 and "kallsyms" in meta:
                body = meta["kallsyms"]
            offs[sid] = self.section(sid, strid, body)
        a, a_done = self.options(first_opts)
        self.patch(first_at, a)
        b, b_done = self.options([(sid, struct.pack("<Q", offs[sid])) for sid in offs] +
                                 [(8, struct.pack("<I", len(src.cpus)))])
        self.patch(a_done, b)
        # CPU data starts page aligned, as trace-cmd writes it (readers may mmap it).
        fly = len(self.out)
        data_at = (fly + 16 + src.page_size - 1) // src.page_size * src.page_size
        body = bytearray(b"\0" * (data_at - fly - 16))
        table = []
        for cpu, data in src.cpus:
            data = data[:pages * src.page_size]
            table.append((cpu, fly + 16 + len(body), len(data)))
            body += data
        self.section(3, src.sections[3][0], bytes(body))
        buf = struct.pack("<Q", fly) + b"\0" + cstr(clock)
        buf += struct.pack("<II", src.page_size, len(table))
        for cpu, off, size in table:
            buf += struct.pack("<IQQ", cpu, off, size)
        c, c_done = self.options([(3, buf)])
        self.patch(b_done, c)
        if last_opts:
            d, _ = self.options(last_opts)
            self.patch(c_done, d)
        self.section(15, src.sections[15][0], src.sections[15][1])
        with open(path, "wb") as f:
            f.write(self.out)


def clock_text(src, clock):
    text = src.option(4).rstrip(b"\0").decode()
    words = text.replace("[", "").replace("]", "").split()
    tail = text[len(text.rstrip()):]
    return cstr(" ".join(f"[{w}]" if w == clock else w for w in words) + tail)


def time_shift(variant, guest, host_first, host_id, pages):
    """The TIME_SHIFT payload mapping the guest's kept records into the host's time."""
    mult, shift, _ = TSC2NSEC
    times = [t for _, data in guest.cpus
             for t in page_times(data[:pages * guest.page_size], guest.page_size)]
    g0 = min(t[0] for t in times)
    g1 = max(t[1] for t in times)
    span = g1 - g0
    # The host time the guest's first record lands at, in host counts before TSC2NSEC.
    target = ((host_first + 2000) << shift) // mult
    if variant == "interp":
        flags, scaling, frac = 1, 1, 0
        marks = (0.1, 0.3, 0.5, 0.7, 0.9)
    else:
        flags, scaling, frac = 0, 5, 2
        marks = (0.2, 0.5, 0.8)
    base = target - ((g0 * scaling) >> frac)
    pay = struct.pack("<QII", host_id, flags, len(guest.cpus))
    fracs = b""
    for vcpu in range(len(guest.cpus)):
        samples = []
        for k, m in enumerate(marks):
            t = g0 + int(span * m) + 977 * vcpu
            # The offset drifts by a few microseconds per sample (alternating
            # direction), so interpolated and stepped corrections differ.
            off = base + (k * 3000 if k % 2 == 0 else -k * 1700) + 450 * vcpu
            samples.append((t, off))
        # Stored out of order: the reader sorts them by time.
        samples = samples[1:] + samples[:1]
        pay += struct.pack("<I", len(samples))
        pay += b"".join(struct.pack("<Q", t) for t, _ in samples)
        pay += b"".join(struct.pack("<q", o) for _, o in samples)
        pay += b"".join(struct.pack("<Q", scaling) for _ in samples)
        fracs += b"".join(struct.pack("<Q", frac) for _ in samples)
    return pay + fracs


def append_options(data, opts):
    """@data (an uncompressed little-endian v7 file) with one more OPTIONS section at its
    end holding @opts, the last DONE of the chain patched to point at it."""
    d = bytearray(data)
    pos = d.index(b"\0", d.index(b"\0", d.index(b"\0", 10) + 7) + 1) + 1
    off = struct.unpack_from("<Q", d, pos)[0]
    strid = struct.unpack_from("<i", d, off + 4)[0]
    while True:
        _, _, _, size = struct.unpack_from("<HHiQ", d, off)
        p, end = off + 16, off + 16 + size
        while p + 6 <= end:
            oid, osize = struct.unpack_from("<HI", d, p)
            if oid == 0:
                break
            p += 6 + osize
        nxt = struct.unpack_from("<Q", d, p + 6)[0]
        if not nxt:
            break
        off = nxt
    struct.pack_into("<Q", d, p + 6, len(d))
    body = b"".join(struct.pack("<HI", oid, len(pay)) + pay for oid, pay in opts)
    body += struct.pack("<HIQ", 0, 8, 0)
    return bytes(d) + struct.pack("<HHiQ", 0, 0, strid, len(body)) + body


def corpus(src, outdir):
    """Small fuzz inputs (fuzz/corpus/dat/): @src (e.g. that folder's v7-none) with the
    guest/host options appended, intact and damaged."""
    data = open(src, "rb").read()
    guest = cstr(HOST_GUEST_NAME) + struct.pack("<QI", GUEST_TRACE_ID, 2)
    guest += struct.pack("<IiIi", 0, 4242, 1, 4243)
    ts = struct.pack("<QII", 0x1122334455667788, 1, 2)
    for cpu in range(2):
        ts += struct.pack("<I", 3) + struct.pack("<3Q", 3000, 1000, 2000)
        ts += struct.pack("<3q", -30 - cpu, 10, 20) + struct.pack("<3Q", 1, 1, 1)
    frac = ts + struct.pack("<6Q", 0, 0, 0, 1, 1, 1)
    tsc = struct.pack("<IIQ", *TSC2NSEC)
    cases = {
        "guest-options": [(13, guest), (14, tsc), (12, frac)],
        "guest-time-shift-legacy": [(12, ts)],
        "guest-time-shift-cut": [(12, frac[:-13])],
        "guest-time-shift-count": [(12, frac[:16] + struct.pack("<I", 0x7FFFFFFF) + frac[20:])],
        "guest-guest-vcpu": [(13, guest[:-8] + struct.pack("<Ii", 9, 1))],
    }
    for name, opts in cases.items():
        with open(f"{outdir}/{name}", "wb") as f:
            f.write(append_options(data, opts))


def main(argv):
    if argv[:1] == ["--corpus"]:
        corpus(argv[1], argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=("interp", "kvm"), default="interp")
    ap.add_argument("--pages", type=int, default=1, help="pages kept per CPU")
    ap.add_argument("--systems", default="sched,irq,timer")
    ap.add_argument("host_src")
    ap.add_argument("guest_src")
    ap.add_argument("host_out")
    ap.add_argument("guest_out")
    a = ap.parse_args(argv)
    systems = set(a.systems.split(","))
    host, guest = Dat(a.host_src), Dat(a.guest_src)
    host_id = struct.unpack("<Q", host.option(11))[0]
    host_first = min(t[0] for _, data in host.cpus
                     for t in page_times(data[:a.pages * host.page_size], host.page_size))

    guest_info = cstr(HOST_GUEST_NAME) + struct.pack("<QI", GUEST_TRACE_ID, len(guest.cpus))
    for vcpu in range(len(guest.cpus)):
        guest_info += struct.pack("<Ii", vcpu, VCPU_PIDS[vcpu % len(VCPU_PIDS)] + vcpu // 2 * 2)
    opts = [(oid, pay) for oid, pay in host.options if oid != 8]
    at = next(i for i, (oid, _) in enumerate(opts) if oid == 11) + 1
    opts.insert(at, (13, guest_info))
    opts.append((8, struct.pack("<I", len(host.cpus))))
    Writer(host).write(a.host_out, "local", opts, {}, [], a.pages, systems)

    opts = []
    for oid, pay in guest.options:
        if oid == 4:
            pay = clock_text(guest, "x86-tsc")
        elif oid == 11:
            pay = struct.pack("<Q", GUEST_TRACE_ID)
        elif oid == 8:
            continue
        opts.append((oid, pay))
    opts.append((8, struct.pack("<I", len(guest.cpus))))
    last = [(14, struct.pack("<IIQ", *TSC2NSEC)),
            (12, time_shift(a.variant, guest, host_first, host_id, a.pages))]
    Writer(guest).write(a.guest_out, "x86-tsc", opts, {"kallsyms": struct.pack("<I", 0)}, last,
                        a.pages, systems)


if __name__ == "__main__":
    main(sys.argv[1:])
