#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# perf22 (issue 22): the %ps names of perf.data tracepoint samples come
# from the kept copy of the kernel image's lines of /proc/kallsyms
# (.tk-kallsyms/<kernel build id> in the build-id cache, ksyms-copy.c)
# instead of the whole /proc/kallsyms, which the kernel formats anew for
# each reader. On timer events of this machine (timer_start prints
# "function=%ps"), ksyms-copy-lib.sh's checks: every report prints what
# perf script prints, with no copy (the first keeps one), with the copy
# (really read), with a damaged copy and one of another load address, and
# without a cache directory.
set -u
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/ksyms-copy-lib.sh"
ksyms_copy_setup tk-perf-ksyms-copy

perf record -q -e timer:timer_start -e timer:hrtimer_start -a -o "$dir/t.data" -- \
	sleep 0.5 >/dev/null 2>&1 || { echo "SKIP: perf record of timer events failed"; exit 77; }
kbid=$(perf buildid-list -i "$dir/t.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
[ -n "$kbid" ] || kbid=$(perf buildid-list -k 2>/dev/null)
[ -n "$kbid" ] || { echo "SKIP: no kernel build id"; exit 77; }
perf script -i "$dir/t.data" >"$dir/perf.txt" 2>/dev/null || { fail "perf script"; finish; }
grep -q 'function=[a-z_]' "$dir/perf.txt" || { echo "SKIP: no timer function named"; exit 77; }

printed_names() { grep -o 'function=[a-z_][a-z0-9_]*' "$1" | sed 's/^function=//'; }
shows_name() { grep -q "function=$1" "$2"; }

ksyms_copy_checks "$dir/t.data" "$kbid"
finish
