#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
"""Print the counter values a .pftrace holds, one "name|cpu|ts|value" line each.

usage: pftrace-counters.py PFTRACE

What trace_processor makes counters of, read from the wire format (the
walker of pftrace-check.py): the typed ftrace events cpu_idle (FtraceEvent
field 13) and cpu_frequency (11), {state 1, cpu_id 2}, as "cpuidle" and
"cpufreq" of cpu_id; and PerfSample packets (TracePacket field 66): their
timebase_count (6) and follower_counts (7), named by the
perf_sample_defaults (TracePacketDefaults 59 -> 12: timebase 1 {name 10},
followers 4 {name 4}) of their sequence, on the sample's cpu (1); and the
typed rss_stat events (313) as "rss_stat|pid|ts|size".
The trace must first pass `protoc --decode_raw` (exit 0).
"""
import importlib.util
import os
import subprocess
import sys
from collections import defaultdict

spec = importlib.util.spec_from_file_location(
    "pftrace_check", os.path.join(os.path.dirname(os.path.abspath(__file__)), "pftrace-check.py"))
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)


def sub(b):
    d = defaultdict(list)
    for f, w, v in pc.fields(b):
        d[f].append(v)
    return d


def main():
    data = open(sys.argv[1], "rb").read()
    r = subprocess.run(["protoc", "--decode_raw"], input=data, capture_output=True)
    if r.returncode != 0:
        sys.exit("protoc --decode_raw: " + r.stderr.decode(errors="replace")[:300])
    names = {}  # sequence id -> [timebase, followers...]
    out = []
    for p in pc.packets(data):
        pf = sub(p)
        seq = pf.get(10, [0])[0]
        for d in pf.get(59, []):
            for psd in sub(d).get(12, []):
                s = sub(psd)
                tb = [sub(x).get(10, [b"?"])[0].decode() for x in s.get(1, [])]
                fol = [sub(x).get(4, [b"?"])[0].decode() for x in s.get(4, [])]
                names[seq] = tb[:1] + fol
        if 66 in pf:
            s = sub(pf[66][0])
            n = names.get(seq, ["cpu-clock"])
            vals = s.get(6, []) + [x for b in s.get(7, []) for x in
                                   (pc.packed(b) if isinstance(b, bytes) else [b])]
            for k, v in enumerate(vals):
                out.append("%s|%d|%d|%d" % (n[k] if k < len(n) else "?", s.get(1, [0])[0],
                                            pf[8][0], v))
        for bundle in pf.get(1, []):
            for f, w, v in pc.fields(bundle):
                if f != 2:
                    continue
                e = sub(v)
                for num, name in ((13, "cpuidle"), (11, "cpufreq")):
                    for m in e.get(num, []):
                        m = sub(m)
                        out.append("%s|%d|%d|%d" % (name, m.get(2, [0])[0], e[1][0],
                                                    m.get(1, [0])[0]))
                # RssStatFtraceEvent {member 1, size 2, curr 3, mm_id 4}: its
                # pid (FtraceEvent's 2) in the cpu column; Perfetto makes its
                # memory counters of these itself.
                for m in e.get(313, []):
                    m = sub(m)
                    out.append("rss_stat|%d|%d|%d" % (e.get(2, [0])[0], e[1][0],
                                                      pc.s64(m.get(2, [0])[0])))
    for line in out:
        print(line)


main()
