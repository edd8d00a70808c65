#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# public-files: every FILE.dat under tests/data/public/ prints, with
# `tracekit report`, exactly FILE.dat.report-3.1.6.txt, what Debian's
# trace-cmd 3.1.6 printed (tests/data/public/README.md says how each was
# made). On one thread and on three, since the print pool's workers decide
# function_graph leaves from the merge's log.
#
# Then, with make-funcgraph (MAKE_FUNCGRAPH, built beside the tests), two
# bigger made-up files too big to commit: --big (four CPUs, many print
# jobs, so jobs cut between entries and their exits) must print what
# trace-cmd prints when it is installed, and the same on three threads as
# on one; --migrate (returns on another CPU, which trace-cmd 3.1.6
# mishandles) the same on three threads as on one. Nothing here needs
# tracefs.
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

MAKE_FUNCGRAPH=${MAKE_FUNCGRAPH:-$TK_SOURCE_DIR/build/tests/make-funcgraph}
if [ ! -x "$MAKE_FUNCGRAPH" ]; then
	skip "made-up big files" "no make-funcgraph at $MAKE_FUNCGRAPH"
	finish
fi
"$MAKE_FUNCGRAPH" --big 150000 "$tmp/big.dat" && "$MAKE_FUNCGRAPH" --migrate "$tmp/mig.dat" ||
	fail "make-funcgraph" "could not write the files"
for b in big mig; do
	run report -j 1 "$tmp/$b.dat"
	cp "$tmp/out" "$tmp/$b.j1"
	check "$b.dat -j 1 prints" rc_is 0
	run report -j 3 "$tmp/$b.dat"
	if [ "$rc" -eq 0 ] && cmp -s "$tmp/out" "$tmp/$b.j1"; then
		pass "$b.dat: -j 3 prints what -j 1 prints"
	else
		fail "$b.dat -j 3" "rc=$rc; $(diff "$tmp/$b.j1" "$tmp/out" | head -8)"
	fi
done
if command -v trace-cmd >/dev/null; then
	trace-cmd report -i "$tmp/big.dat" >"$tmp/big.ref" 2>/dev/null
	if cmp -s "$tmp/big.ref" "$tmp/big.j1"; then
		pass "big.dat: trace-cmd's text"
	else
		fail "big.dat" "$(diff "$tmp/big.ref" "$tmp/big.j1" | head -8)"
	fi
else
	skip "big.dat against trace-cmd" "trace-cmd is not installed"
fi
finish
