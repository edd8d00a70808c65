#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-newer-perf: perf.data files Debian's perf 6.1 cannot read, whose
# text a newer perf printed (issue 16). tests/data/perf/perf612/F.txt is
# what perf 6.12.95 (Debian bookworm-backports' linux-perf, unpacked by
# hand; see tests/data/perf/README.md) printed for F with no build-id
# cache: public-formbench-perf68.data (a real perf 6.8 recording perf 6.1
# refuses), attr136.data (attrs of 136 bytes) and pipe-attr152.data.
# tracekit prints in perf 6.1's columns, so the comparison squeezes runs
# of blanks: perf 6.12 widened the pid column to 7. On attr136.data, perf
# 6.12 names a slot of libc's PLT ("malloc@plt+0x0") where 6.1, and
# tracekit, print [unknown] (both name dash's PLT slots: 6.12 reads libc's
# .plt.sec too); that is the one other difference allowed.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
tmp=$(mktemp -d /tmp/tk-anywhere-newer-perf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/none
mkdir -p "$HOME"

squeeze() { tr -s ' \t' ' ' <"$1"; }

for f in public-formbench-perf68.data pipe-attr152.data attr136.data; do
	run report "$data/$f"
	squeeze "$tmp/out" >"$tmp/tk.txt"
	# perf 6.12's names for libc's PLT slots are perf 6.1's [unknown] (see above).
	squeeze "$data/perf612/$f.txt" |
		sed -E 's|[A-Za-z0-9_]+@plt\+0x[0-9a-f]+ (\(/usr/lib/x86_64-linux-gnu/libc\.so\.6\))|[unknown] \1|' \
			>"$tmp/p612.txt"
	check "$f: the samples perf 6.12 prints, in perf 6.1's columns" \
		eval 'rc_is 0 && [ -s "$tmp/tk.txt" ] && cmp -s "$tmp/p612.txt" "$tmp/tk.txt"'
done
n=$(grep -c '@plt+0x[0-9a-f]* (/usr/lib/x86_64-linux-gnu/libc.so.6)' "$data/perf612/attr136.data.txt")
check "attr136.data: perf 6.12 names one slot of libc's PLT, the one difference allowed" [ "$n" -eq 1 ]
finish
