#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# dat-oracle: tracekit convert checked against trace-cmd 3.1.6 itself.
#
# A fresh trace is recorded with tests/data/make-sample.sh (root + tracefs);
# without them the committed sample is used and its v6 / v7-none copies are
# made with `trace-cmd convert`. Then:
#  1. every input {v7-zstd, v6, v7-none} is converted by tracekit to every
#     output {v6, v7-none, v7-zstd}; `trace-cmd report` must print exactly
#     the same text for output and input, `report --check-events` must exit
#     0, and report's stderr on the output must be empty or the input's;
#  2. each input is converted to v7-zlib (which trace-cmd 3.1.6 cannot read),
#     checked with tracekit's own reader: same per-CPU pages, events and
#     page crc32 in `tracekit dump`, byte-identical `dump --section` bodies;
#  3. a chain v7-zstd -> v6 -> v7-none -> v7-zlib -> v7-zstd through tracekit
#     alone keeps every section body and every CPU's page crc32;
#  4. a trace whose events are all in an instance (trace-cmd extract -B, root
#     and tracefs needed) converts to v6 that `trace-cmd report` prints as
#     the input, and to perf.data that `perf script` prints with every event.
# One "ok - " / "not ok - " line per check, then TK-COUNTS; exit 1 on failure.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TK_SOURCE_DIR=${TK_SOURCE_DIR:-$(cd "$here/../.." && pwd)}
TK_BUILD_DIR=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build-it}
TRACEKIT=${TRACEKIT:-$TK_BUILD_DIR/src/cli/tracekit}
SECTIONS="headers ftrace-events events kallsyms printk cmdlines"
T="timeout 120"

passed=0 failed=0 skipped=0
ok() { echo "ok - $*"; passed=$((passed + 1)); }
not_ok() { echo "not ok - $*"; failed=$((failed + 1)); }
skip() { echo "SKIP: $*"; skipped=$((skipped + 1)); }
note() { sed "s/^/#   /" | head -n "${1:-8}"; }
# agree NAME CMD...: ok NAME when CMD succeeds, else not ok with what CMD said.
agree() {
	local name=$1 why
	shift
	if why=$("$@"); then
		ok "$name"
	else
		not_ok "$name"
		echo "$why" | note
	fi
}
finish() {
	echo "TK-COUNTS: passed=$passed failed=$failed skipped=$skipped"
	[ "$failed" -eq 0 ] || exit 1
	exit 0
}

if ! command -v trace-cmd >/dev/null 2>&1; then
	echo "SKIP: trace-cmd is not installed (it is the oracle)"
	exit 77
fi
if [ ! -x "$TRACEKIT" ]; then
	echo "tracekit binary not found at $TRACEKIT" >&2
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-oracle.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
in=$tmp/in
mkdir -p "$in" "$tmp/out"

# ------------------------------------------------------------------ inputs
out=$(bash "$TK_SOURCE_DIR/tests/data/make-sample.sh" "$in" 2>&1)
rc=$?
if [ $rc -eq 0 ]; then
	ok "make-sample.sh recorded a fresh trace"
else
	if [ $rc -eq 77 ]; then
		skip "make-sample.sh: ${out#SKIP: } (using the committed sample)"
	else
		not_ok "make-sample.sh exit $rc (using the committed sample)"
		echo "$out" | note
	fi
	rm -f "$in"/*.dat
	cp "$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat" "$in/" || exit 1
	if ! trace-cmd convert --file-version 6 --compression none -i "$in/sample-v7-zstd.dat" \
		-o "$in/sample-v6.dat" >/dev/null 2>&1 ||
		! trace-cmd convert --compression none -i "$in/sample-v7-zstd.dat" \
			-o "$in/sample-v7-none.dat" >/dev/null 2>&1; then
		not_ok "trace-cmd convert of the committed sample"
		finish
	fi
fi

declare -A conv_args=(
	[v6]="--file-version 6 --compression none"
	[v7-none]="--file-version 7 --compression none"
	[v7-zstd]="--file-version 7 --compression zstd"
	[v7-zlib]="--file-version 7 --compression zlib"
)

# convert IN OUT KIND: tracekit convert, checked for exit 0 and no output on stderr.
convert() {
	local err
	# shellcheck disable=SC2086
	err=$($T "$TRACEKIT" convert "$1" -o "$2" ${conv_args[$3]} -q 2>&1 >/dev/null)
	local rc=$?
	if [ $rc -ne 0 ] || [ ! -s "$2" ]; then
		not_ok "tracekit convert $(basename "$1") -> $3 (exit $rc)"
		echo "$err" | note
		return 1
	fi
	ok "tracekit convert $(basename "$1") -> $3"
}

# report FILE: trace-cmd report output into FILE.txt / FILE.err, status in FILE.rc
report() {
	[ -e "$1.txt" ] && return 0
	$T trace-cmd report -i "$1" >"$1.txt" 2>"$1.err"
	echo $? >"$1.rc"
}

# cpu_summary FILE: the per-CPU facts of `tracekit dump`, without the parts
# that legitimately differ between layouts (file offsets, sizes, chunks).
cpu_summary() {
	$T "$TRACEKIT" dump "$1" >"$1.dump" 2>"$1.dump-err" || return 1
	python3 - "$1.dump" <<'EOF'
import re, sys
skip = re.compile(r"off|size|chunk|compress|byte|file|len", re.I)
buf = ""
for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
    if re.match(r"\s*buffer\b", line, re.I) and "crc32=" not in line:
        buf = line.strip()
        buf = re.sub(r"\s*\b\w*(off|size|chunk|compress)\w*[=:]\s*\S+", "", buf, flags=re.I)
        continue
    cpu = re.search(r"\bcpu\s*[=:#]?\s*(\d+)", line, re.I)
    if not cpu or "crc32=" not in line:
        continue
    facts = [f"cpu{cpu.group(1)}"]
    for key, val in re.findall(r"([A-Za-z_][\w-]*)[=:]\s*([0-9a-fA-Fx]+)\b", line):
        if key.lower() != "cpu" and not skip.search(key):
            facts.append(f"{key}={val}")
    for val, key in re.findall(r"(?:^|\s)(\d+)\s+(pages?|events?|lost(?:\s+events)?)\b", line):
        facts.append(f"{key}={val}")
    print(buf, " ".join(facts))
EOF
}

# same_sections A B: every metadata section present in A has the same body in B.
same_sections() {
	local s bad=0 n=0
	for s in $SECTIONS; do
		if ! $T "$TRACEKIT" dump --section "$s" "$1" >"$tmp/a.sec" 2>/dev/null; then
			# Absent in A: it must be absent in B too.
			if $T "$TRACEKIT" dump --section "$s" "$2" >/dev/null 2>&1; then
				echo "section $s absent in $(basename "$1") but present in $(basename "$2")"
				bad=1
			fi
			continue
		fi
		n=$((n + 1))
		if ! $T "$TRACEKIT" dump --section "$s" "$2" >"$tmp/b.sec" 2>"$tmp/b.err"; then
			echo "section $s: dump failed on $(basename "$2"): $(head -n 1 "$tmp/b.err")"
			bad=1
		elif ! cmp -s "$tmp/a.sec" "$tmp/b.sec"; then
			echo "section $s differs ($(stat -c %s "$tmp/a.sec") vs $(stat -c %s "$tmp/b.sec") bytes)"
			bad=1
		fi
	done
	[ $n -gt 0 ] || { echo "no section could be read from $(basename "$1")"; bad=1; }
	return $bad
}

# same_cpus A B: identical per-CPU pages, events and page crc32.
same_cpus() {
	local a b
	a=$(cpu_summary "$1") || { echo "dump $(basename "$1"): $(head -n 1 "$1.dump-err")"; return 1; }
	b=$(cpu_summary "$2") || { echo "dump $(basename "$2"): $(head -n 1 "$2.dump-err")"; return 1; }
	if [ -z "$a" ]; then
		echo "no per-CPU line with crc32= in dump of $(basename "$1")"
		return 1
	fi
	if [ "$a" != "$b" ]; then
		diff <(echo "$a") <(echo "$b")
		return 1
	fi
}

# ------------------------------------------- 1. trace-cmd report as oracle
for ik in v7-zstd v6 v7-none; do
	src=$in/sample-$ik.dat
	report "$src"
	if [ "$(cat "$src.rc")" -ne 0 ] || [ ! -s "$src.txt" ]; then
		not_ok "trace-cmd report on input $ik (exit $(cat "$src.rc"))"
		continue
	fi
	for kind in v6 v7-none v7-zstd; do
		dst=$tmp/out/$ik-to-$kind.dat
		convert "$src" "$dst" "$kind" || continue
		report "$dst"
		if [ "$(cat "$dst.rc")" -eq 0 ] && cmp -s "$src.txt" "$dst.txt"; then
			ok "trace-cmd report: $ik -> $kind prints the same $(wc -l <"$src.txt") lines"
		else
			not_ok "trace-cmd report: $ik -> $kind output differs (exit $(cat "$dst.rc"))"
			diff "$src.txt" "$dst.txt" | note 10
		fi
		if [ ! -s "$dst.err" ] || cmp -s "$src.err" "$dst.err"; then
			ok "trace-cmd report: $ik -> $kind stderr clean"
		else
			not_ok "trace-cmd report: $ik -> $kind stderr"
			note <"$dst.err"
		fi
		if $T trace-cmd report --check-events -i "$dst" >/dev/null 2>"$tmp/check.err"; then
			ok "trace-cmd report --check-events: $ik -> $kind"
		else
			not_ok "trace-cmd report --check-events: $ik -> $kind (exit $?)"
			note <"$tmp/check.err"
		fi
	done
done

# ------------------------------------------ 2. v7-zlib through tracekit dump
for ik in v7-zstd v6 v7-none; do
	src=$in/sample-$ik.dat
	dst=$tmp/out/$ik-to-v7-zlib.dat
	convert "$src" "$dst" v7-zlib || continue
	agree "tracekit dump: $ik -> v7-zlib keeps per-CPU pages, events and crc32" \
		same_cpus "$src" "$dst"
	agree "tracekit dump --section: $ik -> v7-zlib bodies identical" \
		same_sections "$src" "$dst"
done

# ---------------------------------------------- 3. round trip through tracekit
prev=$in/sample-v7-zstd.dat
step=0
for k in v6 v7-none v7-zlib v7-zstd; do
	step=$((step + 1))
	next=$tmp/out/chain-$step-$k.dat
	convert "$prev" "$next" "$k" || break
	agree "round trip step $step ($k): section bodies identical to the input" \
		same_sections "$in/sample-v7-zstd.dat" "$next"
	agree "round trip step $step ($k): per-CPU crc32 identical to the input" \
		same_cpus "$in/sample-v7-zstd.dat" "$next"
	prev=$next
done
if [ $step -eq 4 ] && [ -e "$prev" ]; then
	report "$prev"
	if cmp -s "$in/sample-v7-zstd.dat.txt" "$prev.txt"; then
		ok "round trip: trace-cmd report identical after four conversions"
	else
		not_ok "round trip: trace-cmd report differs after four conversions"
		diff "$in/sample-v7-zstd.dat.txt" "$prev.txt" | note 10
	fi
fi


# ------------------------------------------- 4. events only in an instance
# make_instance_trace OUT: sched events in a fresh instance, extracted alone.
make_instance_trace() {
	local tr=/sys/kernel/tracing name=tk-oracle-$$ dir
	[ "$(id -u)" -eq 0 ] && [ -w "$tr/tracing_on" ] && [ -d "$tr/instances" ] || return 77
	dir=$tr/instances/$name
	mkdir "$dir" 2>/dev/null || return 77
	{
		echo 1 >"$dir/events/sched/sched_switch/enable" &&
			echo 1 >"$dir/events/sched/sched_wakeup/enable" &&
			echo 1 >"$dir/tracing_on" &&
			for i in 1 2 3 4; do sleep 0.02 & /bin/true; wait; done &&
			echo 0 >"$dir/tracing_on" &&
			$T trace-cmd extract -B "$name" -o "$1" >/dev/null 2>&1
	}
	local rc=$?
	rmdir "$dir" 2>/dev/null
	return $rc
}

inst=$tmp/instance.dat
make_instance_trace "$inst"
rc=$?
if [ $rc -eq 77 ]; then
	skip "no root or tracefs instances: the instance-only trace is not made"
elif [ $rc -ne 0 ] || [ ! -s "$inst" ]; then
	not_ok "trace-cmd extract -B of an instance-only trace (exit $rc)"
else
	report "$inst"
	events=$(grep -vc '^cpus=' "$inst.txt")
	if [ "$events" -gt 0 ] && ! "$TRACEKIT" dump --summary "$inst" | grep -q '^  buffer (top): .* events=[1-9]'; then
		ok "instance-only trace: $events events, none in the top buffer"
	else
		not_ok "instance-only trace: $events events, or events in the top buffer"
	fi
	if convert "$inst" "$tmp/out/instance-v6.dat" v6; then
		report "$tmp/out/instance-v6.dat"
		if cmp -s "$inst.txt" "$tmp/out/instance-v6.dat.txt"; then
			ok "instance-only -> v6: trace-cmd report identical"
		else
			not_ok "instance-only -> v6: trace-cmd report differs"
			diff "$inst.txt" "$tmp/out/instance-v6.dat.txt" | note 10
		fi
	fi
	if ! command -v perf >/dev/null 2>&1; then
		skip "perf is not installed: instance-only -> perf.data not checked"
	elif ! err=$($T "$TRACEKIT" convert -q "$inst" -o "$tmp/out/instance.data" 2>&1); then
		not_ok "tracekit convert instance-only -> perf.data"
		echo "$err" | note
	else
		n=$($T perf script -i "$tmp/out/instance.data" 2>/dev/null | wc -l)
		if [ "$n" -eq "$events" ]; then
			ok "instance-only -> perf.data: perf script prints all $n events"
		else
			not_ok "instance-only -> perf.data: perf script prints $n of $events events"
		fi
	fi
fi

finish
