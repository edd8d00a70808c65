#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# public-files: every FILE.dat under tests/data/public/ prints, with
# `tracekit report`, exactly FILE.dat.report-3.1.6.txt, what Debian's
# trace-cmd 3.1.6 printed (tests/data/public/README.md says how each was
# made). On one thread and on three, since the print pool's workers decide
# function_graph leaves from the merge's log. Nothing here needs tracefs.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DATA=$TK_SOURCE_DIR/tests/data/public

for f in "$DATA"/*.dat; do
	b=$(basename "$f")
	want=$f.report-3.1.6.txt
	if [ ! -f "$want" ]; then
		fail "$b" "no $b.report-3.1.6.txt beside it"
		continue
	fi
	for j in 1 3; do
		run report -j "$j" "$f"
		if [ "$rc" -eq 0 ] && cmp -s "$tmp/out" "$want"; then
			pass "$b -j $j: trace-cmd 3.1.6's text"
		else
			fail "$b -j $j" "rc=$rc; $(diff "$want" "$tmp/out" | head -8)"
		fi
	done
done
finish
