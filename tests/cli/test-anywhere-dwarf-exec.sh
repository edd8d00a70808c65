#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-dwarf-exec: --call-graph dwarf stacks of programs a shell
# exec'd (issue 16). tests/data/perf/exec-loop/exec-loop.data records
# `sh -c 'for i in 1 2 3 4 5 6; do ./w 20000; done'` (README.md there).
# perf 6.1 unwinds the stacks of some of the six w processes to _start
# and ends every stack of the others at __libc_start_call_main: it
# looks for libc's .eh_frame_hdr from the lowest map of libc in the
# process, and an exec'd process keeps the shell's maps, so where the
# shell's libc lies below w's, perf reads the shell's table, finds no FDE
# for the frame and steps by the frame pointer, which holds data
# (src/lib/symbols/unwind.c, perf_eh_table()). tracekit report must print
# what perf script prints, byte for byte, with and without --no-inline.
#
# w is committed beside the file and found by its build id in a build-id
# cache made for the test; libc and ld.so are this machine's: the test
# skips when their build ids are not the recorded ones (libc's is not in
# the file, which lists only binaries a sample hit: README.md gives it).
# Nothing here records or changes tracefs.
set -u
. "$(dirname "$0")/../lib.sh"
dir=$TK_SOURCE_DIR/tests/data/perf/exec-loop
data=$dir/exec-loop.data
libc=/usr/lib/x86_64-linux-gnu/libc.so.6
libc_bid=93ac61ec5a8eb1396f9fbd350e3169a558528a40
if ! command -v perf >/dev/null; then
	echo "SKIP: perf is not installed (perf script is the oracle)"
	exit 77
fi
tmp=$(mktemp -d /tmp/tk-anywhere-dwarf-exec.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME/.debug"

# The binaries the recording takes from this machine must be the recorded ones.
bid_of() { perf buildid-list -i "$1" 2>/dev/null; }
if [ "$(bid_of "$libc")" != "$libc_bid" ]; then
	echo "SKIP: $libc here is not the recorded one (build id $libc_bid)"
	exit 77
fi
perf buildid-list -i "$data" >"$tmp/bids" 2>/dev/null || fail "perf buildid-list -i exec-loop.data failed"
while read -r bid path; do
	case $path in
	/tmp/tk-exec-loop/w | \[*) continue ;;
	esac
	if [ "$(bid_of "$path")" != "$bid" ]; then
		echo "SKIP: $path here is not the recorded one (build id $bid)"
		exit 77
	fi
done <"$tmp/bids"
grep -q ' /tmp/tk-exec-loop/w$' "$tmp/bids" || fail "exec-loop.data does not list w's build id"
perf buildid-cache -a "$dir/w" >/dev/null 2>&1 || fail "perf buildid-cache -a w failed"

# The last frame of each stack: "PID FRAME-LINE".
stack_ends() {
	awk 'BEGIN { RS = "" } { n = split($0, l, "\n"); split(l[1], h, " "); print h[2], l[n] }' "$1"
}

# compare NAME [OPTIONS...]: perf script and tracekit report print the same text.
compare() {
	local name=$1
	shift
	perf script "$@" -i "$data" >"$tmp/$name.perf" 2>/dev/null || fail "$name: perf script failed"
	run report --cache-dir "$HOME/.debug" "$@" "$data"
	cp "$tmp/out" "$tmp/$name.tk"
	if rc_is 0 && [ -s "$tmp/$name.perf" ] && cmp -s "$tmp/$name.perf" "$tmp/$name.tk"; then
		pass "$name: tracekit report prints what perf script${*:+ $*} prints"
	else
		fail "$name: tracekit report differs from perf script${*:+ $*} (rc=$rc)" \
			"$(diff "$tmp/$name.perf" "$tmp/$name.tk" | head -20; head -3 "$tmp/err")"
	fi
}

compare inline
compare noinline --no-inline

# What the comparison stands on: perf ends the stacks of some w processes
# at __libc_start_call_main and unwinds the others to _start.
stack_ends "$tmp/inline.perf" >"$tmp/ends"
by() { awk -v re="$1" '$0 ~ re { print $1 }' "$tmp/ends" | sort -u >"$2"; }
by ' __libc_start_call_main[+]0x[0-9a-f]+ [(]/usr/lib/x86_64-linux-gnu/libc[.]so[.]6[)]$' "$tmp/short"
by ' _start[+]0x[0-9a-f]+ [(]/tmp/tk-exec-loop/w[)]$' "$tmp/full"
short=$(wc -l <"$tmp/short")
full=$(wc -l <"$tmp/full")
check "perf ends the stacks of $short w processes at __libc_start_call_main, of $full at w's _start" \
	eval '[ "$short" -ge 1 ] && [ "$full" -ge 1 ]'
# Each process one way only: the rule is the process's maps, not the sample's.
check "no process has stacks ending both ways" eval '[ -z "$(comm -12 "$tmp/short" "$tmp/full")" ]'
finish
