#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# guest-host: a host file and its guest's file (trace-cmd record -A), made by
# tests/data/guest/make-guest-pair.py, merged as trace-cmd 3.4 merges them.
#
# The guest's records carry its own raw clock; its TIME_SHIFT option maps
# each CPU's times into the host's (interpolated or stepped, scaled with
# fraction bits), then TSC2NSEC makes nanoseconds. For each case the
# committed text is what trace-cmd 3.4 printed (tests/data/guest/README.md):
#   - tracekit's text must equal it byte for byte once the two ways 3.4's
#     default text differs from 3.1.6's are taken out of both: the latency
#     flags column 3.3 added after "[CPU]" (tracekit prints 3.1.6's layout;
#     the flags are checked against `tracekit report -l` for the lines
#     without a file prefix), and the one letter of sched_switch's
#     prev_state that libtraceevent 1.8 names differently from 1.7 (see
#     tests/integration/test-tc-new-files.sh); a text without those columns
#     (--first-event) is compared whole;
#   - where Debian's trace-cmd 3.1.6 is installed, tracekit's text must
#     equal what it prints live, byte for byte (3.1.6 corrects guest times
#     the same way).
# Then: dump decodes the options, convert keeps them, and a damaged
# TIME_SHIFT or GUEST is one warning line naming file and offset (exit 1,
# the events still printed; --strict: exit 1, none). No tracefs is touched.
set -u
. "$(dirname "$0")/../lib.sh"

DATA=$TK_SOURCE_DIR/tests/data/guest
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-guest.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

if [ ! -x "$TRACEKIT" ]; then
	echo "tracekit binary not found at $TRACEKIT" >&2
	exit 1
fi
command -v perl >/dev/null 2>&1 || { echo "SKIP: perl is not installed"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }

oracle=
if command -v trace-cmd >/dev/null 2>&1 && trace-cmd --version 2>&1 | grep -q 'version 3\.1\.'; then
	oracle=trace-cmd
fi

# The 3.4 text without its flags column (after "[CPU]", before the time).
strip_flags() { perl -pe 's/^(.*?\[\d{3,}\]) \S{5}(?= +\d+\.\d{6,9}: )/$1/'; }
mask_state() { perl -pe 's/(\[\d+\] )\S+( ==> )/$1?$2/ if /: sched_switch: /'; }
flags_34() { perl -ne 'print "$1\n" if /^ *\S+-\d+ +\[\d{3,}\] (\S{5}) +\d+\.\d{6}: /' "$1"; }
flags_l() { perl -ne 'print "$1\n" if /^ *\S+-\d+ +\d+(\S{5}) +\d+\.\d{6}: /' "$1"; }
first_diff() { diff "$1" "$2" | sed -n '2p;4p' | cut -c1-160 | tr '\n' '|'; }

# case NAME EXPECTED ARGS...: tracekit report ARGS against EXPECTED (3.4's text).
case_34() {
	local name=$1 exp=$DATA/$2
	shift 2
	(cd "$DATA" && "$TRACEKIT" report "$@") >"$tmp/tk.txt" 2>"$tmp/tk.err"
	local rc=$?
	# The host's kernel counted lost events: report says so on stderr, exit 0.
	if [ "$rc" -ne 0 ]; then
		fail "$name: tracekit report exits 0" "rc=$rc $(head -n 2 "$tmp/tk.err")"
		return
	fi
	strip_flags <"$exp" | mask_state >"$tmp/exp.txt"
	mask_state <"$tmp/tk.txt" >"$tmp/got.txt"
	if cmp -s "$tmp/exp.txt" "$tmp/got.txt"; then
		pass "$name: the text trace-cmd 3.4 printed (but its flags column)"
	else
		fail "$name: the text trace-cmd 3.4 printed" "$(first_diff "$tmp/exp.txt" "$tmp/got.txt")"
	fi
	if grep -q ': sched_switch: ' "$tmp/tk.txt"; then
		# Every other line is compared with the letter: prev_state is the only mask.
		grep -v ': sched_switch: ' "$exp" | strip_flags >"$tmp/exp2.txt"
		grep -v ': sched_switch: ' "$tmp/tk.txt" >"$tmp/got2.txt"
		if cmp -s "$tmp/exp2.txt" "$tmp/got2.txt"; then
			pass "$name: lines other than sched_switch unmasked"
		else
			fail "$name: lines other than sched_switch" \
				"$(first_diff "$tmp/exp2.txt" "$tmp/got2.txt")"
		fi
	fi
	if [ -n "$oracle" ]; then
		(cd "$DATA" && "$oracle" report "$@") >"$tmp/316.txt" 2>/dev/null
		if cmp -s "$tmp/316.txt" "$tmp/tk.txt"; then
			pass "$name: what trace-cmd 3.1.6 prints, byte for byte"
		else
			fail "$name: what trace-cmd 3.1.6 prints" "$(first_diff "$tmp/316.txt" "$tmp/tk.txt")"
		fi
	fi
}

case_34 "merge (interpolated, uncompressed)" merge-none.report-3.4.txt -i host-none.dat -i guest-none.dat
case_34 "merge (stepped, scaled, zstd)" merge-zstd.report-3.4.txt -i host-zstd.dat -i guest-zstd.dat
case_34 "guest alone" guest-none.dat.report-3.4.txt -i guest-none.dat
case_34 "guest alone, -t" guest-zstd-t.report-3.4.txt -t -i guest-zstd.dat
case_34 "merge, --ts-offset on the guest" merge-zstd-tsoffset.report-3.4.txt \
	-i host-zstd.dat -i guest-zstd.dat --ts-offset -3000000
case_34 "merge, --align-ts" merge-none-align.report-3.4.txt --align-ts -i host-none.dat -i guest-none.dat

# No flags column in this listing: the whole text.
(cd "$DATA" && "$TRACEKIT" report --cpus --first-event --last-event -i guest-zstd.dat) \
	>"$tmp/fl.txt" 2>&1
if cmp -s "$DATA/guest-zstd-first-last.report-3.4.txt" "$tmp/fl.txt"; then
	pass "guest --first-event --last-event: trace-cmd 3.4's text, byte for byte"
else
	fail "guest --first-event --last-event" \
		"$(first_diff "$DATA/guest-zstd-first-last.report-3.4.txt" "$tmp/fl.txt")"
fi

# The flags column of 3.4's guest text is what report -l prints.
(cd "$DATA" && "$TRACEKIT" report -l -i guest-none.dat) >"$tmp/l.txt" 2>/dev/null
flags_34 "$DATA/guest-none.dat.report-3.4.txt" >"$tmp/f34"
flags_l "$tmp/l.txt" >"$tmp/fl"
if [ -s "$tmp/f34" ] && cmp -s "$tmp/f34" "$tmp/fl"; then
	pass "guest alone: 3.4's flags column is report -l's"
else
	fail "guest alone: 3.4's flags column" "$(first_diff "$tmp/f34" "$tmp/fl")"
fi

# Without the correction the guest's records sit at its raw times, after the host's.
(cd "$DATA" && "$TRACEKIT" report --raw-ts -i guest-none.dat) >"$tmp/raw.txt" 2>/dev/null
if grep -q '^  make-sample.sh-5412  \[001\]1645' "$tmp/raw.txt"; then
	pass "--raw-ts: the guest's own counts, uncorrected"
else
	fail "--raw-ts: the guest's own counts" "$(sed -n 2p "$tmp/raw.txt")"
fi

# dump decodes the three options.
run dump "$DATA/guest-none.dat"
check "dump: guest's TIME_SHIFT head" out_has \
	'12 TIME_SHIFT .*host_trace_id=0x8b59fad606b0e233 flags=0x1(interpolate) cpus=2 samples=10 fraction_bits=yes'
check "dump: guest's samples, sorted" out_has '^    cpu 1: 5 samples'
check "dump: TSC2NSEC" out_has 'tsc2nsec: mult=1056964608 shift=30 offset=123456789'
run dump "$DATA/host-zstd.dat"
check "dump: host's GUEST option" out_has \
	'13 GUEST .*name="tkguest" trace_id=0x6775657374c0ffee vcpus=2 pids=0:4242,1:4243'
check "dump: host's guest map" out_has '^    vcpu 1: host pid 4243'

# convert keeps them: the copies (v7 zstd, v6) print the same merge.
for v in 6 7; do
	"$TRACEKIT" convert --file-version $v "$DATA/guest-none.dat" -o "$tmp/guest-none.dat" \
		>/dev/null 2>&1
	cp "$DATA/host-none.dat" "$tmp/host-none.dat"
	(cd "$tmp" && "$TRACEKIT" report -i host-none.dat -i guest-none.dat) >"$tmp/conv.txt" 2>/dev/null
	(cd "$DATA" && "$TRACEKIT" report -i host-none.dat -i guest-none.dat) >"$tmp/orig.txt" 2>/dev/null
	if cmp -s "$tmp/orig.txt" "$tmp/conv.txt"; then
		pass "convert to v$v keeps TIME_SHIFT and TSC2NSEC"
	else
		fail "convert to v$v keeps them" "$(first_diff "$tmp/orig.txt" "$tmp/conv.txt")"
	fi
done

# Damage: OPTION FIELD VALUE patches the u32 at FIELD bytes into the option's payload.
patch_option() {
	local file=$1 name=$2 field=$3 value=$4 off
	off=$("$TRACEKIT" dump "$file" | awk -v n="$name" '$3 == n { print $1; exit }')
	python3 - "$file" $((off + 6 + field)) "$value" <<'EOF'
import struct, sys
path, at, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "r+b") as f:
    f.seek(at)
    f.write(struct.pack("<I", value))
EOF
	printf '0x%x' $((off + 6 + field))
}

cp "$DATA/guest-none.dat" "$tmp/g1.dat"
at=$(patch_option "$tmp/g1.dat" TIME_SHIFT 16 65535)
run report "$tmp/g1.dat"
check "TIME_SHIFT samples past the option: exit 1" rc_is 1
check "TIME_SHIFT damage: one warning naming file and offset" err_has \
	"^tracekit report: $tmp/g1.dat: offset $at: TIME_SHIFT option: a CPU's samples run past the option (skipped 350 bytes, events lost unknown)$"
check "TIME_SHIFT damage: one line" err_lines 1
check "TIME_SHIFT damage: the events still printed" test "$(wc -l <"$tmp/out")" -eq 251
run report --strict "$tmp/g1.dat"
check "TIME_SHIFT damage, --strict: exit 1, no events" \
	eval '[ "$rc" -eq 1 ] && [ ! -s "$tmp/out" ] && err_lines 1'

cp "$DATA/guest-none.dat" "$tmp/g2.dat"
at=$(patch_option "$tmp/g2.dat" TIME_SHIFT 12 100000)
run dump "$tmp/g2.dat"
check "TIME_SHIFT CPU count past the option: dump warns, exit 1" \
	eval '[ "$rc" -eq 1 ] && err_has "offset $at: TIME_SHIFT option: CPU count runs past the option"'

cp "$DATA/host-none.dat" "$tmp/h1.dat"
at=$(patch_option "$tmp/h1.dat" GUEST 16 9)
run report "$tmp/h1.dat"
check "GUEST vCPUs past the option: one warning, exit 1" \
	eval '[ "$rc" -eq 1 ] && err_has "^tracekit report: $tmp/h1.dat: offset $at: GUEST option: vCPU list runs past the option (skipped 42 bytes, events lost unknown)$"'
cp "$DATA/host-none.dat" "$tmp/h2.dat"
at=$(patch_option "$tmp/h2.dat" GUEST 20 7)
run convert "$tmp/h2.dat" -o "$tmp/h2c.dat"
check "GUEST vCPU id past the count: convert warns, exit 1" \
	eval '[ "$rc" -eq 1 ] && err_has "offset $at: GUEST option: a vCPU id is not below the vCPU count"'

finish
