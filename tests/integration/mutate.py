#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Broken copies of a valid trace-cmd .dat file, and the check that tracekit rejects each.

    mutate.py list  FILE             print the mutation names for FILE
    mutate.py write FILE NAME OUT    write one broken copy
    mutate.py check TRACEKIT FILE... run `tracekit dump --strict` on every broken copy of each FILE
    mutate.py salvage TRACEKIT FILE... run `tracekit report` (salvage) on every broken copy,
                                      beside `trace-cmd report` when TK_TRACE_CMD names it

The file is parsed here, independently of tracekit, from the layout in
shared/specs/tracedat.md (v7: header, compression header, sections tiling the
file, OPTIONS chain, BUFFER options, CPU chunks; v6: the sequential parts,
options block, flyrecord table). Every mutation names the structure it breaks
and is derived from the parsed offsets, so a new sample still yields the same
kinds of damage: truncation at every structural boundary and in the middle of
every part, sizes and counts that overflow or exceed the file, offsets past
EOF, loops in the OPTIONS chain, bad magic, version and codec, corrupt
compressed blocks, and page headers whose commit exceeds the page.

`check` expects for each copy: exit status 1, exactly one stderr line that
starts with "tracekit dump: " and holds the file name and "offset 0x", no
sanitizer report, and completion within the timeout. It prints one TAP-like
line per copy and a final "# mutate-counts: passed=N failed=N skipped=N".
Copies that fail are kept in $TK_KEEP_DIR (when set) to reproduce them.

`salvage` expects for each copy that `tracekit report` (salvage, the
default) exits 0 or 1 within the timeout without a sanitizer report; that on
exit 1 at least one stderr line names the file and "offset 0x"; that
exit 0 never comes with fewer events than the intact file (a silent loss);
and, when $TK_TRACE_CMD is set, that it prints at least as many event lines
as `trace-cmd report -i` whenever trace-cmd prints events, counting lines
the same way for both (lines with "[CPU] SECONDS: ", so "cpus=N" and
trace-cmd's "File possibly truncated" notes are not events). trace-cmd decodes records
a damaged page header lets run past the page, which yields garbage events
beyond the intact file's count, so its count is capped at the intact one.
"""
import concurrent.futures
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

U64_MAX = (1 << 64) - 1


class Layout:
    """Offsets of the structures of one .dat file."""

    def __init__(self, data):
        self.data = data
        self.size = len(data)
        self.boundaries = []  # (name, offset): a part starts here
        self.parts = []       # (name, start, end): a part's bytes
        self.fields = {}      # name -> (offset, struct format)
        self.frames = []      # (name, offset, csize, usize): a compressed block
        self.pages = []       # (name, offset): an uncompressed ring-buffer page
        self.cpu_data = []    # (name, start, end): one CPU's bytes in the file
        self.lenient_truncations = set()
        self.parse()

    def u(self, fmt, off):
        return struct.unpack_from(self.e + fmt, self.data, off)[0]

    def cstr(self, off):
        end = self.data.index(b"\0", off)
        return self.data[off:end].decode("latin-1"), end + 1

    def field(self, name, off, fmt):
        self.fields[name] = (off, fmt)

    def part(self, name, start, end):
        self.boundaries.append((name, start))
        self.parts.append((name, start, end))

    def parse(self):
        d = self.data
        if d[:10] != b"\x17\x08\x44tracing":
            raise ValueError("not a trace-cmd .dat file")
        ver, pos = self.cstr(10)
        self.version = int(ver)
        self.version_off = 10
        self.e = "<" if d[pos] == 0 else ">"
        self.long_size = d[pos + 1]
        self.page_size = self.u("I", pos + 2)
        pos += 6
        if self.version == 7:
            self.parse_v7(pos)
        elif self.version == 6:
            self.parse_v6(pos)
        else:
            raise ValueError(f"version {self.version}")

    # -------------------------------------------------------------- v7
    def parse_v7(self, pos):
        self.comp_off = pos
        self.comp, pos = self.cstr(pos)
        _, pos = self.cstr(pos)
        self.field("first options offset", pos, "Q")
        first_opts = self.u("Q", pos)
        pos += 8
        self.sections = []
        while pos < self.size:
            sid, flags, _, size = struct.unpack_from(self.e + "HHiQ", self.data, pos)
            self.sections.append((sid, flags, pos, size))
            pos += 16 + size
        if pos != self.size:
            raise ValueError("sections do not tile the file")
        by_off = {off: (sid, flags, size) for sid, flags, off, size in self.sections}
        count = {}
        for sid, flags, off, size in self.sections:
            n = count.get(sid, 0)
            count[sid] = n + 1
            tag = f"section {sid}" + (f"#{n}" if n else "")
            self.part(tag + " header", off, off + 16)
            self.boundaries.append((tag + " body", off + 16))
            self.parts.append((tag + " body", off + 16, off + 16 + size))
            self.field(tag + " size", off + 8, "Q")
            if sid == 15 and off + 16 + size == self.size:
                # Cut right before a trailing STRINGS section the file is
                # still valid: only descriptions are lost (spec 2.4).
                self.lenient_truncations.add(off)
            if flags & 1 and sid != 3:
                self.field(tag + " csize", off + 16, "I")
                self.field(tag + " usize", off + 20, "I")
                self.frames.append((tag, off + 24, self.u("I", off + 16), self.u("I", off + 20)))
            elif sid in (16, 19, 21):
                self.parse_metadata(sid, off + 16)
        # OPTIONS chain
        opts, nsec = first_opts, 0
        seen = set()
        self.options_offsets = []
        while opts and opts not in seen:
            seen.add(opts)
            sid, flags, size = by_off[opts]
            assert sid == 0 and not flags & 1
            self.options_offsets.append(opts)
            p, end = opts + 16, opts + 16 + size
            while p + 6 <= end:
                oid, osize = struct.unpack_from(self.e + "HI", self.data, p)
                pay = p + 6
                if p == opts + 16 or oid in (0, 3):
                    self.field(f"options#{nsec} option {oid} size", p + 2, "I")
                if oid == 0:
                    self.field(f"options#{nsec} DONE next", pay, "Q")
                    opts = self.u("Q", pay)
                    break
                if 16 <= oid <= 22:
                    self.field(f"option {oid} offset", pay, "Q")
                if oid == 3:
                    self.parse_buffer_v7(pay)
                p = pay + osize
            else:
                opts = 0
            nsec += 1

    def parse_metadata(self, sid, body):
        if sid == 16:
            self.field("header_page length", body + 12, "Q")
        elif sid == 19:
            self.field("kallsyms length", body, "I")
        elif sid == 21:
            self.field("cmdlines length", body, "Q")

    def parse_buffer_v7(self, pay):
        self.field("BUFFER section offset", pay, "Q")
        name, p = self.cstr(pay + 8)
        _, p = self.cstr(p)
        p += 4  # page size
        self.field(f"BUFFER {name or 'top'} cpu count", p, "I")
        n = self.u("I", p)
        p += 4
        sec_off = self.u("Q", pay)
        compressed = any(off == sec_off and flags & 1 for _, flags, off, _ in self.sections)
        for i in range(n):
            cpu, doff, dsize = struct.unpack_from(self.e + "IQQ", self.data, p)
            tag = f"cpu{cpu}"
            if i == 1:
                self.field(f"{tag} id", p, "I")
            self.field(f"{tag} data offset", p + 4, "Q")
            self.field(f"{tag} data size", p + 12, "Q")
            if compressed:
                self.parse_chunks(tag, doff, dsize)
            else:
                self.add_cpu_pages(tag, doff, dsize)
            p += 20

    def parse_chunks(self, tag, off, size):
        self.field(f"{tag} chunk count", off, "I")
        n = self.u("I", off)
        self.cpu_data.append((tag, off, off + 4 + size))
        p = off + 4
        for i in range(n):
            csize, usize = struct.unpack_from(self.e + "II", self.data, p)
            self.field(f"{tag} chunk{i} csize", p, "I")
            self.field(f"{tag} chunk{i} usize", p + 4, "I")
            self.frames.append((f"{tag} chunk{i}", p + 8, csize, usize))
            if i == 0:
                self.boundaries.append((f"{tag} chunk{i} frame", p + 8))
            p += 8 + csize

    def add_cpu_pages(self, tag, off, size):
        if size:
            self.cpu_data.append((tag, off, off + size))
            self.pages.append((tag + " page0", off))
            if size >= 2 * self.page_size:
                self.pages.append((tag + " page1", off + self.page_size))

    # -------------------------------------------------------------- v6
    def parse_v6(self, pos):
        d = self.data
        self.sections = []
        for tag in (b"header_page\0", b"header_event\0"):
            start = pos
            assert d[pos:pos + len(tag)] == tag
            self.field(tag[:-1].decode() + " length", pos + len(tag), "Q")
            n = self.u("Q", pos + len(tag))
            pos += len(tag) + 8 + n
            self.part(tag[:-1].decode(), start, pos)
        self.fields["header_page tag"] = (18, "B")
        start = pos
        self.field("ftrace format count", pos, "I")
        n = self.u("I", pos)
        pos += 4
        for i in range(n):
            if i == 0:
                self.field("ftrace format0 length", pos, "Q")
            pos += 8 + self.u("Q", pos)
        self.part("ftrace formats", start, pos)
        start = pos
        self.field("system count", pos, "I")
        nsys = self.u("I", pos)
        pos += 4
        for s in range(nsys):
            _, pos = self.cstr(pos)
            if s == 0:
                self.field("system0 format count", pos, "I")
            n = self.u("I", pos)
            pos += 4
            for _ in range(n):
                pos += 8 + self.u("Q", pos)
        self.part("event formats", start, pos)
        self.field("kallsyms length", pos, "I")
        self.part("kallsyms", pos, pos + 4 + self.u("I", pos))
        pos += 4 + self.u("I", pos)
        self.field("printk length", pos, "I")
        self.part("printk", pos, pos + 4 + self.u("I", pos))
        pos += 4 + self.u("I", pos)
        self.field("cmdlines length", pos, "Q")
        self.part("cmdlines", pos, pos + 8 + self.u("Q", pos))
        pos += 8 + self.u("Q", pos)
        count_off = pos
        ncpu = self.u("I", pos)
        self.part("cpu count", pos, pos + 4)
        pos += 4
        has_clock = False
        cpucount_off = None
        if d[pos:pos + 7] == b"options":
            start = pos
            pos += 10
            first = True
            while True:
                oid = self.u("H", pos)
                if oid == 0:
                    pos += 2
                    break
                if first:
                    self.field("first option size", pos + 2, "I")
                    first = False
                has_clock |= oid == 4
                if oid == 8:
                    cpucount_off = pos + 6
                    ncpu = self.u("I", cpucount_off)
                pos += 6 + self.u("I", pos + 2)
            self.part("options block", start, pos)
        # A CPUCOUNT option overrides the u32 before the options (spec 3), so
        # only the count in effect is made huge.
        if cpucount_off is None:
            self.field("cpu count", count_off, "I")
        else:
            self.field("CPUCOUNT option count", cpucount_off, "I")
        assert d[pos:pos + 10] == b"flyrecord\0"
        self.fields["flyrecord tag"] = (pos, "B")
        self.part("flyrecord tag", pos, pos + 10)
        pos += 10
        start = pos
        for cpu in range(ncpu):
            doff, dsize = struct.unpack_from(self.e + "QQ", d, pos)
            self.field(f"cpu{cpu} data offset", pos, "Q")
            self.field(f"cpu{cpu} data size", pos + 8, "Q")
            self.add_cpu_pages(f"cpu{cpu}", doff, dsize)
            if dsize:
                self.boundaries.append((f"cpu{cpu} data", doff))
            pos += 16
        self.part("cpu table", start, pos)
        if has_clock:
            self.field("clock length", pos, "Q")
            self.part("clock", pos, pos + 8 + self.u("Q", pos))


def put(data, off, fmt, value, e):
    out = bytearray(data)
    struct.pack_into(e + fmt, out, off, value)
    return bytes(out)


def xor(data, start, length):
    out = bytearray(data)
    for i in range(start, min(start + length, len(out))):
        out[i] ^= 0xFF
    return bytes(out)


def zstd_rejects(frame, usize):
    """True when the zstd CLI cannot decode @frame to exactly @usize bytes."""
    if not shutil.which("zstd"):
        return None
    r = subprocess.run(["zstd", "-d", "-c", "-q"], input=frame, capture_output=True)
    return r.returncode != 0 or len(r.stdout) != usize


def mutations(lay):
    """Yield (name, function returning the broken bytes); names are unique."""
    d, e = lay.data, lay.e
    m = {}

    def add(name, fn):
        name = name.replace(" ", "-").replace("'", "").replace("@", "-at-")
        assert name not in m, name
        m[name] = fn

    # Header.
    add("magic-byte", lambda: b"\x18" + d[1:])
    add("magic-word", lambda: d[:3] + b"tracinG" + d[10:])
    for v in (b"5", b"8"):
        add("version-" + v.decode(), lambda v=v: d[:10] + v + d[11:])
    for cut in (0, 3, 11, 14, 17):
        add(f"truncate-header-{cut}", lambda cut=cut: d[:cut])

    # Truncation at every boundary and in the middle of every part.
    seen = set()
    for name, off in lay.boundaries:
        if 0 < off < lay.size and off not in seen and off not in lay.lenient_truncations:
            seen.add(off)
            add(f"truncate-at-{name}", lambda off=off: d[:off])
    for name, start, end in lay.parts:
        mid = (start + end) // 2
        if start < mid < lay.size and mid not in seen:
            seen.add(mid)
            add(f"truncate-mid-{name}", lambda mid=mid: d[:mid])
    for name, start, end in lay.cpu_data:
        for cut, what in ((start + 2, "start"), ((start + end) // 2, "mid"), (end - 1, "end")):
            if cut not in seen and start < cut < lay.size:
                seen.add(cut)
                add(f"truncate-{name}-data-{what}", lambda cut=cut: d[:cut])

    # Sizes, counts and offsets.
    huge = {"Q": (U64_MAX, U64_MAX - 15, lay.size), "I": (0xFFFFFFFF, 0x7FFFFFFF)}
    for name, (off, fmt) in lay.fields.items():
        if name.endswith((" size", " length", " count", " csize")):
            for val in huge[fmt]:
                if val != struct.unpack_from(e + fmt, d, off)[0]:
                    add(f"{name}-{val:#x}", lambda off=off, fmt=fmt, val=val: put(d, off, fmt, val, e))
        elif name.endswith((" offset", " next")):
            cur = struct.unpack_from(e + fmt, d, off)[0]
            if name.endswith("next") and cur == 0:
                # The last DONE: pointing it back at the first OPTIONS
                # section makes a loop that must not hang the reader.
                loop = lay.options_offsets[0]
                add(f"{name}-loop", lambda off=off, loop=loop: put(d, off, "Q", loop, e))
                continue
            for val in (lay.size + 4096, U64_MAX - 4095):
                add(f"{name}-past-eof-{val:#x}", lambda off=off, val=val: put(d, off, "Q", val, e))
            if name == "first options offset":
                add(f"{name}-zero", lambda off=off: put(d, off, "Q", 0, e))
                first = lay.sections[0][2]
                add(f"{name}-not-options", lambda off=off, v=first: put(d, off, "Q", v, e))
            m_opt = name.startswith("option ") and name.split()[1]
            if m_opt and m_opt.isdigit() and 16 <= int(m_opt) <= 21:
                # Pointing at a section with another id must be refused.
                other = next(o for sid, _, o, _ in lay.sections if sid != int(m_opt))
                add(f"{name}-wrong-section", lambda off=off, v=other: put(d, off, "Q", v, e))
        elif name.endswith(" usize"):
            cur = struct.unpack_from(e + "I", d, off)[0]
            for val in (cur + 1, cur + lay.page_size, 0xFFFFF000):
                add(f"{name}-{val:#x}", lambda off=off, val=val: put(d, off, "I", val, e))
        elif name.endswith(" id"):
            add(f"{name}-duplicate", lambda off=off: put(d, off, "I",
                struct.unpack_from(e + "I", d, off - 20)[0], e))
        elif name.endswith(" tag"):
            add(f"{name}-corrupt", lambda off=off: xor(d, off + 2, 1))

    if lay.version == 7:
        c = lay.comp_off
        add("compression-unknown", lambda: d[:c] + b"X" + d[c + 1:])

    # Corrupt compressed blocks: the frame magic always breaks; bytes in
    # the middle are flipped only where the zstd CLI confirms the damage.
    for name, off, csize, usize in lay.frames[:4] + [f for f in lay.frames if "chunk" in f[0]][:2]:
        mname = f"{name}-frame-magic"
        if mname.replace(" ", "-") not in m:
            add(mname, lambda off=off: xor(d, off, 4))
        for rel in (csize // 2, csize - 16):
            if rel <= 8:
                continue
            bad = xor(d, off + rel, 16)
            if lay.comp == "zstd" and zstd_rejects(bad[off:off + csize], usize) is False:
                continue
            mname = f"{name}-frame-flip-{rel}"
            if mname not in m:
                add(mname, lambda bad=bad: bad)

    # Page headers: commit beyond the page, and a commit that cuts a record.
    hdr = 8 + lay.long_size
    for name, off in lay.pages[:3]:
        for val, what in ((lay.page_size - hdr + 4, "beyond-page"), (0x07FFFFFF, "max"),
                          (2, "cuts-record")):
            add(f"{name}-commit-{what}", lambda off=off, val=val: put(d, off + 8, "I", val, e))
    return m


def run_check(tracekit, path, timeout):
    """Return None when tracekit dump rejects @path properly, else the reason."""
    try:
        r = subprocess.run([tracekit, "dump", "--strict", path], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"no exit within {timeout} s"
    err = r.stderr.decode("utf-8", "replace")
    lines = err.splitlines()
    for bad in ("runtime error", "AddressSanitizer", "LeakSanitizer", "Sanitizer"):
        if bad in err:
            return f"sanitizer report ({bad}): {lines[:3]}"
    if r.returncode != 1:
        return f"exit status {r.returncode} (want 1); stderr {lines[:2]}"
    if len(lines) != 1:
        return f"{len(lines)} stderr lines (want 1): {lines[:3]}"
    line = lines[0]
    if not line.startswith("tracekit dump: "):
        return f"message does not start with 'tracekit dump: ': {line}"
    if os.path.basename(path) not in line:
        return f"message does not name the file: {line}"
    if "offset 0x" not in line:
        return f"message has no 'offset 0x': {line}"
    return None


EVENT_LINE = re.compile(rb"\[\d+\]\s+\d+\.\d+: ")


def event_lines(out):
    """Event lines of a report ("comm-pid [cpu] secs.usecs: ..."), not headers or notes."""
    return sum(1 for line in out.splitlines() if EVENT_LINE.search(line))


def run_report(argv, timeout):
    """(exit status, event lines, stderr text), or None on a timeout."""
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return r.returncode, event_lines(r.stdout), r.stderr.decode("utf-8", "replace")


def run_salvage(tracekit, trace_cmd, path, intact, timeout):
    """Return (None or the reason it fails, tracekit's events, trace-cmd's or None)."""
    got = run_report([tracekit, "report", path], timeout)
    if got is None:
        return f"no exit within {timeout} s", 0, None
    rc, n, err = got
    for bad in ("runtime error", "AddressSanitizer", "LeakSanitizer", "Sanitizer"):
        if bad in err:
            return f"sanitizer report ({bad}): {err.splitlines()[:3]}", n, None
    if rc not in (0, 1):
        return f"exit status {rc} (want 0 or 1); stderr {err.splitlines()[:2]}", n, None
    name = os.path.basename(path)
    if rc == 1 and not any(name in line and "offset 0x" in line for line in err.splitlines()):
        return f"exit 1 without a warning naming the file and 'offset 0x': " \
               f"{err.splitlines()[:2]}", n, None
    if rc == 0 and n < intact:
        return f"silent loss: exit 0 with {n} of {intact} events", n, None
    tc = None
    if trace_cmd:
        # trace-cmd hangs on some copies (sizes near 2^64): it gets less time.
        got = run_report([trace_cmd, "report", "-i", path], min(timeout, 3))
        tc = got[1] if got else None
        if tc and n < min(tc, intact):
            return f"{n} events, trace-cmd prints {tc} (intact {intact}); " \
                   f"stderr {err.splitlines()[:2]}", n, tc
    return None, n, tc


def salvage(tracekit, files):
    timeout = float(os.environ.get("TK_TIMEOUT", "20"))
    keep = os.environ.get("TK_KEEP_DIR")
    trace_cmd = os.environ.get("TK_TRACE_CMD") or None
    jobs = int(os.environ.get("TK_JOBS", os.cpu_count() or 2))
    passed = failed = skipped = 0
    tk_total = tc_total = 0
    tmp = tempfile.mkdtemp(prefix="tk-salvage-")
    try:
        for src in files:
            data = open(src, "rb").read()
            lay = Layout(data)
            kind = os.path.basename(src).rsplit(".", 1)[0]
            muts = mutations(lay)
            got = run_report([tracekit, "report", src], timeout)
            intact = got[1] if got else 0

            def one(item):
                name, fn = item
                path = os.path.join(tmp, f"{kind}--{name}.dat")
                broken = fn()
                if broken == data:
                    return name, "skip", "mutation left the file unchanged", 0, None
                with open(path, "wb") as f:
                    f.write(broken)
                why, n, tc = run_salvage(tracekit, trace_cmd, path, intact, timeout)
                if why and keep:
                    os.makedirs(keep, exist_ok=True)
                    shutil.copy(path, keep)
                os.unlink(path)
                return name, "fail" if why else "pass", why, n, tc

            with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
                for name, res, why, n, tc in pool.map(one, sorted(muts.items())):
                    tk_total += n
                    tc_total += tc or 0
                    vs = f" (trace-cmd {tc})" if tc is not None else ""
                    if res == "pass":
                        passed += 1
                        print(f"ok - report salvages {kind} {name}: {n} events{vs}")
                    elif res == "skip":
                        skipped += 1
                        print(f"ok - {kind} {name} # SKIP {why}")
                    else:
                        failed += 1
                        print(f"not ok - report salvages {kind} {name}: {why}")
                    sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# salvage-totals: tracekit={tk_total} trace-cmd={tc_total}")
    print(f"# mutate-counts: passed={passed} failed={failed} skipped={skipped}")
    return 1 if failed else 0


def check(tracekit, files):
    timeout = float(os.environ.get("TK_TIMEOUT", "20"))
    keep = os.environ.get("TK_KEEP_DIR")
    jobs = int(os.environ.get("TK_JOBS", os.cpu_count() or 2))
    passed = failed = skipped = 0
    tmp = tempfile.mkdtemp(prefix="tk-mutate-")
    try:
        for src in files:
            data = open(src, "rb").read()
            lay = Layout(data)
            kind = os.path.basename(src).rsplit(".", 1)[0]
            muts = mutations(lay)

            def one(item):
                name, fn = item
                path = os.path.join(tmp, f"{kind}--{name}.dat")
                broken = fn()
                if broken == data:
                    return name, "skip", "mutation left the file unchanged"
                with open(path, "wb") as f:
                    f.write(broken)
                why = run_check(tracekit, path, timeout)
                if why and keep:
                    os.makedirs(keep, exist_ok=True)
                    shutil.copy(path, keep)
                os.unlink(path)
                return name, "fail" if why else "pass", why

            with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
                for name, res, why in pool.map(one, sorted(muts.items())):
                    if res == "pass":
                        passed += 1
                        print(f"ok - dump rejects {kind} {name}")
                    elif res == "skip":
                        skipped += 1
                        print(f"ok - {kind} {name} # SKIP {why}")
                    else:
                        failed += 1
                        print(f"not ok - dump rejects {kind} {name}: {why}")
                    sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"# mutate-counts: passed={passed} failed={failed} skipped={skipped}")
    return 1 if failed else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "list":
        for name in sorted(mutations(Layout(open(argv[2], "rb").read()))):
            print(name)
        return 0
    if len(argv) == 5 and argv[1] == "write":
        muts = mutations(Layout(open(argv[2], "rb").read()))
        if argv[3] not in muts:
            print(f"mutate.py: no mutation {argv[3]}", file=sys.stderr)
            return 2
        with open(argv[4], "wb") as f:
            f.write(muts[argv[3]]())
        return 0
    if len(argv) >= 4 and argv[1] == "check":
        return check(argv[2], argv[3:])
    if len(argv) >= 4 and argv[1] == "salvage":
        return salvage(argv[2], argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
