#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# convert --to parquet / --to sqlite, read back by real engines: 100 traces
# made from the golden files (tests/data, each a symlink with its own name,
# hence its own trace id) go through one conversion each way; DuckDB (its
# @duckdb/node-api package from the npm registry, installed here under the
# build directory and kept there) and sqlite3 run the queries of
# docs/fleet.md, taken from the page as written, and their results must
# equal what this test computes itself from `tracekit report` of the same
# files: --stat's counts (.dat), --fields event (perf.data), and the run
# time per task summed from --json's sched_switch records.
#
# Without node/npm or without the registry, the DuckDB checks SKIP (said
# loudly); the SQLite checks run anyway.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/duckdb-lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$TK_SOURCE_DIR/tests/data
doc=$TK_SOURCE_DIR/docs/fleet.md
build=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}
# The queries of docs/fleet.md, by the name each has there.
queries="events-per-name runtime-per-task args-per-key switches-per-comm frames-per-trace
	samples-per-trace"

# libtraceevent 1.7.1 leaks a few bytes in some of the ~2000 formats of a
# kernel, all of which an export parses. Under ASan the bulk runs leave leak
# checking off; one run below checks with those leaks suppressed (the slow
# unwinder that finds the library is too slow for every run).
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
leak_env=(env "ASAN_OPTIONS=${ASAN_OPTIONS%:detect_leaks=0}:detect_leaks=1:fast_unwind_on_malloc=0"
	"LSAN_OPTIONS=${LSAN_OPTIONS:-}:suppressions=$TK_SOURCE_DIR/tests/lsan-libtraceevent.supp")

# ------------------------------------------------------------ the traces
mkdir "$tmp/traces"
mapfile -t golden < <(ls "$data"/*.dat "$data"/tc34/*.dat "$data"/public/*.dat \
	"$data"/perf/*.data | sort)
for i in $(seq 0 99); do
	g=${golden[$((i % ${#golden[@]}))]}
	base=$(basename "$g")
	ln -s "$g" "$tmp/traces/$(printf 't%03d' "$i")-$base"
done

run convert -q --to parquet "$tmp"/traces/* -o "$tmp/fleet"
check "parquet: 100 traces convert" rc_is 0
# 14 tables: sched_slice ... stack_profile_callsite, counter and its three track tables.
check "parquet: one file per table and trace" \
	test "$(find "$tmp/fleet" -name '*.parquet' | wc -l)" -eq 1400
check "parquet: no temporary file left" \
	test "$(find "$tmp/fleet" -name '*.tmp' | wc -l)" -eq 0
run convert -q --to sqlite "$tmp"/traces/* -o "$tmp/fleet.db"
check "sqlite: 100 traces convert" rc_is 0

one=$(ls "$tmp"/traces/*-sample-v7-zstd.dat | head -1)

# ------------------------------------------- what tracekit report says
# One pass per distinct golden file; a trace's results are its golden's.
python3 - "$TRACEKIT" "$tmp" <<'EOF' || fail "expected results" "python failed"
import collections, json, os, re, subprocess, sys
tk, tmp = sys.argv[1], sys.argv[2]
names = collections.Counter()
keys = collections.Counter()
comms = collections.Counter()
runtime = {}
samples = {}
frames = {}
# Stacks tracekit report prints otherwise: --call-graph dwarf user stacks
# (unwound there, not exported), and callchains edited to hold guest and -1
# entries (perf/chain-edit.py).
frames_skip = {"dwarf.data", "chain-guest.data", "chain-neg1.data", "chain-hv.data",
               "chain-zero.data"}
cache = {}

def report(path, *args):
    return subprocess.run([tk, "report", "-q", *args, path], capture_output=True, text=True,
                          check=True).stdout

def analyse(path):
    ev = collections.Counter()
    rt = collections.Counter()
    ak = collections.Counter()
    nc = collections.Counter()
    ns = 0
    nf = 0
    if path.endswith(".dat"):
        for line in report(path, "--stat").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].isdigit() and ":" in parts[1]:
                ev[parts[1].split(":")[-1]] += int(parts[0])
        last = {}
        for line in report(path, "--json").splitlines():
            r = json.loads(line)
            for k in r.get("fields", {}):
                ak[(r["event"], k)] += 1
            if r.get("event") != "sched_switch":
                continue
            nc[r["fields"]["next_comm"]] += 1
            cpu, ts = r["cpu"], r["ts"]
            if cpu in last:
                rt[last[cpu][1]] += ts - last[cpu][0]
            last[cpu] = (ts, r["fields"]["next_pid"])
    else:
        # A tracepoint is SYSTEM:NAME; other events print their modifiers
        # (cpu-clock:u). A group read prints a line per member, at one time.
        prev = None
        # Its fields: "SYSTEM:NAME: key=value key=value ..."
        for line in report(path, "--fields", "event,trace").splitlines():
            parts = line.split()
            if parts and re.fullmatch(r"[a-z0-9_]+:[a-z0-9_]+:", parts[0]):
                for kv in parts[1:]:
                    ak[(parts[0].rstrip(":").split(":")[-1], kv.split("=")[0])] += 1
        for line in report(path, "-t", "--fields", "tid,time,event").splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue
            name = parts[2].rstrip(":")
            if re.fullmatch(r"[a-z0-9_]+:[a-z0-9_]+", name):
                ev[name.split(":")[-1]] += 1
            elif (parts[0], parts[1]) != prev:
                ns += 1
            prev = (parts[0], parts[1])
        # Frames: the indented lines after a sample of another event than a
        # tracepoint (at least its ip); one group read's members print once.
        cur, prev = None, None
        for line in report(path, "-t").splitlines() + [""]:
            if line.startswith("\t"):
                if cur is not None:
                    cur += 1
                continue
            if cur is not None:
                nf += max(cur, 1)
                cur = None
            m = re.search(r"(\S+)\s+(\d+\.\d+):\s+(?:\d+\s+)?(\S+):", line)
            if not m or re.fullmatch(r"[a-z0-9_]+:[a-z0-9_]+", m.group(3)):
                continue
            if (m.group(1), m.group(2)) != prev:
                cur = 0
            prev = (m.group(1), m.group(2))
    return ev, rt, ns, ak, nc, nf

for link in sorted(os.listdir(tmp + "/traces")):
    target = os.path.realpath(tmp + "/traces/" + link)
    if target not in cache:
        cache[target] = analyse(target)
    ev, rt, ns, ak, nc, nf = cache[target]
    trace = link.rsplit(".", 1)[0]
    if nf and os.path.basename(target) not in frames_skip:
        frames[trace] = nf
    keys.update(ak)
    comms.update(nc)
    names.update(ev)
    for tid, v in rt.items():
        runtime[(trace, tid)] = v
    if ns:
        samples[trace] = ns

with open(tmp + "/expect-events-per-name", "w") as f:
    for n in sorted(names):
        f.write("%s|%d\n" % (n, names[n]))
with open(tmp + "/expect-runtime-per-task", "w") as f:
    for k in sorted(runtime):
        f.write("%s|%d|%d\n" % (k[0], k[1], runtime[k]))
with open(tmp + "/expect-args-per-key", "w") as f:
    for k in sorted(keys):
        f.write("%s|%s|%d\n" % (k[0], k[1], keys[k]))
with open(tmp + "/expect-switches-per-comm", "w") as f:
    for c in sorted(comms, key=lambda c: (-comms[c], c.encode())):
        f.write("%s|%d\n" % (c, comms[c]))
with open(tmp + "/expect-frames-per-trace", "w") as f:
    for t in sorted(frames):
        f.write("%s|%d\n" % (t, frames[t]))
with open(tmp + "/frames-skip", "w") as f:
    for link in sorted(os.listdir(tmp + "/traces")):
        if os.path.basename(os.path.realpath(tmp + "/traces/" + link)) in frames_skip:
            f.write(link.rsplit(".", 1)[0] + "|\n")
with open(tmp + "/expect-samples-per-trace", "w") as f:
    for t in sorted(samples):
        f.write("%s|%d\n" % (t, samples[t]))
EOF
for q in $queries; do
	check "expected $q is not empty" test -s "$tmp/expect-$q"
done

# ------------------------------------------------- the documented queries
# The SQL block after "<!-- ENGINE: NAME -->" in docs/fleet.md.
doc_query() {
	awk -v want="<!-- $1: $2 -->" '
		$0 == want { found = 1; next }
		found && /^```sql/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }' "$doc"
}
for q in $queries; do
	for engine in duckdb sqlite; do
		doc_query $engine $q >"$tmp/$engine-$q.sql"
		check "docs/fleet.md shows the $engine query $q" test -s "$tmp/$engine-$q.sql"
	done
done

# The traces whose stacks report prints otherwise (frames-skip) leave the
# frames-per-trace results before they are compared.
skip_traces() {
	if [ "$q" = frames-per-trace ]; then grep -v -F -f "$tmp/frames-skip" || true; else cat; fi
}

# SQLite
for q in $queries; do
	sqlite3 "$tmp/fleet.db" <"$tmp/sqlite-$q.sql" 2>"$tmp/err" | skip_traces >"$tmp/sqlite-$q.out"
	if cmp -s "$tmp/expect-$q" "$tmp/sqlite-$q.out"; then
		pass "sqlite: $q equals tracekit report's"
	else
		fail "sqlite: $q equals tracekit report's" \
			"$(diff "$tmp/expect-$q" "$tmp/sqlite-$q.out" | head -10) $(head -c 300 "$tmp/err")"
	fi
done

# The tables agree with each other: every sample's stack ends at a callsite
# of its own trace, every thread's process is there, each CPU has its own
# idle thread (tid 0, "swapper/N") in a trace with switches.
check "sqlite: every callsite_id names a callsite" test "$(sqlite3 "$tmp/fleet.db" "
	SELECT count(*) FROM perf_sample s LEFT JOIN stack_profile_callsite c
	ON c.trace_id = s.trace_id AND c.id = s.callsite_id
	WHERE s.callsite_id >= 0 AND c.id IS NULL")" = 0
check "sqlite: every thread's upid names a process of its trace" test "$(sqlite3 "$tmp/fleet.db" "
	SELECT count(*) FROM thread t LEFT JOIN process p USING (trace_id, upid)
	WHERE t.upid >= 0 AND p.pid IS NULL")" = 0
check "sqlite: sample-v7-zstd has one idle thread per CPU" test "$(sqlite3 "$tmp/fleet.db" "
	SELECT group_concat(name, ' ') FROM (SELECT name FROM thread
	WHERE trace_id LIKE '%-sample-v7-zstd' AND tid = 0 GROUP BY name ORDER BY name)")" = \
	"swapper/0 swapper/1"

# DuckDB, installed once per build directory.
if duckdb_setup "$build"; then
	for q in $queries; do
		# The page's queries name the directory "fleet", relative: run them beside it.
		(cd "$tmp" && node duck.mjs "duckdb-$q.sql") 2>"$tmp/err" | skip_traces >"$tmp/duckdb-$q.out"
		if cmp -s "$tmp/expect-$q" "$tmp/duckdb-$q.out"; then
			pass "duckdb: $q over 100 traces equals tracekit report's"
		else
			fail "duckdb: $q over 100 traces equals tracekit report's" \
				"$(diff "$tmp/expect-$q" "$tmp/duckdb-$q.out" | head -10) $(head -c 300 "$tmp/err")"
		fi
	done

	# The Spark section's SQL: Spark and its JVM are in neither Debian's nor
	# npm's registry, so the text of its spark.sql() calls runs in DuckDB over
	# views named as the page's temp views (the same Parquet directories):
	# what is checked is that SQL and its results, not Spark itself.
	spark_query() {
		awk -v n="$1" '/spark\.sql\("""/ { k++; inside = (k == n); next }
			inside && /"""\)/ { inside = 0 } inside { print }' "$doc"
	}
	i=0
	for q in events-per-name runtime-per-task; do
		i=$((i + 1))
		{
			for t in ftrace_event sched_slice; do
				echo "CREATE VIEW $t AS SELECT * FROM read_parquet('fleet/$t/*.parquet');"
			done
			spark_query $i
			echo ";"
		} >"$tmp/spark-$q.sql"
		(cd "$tmp" && node duck.mjs "spark-$q.sql") 2>"$tmp/err" >"$tmp/spark-$q.out"
		check "docs/fleet.md's Spark SQL $q (run by DuckDB) equals tracekit report's" \
			eval 'grep -q "spark.sql" "$doc" && cmp -s "$tmp/expect-$q" "$tmp/spark-$q.out"'
	done

	# Files and row groups roll at the given counts; the rows stay the same.
	run convert -q --to parquet --file-rows 1000 --row-group-rows 300 "$one" -o "$tmp/small"
	check "parquet: --file-rows converts" rc_is 0
	cat >"$tmp/small.sql" <<EOF
SELECT count(DISTINCT file_name), sum(row_group_num_rows), max(row_group_num_rows)
FROM parquet_metadata('small/ftrace_event/*.parquet') WHERE column_id = 0;
EOF
	(cd "$tmp" && node duck.mjs small.sql) >"$tmp/small.out" 2>"$tmp/err"
	IFS='|' read -r files meta_rows maxrg <"$tmp/small.out"
	rows=$(sqlite3 "$tmp/fleet.db" \
		"SELECT count(*) FROM ftrace_event WHERE trace_id = '$(basename "${one%.*}")'")
	check "parquet: --file-rows 1000 makes $files files of $meta_rows rows" \
		test "${files:-0}" -eq $(((rows + 999) / 1000)) -a "${meta_rows:-x}" = "$rows"
	check "parquet: row groups hold at most 300 rows ($maxrg)" \
		test "${maxrg:-0}" -le 300 -a "${maxrg:-0}" -gt 0
else
	skip "duckdb" "@duckdb/node-api is not available (see the SKIP line above)"
fi

# Leaks of our own (both writers, every table) under ASan; a no-op elsewhere.
"${leak_env[@]}" "$TRACEKIT" convert -q --to parquet "$data/sample-v7-zstd.dat" \
	"$data/perf/pipe-tracepoint-g.data" -o "$tmp/leak" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "parquet: no leak" rc_is 0
"${leak_env[@]}" "$TRACEKIT" convert -q --to sqlite "$data/sample-v7-zstd.dat" \
	"$data/perf/pipe-tracepoint-g.data" -o "$tmp/leak.db" >"$tmp/out" 2>"$tmp/err"
rc=$?
check "sqlite: no leak" rc_is 0

# ------------------------------------------------------------ the options
run convert --to parquet --trace-id a "$one" "$one" -o "$tmp/x"
check "--trace-id with two inputs is a usage error" rc_is 2
run convert --to parquet "$data/sample-v7-zstd.dat" "$tmp/traces/../traces/$(basename "$one")" \
	"$data/sample-v7-zstd.dat" -o "$tmp/x"
check "two inputs with one trace id fail" rc_is 1
check "  and the message names the trace id" err_has "same trace id 'sample-v7-zstd'"
run convert --to parquet --row-group-rows 0 "$one" -o "$tmp/x"
check "--row-group-rows 0 is a usage error" rc_is 2
run convert --to sqlite --trace-id mine --host h1 --boot-id b1 "$data/sample-v7-zstd.dat" \
	-o "$tmp/one.db"
check "sqlite: --trace-id, --host and --boot-id convert" rc_is 0
check "  every row carries them" test "$(sqlite3 "$tmp/one.db" \
	"SELECT DISTINCT trace_id, host, boot_id FROM sched_slice")" = "mine|h1|b1"
# A damaged input: what is intact is written, one warning per region, exit 1.
sz=$(stat -c %s "$data/tc34/v7-zstd.dat")
head -c $((sz - 3000)) "$data/tc34/v7-zstd.dat" >"$tmp/trunc.dat"
run convert -q --to parquet "$tmp/trunc.dat" -o "$tmp/dmg"
check "damaged input: exit 1, warnings in the shared form" \
	eval 'rc_is 1 && err_has "^tracekit convert: $tmp/trunc.dat: offset 0x[0-9a-f]*: .*(skipped [0-9]* bytes, "'
check "  and its tables are written" test -e "$tmp/dmg/thread/trunc-0000.parquet"
run convert -q --strict --to parquet "$tmp/trunc.dat" -o "$tmp/dmg2"
check "--strict: the first damage is the error, no table written" \
	eval 'rc_is 1 && err_lines 1 && [ -z "$(find "$tmp/dmg2" -name "*.parquet")" ]'
run convert -q --to sqlite "$tmp/trunc.dat" -o "$tmp/dmg.db"
check "sqlite: damaged input exits 1 with its warnings" \
	eval 'rc_is 1 && err_has "^tracekit convert: $tmp/trunc.dat: offset 0x"'
run convert --to parquet --help
check "convert --to parquet --help shows the table options" out_has "--row-group-rows"
run convert --to parquet /nonexistent.dat -o "$tmp/x"
check "a missing input fails with exit 1" rc_is 1
check "  naming the file" err_has "/nonexistent.dat"

finish
