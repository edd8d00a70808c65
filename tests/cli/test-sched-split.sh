#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The scheduler analyses with the perf.data walk shared by both CPUs (a
# helper thread walks chunks ahead; src/lib/analyze/feed.c, "Both CPUs
# walk", TK_FEED_THREADS=split) and with a helper mapping the file in ahead
# ("Mapping in ahead", =ahead) print what one thread prints, byte for
# byte, stderr and exit status too: on bench-perf's sched file (sched_switch and sched_wakeup
# with this kernel's formats, a FINISHED_ROUND every 4096 samples), cut in
# small chunks so that a small file has many, with the helper's busy
# chunks also taken over at once; and, where perf is installed, what perf
# sched prints. Needs bench-perf (the build's) and the kernel's sched
# formats (root); otherwise "SKIP: reason" and exit 77.
set -u
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d /tmp/tk-sched-split.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bench_perf=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}/bench/bench-perf
if [ ! -x "$bench_perf" ]; then
	echo "SKIP: no bench-perf in the build ($bench_perf)"
	exit 77
fi
"$bench_perf" --quick --events 60000 --keep "$tmp/s.data" --tracekit "$TRACEKIT" \
	>"$tmp/gen.txt" 2>&1
gen=$?
if [ "$gen" = 77 ] || [ ! -s "$tmp/s.data" ]; then
	echo "SKIP: bench-perf cannot write the file: $(tail -1 "$tmp/gen.txt")"
	exit 77
fi

# out ENV... -- ARGS...: tracekit's stdout, stderr and status into $tmp/NAME.*
out() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != -- ]; do
		envs+=("$1")
		shift
	done
	shift
	env "${envs[@]}" "$TRACEKIT" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
}

same() { # A B: the two runs printed the same
	cmp -s "$tmp/$1.out" "$tmp/$2.out" && cmp -s "$tmp/$1.err" "$tmp/$2.err" &&
		cmp -s "$tmp/$1.rc" "$tmp/$2.rc"
}

for args in "sched latency" "sched latency -p" "sched latency -s max,pid -C 1" \
	"sched latency --json" "sched map" "sched timehist" "sched timehist -s" \
	"sched timehist -S -w -M" "sched timehist -V --state" "sched timehist -p 3"; do
	# shellcheck disable=SC2086 # the arguments split on purpose
	out one TK_FEED_THREADS=1 -- $args -i "$tmp/s.data"
	# shellcheck disable=SC2086
	out small TK_FEED_THREADS=split TK_FEED_CHUNK=4096 -- $args -i "$tmp/s.data"
	# shellcheck disable=SC2086
	out over TK_FEED_THREADS=split TK_FEED_CHUNK=65536 TK_FEED_STALL_NS=0 -- $args -i "$tmp/s.data"
	# shellcheck disable=SC2086
	out ahead TK_FEED_THREADS=ahead -- $args -i "$tmp/s.data"
	if [ "$(cat "$tmp/one.rc")" = 0 ] && [ -s "$tmp/one.out" ] && same one small &&
		same one over && same one ahead; then
		pass "$args: both CPUs print what one thread prints"
	else
		fail "$args: both CPUs differ from one thread" \
			"rc $(cat "$tmp/one.rc") $(cat "$tmp/small.rc") $(cat "$tmp/over.rc")"
	fi
done

if command -v perf >/dev/null; then
	for args in "sched latency" "sched timehist" "sched timehist -s"; do
		# shellcheck disable=SC2086
		perf $args -i "$tmp/s.data" >"$tmp/perf.out" 2>/dev/null
		# shellcheck disable=SC2086
		out small TK_FEED_THREADS=split TK_FEED_CHUNK=4096 -- $args -i "$tmp/s.data"
		if cmp -s "$tmp/perf.out" "$tmp/small.out"; then
			pass "$args on both CPUs = perf $args"
		else
			fail "$args on both CPUs differs from perf $args"
		fi
	done
else
	skip "the split walk against perf sched" "perf is not installed"
fi

finish
