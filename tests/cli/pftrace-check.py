#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Check a .pftrace against `tracekit report` of the file it was made from.

usage: pftrace-check.py PFTRACE REPORT_TEXT dat|perf|samples|group

The trace is first opened up: compressed_packets (deflate) are inflated
into a plain Trace, which `protoc --decode_raw` must read (exit 0, one
"1 {" per packet), so the bytes are well-formed protobuf whatever this
script thinks of them. Then the wire format is walked here (protoc's text
cannot tell packed arrays from nested messages) and compared with the
report:
  .dat       per CPU: the number of events, their names (typed, generic,
             or self-described through the bundle's descriptors), their times (in
             the report's microseconds) and pids (common_pid; for the
             compact sched_switch and sched_waking, which carry no
             common_pid, the next_pid and the woken pid instead); and for
             those two the rest of what CompactSched carries: next_comm
             (through the intern table), next_prio and prev_state
             (the report's letters: each number must always print as
             the same string, as the kernel's table is not known here;
             0 and the preempted bit may both print "R"), comm, prio and
             target_cpu
  perf.data  tracepoint samples as above per CPU; other samples: their
             number, times, tids, event names (the timebase of their
             packet sequence's perf_sample_defaults) and CPUs (where the
             report prints them), and the frames of each callstack
             against the callchain lines perf script prints (a frame
             with inlined functions prints a "(inlined)" line for each
             at its address, then its own line unless its symbol is not
             among them: lines of one address up to a frame's own line
             count once)
  samples    no callstacks: REPORT_TEXT is `tracekit report -t --fields
             pid,tid,time,event` (cpu too where the samples carry it):
             every sample's event name, CPU (0 in the trace where the
             report has none: PerfSample.cpu is always there), pid, tid
             and time in nanoseconds, in time order, compared exactly
  group      as samples, for group reads (PERF_FORMAT_GROUP), where the
             report prints one line per group member of one record: a
             record's lines (one pid/tid, CPU and time, each member's
             name once, the sampled event's first) are one sample
Prints one line per difference and exits 1 when there is one.
"""
import re
import subprocess
import sys
import tempfile
import zlib
from collections import Counter, defaultdict

TYPED = {3: "print", 4: "sched_switch", 11: "cpu_frequency", 13: "cpu_idle", 17: "sched_wakeup",
         20: "sched_waking", 24: "softirq_entry", 25: "softirq_exit", 26: "softirq_raise",
         36: "irq_handler_entry", 37: "irq_handler_exit", 114: "sched_wakeup_new",
         235: "task_newtask", 236: "task_rename", 237: "sched_process_exec",
         238: "sched_process_exit", 239: "sched_process_fork", 240: "sched_process_free",
         242: "sched_process_wait", 313: "rss_stat", 329: "sys_enter", 330: "sys_exit"}


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of a message; value is an int or bytes."""
    i, n = 0, len(b)
    while i < n:
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 2:
            ln, i = varint(b, i)
            v = b[i:i + ln]
            i += ln
            if i > n:
                raise ValueError("field %d runs past its message" % f)
        elif w == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif w == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, w, v


def packed(b):
    out, i = [], 0
    while i < len(b):
        v, i = varint(b, i)
        out.append(v)
    return out


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def packets(data, zstd_frames=None):
    """The TracePackets, compressed ones opened up (the zstd ones by the
    zstd command, all frames in one run: the checks do not depend on the
    packets' order)."""
    top = zstd_frames is None
    if top:
        zstd_frames = []
    for f, w, v in fields(data):
        if f != 1 or w != 2:
            raise ValueError("top-level field %d is not a packet" % f)
        inner = dict((ff, vv) for ff, ww, vv in fields(v) if ff in (50, 133))
        if 133 in inner:
            zstd_frames.append(inner[133])
        elif 50 in inner:
            yield from packets(zlib.decompress(inner[50]), zstd_frames)
        else:
            yield v
    if top and zstd_frames:
        r = subprocess.run(["zstd", "-dc"], input=b"".join(zstd_frames), capture_output=True,
                           check=True)
        yield from packets(r.stdout, [])


def us(ns):
    return (ns + 500) // 1000


def main():
    path, report, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    pkts = list(packets(open(path, "rb").read()))
    plain = b"".join(b"\x0a" + bytes(bytearray(enc_varint(len(p)))) + p for p in pkts)
    with tempfile.NamedTemporaryFile() as t:
        t.write(plain)
        t.flush()
        r = subprocess.run(["protoc", "--decode_raw"], stdin=open(t.name, "rb"),
                           capture_output=True)
    errors = []
    if r.returncode != 0:
        errors.append("protoc --decode_raw: " + r.stderr.decode(errors="replace")[:300])
    elif r.stdout.decode(errors="replace").count("\n1 {") + \
            r.stdout.decode(errors="replace").startswith("1 {") != len(pkts):
        errors.append("protoc --decode_raw shows another packet count than %d" % len(pkts))

    # What the trace holds.
    ev = defaultdict(list)  # cpu -> [(us, pid, name)]
    cx = defaultdict(list)  # cpu -> [(us, pid, name, comm, prio, prev_state or target_cpu)]
    samples = []            # (us, tid, frames)
    full = []               # (ns, pid, tid, cpu, event name)
    frames_of = {}          # callstack iid -> number of frames
    # Each perf sequence's timebase, named by its TracePacketDefaults
    # (59) perf_sample_defaults (12) timebase (1) name (10).
    timebase = {}
    for p in pkts:
        for f, w, v in fields(p):
            if f == 59:
                seq = dict((a, b) for a, _, b in fields(p) if a == 10).get(10, 0)
                for ff, ww, psd in fields(v):
                    if ff != 12:
                        continue
                    for a, _, tb in fields(psd):
                        if a == 1:
                            name = dict((x, y) for x, _, y in fields(tb)).get(10, b"?")
                            timebase[seq] = name.decode(errors="replace")
    for p in pkts:
        pf = defaultdict(list)
        for f, w, v in fields(p):
            pf[f].append(v)
        for idata in pf.get(12, []):
            for f, w, v in fields(idata):
                if f == 7:
                    d = defaultdict(list)
                    for ff, ww, vv in fields(v):
                        d[ff].append(vv)
                    frames_of[d[1][0]] = len(d.get(2, []))
        if 66 in pf:
            d = dict((ff, vv) for ff, ww, vv in fields(pf[66][0]))
            samples.append((us(pf[8][0]), d.get(3, 0), frames_of.get(d.get(4, 0), -1),
                            timebase.get(pf.get(10, [0])[0], "<no timebase>"), d.get(1, 0)))
            full.append((pf[8][0], d.get(2, 0), d.get(3, 0), d.get(1, 0),
                         timebase.get(pf.get(10, [0])[0], "<no timebase>")))
        for bundle in pf.get(1, []):
            cpu, cs = 0, None
            evs = []
            # Self-described events (FtraceEvent fields 65536 and up) are
            # named by the bundle's GenericEventDescriptors (field 11).
            described = {}
            for f, w, v in fields(bundle):
                if f == 11:
                    d = dict((a, b) for a, _, b in fields(v))
                    described[d[1]] = dict((a, b) for a, _, b in fields(d[2]))[1].decode()
            for f, w, v in fields(bundle):
                if f == 1:
                    cpu = v
                elif f == 2:
                    e = {}
                    for ff, ww, vv in fields(v):
                        e[ff] = vv
                    name = None
                    for num in e:
                        if num in TYPED:
                            name = TYPED[num]
                        elif num == 327:
                            name = dict((a, b) for a, _, b in fields(e[327]))[1].decode()
                        elif num >= 65536:
                            name = described.get(num, "undescribed field %d" % num)
                    evs.append((us(e[1]), e.get(2, 0), name))
                elif f == 4:
                    cs = defaultdict(list)
                    for ff, ww, vv in fields(v):
                        cs[ff].append(vv)
            if cs:
                interned = [b.decode(errors="replace") for b in cs.get(5, [])]

                def col(f):
                    return [x for b in cs.get(f, []) for x in packed(b)]
                # timestamp, pid, prio, comm index, and prev_state / target_cpu
                for tsf, pidf, priof, commf, lastf, name in ((1, 3, 4, 6, 2, "sched_switch"),
                                                             (7, 8, 10, 11, 9, "sched_waking")):
                    ts = 0
                    pids, prios, comms, lasts = col(pidf), col(priof), col(commf), col(lastf)
                    deltas = col(tsf)
                    for k, d in enumerate(deltas):
                        ts = (ts + d) & ((1 << 64) - 1)
                        evs.append((us(ts), s64(pids[k]), name))
                        try:
                            comm = interned[comms[k]]
                            extra = (comm, s64(prios[k]), s64(lasts[k]))
                        except IndexError:
                            extra = ("<column %d of %d entries>" % (k, len(deltas)), 0, 0)
                        cx[cpu].append((us(ts), s64(pids[k]), name) + extra)
            ev[cpu].extend(evs)

    # What the report says.
    want = defaultdict(list)
    want_cx = defaultdict(list)
    want_samples = []
    line_re = re.compile(r"^(.*?)-?\s*(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d{6}):\s+(\S+:)?(\S+?):\s?(.*)$")
    sample_re = re.compile(r"^\s*(.*?)\s+(\d+)\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d{6}):\s+\d+\s+(\S+):(.*)$")
    fields_re = re.compile(r"^\s*(-?\d+)/(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d{9}):\s+(\S+):\s*$")
    want_full = []
    cur = None
    frame_addr = None  # the address of the frame being read, None after its own line
    for line in open(report, errors="replace"):
        line = line.rstrip("\n")
        if kind in ("samples", "group"):
            m = fields_re.match(line)
            if not m:
                errors.append("report line not of --fields pid,tid,[cpu,]time,event: %r" % line)
                break
            t = int(m[4]) * 1000000000 + int(m[5])
            row = [t, int(m[1]), int(m[2]), int(m[3] or 0), m[6], {m[6]}]
            prev = want_full[-1] if want_full else None
            if kind == "group" and prev and prev[:4] == row[:4] and m[6] not in prev[5]:
                prev[5].add(m[6])
            else:
                want_full.append(row)
            continue
        if line.startswith("\t"):
            if cur is not None:
                addr = line.split()[0] if line.split() else ""
                if addr != frame_addr:
                    cur[2] += 1
                frame_addr = None if not line.endswith(" (inlined)") else addr
            continue
        cur = None
        frame_addr = None
        m = line_re.match(line)
        if m:
            cpu, t, pid, name, rest = int(m[3]), int(m[4]) * 1000000 + int(m[5]), int(m[2]), m[7], m[8]
            rest = rest.strip()
            # perf names a tracepoint it has no name for "unknown:ID" (the
            # ftrace events of a converted .dat): its name is not compared.
            if m[6] == "unknown:":
                name = "*"
            # trace-cmd's handlers print "prev:pid [prio] S ==> next:pid [prio]"
            # and "comm:pid [prio] CPU:nnn"; perf script the fields.
            if name == "sched_switch":
                m = re.search(r"next_pid=(\d+)", rest) or re.search(r"==> .*:(\d+) \[", rest)
                pid = int(m[1])
                # perf's fields, or trace-cmd's "prev:pid [prio] S ==> next:pid [prio]"
                m = re.search(r"prev_state=(\S+) ==> next_comm=(.*) next_pid=-?\d+ "
                              r"next_prio=(-?\d+)$", rest)
                if m:
                    want_cx[cpu].append((t, pid, name, m[2], int(m[3]), m[1]))
                else:
                    m = re.search(r"\] (\S+) ==> (.*):-?\d+ \[(-?\d+)\]$", rest)
                    if m:
                        want_cx[cpu].append((t, pid, name, m[2], int(m[3]), m[1]))
                    else:
                        want_cx[cpu].append((t, pid, name, "<unread: %s>" % rest, 0, ""))
            elif name == "sched_waking":
                m = re.search(r"\bpid=(\d+)", rest) or re.search(r":(\d+) \[-?\d+\]", rest)
                pid = int(m[1])
                m = re.search(r"^comm=(.*) pid=-?\d+ prio=(-?\d+) target_cpu=(\d+)", rest) or \
                    re.search(r"^(.*):-?\d+ \[(-?\d+)\] CPU:(\d+)", rest)
                if m:
                    want_cx[cpu].append((t, pid, name, m[1], int(m[2]), int(m[3])))
                else:
                    want_cx[cpu].append((t, pid, name, "<unread: %s>" % rest, 0, 0))
            want[cpu].append((t, pid, name))
            continue
        m = sample_re.match(line)
        if m and kind == "perf":
            # The ip on the sample's line, or the callchain on the lines below.
            cur = [int(m[4]) * 1000000 + int(m[5]), int(m[2]), 1 if m[7].strip() else 0, m[6],
                   None if m[3] is None else int(m[3])]
            want_samples.append(cur)
            if m[7].strip():
                cur = None

    # A compact event's pid column holds next_pid / the woken pid; the
    # names of typed/generic events are compared as they are. trace-cmd
    # prints a function-graph entry and its return as one line: those two
    # events are left out on both sides.
    for d in (ev, want):
        for cpu in d:
            d[cpu] = [x for x in d[cpu] if x[2] not in ("funcgraph_entry", "funcgraph_exit")]
    for cpu in sorted(set(ev) | set(want)):
        got, exp = ev.get(cpu, []), want.get(cpu, [])
        # Events whose names the report never shows on this CPU are the
        # ones it calls "unknown:ID" when it does so.
        names = set(e[2] for e in exp)
        if "*" in names:
            got = [(g[0], g[1], "*") if g[2] not in names else g for g in got]
        got = sorted(got)
        exp = sorted(exp)
        if len(got) != len(exp):
            errors.append("CPU %d: %d events, the report has %d" % (cpu, len(got), len(exp)))
            continue
        # perf script truncates the time where trace-cmd rounds: allow 1 us.
        bad = [(g, e) for g, e in zip(got, exp)
               if abs(g[0] - e[0]) > 1 or g[1] != e[1] or g[2] != e[2]]
        if bad and Counter((g[1], g[2]) for g in got) != Counter((e[1], e[2]) for e in exp):
            errors.append("CPU %d: events differ, first %s != %s" % (cpu, bad[0][0], bad[0][1]))
        elif bad and any(abs(g - e) > 1 for g, e in zip(sorted(x[0] for x in got),
                                                        sorted(x[0] for x in exp))):
            errors.append("CPU %d: times differ" % cpu)
    # CompactSched's other columns against the report's sched_switch and
    # sched_waking lines: the same multiset of (time, pid, name, comm, prio,
    # target_cpu), and prev_state numbers that each print as one string.
    state_of = defaultdict(set)
    for cpu in sorted(set(cx) | set(want_cx)):
        got = sorted(cx.get(cpu, []), key=lambda x: x[:5] + (str(x[5]),))
        exp = sorted(want_cx.get(cpu, []), key=lambda x: x[:5] + (str(x[5]),))
        if len(got) != len(exp):
            errors.append("CPU %d: %d compact sched events, the report has %d" %
                          (cpu, len(got), len(exp)))
            continue
        # Two switches to one task within a microsecond sort in either
        # order: their prev_states pair up only where the rest is unique.
        once = Counter(g[:5] for g in got)
        for g, e in zip(got, exp):
            if abs(g[0] - e[0]) > 1 or g[1:5] != e[1:5] or \
                    (g[2] == "sched_waking" and g[5] != e[5]):
                errors.append("CPU %d: compact %s != the report's %s" % (cpu, g, e))
                break
            if g[2] == "sched_switch" and once[g[:5]] == 1:
                state_of[g[5]].add(e[5])
    for n, letters in sorted(state_of.items()):
        if len(letters) != 1:
            errors.append("prev_state %d is printed as %s" % (n, sorted(letters)))
    if kind == "perf":
        got = sorted(samples)
        exp = sorted((tuple(x) for x in want_samples), key=lambda x: x[:4] + (x[4] or -1,))
        if len(got) != len(exp):
            errors.append("%d samples, the report has %d" % (len(got), len(exp)))
        else:
            for g, e in zip(got, exp):
                if abs(g[0] - e[0]) > 1 or g[1] != e[1]:
                    errors.append("sample %s != %s" % (g, e))
                    break
            # Names and CPUs (where the report prints them): the same
            # multiset of (tid, name, cpu).
            has_cpu = any(e[4] is not None for e in exp)
            gn = Counter((g[1], g[3], g[4] if has_cpu else None) for g in got)
            en = Counter((e[1], e[3], e[4] if has_cpu else None) for e in exp)
            if gn != en:
                errors.append("sample events or CPUs differ: %s, the report's %s" %
                              (sorted(gn - en)[:3], sorted(en - gn)[:3]))
            # Callstacks: perf script prints one line per callchain entry
            # (none when it holds only context marks), or the ip alone on
            # the sample's line.
            gf = Counter(g[2] for g in got)
            ef = Counter(e[2] for e in exp)
            if gf != ef:
                errors.append("frames per sample %s, the report's %s" % (dict(gf), dict(ef)))
    if kind in ("samples", "group"):
        got = sorted(full)
        exp = sorted(tuple(x[:5]) for x in want_full)
        if not exp:
            errors.append("the report has no samples")
        if len(got) != len(exp):
            errors.append("%d samples, the report has %d" % (len(got), len(exp)))
        else:
            for g, e in zip(got, exp):
                if g != e:
                    errors.append("sample (ns, pid, tid, cpu, event) %s != the report's %s" %
                                  (g, e))
                    break
    for e in errors:
        print("pftrace-check: %s: %s" % (path, e))
    n = sum(len(v) for v in ev.values())
    ncx = sum(len(v) for v in cx.values())
    print("pftrace-check: %s: %d events on %d CPUs (%d compact sched, %d prev_states), "
          "%d samples, %d packets%s" %
          (path, n, len(ev), ncx, len(state_of), len(samples), len(pkts),
           "" if not errors else ": FAILED"))
    return 1 if errors else 0


def enc_varint(v):
    out = []
    while v >= 0x80:
        out.append(v & 0x7f | 0x80)
        v >>= 7
    out.append(v)
    return out


if __name__ == "__main__":
    sys.exit(main())
