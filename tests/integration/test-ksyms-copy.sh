#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The copy of the kernel image's lines of /proc/kallsyms (dwarf21, issue
# 16): the first report of a profile with kernel frames keeps them in the
# build-id cache as .tk-kallsyms/<kernel build id>, later ones read it
# instead of /proc/kallsyms. On a -g profile of dd (kernel frames in most
# samples), ksyms-copy-lib.sh's checks: every report prints what perf
# script prints, with no copy, with the copy (really read), with a damaged
# copy and one of another load address, and without a cache directory.
# (A copy of part of the lines, exact below its end, is the unit test's.)
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ksyms-copy-lib.sh"
ksyms_copy_setup tk-ksyms-copy

perf record -q -N -e cpu-clock -F 4000 -g -o "$dir/k.data" -- \
	dd if=/dev/zero of=/dev/null bs=4k count=400000 >/dev/null 2>&1 ||
	{ fail "perf record -g"; finish; }
kbid=$(perf buildid-list -i "$dir/k.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
[ -n "$kbid" ] || { echo "SKIP: the profile recorded no kernel build id"; exit 77; }
perf script -i "$dir/k.data" >"$dir/perf.txt" 2>/dev/null || { fail "perf script"; finish; }
grep -q '(\[kernel.kallsyms\])' "$dir/perf.txt" || { echo "SKIP: no kernel frame named"; exit 77; }

# Kernel frames: "  ffffffff8104a1b2 name+0x12 ([kernel.kallsyms])".
printed_names() {
	grep -o ' [a-z_][a-z0-9_]*+0x[0-9a-f]* (\[kernel.kallsyms\])' "$1" | sed 's/^ //; s/+0x.*//'
}
shows_name() { grep -q " $1+0x" "$2"; }

ksyms_copy_checks "$dir/k.data" "$kbid"
finish
