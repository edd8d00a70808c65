#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# Golden test of `tracekit report` against the real `trace-cmd report`
# (3.1.6): both must print identical text for
#   - the committed sample (v7 zstd) and its v6 / v7-none conversions made
#     with `tracekit convert`;
#   - fresh recordings made on the spot with tests/data/make-sample.sh
#     (needs root and tracefs; skipped with the reason otherwise);
# each in the default form and with -t, --cpu N, -l, -R, -F EVENT and
# --cpu N -F sched_switch, and with --slow (every event through
# libtraceevent), which must equal the compiled printer's text. A failing
# comparison shows the head of a unified diff. Also checks that --stat and
# --json run and that corrupt input fails cleanly.
#
# Environment: TRACEKIT (the binary), TK_SOURCE_DIR (source tree).
# Ends with "TK-COUNTS: passed=N failed=N skipped=N"; exit 1 if a check
# failed, 77 if all were skipped, else 0.
set -u

src=${TK_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
tk=${TRACEKIT:-$src/build/src/cli/tracekit}
sample=$src/tests/data/sample-v7-zstd.dat

passed=0
failed=0
skipped=0
pass() { passed=$((passed + 1)); echo "ok: $1"; }
fail() { failed=$((failed + 1)); echo "FAIL: $1${2:+: $2}"; }
skip() { skipped=$((skipped + 1)); echo "SKIP: $1: $2"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# libtraceevent 1.7 leaks a few bytes while parsing some formats; that
# leak is not ours and must not fail the ASan build.
echo "leak:libtraceevent.so" > "$tmp/lsan.supp"
export LSAN_OPTIONS="suppressions=$tmp/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

finish() {
	echo "TK-COUNTS: passed=$passed failed=$failed skipped=$skipped"
	if [ "$failed" -gt 0 ]; then exit 1; fi
	if [ "$passed" -eq 0 ]; then exit 77; fi
	exit 0
}

if ! command -v trace-cmd >/dev/null 2>&1; then
	skip "all" "trace-cmd is not installed"
	finish
fi

# compare NAME FILE ARGS...: trace-cmd report and tracekit report agree
compare() {
	local name=$1 file=$2
	shift 2
	trace-cmd report "$@" -i "$file" > "$tmp/want" 2> "$tmp/want.err"
	if ! "$tk" report "$@" -i "$file" > "$tmp/got" 2> "$tmp/got.err"; then
		fail "$name" "tracekit report failed: $(head -c 300 "$tmp/got.err")"
		return
	fi
	if cmp -s "$tmp/want" "$tmp/got"; then
		pass "$name ($(wc -l < "$tmp/want") lines)"
	else
		fail "$name" "output differs from trace-cmd report"
		diff -u "$tmp/want" "$tmp/got" | head -20
	fi
}

# same_as_slow NAME FILE ARGS...: the compiled printer equals libtraceevent's
same_as_slow() {
	local name=$1 file=$2
	shift 2
	"$tk" report "$@" -i "$file" > "$tmp/fast" 2>/dev/null
	"$tk" report --slow "$@" -i "$file" > "$tmp/slow" 2>/dev/null
	if cmp -s "$tmp/fast" "$tmp/slow"; then
		pass "$name"
	else
		fail "$name" "compiled and libtraceevent text differ"
		diff -u "$tmp/slow" "$tmp/fast" | head -20
	fi
}

check_file() {
	local tag=$1 file=$2
	compare "$tag default" "$file"
	compare "$tag -t" "$file" -t
	compare "$tag --cpu 0" "$file" --cpu 0
	compare "$tag --cpu 1 -t" "$file" --cpu 1 -t
	compare "$tag -l" "$file" -l
	compare "$tag -R" "$file" -R
	compare "$tag -F sched_switch" "$file" -F sched_switch
	compare "$tag -F sched" "$file" -F sched
	# One CPU's switches usually start with the idle task's: libtraceevent's
	# name table then takes the plugin's names as duplicates (event.c).
	compare "$tag --cpu 0 -F sched_switch" "$file" --cpu 0 -F sched_switch
	compare "$tag --cpu 1 -F sched_switch" "$file" --cpu 1 -F sched_switch
	same_as_slow "$tag compiled == slow" "$file"
}

if [ -r "$sample" ]; then
	check_file "sample v7-zstd" "$sample"
	if "$tk" convert --file-version 6 -i "$sample" -o "$tmp/v6.dat" >/dev/null 2>&1; then
		check_file "sample v6" "$tmp/v6.dat"
	else
		fail "convert to v6"
	fi
	if "$tk" convert --compression none -i "$sample" -o "$tmp/v7n.dat" >/dev/null 2>&1; then
		check_file "sample v7-none" "$tmp/v7n.dat"
	else
		fail "convert to v7-none"
	fi

	# Options of our own: they must run and say something sensible.
	if "$tk" report --stat -i "$sample" > "$tmp/stat" 2>&1 &&
	   grep -q "sched:sched_switch" "$tmp/stat" && grep -q "^cpu 1:" "$tmp/stat"; then
		pass "--stat"
	else
		fail "--stat" "$(head -c 300 "$tmp/stat")"
	fi
	want_events=$(($(trace-cmd report -i "$sample" 2>/dev/null | wc -l) - 1))
	if "$tk" report --json -i "$sample" > "$tmp/json" 2> "$tmp/json.err" &&
	   [ "$(wc -l < "$tmp/json")" -eq "$want_events" ] &&
	   python3 -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1])]' "$tmp/json"; then
		pass "--json: $want_events objects that parse"
	else
		fail "--json" "$(head -c 300 "$tmp/json")"
	fi
	# The time window: --start/--end keep exactly the lines inside it.
	trace-cmd report -i "$sample" 2>/dev/null | awk 'NR > 1 {
		match($0, /\[[0-9]+\] +[0-9]+\.[0-9]+:/); t = substr($0, RSTART, RLENGTH);
		sub(/^\[[0-9]+\] +/, "", t); sub(/:$/, "", t);
		if (t >= 1645.43 && t < 1645.45) print }' > "$tmp/win.want"
	"$tk" report --start 1645.43 --end 1645.45 -i "$sample" 2>/dev/null | tail -n +2 \
		> "$tmp/win.got"
	if [ -s "$tmp/win.want" ] && cmp -s "$tmp/win.want" "$tmp/win.got"; then
		pass "--start/--end"
	else
		fail "--start/--end" "$(diff "$tmp/win.want" "$tmp/win.got" | head -5)"
	fi
	# Corrupt data: a clear error, no crash.
	cp "$tmp/v7n.dat" "$tmp/bad.dat" 2>/dev/null
	size=$(stat -c %s "$tmp/bad.dat" 2>/dev/null || echo 0)
	if [ "$size" -gt 100000 ]; then
		printf '\xff\xff\xff\xff\xff\xff\xff\xff' |
			dd of="$tmp/bad.dat" bs=1 seek=$((size - 40000)) conv=notrunc 2>/dev/null
		"$tk" report -i "$tmp/bad.dat" > /dev/null 2> "$tmp/bad.err"
		rc=$?
		if [ "$rc" -le 1 ]; then
			pass "corrupt data exits $rc"
		else
			fail "corrupt data" "exit $rc: $(head -c 300 "$tmp/bad.err")"
		fi
	fi
else
	skip "sample" "$sample is missing"
fi

# Fresh recordings: root, tracefs and trace-cmd (make-sample.sh says why not).
out=$(bash "$src/tests/data/make-sample.sh" "$tmp/fresh" 2>&1)
rc=$?
if [ "$rc" -eq 77 ]; then
	skip "fresh recording" "${out#SKIP: }"
elif [ "$rc" -ne 0 ]; then
	fail "fresh recording" "$out"
else
	for f in sample-v7-zstd sample-v6 sample-v7-none; do
		check_file "fresh $f" "$tmp/fresh/$f.dat"
	done
fi

finish
