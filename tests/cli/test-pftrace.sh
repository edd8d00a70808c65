#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# tracekit convert to Perfetto (.pftrace): each golden .dat and perf.data
# is converted, the trace must decode with `protoc --decode_raw`, and
# tests/cli/pftrace-check.py compares what it holds (events per CPU, their
# names, times and pids; perf samples, their tids, event names, CPUs and
# callstack depths) with `tracekit report` of the same file. Then the
# options: --to perfetto, the codecs, --split-size (pieces under the size,
# together holding every event), usage errors.
#
# perf.data files whose report cannot give every callstack's depth are
# compared without it (pftrace-check.py's samples and group kinds: each
# sample's event, CPU, pid, tid and nanosecond time, from `tracekit report
# -t --fields pid,tid,cpu,time,event`): those whose callchains chain-edit.py
# damaged (perf script prints fewer frames than the chain holds) and the
# group-read files (perf script prints a line per group member of one
# record: those lines are one sample). dwarf.data's user stacks are
# unwound into the trace as report unwinds them: its depths are compared.
#
# Needs protoc (protobuf-compiler) and python3, else SKIP. BENCH_REPORT
# (bench/bench-report) writes the bigger file of the split checks.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d /tmp/tk-pftrace.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
data=$TK_SOURCE_DIR/tests/data
checker=$TK_SOURCE_DIR/tests/cli/pftrace-check.py

if ! command -v protoc >/dev/null || ! command -v python3 >/dev/null; then
	skip "pftrace" "protoc (protobuf-compiler) or python3 not installed"
	finish
fi

# same FILE KIND [CONVERT ARGS...]: convert, then compare with the report.
same() {
	local file=$1 kind=$2 name
	shift 2
	name=$(basename "$file")
	run convert -q "$@" "$file" -o "$tmp/t.pftrace"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
		fail "$name: convert" "$(last)"
		return
	fi
	"$TRACEKIT" report "$file" >"$tmp/t.rep" 2>/dev/null
	if python3 "$checker" "$tmp/t.pftrace" "$tmp/t.rep" "$kind" >"$tmp/check" 2>&1; then
		pass "$name: $(tail -1 "$tmp/check" | sed 's/^pftrace-check: [^:]*: //')"
	else
		fail "$name" "$(cat "$tmp/check")"
	fi
}

# same_samples FILE samples|group: every sample without its callstack,
# against report's --fields lines (with the CPU where the samples have one).
same_samples() {
	local file=$1 kind=$2 name
	name=$(basename "$file")
	run convert -q "$file" -o "$tmp/t.pftrace"
	if [ "$rc" -ne 0 ]; then
		fail "$name: convert" "$(last)"
		return
	fi
	"$TRACEKIT" report -t --fields pid,tid,cpu,time,event "$file" >"$tmp/t.rep" 2>/dev/null ||
		"$TRACEKIT" report -t --fields pid,tid,time,event "$file" >"$tmp/t.rep" 2>/dev/null
	if python3 "$checker" "$tmp/t.pftrace" "$tmp/t.rep" "$kind" >"$tmp/check" 2>&1; then
		pass "$name ($kind): $(tail -1 "$tmp/check" | sed 's/^pftrace-check: [^:]*: //')"
	else
		fail "$name ($kind)" "$(cat "$tmp/check")"
	fi
}

for f in "$data"/*.dat "$data"/public/*.dat "$data"/tc34/*.dat; do
	same "$f" dat
done
# Every golden perf.data: the group reads as records, the damaged
# callchains without their depths, the others (dwarf.data included) whole.
for f in "$data"/perf/*.data; do
	case $(basename "$f" .data) in
	*group-read* | group-running | pipe-attr152) same_samples "$f" group ;;
	chain-neg1 | chain-guest | chain-hv | chain-zero) same_samples "$f" samples ;;
	*) same "$f" perf ;;
	esac
done
# Two events without a group, each on its packet sequence: names and CPUs.
same "$data/counters/ungrouped.data" perf
same_samples "$data/counters/ungrouped.data" samples
# A group read's member lines are one sample each, not one per line.
"$TRACEKIT" convert -q "$data/perf/group-read.data" -o "$tmp/g.pftrace"
"$TRACEKIT" report -t --fields pid,tid,time,event "$data/perf/group-read.data" >"$tmp/g.rep"
check "group-read: one sample per record, not per member line" eval \
	'! python3 "$checker" "$tmp/g.pftrace" "$tmp/g.rep" samples >/dev/null 2>&1'

# --call-graph dwarf: the user frames unwound from the recorded stack, as
# report prints them (one frame per address; report adds a line for each
# function inlined there), after the kernel's callchain; compared whole
# above, and here each sample at the nanosecond.
same_samples "$data/perf/dwarf.data" samples
run convert -q --compression none "$data/perf/dwarf.data" -o "$tmp/dw.pftrace"
depths=$(python3 - "$checker" "$tmp/dw.pftrace" <<'EOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("pc", sys.argv[1])
pc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pc)
for p in pc.packets(open(sys.argv[2], "rb").read()):
    for f, w, v in pc.fields(p):
        if f == 12:
            for ff, ww, vv in pc.fields(v):
                if ff == 7:
                    print(sum(1 for a, _, _ in pc.fields(vv) if a == 2))
EOF
)
check "dwarf.data: callstacks of unwound frames, not the ip alone ($(echo $depths))" \
	eval '[ -n "$depths" ] && ! echo "$depths" | grep -qx 1'

# A perf.data of scheduler tracepoints (what perf sched record writes), made
# from the sample .dat: sched_switch and sched_waking go to the compact
# encoding of their CPU's bundles, the CPU tracks.
"$TRACEKIT" convert -q "$data/sample-v7-zstd.dat" -o "$tmp/sched.data" --to perf
same "$tmp/sched.data" perf
run convert -q "$tmp/sched.data" -o "$tmp/sched.pftrace" --compression none
check "perf sched tracepoints in CompactSched" eval \
	'protoc --decode_raw <"$tmp/sched.pftrace" | grep -q "^    4 {"'

# The codecs: plain, deflated and zstd packets (the default) hold the same events.
same "$data/sample-v7-zstd.dat" dat --compression none
same "$data/sample-v7-zstd.dat" dat --compression zlib
same "$data/tc34/inst-v7-zlib.dat" dat --compression zlib
run convert -q "$data/sample-v7-zstd.dat" -o "$tmp/z.pftrace" --compression zstd
check "--compression zstd" rc_is 0
check "zstd packets are field 133" python3 -c "
import sys
b = open('$tmp/z.pftrace', 'rb').read()
sys.exit(0 if b'\xaa\x08' in b[:8] else 1)"

# --to perfetto with any OUT name; the summary line.
run convert "$data/sample-v7-zstd.dat" -o "$tmp/out.bin" --to perfetto
check "--to perfetto" rc_is 0
check "summary line" err_has "events on 2 CPUs"
check "--to perfetto output decodes" sh -c "protoc --decode_raw <'$tmp/out.bin' >/dev/null"

# Damaged input (the shared policy): what reads is written, one line per
# damaged region, exit 1; --strict fails at the first damage and writes nothing.
MUTATE=$TK_SOURCE_DIR/tests/integration/mutate.py
"$TRACEKIT" convert -q "$data/sample-v7-zstd.dat" -o "$tmp/good.dat" --compression none
python3 "$MUTATE" write "$tmp/good.dat" cpu0-page0-commit-cuts-record "$tmp/cut.dat" >/dev/null
damage_re='^tracekit convert: .*: offset 0x[0-9a-f]*: .* (skipped [0-9]* bytes, \(events lost unknown\|[0-9]* events lost\))$'
run convert -q "$tmp/cut.dat" -o "$tmp/cut.pftrace"
check "damaged .dat: exit 1, one line per region" eval 'rc_is 1 && err_has "$damage_re" && [ -s "$tmp/cut.pftrace" ]'
"$TRACEKIT" report "$tmp/cut.dat" >"$tmp/cut.rep" 2>/dev/null
check "damaged .dat: the trace holds what report reads" \
	python3 "$checker" "$tmp/cut.pftrace" "$tmp/cut.rep" dat
run convert -q --strict "$tmp/cut.dat" -o "$tmp/strict.pftrace"
check "damaged .dat --strict: exit 1, no output" eval 'rc_is 1 && err_lines 1 && [ ! -e "$tmp/strict.pftrace" ]'
head -c 3000 "$data/perf/plain.data" >"$tmp/cut.data"
run convert -q "$tmp/cut.data" -o "$tmp/cutp.pftrace"
check "damaged perf.data: exit 1, one line per region" eval 'rc_is 1 && err_has "$damage_re" && [ -s "$tmp/cutp.pftrace" ]'
# (--strict on a perf.data follows the reader: a cut last record is a
# warning there, as for report --strict.)
"$TRACEKIT" report --strict "$tmp/cut.data" >/dev/null 2>&1
want=$?
run convert -q --strict "$tmp/cut.data" -o "$tmp/strictp.pftrace"
check "cut perf.data --strict: the exit status of report --strict ($want)" rc_is "$want"

# Usage errors.
run convert "$data/sample-v7-zstd.dat" -o "$tmp/x.pftrace" --split-size 1000
check "--split-size under 1M is a usage error" rc_is 2
run convert "$data/sample-v7-zstd.dat" -o "$tmp/x.dat" --split-size 4M
check "--split-size needs Perfetto output" rc_is 2
(cd "$tmp" && "$TRACEKIT" convert "$data/sample-v7-zstd.dat" -o - --to perfetto --split-size 1M \
	>"$tmp/out" 2>"$tmp/err")
rc=$?
check "--split-size onto standard output is a usage error" \
	eval 'rc_is 2 && [ -z "$(ls "$tmp" | grep -e "^-")" ]'
run convert "$data/sample-v7-zstd.dat" -o - --to perfetto
check "-o - writes the trace to standard output" eval 'rc_is 0 && protoc --decode_raw <"$tmp/out" >/dev/null'
run convert "$data/sample-v7-zstd.dat" -o "$tmp/x.pftrace" --file-version 6
check "--file-version is for .dat" rc_is 2
run convert "$data/sample-v7-zstd.dat" -o "$tmp/x.pftrace" --compression lz4
check "unknown codec" rc_is 2

# --split-size: pieces of at most the size, consecutive in time, that
# together hold every event of the report.
if [ -n "${BENCH_REPORT:-}" ] && [ -x "$BENCH_REPORT" ]; then
	"$BENCH_REPORT" --events 120000 --keep "$tmp/big.dat" --no-trace-cmd --no-perf \
		--tracekit /bin/true >"$tmp/gen.out" 2>&1 ||
		fail "bench-report could not write the file" "$(cat "$tmp/gen.out")"
	run convert "$tmp/big.dat" -o "$tmp/split.pftrace" --split-size 1M --compression none
	check "--split-size 1M" rc_is 0
	n=$(ls "$tmp"/split-*.pftrace 2>/dev/null | wc -l)
	check "pieces are named OUT-NNNN.pftrace ($n)" [ "$n" -ge 3 ]
	check "no file named OUT itself" [ ! -e "$tmp/split.pftrace" ]
	big=$(stat -c %s "$tmp"/split-*.pftrace | sort -n | tail -1)
	check "every piece is at most 1 MiB ($big bytes)" [ "$big" -le 1048576 ]
	cat "$tmp"/split-*.pftrace >"$tmp/all.pftrace"
	"$TRACEKIT" report "$tmp/big.dat" >"$tmp/big.rep"
	if python3 "$checker" "$tmp/all.pftrace" "$tmp/big.rep" dat >"$tmp/check" 2>&1; then
		pass "the pieces together hold the report's events"
	else
		fail "split pieces" "$(cat "$tmp/check")"
	fi
	ok=1
	for p in "$tmp"/split-*.pftrace; do
		python3 "$checker" "$p" /dev/null dat 2>&1 | grep -q "decode_raw" && ok=0
	done
	check "each piece decodes alone" [ "$ok" -eq 1 ]
	same "$tmp/big.dat" dat
else
	skip "--split-size" "BENCH_REPORT not set"
fi

finish
