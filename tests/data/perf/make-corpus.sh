#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# make-corpus.sh OUTDIR: record the perf.data corpus of tests/data/perf/ with
# this machine's perf (Debian 12: perf 6.1), one file per perf record option
# that changes what the file holds, and derive the files perf 6.1 cannot
# write (COMPRESSED2, version 1, no EVENT_DESC, a broken callchain). Software
# events only: the machines this project targets have no hardware PMU.
# README.md lists each file with its exact command.
#
# Run it under the tracefs lock (it records): flock /tmp/tracefs.lock ...
# Exit status: 0 done, 77 skipped (not root, no perf), 1 failed.
set -eu
out=${1:?usage: make-corpus.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
command -v perf >/dev/null || { echo "SKIP: perf is not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: perf record needs root here"; exit 77; }
mkdir -p "$out"
# A short busy shell loop: ~70 samples of cpu-clock at perf's 4000 Hz.
loop='i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
rec() {
	local name=$1
	shift
	perf record -q -o "$out/$name.data" "$@" -- sh -c "$loop" >/dev/null 2>&1
}
pipe() {
	local name=$1
	shift
	perf record -q -o - "$@" -- sh -c "$loop" >"$out/$name.data" 2>/dev/null
}
rec plain -e cpu-clock
rec mod-u -e cpu-clock:u
rec mod-k -e task-clock:k
rec mod-ppH -e cpu-clock:ppH
rec two-events -e cpu-clock -e page-faults
rec page-faults -e page-faults -c 1
rec z -z -e cpu-clock
rec g -g -e cpu-clock
rec group-read -e '{cpu-clock,task-clock}:S'
rec group-read-g -g -e '{cpu-clock,task-clock}:S'
rec group-running -e '{cpu-clock,task-clock}:S' --running-time
rec group -e '{cpu-clock,task-clock}'
rec read-one -e cpu-clock:S
rec d -d -e cpu-clock
rec W -W -e cpu-clock
rec k1 -k 1 -e cpu-clock
rec switch-events --switch-events -e cpu-clock
rec namespaces --namespaces -e cpu-clock
rec s -s -e cpu-clock
rec sample-cpu --sample-cpu -e cpu-clock
rec T -T -e cpu-clock
rec R -R -e cpu-clock
rec phys-data --phys-data -e cpu-clock
rec data-page-size --data-page-size -e cpu-clock
rec code-page-size --code-page-size -e cpu-clock
rec all-cgroups --all-cgroups -e cpu-clock
perf record -q -o "$out/tracepoints.data" -e sched:sched_process_exec \
	-e sched:sched_process_exit -- true >/dev/null 2>&1
perf record -q -o "$out/dwarf.data" --call-graph dwarf,1024 -e cpu-clock -- true >/dev/null 2>&1
pipe pipe -e cpu-clock
pipe pipe-g -g -e cpu-clock
pipe pipe-mod -e cpu-clock:u -e task-clock:k
pipe pipe-z -z -e cpu-clock
pipe pipe-group-read -e '{cpu-clock,task-clock}:S'
pipe pipe-tracepoint-g -g -e cpu-clock -e sched:sched_process_exit
# Derived: what perf 6.1 does not write, made from the files above.
python3 "$here/to-compressed2.py" "$out/pipe-z.data" "$out/pipe-compressed2.data"
python3 "$here/to-v1.py" "$out/plain.data" "$out/v1-attr64.data" 64
python3 "$here/to-v1.py" "$out/plain.data" "$out/v1-attr72.data" 72
python3 "$here/to-v1.py" "$out/two-events.data" "$out/attr64.data" 64 PERFILE2
python3 "$here/to-v1.py" "$out/two-events.data" "$out/attr96.data" 96 PERFILE2
python3 "$here/strip-feature.py" "$out/mod-u.data" "$out/no-desc-mod-u.data" 12
python3 "$here/strip-feature.py" "$out/mod-ppH.data" "$out/no-desc-mod-ppH.data" 12
python3 "$here/strip-feature.py" "$out/mod-k.data" "$out/no-desc-mod-k.data" 12
python3 "$here/grow-attr.py" "$out/plain.data" "$out/attr136.data" 8
python3 "$here/grow-attr.py" "$out/pipe-group-read.data" "$out/pipe-attr152.data" 24
python3 "$here/kernel-module.py" "$out/mod-k.data" "$out/kmod.data"
python3 "$here/kernel-module.py" "$out/mod-k.data" "$out/kmod-kernel-first.data" kernel-first
# usbdemo.ko's module (README.md); its kernel address is one of the recording kernel's.
python3 "$here/kernel-module-ko.py" "$out/plain.data" "$out/kmod-ko.data"
python3 "$here/kernel-module-ko.py" "$out/g.data" "$out/kmod-ko-g.data"
python3 "$here/kernel-module-ko.py" "$out/plain.data" "$out/kmod-ko-nobid.data" no-build-id
for m in neg1 guest hv zero; do
	python3 "$here/chain-edit.py" "$out/g.data" "$out/chain-$m.data" "$m"
done
ls -l "$out"
