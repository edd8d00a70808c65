#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The analyses of issue 18 that no other tool prints, as a user runs them on
# the .dat files of tests/data (nothing recorded): tracekit irq against the
# same pairing done here in Python on 'tracekit report --json' (an
# independent reading of the records); sched balance's windows and shares;
# sched latency --compare and syscalls --compare of a file with itself;
# timehist, syscalls and report -w/--profile --json; the usage errors.
set -u
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d /tmp/tk-analyze-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
dat=$TK_SOURCE_DIR/tests/data/tc34/v6.dat
sample=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat

# irq: counts and totals per vector equal a pairing of the JSON records.
"$TRACEKIT" report --json "$dat" >"$tmp/recs.json" 2>/dev/null
run irq --json "$dat"
check "irq --json on a .dat" eval 'rc_is 0 && err_empty'
python3 - "$tmp/recs.json" "$tmp/out" >"$tmp/py.txt" <<'PY'
import json, sys
cur, soft, raised, res = {}, {}, {}, {}
def add(kind, vec, d):
    c, t = res.get((kind, vec), (0, 0))
    res[(kind, vec)] = (c + 1, t + d)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("system") != "irq":
        continue
    e, cpu, ts, f = r["event"], r["cpu"], r["ts"], r["fields"]
    if e == "irq_handler_entry":
        cur[cpu] = (f["irq"], ts)
    elif e == "irq_handler_exit":
        if cpu in cur and cur[cpu][0] == f["irq"] and ts >= cur[cpu][1]:
            add("hardirq", f["irq"], ts - cur.pop(cpu)[1])
    elif e == "softirq_raise":
        raised.setdefault((cpu, f["vec"]), ts)
    elif e == "softirq_entry":
        soft[cpu] = (f["vec"], ts)
        t0 = raised.pop((cpu, f["vec"]), None)
        if t0 is not None and ts >= t0:
            add("softirq_raise", f["vec"], ts - t0)
    elif e == "softirq_exit":
        if cpu in soft and soft[cpu][0] == f["vec"] and ts >= soft[cpu][1]:
            add("softirq", f["vec"], ts - soft.pop(cpu)[1])
ours = {(v["kind"], v["vector"]): (v["count"], v["total_ns"]) for v in json.load(open(sys.argv[2]))["vectors"]}
print("same" if ours == res and res else "differ: %s vs %s" % (sorted(ours.items())[:4], sorted(res.items())[:4]))
PY
check "irq counts and totals = the records paired independently" grep -q '^same' "$tmp/py.txt"
run irq --percentiles --hist "$dat"
check "irq --percentiles --hist" eval 'rc_is 0 && out_has "p99.9 us" && out_has "Softirq runs" && out_has " ns "'
run irq "$TK_SOURCE_DIR/tests/data/public/funcgraph-made.dat"
check "irq on a file without irq events is an error" eval 'rc_is 1 && err_has "no irq"'

# sched balance: one window per interval of the span, shares within 0..100.
run sched balance --interval 10 --json "$dat"
check "sched balance --json" eval 'rc_is 0 && err_empty'
python3 - "$tmp/out" >"$tmp/py.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
w = d["windows"]
ok = len(w) > 1 and all(0 <= c["busy_pct"] <= 100.05 and c["rq"] >= 0 for x in w for c in x["cpus"])
ok = ok and all(abs(x["imbalance"] - (max(c["rq"] for c in x["cpus"]) - min(c["rq"] for c in x["cpus"]))) < 0.002 for x in w)
ok = ok and abs(d["mean_imbalance"] - sum(x["imbalance"] for x in w) / len(w)) < 0.002
print("ok" if ok else "bad")
PY
check "sched balance windows, shares and imbalance agree" grep -q '^ok' "$tmp/py.txt"
run sched balance "$dat"
check "sched balance text" eval 'rc_is 0 && out_has "^Run-queue balance" && out_has "mean imbalance"'
run sched balance --interval 0 "$dat"
check "sched balance --interval 0 is a usage error" rc_is 2

# --compare of a file with itself: nothing changes.
run sched latency --compare "$sample" "$sample"
check "sched latency --compare A A: every change is +0.0%" \
	eval 'rc_is 0 && out_has "^  Task" && [ "$(awk -F"|" "NF > 5 && NR > 6 { print \$NF }" "$tmp/out" | sort -u | tr -d " ")" = "+0.0%" ]'
run sched latency --compare --json -p "$sample" "$sample"
check "sched latency --compare --json" eval 'rc_is 0 && python3 -m json.tool "$tmp/out" >/dev/null'
run sched latency --compare "$sample"
check "sched latency --compare with one file is a usage error" rc_is 2

# The others' --json on the sample .dat.
for a in "sched timehist --json -S" "syscalls --json" "report --profile --json"; do
	run $a "$sample"
	check "$a parses" eval 'rc_is 0 && python3 -m json.tool "$tmp/out" >/dev/null'
done
run syscalls --compare "$sample" "$sample"
check "syscalls --compare A A" eval 'rc_is 0 && out_has "^   syscall " && ! grep -q "new\|gone" "$tmp/out"'
run report -w "$sample"
check "report -w prints latencies and the summary" \
	eval 'rc_is 0 && out_has " Latency: " && out_has "^Average wakeup latency"'
run report -w --json --percentiles "$sample"
check "report -w --json is the summary as JSON" \
	eval 'rc_is 0 && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"all\"][\"count\"] > 0 and \"p99\" in d[\"percentiles_ns\"]" "$tmp/out"'
run sched timehist -s -w "$sample"
check "sched timehist -s -w is a usage error, as in perf" rc_is 2

# Two input files where an analysis reads one: a usage error naming it, for
# every analysis command (one helper parses the operand for all of them).
for cmd in "irq" "syscalls" "profile" "flamegraph" "sched latency" "sched timehist" \
	"sched balance"; do
	run $cmd "$sample" "$sample"
	check "$cmd with two input files is a usage error" \
		eval 'rc_is 2 && err_has "one input file only" && [ ! -s "$tmp/out" ]'
	run $cmd -i "$sample" "$sample"
	check "$cmd -i A B is a usage error" eval 'rc_is 2 && err_has "one input file only"'
done

finish
