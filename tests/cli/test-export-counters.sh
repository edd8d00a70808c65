#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# The counters of the exports (issue 19): the counter, counter_track and
# cpu_counter_track tables (Parquet through DuckDB, SQLite through sqlite3)
# and the counts of the .pftrace (protoc --decode_raw, then
# tests/cli/pftrace-counters.py), for real recordings
# (tests/data/counters/README.md) and golden perf.data files, against
#   - tracekit report: cpu_idle / cpu_frequency events (--json: ts,
#     cpu_id, state); perf.data samples (-t --fields cpu,event,time,period):
#     a counter track's value is the running sum of the periods printed
#     for its event and CPU (report prints a READ value's change since the
#     previous read of its id as the period, as perf script does, and on a
#     per-CPU recording an id is one CPU's counter);
#   - perf script -D, where perf is installed: the raw READ values of a
#     recording without CPUs (perf record -s), each id's value as read.
# The SQL shown in docs/fleet.md's counter section runs here as written.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/duckdb-lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$TK_SOURCE_DIR/tests/data
doc=$TK_SOURCE_DIR/docs/fleet.md
build=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"

# The inputs, each under the name that becomes its trace id.
mkdir "$tmp/in"
ln -s "$data/counters/idle.dat" "$tmp/in/idle.dat"
ln -s "$data/counters/rss.dat" "$tmp/in/rss.dat"
ln -s "$data/counters/group-s.data" "$tmp/in/group-s.data"
ln -s "$data/counters/group-a.data" "$tmp/in/group-a.data"
ln -s "$data/perf/sample-cpu.data" "$tmp/in/sample-cpu.data"
ln -s "$data/perf/plain.data" "$tmp/in/plain.data"
ln -s "$data/perf/group-read.data" "$tmp/in/group-read.data"
ln -s "$data/counters/ungrouped.data" "$tmp/in/ungrouped.data"

run convert -q --to sqlite "$tmp"/in/* -o "$tmp/c.db"
check "sqlite: the counter fixtures convert" rc_is 0
run convert -q --to parquet "$tmp"/in/* -o "$tmp/counters"
check "parquet: the counter fixtures convert" rc_is 0
check "parquet: counter and its three track tables' files for each trace" \
	test "$(find "$tmp/counters/counter" "$tmp/counters/counter_track" \
		"$tmp/counters/cpu_counter_track" "$tmp/counters/thread_counter_track" \
		-name '*.parquet' | wc -l)" -eq 32

# ------------------------------------------------------ what report says
# expect-counter-values: trace|name|cpu|ts|value per track, values that
# repeat the track's previous one left out (report prints no READ value
# that did not change); cpu -1 for an event sampled without CPUs.
python3 - "$TRACEKIT" "$tmp" <<'EOF' || fail "expected results" "python failed"
import collections, json, subprocess, sys
tk, tmp = sys.argv[1], sys.argv[2]

def report(*args):
    return subprocess.run([tk, "report", "-q", *args], capture_output=True, text=True,
                          check=True).stdout

rows = []
idle = collections.Counter()
for line in report("--json", tmp + "/in/idle.dat").splitlines():
    r = json.loads(line)
    if r["event"] in ("cpu_idle", "cpu_frequency"):
        name = "cpuidle" if r["event"] == "cpu_idle" else "cpufreq"
        rows.append(("idle", name, r["fields"]["cpu_id"], r["ts"], r["fields"]["state"]))
        if name == "cpuidle" and r["fields"]["state"] != 4294967295:
            idle[("idle", r["fields"]["cpu_id"])] += 1
# kmem:rss_stat: the size on the track of the thread whose mm it is (the
# event's own when curr, else the last one seen current with that mm_id).
rss = {}
mm = {}
for line in report("--json", tmp + "/in/rss.dat").splitlines():
    r = json.loads(line)
    if r["event"] != "rss_stat":
        continue
    f = r["fields"]
    if f["curr"]:
        mm[f["mm_id"]] = r["pid"]
    if f["mm_id"] not in mm or f["size"] < 0:
        continue
    name = ["mem.rss.file", "mem.rss.anon", "mem.swap", "mem.rss.shmem",
            "mem.unreclaimable"][f["member"]] if 0 <= f["member"] <= 4 else "mem.unknown"
    k = (mm[f["mm_id"]], name)
    n, top = rss.get(k, (0, 0))
    rss[k] = (n + 1, max(top, f["size"]))
with open(tmp + "/expect-rss-per-thread", "w") as f:
    for (tid, name), (n, top) in sorted(rss.items()):
        f.write("rss|%d|%s|%d|%d\n" % (tid, name, top, n))
# Files whose samples carry their CPU; group-read.data has none, its
# values go per event (its ids are one per CPU: see group-s below).
for trace, has_cpu in (("group-a", True), ("sample-cpu", True), ("plain", False),
                       ("ungrouped", True)):
    fields = "cpu,event,time,period" if has_cpu else "event,time,period"
    sums = collections.Counter()
    for line in report("-t", "--fields", fields, tmp + "/in/" + trace + ".data").splitlines():
        p = line.replace("[", " ").replace("]", " ").split()
        if not p:
            continue
        cpu = int(p.pop(0)) if has_cpu else -1
        t, period, name = p[0].rstrip(":"), int(p[1]), p[2].rstrip(":")
        ts = int(t.replace(".", ""))
        sums[(name, cpu)] += period
        rows.append((trace, name, cpu, ts, sums[(name, cpu)]))
last = {}
with open(tmp + "/expect-counter-values", "w") as f:
    for r in sorted(rows, key=lambda r: (r[0], r[1], r[2], r[3])):
        k = r[:3]
        if last.get(k) == r[4]:
            continue
        last[k] = r[4]
        f.write("%s|%s|%d|%d|%d\n" % r)
with open(tmp + "/expect-idle-entries-per-cpu", "w") as f:
    for (trace, cpu), n in sorted(idle.items()):
        f.write("%s|%d|%d\n" % (trace, cpu, n))
EOF
check "expected counter values are not empty" test -s "$tmp/expect-counter-values"
check "  and hold cpu_idle rows of idle.dat" grep -q "^idle|cpuidle|" "$tmp/expect-counter-values"
check "  and READ values of group-a.data" grep -q "^group-a|page-faults|1|" \
	"$tmp/expect-counter-values"

# The same rows from a query's output (trace|name|cpu|ts|value, ordered),
# unchanged values left out as above; only the traces report was asked for.
dedupe() {
	awk -F'|' '$1 == "idle" || $1 == "group-a" || $1 == "sample-cpu" || $1 == "plain" ||
		$1 == "ungrouped" {
		k = $1 "|" $2 "|" $3; if (k in last && last[k] == $5) next; last[k] = $5; print }'
}

# ------------------------------------------------- the documented queries
doc_query() {
	awk -v want="<!-- $1: $2 -->" '
		$0 == want { found = 1; next }
		found && /^```sql/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' "$doc"
}
queries="counter-values idle-entries-per-cpu rss-per-thread"
for q in $queries; do
	for engine in duckdb sqlite; do
		doc_query $engine $q >"$tmp/$engine-$q.sql"
		check "docs/fleet.md shows the $engine query $q" test -s "$tmp/$engine-$q.sql"
	done
done
filter() { if [ "$1" = counter-values ]; then dedupe; else cat; fi; }

for q in $queries; do
	sqlite3 "$tmp/c.db" <"$tmp/sqlite-$q.sql" 2>"$tmp/err" | filter $q >"$tmp/sqlite-$q.out"
	if cmp -s "$tmp/expect-$q" "$tmp/sqlite-$q.out"; then
		pass "sqlite: $q equals tracekit report's"
	else
		fail "sqlite: $q equals tracekit report's" \
			"$(diff "$tmp/expect-$q" "$tmp/sqlite-$q.out" | head -10) $(head -c 300 "$tmp/err")"
	fi
done

# Every counter row has its track, every CPU track its counter_track row.
check "sqlite: every counter's track_id names a counter_track" test "$(sqlite3 "$tmp/c.db" "
	SELECT count(*) FROM counter c LEFT JOIN counter_track t
	ON t.trace_id = c.trace_id AND t.id = c.track_id WHERE t.id IS NULL")" = 0
check "sqlite: cpu_counter_track is the counter_track rows with a CPU" test "$(sqlite3 "$tmp/c.db" "
	SELECT count(*) FROM cpu_counter_track k LEFT JOIN counter_track t
	ON t.trace_id = k.trace_id AND t.id = k.id AND t.name = k.name AND t.type = k.type
	WHERE t.id IS NULL")" = 0
check "sqlite: Perfetto's track types" test "$(sqlite3 "$tmp/c.db" "
	SELECT group_concat(type, ' ') FROM (SELECT DISTINCT type FROM counter_track ORDER BY type)")" \
	= "cpu_idle perf_cpu_counter perf_global_counter process_memory_thread_fallback"
check "sqlite: thread_counter_track is the counter_track rows of a thread" \
	test "$(sqlite3 "$tmp/c.db" "SELECT count(*) FROM thread_counter_track k
	LEFT JOIN counter_track t ON t.trace_id = k.trace_id AND t.id = k.id AND t.name = k.name
	LEFT JOIN thread th ON th.trace_id = k.trace_id AND th.utid = k.utid
	WHERE t.id IS NULL OR th.utid IS NULL")" = 0
check "sqlite: counter.value is a REAL column" test "$(sqlite3 "$tmp/c.db" "
	SELECT DISTINCT typeof(value) FROM counter")" = real

# perf record -s: each id's READ value as perf script -D prints it.
if command -v perf >/dev/null; then
	perf script -D -i "$tmp/in/group-s.data" 2>/dev/null >"$tmp/raw"
	"$TRACEKIT" dump "$tmp/in/group-s.data" >"$tmp/dump" 2>&1
	python3 - "$tmp" <<'EOF' >"$tmp/expect-group-s"
import re, sys
tmp = sys.argv[1]
name_of = {}
for line in open(tmp + "/dump"):
    m = re.search(r'name="([^"]*)" ids=([0-9,]+)', line)
    if m:
        for i in m.group(2).split(","):
            name_of[int(i)] = m.group(1)
rows, ts = [], None
for line in open(tmp + "/raw"):
    m = re.match(r"(\d+) 0x[0-9a-f]+ \[0x[0-9a-f]+\]: PERF_RECORD_SAMPLE", line)
    if m:
        ts = int(m.group(1))
    m = re.match(r"\.+ id ([0-9a-f]+), value ([0-9a-f]+)", line)
    if m and ts is not None:
        rows.append((name_of[int(m.group(1), 16)], ts, int(m.group(2), 16)))
for r in sorted(rows):
    print("%s|%d|%d" % r)
EOF
	sqlite3 "$tmp/c.db" "SELECT t.name, c.ts, CAST(c.value AS BIGINT) FROM counter c
		JOIN counter_track t ON t.trace_id = c.trace_id AND t.id = c.track_id
		WHERE c.trace_id = 'group-s'" | sort >"$tmp/group-s.out"
	check "perf record -s: the READ values equal perf script -D's ($(wc -l <"$tmp/expect-group-s") values)" \
		eval '[ -s "$tmp/expect-group-s" ] && cmp -s "$tmp/expect-group-s" "$tmp/group-s.out"'
else
	skip "perf record -s READ values against perf script -D" "perf is not installed"
fi

# ---------------------------------------------------------------- DuckDB
if duckdb_setup "$build"; then
	# The page's queries read "fleet/...": the directory, by that name.
	mv "$tmp/counters" "$tmp/fleet"
	for q in $queries; do
		(cd "$tmp" && node duck.mjs "duckdb-$q.sql") 2>"$tmp/err" | filter $q >"$tmp/duckdb-$q.out"
		if cmp -s "$tmp/expect-$q" "$tmp/duckdb-$q.out"; then
			pass "duckdb: $q equals tracekit report's"
		else
			fail "duckdb: $q equals tracekit report's" \
				"$(diff "$tmp/expect-$q" "$tmp/duckdb-$q.out" | head -10) $(head -c 300 "$tmp/err")"
		fi
	done
	echo "SELECT DISTINCT typeof(value) FROM read_parquet('fleet/counter/*.parquet');" \
		>"$tmp/type.sql"
	check "parquet: counter.value is a DOUBLE column" \
		test "$(cd "$tmp" && node duck.mjs type.sql 2>&1)" = DOUBLE
else
	skip "duckdb" "@duckdb/node-api is not available (see the SKIP line above)"
fi

# -------------------------------------------------------------- .pftrace
# The counts a .pftrace carries equal the counter table's rows: cpu_idle
# as typed ftrace events, the timebase's and followers' counts of each
# PerfSample. A recording without CPUs has its samples on CPU 0 there
# (PerfSample.cpu), on one track per event in the tables: the CPU is left
# out of that comparison.
# rss_stat goes as its typed message (RssStatFtraceEvent, FtraceEvent field
# 313), of which Perfetto makes its memory counters: every event as report
# prints it (pftrace-check.py), each one typed (pftrace-counters.py).
run convert -q --compression none "$tmp/in/rss.dat" -o "$tmp/rss.pftrace"
"$TRACEKIT" report "$tmp/in/rss.dat" >"$tmp/rss.txt" 2>&1
python3 "$TK_SOURCE_DIR/tests/cli/pftrace-check.py" "$tmp/rss.pftrace" "$tmp/rss.txt" dat \
	>"$tmp/check" 2>&1
prc=$?
check "pftrace: rss.dat's events are report's ($(tail -1 "$tmp/check" | cut -c1-70))" \
	eval '[ $prc -eq 0 ]'
python3 "$TK_SOURCE_DIR/tests/cli/pftrace-counters.py" "$tmp/rss.pftrace" >"$tmp/rss.pf"
check "  each rss_stat typed (FtraceEvent field 313)" test \
	"$(grep -c '^rss_stat|' "$tmp/rss.pf")" = "$(grep -c ' rss_stat: ' "$tmp/rss.txt")"

for t in idle group-s group-a sample-cpu plain group-read ungrouped; do
	in=$(ls "$tmp"/in/$t.*)
	run convert -q --compression none "$in" -o "$tmp/$t.pftrace"
	check "pftrace: $t converts" rc_is 0
	python3 "$TK_SOURCE_DIR/tests/cli/pftrace-counters.py" "$tmp/$t.pftrace" \
		2>"$tmp/err" | grep -v '^rss_stat|' >"$tmp/$t.pf"
	prc=${PIPESTATUS[0]}
	check "pftrace: $t decodes (protoc --decode_raw)" eval '[ $prc -eq 0 ]'
	sqlite3 "$tmp/c.db" "SELECT t.name, coalesce(k.cpu, -1), c.ts, CAST(c.value AS BIGINT)
		FROM counter c JOIN counter_track t ON t.trace_id = c.trace_id AND t.id = c.track_id
		LEFT JOIN cpu_counter_track k ON k.trace_id = c.trace_id AND k.id = c.track_id
		WHERE c.trace_id = '$t'" >"$tmp/$t.tab"
	if grep -q '|-1|' "$tmp/$t.tab"; then
		cut -d'|' -f1,3,4 "$tmp/$t.tab" | sort >"$tmp/$t.a"
		cut -d'|' -f1,3,4 "$tmp/$t.pf" | sort >"$tmp/$t.b"
	else
		sort "$tmp/$t.tab" >"$tmp/$t.a"
		sort "$tmp/$t.pf" >"$tmp/$t.b"
	fi
	check "pftrace: $t holds the counter table's $(wc -l <"$tmp/$t.a") values" \
		eval '[ -s "$tmp/$t.a" ] && cmp -s "$tmp/$t.a" "$tmp/$t.b"'
done
# Each sampled event is the timebase of its own packet sequence; the
# members of its read group are the followers, named in the defaults.
check "pftrace: group-s names page-faults a follower of task-clock" \
	eval 'grep -q "^task-clock|" "$tmp/group-s.pf" && grep -q "^page-faults|" "$tmp/group-s.pf"'
# Two events without a group: both counted, each on a sequence whose
# defaults name it the timebase (trace_processor makes one
# perf_cpu_counter track per sequence, CPU and timebase).
for ev in task-clock page-faults; do
	n=$(grep -c "^$ev|" "$tmp/ungrouped.pf")
	want=$(grep -c "^$ev|" "$tmp/ungrouped.a")
	check "pftrace: ungrouped: $ev carries its counts ($n, the table has $want)" \
		eval '[ "$n" -gt 0 ] && [ "$n" = "$want" ]'
done
check "pftrace: ungrouped: two sequences, each with its own timebase" test "$(
	protoc --decode_raw <"$tmp/ungrouped.pftrace" | awk '
		/^  59 {/ { d = 1 } d && /^  10: / { print $2; d = 0 }' | sort -u | wc -l)" = 2

# Leaks of our own under ASan (a no-op elsewhere).
ASAN_OPTIONS="${ASAN_OPTIONS%:detect_leaks=0}:detect_leaks=1:fast_unwind_on_malloc=0" \
	LSAN_OPTIONS="${LSAN_OPTIONS:-}:suppressions=$TK_SOURCE_DIR/tests/lsan-libtraceevent.supp" \
	"$TRACEKIT" convert -q --to sqlite "$data/counters/group-a.data" "$data/counters/idle.dat" \
	-o "$tmp/leak.db" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "sqlite: no leak" rc_is 0

finish
