#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# perf-corpus: perf.data files from every perf record option that changes
# the file (issue 16), tests/data/perf/ (README.md there says how each was
# made). For each FILE.data `tracekit report FILE.data` must print byte for
# byte what `perf script -i FILE.data` (Debian's perf 6.1) prints, and exit
# 0. Files perf 6.1 cannot read are compared with the file they were made
# from: pipe-compressed2 (perf 6.16's COMPRESSED2) with pipe-z, attr136 and
# pipe-attr152 (attrs longer than perf 6.1's) with theirs. dwarf.data
# is only opened: DWARF unwinding is checked elsewhere. The count of
# identical files out of all is printed. --max-stack N prints what perf
# script --max-stack N prints.
#
# Then, when tracefs can be read: a tracepoint file without TRACING_DATA
# whose second event's recorded id is the first one's decodes the first
# with this machine's format and prints the second by its recorded name,
# without fields, with a warning (never with another event's format).
#
# Symbols resolve on the machine that runs the test (perf and tracekit
# alike, by the recorded build ids); HOME is a fresh directory so that
# neither reads a ~/.debug the other does not. Nothing here records or
# changes tracefs.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
if ! command -v perf >/dev/null; then
	echo "SKIP: perf is not installed"
	exit 77
fi
tmp=$(mktemp -d /tmp/tk-perf-corpus.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME/.debug"

oracle_of() {
	case $1 in
	pipe-compressed2) echo pipe-z ;;
	attr136) echo plain ;;
	pipe-attr152) echo pipe-group-read ;;
	*) echo "$1" ;;
	esac
}

same=0
total=0
for f in "$data"/*.data; do
	name=$(basename "$f" .data)
	total=$((total + 1))
	run report "$f"
	if [ "$name" = dwarf ]; then
		check "$name: opens and prints" eval 'rc_is 0 && [ -s "$tmp/out" ]'
		continue
	fi
	if [ -f "$data/perf612/$name.data.txt" ] && [ "$(oracle_of "$name")" = "$name" ]; then
		# perf 6.1 refuses it (a newer perf's file): anywhere-newer-perf
		# compares it with the text perf 6.12 printed.
		total=$((total - 1))
		continue
	fi
	o=$data/$(oracle_of "$name").data
	if ! perf script -i "$o" >"$tmp/perf.out" 2>"$tmp/perf.err"; then
		fail "$name: perf script failed" "$(head -3 "$tmp/perf.err")"
		continue
	fi
	if rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"; then
		same=$((same + 1))
		pass "$name: report prints what perf script prints"
	else
		fail "$name: report differs from perf script (rc=$rc)" \
			"$(diff "$tmp/perf.out" "$tmp/out" | head -8; head -3 "$tmp/err")"
	fi
done
echo "identical: $same / $((total - 1)) (dwarf.data only opened)"

# --max-stack cuts as perf's does; a ~0 past the cut (chain-neg1 has it at
# entry 3) is not looked at, so the chain stays.
for f in g chain-neg1 group-read-g; do
	for n in 1 3; do
		perf script --max-stack "$n" -i "$data/$f.data" >"$tmp/perf.out" 2>/dev/null
		run report --max-stack "$n" "$data/$f.data"
		check "$f --max-stack $n: report prints what perf script prints" \
			eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
	done
done
run report --max-stack 0 "$data/g.data"
check "--max-stack 0 is a usage error" eval 'rc_is 2 && err_has "max-stack"'

# Kernel modules: "[usbnet]" as dso, its symbols from kallsyms only once
# the kernel's were loaded (kmod-kernel-first), addresses past it unknown.
for f in kmod kmod-kernel-first; do
	perf script --kallsyms "$data/kallsyms-usbnet.txt" -i "$data/$f.data" >"$tmp/perf.out" 2>/dev/null
	run report --kallsyms "$data/kallsyms-usbnet.txt" "$data/$f.data"
	check "$f --kallsyms: report prints what perf script prints" \
		eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
done
check "kmod-kernel-first names the module's symbol" grep -q 'usbnet_probe+0x234 (\[usbnet\])' "$tmp/out"

# A recorded id that names another event here.
root=
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
	[ -r "$d/events/sched/sched_process_exec/id" ] && root=$d && break
done
if [ -z "$root" ] || ! command -v python3 >/dev/null; then
	skip "tracepoint id of another event" "tracefs or python3 not available"
else
	id=$(cat "$root/events/sched/sched_process_exec/id")
	python3 "$data/strip-feature.py" "$data/tracepoints.data" "$tmp/notd.data" 1
	python3 - "$tmp/notd.data" "$id" <<'PY'
import struct, sys
# Both attrs get this boot's id of sched:sched_process_exec.
d = bytearray(open(sys.argv[1], 'rb').read())
asz = struct.unpack_from('<Q', d, 16)[0]
aoff = struct.unpack_from('<Q', d, 24)[0]
for i in range(2):
    struct.pack_into('<Q', d, aoff + i * asz + 8, int(sys.argv[2]))
open(sys.argv[1], 'wb').write(d)
PY
	run report "$tmp/notd.data"
	check "no TRACING_DATA: the named event decodes with this machine's format" \
		out_has 'sched:sched_process_exec: filename='
	check "no TRACING_DATA: an id of another event prints no fields" \
		eval '! grep -q "sched_process_exit: ." "$tmp/out" && out_has "sched:sched_process_exit: $"'
	check "no TRACING_DATA: the mismatch is warned about" \
		err_has "tracepoint sched:sched_process_exit was recorded with id $id, which is sched:sched_process_exec"
fi
finish
