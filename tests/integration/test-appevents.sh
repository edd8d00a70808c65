#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# Application events (tracekit/appevent.h) recorded with the kernel's by
# 'tracekit record --user':
#   1. appevent-load emits K events of three types (integers, a string, an
#      array) from several threads and from a SIGUSR1 handler, with getppid()
#      around each: the file holds exactly K, each payload right, none lost,
#      and each event sits after its thread's getppid sys_exit and before
#      its next getppid sys_enter, in 'tracekit report' and in
#      'trace-cmd report' alike (the two print the same lines); with -C mono
#      and with the clock --user picks (x86-tsc where the TSC is invariant);
#   2. 'tracekit convert --to perf' carries them (perf script shows them);
#   3. --user-mode overwrite records too;
#   4. the application SIGKILLed mid-run: what it had committed is in the
#      file (its progress file says how far each thread got);
#   5. --user-pid attaches to a running process, which runs on after.
# Needs root and tracefs; otherwise prints "SKIP: reason", exits 77.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
LOAD=${APPEVENT_LOAD:?APPEVENT_LOAD names the appevent-load program}
if [ "$(id -u)" != 0 ]; then echo "SKIP: recording needs root"; exit 77; fi
if [ ! -d /sys/kernel/tracing/events/raw_syscalls ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	[ -d /sys/kernel/tracing/events/raw_syscalls ] ||
		{ echo "SKIP: no tracefs raw_syscalls events"; exit 77; }
fi
dir=$(mktemp -d /tmp/tk-appevents-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# check REPORT-TEXT PER_THREAD: prints "events bad dups" and the first problems on stderr.
check() {
	awk -v per="$2" '
	function bad(msg) { nbad++; if (nbad <= 5) print "  " msg ": " $0 > "/dev/stderr" }
	{
		for (i = 1; i <= NF; i++) if ($i ~ /^\[[0-9]+\]$/) break
		if (i > NF || i < 2) next
		n = split($(i - 1), p, "-"); tid = p[n]
		ev = $(i + 2); sub(/:$/, "", ev)
		# Only getppid counts: a thread'"'"'s first event creates its buffer (memfd_create,
		# mmap, sendmsg) after the getppid before it, and handlers end in rt_sigreturn.
		if (ev == "sys_enter") {
			state[tid] = "in"
			if ($(i + 4) == 110) { if (pending[tid] == 1) pending[tid] = 0; g[tid] = "in" }
			next
		}
		if (ev == "sys_exit") { state[tid] = "out"; if ($(i + 4) == 110) g[tid] = "out"; next }
		if ($1 != "user:" || (ev != "ints" && ev != "str" && ev != "arr")) next
		events++
		delete f
		for (k = i + 3; k <= NF; k++) {
			split($k, kv, "="); if (kv[2] != "" || $k ~ /=$/) { key = kv[1]; f[key] = kv[2] }
			else if (key == "v") f["v"] = f["v"] " " $k
		}
		t = f["t"]; seq = f["seq"]
		if (state[tid] != "out" || g[tid] != "out") bad("not after a getppid exit")
		pending[tid] = 1
		if ((t, seq) in seen) dups++
		seen[t, seq] = 1
		if (t < 100 && seq >= per) bad("seq out of range")
		if (ev == "ints" && (seq % 3 != 0 || f["a"] != seq * 3 || f["b"] != -seq || f["c"] != seq % 256))
			bad("ints payload")
		if (ev == "str" && (seq % 3 != 1 || f["s"] != "msg-" t "-" seq)) bad("str payload")
		want = sprintf("%.0f %.0f %.0f %.0f", seq, seq * 2, seq + t, 3735879680 + t)
		if (ev == "arr" && (seq % 3 != 2 || f["v"] != want)) bad("arr payload")
	}
	END {
		for (tid in pending) if (pending[tid]) { nbad++; print "  no getppid after the last event of " tid > "/dev/stderr" }
		printf "%d %d %d\n", events, nbad, dups
	}' "$1"
}

# 1. threads and a signal handler, raw_syscalls around each event; the
# clock --user picks (x86-tsc with an invariant TSC), then mono.
threads=3 per=400
one_clock() { # CLOCK-OPTION...: record a.dat and check both reports
	local name=${*:-default clock}
	# -F: only the load's tasks, so that a busy machine cannot fill the kernel's buffers.
	if ! "$TRACEKIT" record -F -e raw_syscalls -e sched:sched_switch --user "$@" -o "$dir/a.dat" -- \
		"$LOAD" $threads $per >"$dir/load.out" 2>"$dir/rec.err"; then
		fail "record --user $*: $(tail -3 "$dir/rec.err")"
		return
	fi
	read -r _ k _ lost <"$dir/load.out"
	if [ "${lost:-x}" != 0 ]; then fail "$name: the application lost $lost events"; fi
	if ! grep -q "application events: .* 0 events lost" "$dir/rec.err" ||
		! grep -q ", 0 events lost$" "$dir/rec.err"; then
		fail "$name: events lost while recording: $(grep lost "$dir/rec.err" | tail -3)"
	fi
	handler=$((k - threads * per))
	[ "$handler" -gt 0 ] || fail "$name: no event came from the signal handler (K=$k)"
	"$TRACEKIT" report "$dir/a.dat" >"$dir/tk.txt" 2>"$dir/tk.err" ||
		fail "$name: tracekit report failed: $(head -3 "$dir/tk.err")"
	read -r n nbad dups < <(check "$dir/tk.txt" $per)
	if [ "$n" = "$k" ] && [ "$nbad" = 0 ] && [ "$dups" = 0 ]; then
		ok "$name: tracekit report: $n application events ($handler from the handler), payloads and getppid pairs right"
	else
		fail "$name: tracekit report: $n events of $k, $nbad wrong, $dups repeated"
	fi
	if command -v trace-cmd >/dev/null; then
		trace-cmd report -i "$dir/a.dat" >"$dir/tc.txt" 2>"$dir/tc.err" ||
			fail "$name: trace-cmd report failed: $(head -3 "$dir/tc.err")"
		read -r n nbad dups < <(check "$dir/tc.txt" $per)
		if [ "$n" = "$k" ] && [ "$nbad" = 0 ] && [ "$dups" = 0 ]; then
			ok "$name: trace-cmd report: $n application events, payloads and getppid pairs right"
		else
			fail "$name: trace-cmd report: $n events of $k, $nbad wrong, $dups repeated"
		fi
		if grep '^user:' "$dir/tc.txt" | cmp -s - <(grep '^user:' "$dir/tk.txt"); then
			ok "$name: tracekit report prints the application events as trace-cmd report does"
		else
			fail "$name: tracekit report and trace-cmd report differ on the application events"
			diff <(grep '^user:' "$dir/tc.txt") <(grep '^user:' "$dir/tk.txt") | head -5
		fi
	else
		echo "SKIP: trace-cmd is not installed (trace-cmd report part)"
	fi
}
one_clock -C mono
one_clock

# 2. perf.data conversion
if "$TRACEKIT" convert --to perf "$dir/a.dat" -o "$dir/a.data" >/dev/null 2>"$dir/cv.err"; then
	if command -v perf >/dev/null; then
		m=$(perf script -i "$dir/a.data" 2>/dev/null | grep -c 'apptest:')
		[ "$m" = "$k" ] && ok "convert --to perf: perf script shows $m application events" ||
			fail "convert --to perf: perf script shows $m application events, want $k"
	fi
else
	fail "convert --to perf failed: $(head -3 "$dir/cv.err")"
fi

# 3. overwrite mode, a small buffer
if "$TRACEKIT" record -e sched:sched_switch --user --user-mode overwrite --user-buffer 64 \
	-o "$dir/o.dat" -- "$LOAD" 2 300 >"$dir/load.out" 2>"$dir/rec.err"; then
	n=$("$TRACEKIT" report "$dir/o.dat" 2>/dev/null | grep -c '^user:')
	[ "$n" -gt 0 ] && ok "--user-mode overwrite: $n application events" ||
		fail "--user-mode overwrite recorded no application event"
else
	fail "record --user-mode overwrite failed: $(tail -3 "$dir/rec.err")"
fi

# 4. SIGKILL mid-run: each thread's events up to what it had committed
if "$TRACEKIT" record -e sched:sched_switch --user -o "$dir/k.dat" -- sh -c \
	"\"$LOAD\" 2 0 \"$dir/progress\" & p=\$!; sleep 0.5; kill -9 \$p; wait \$p; exit 0" \
	>/dev/null 2>"$dir/rec.err"; then
	read -r p0 p1 < <(od -An -t u8 -N 16 "$dir/progress")
	"$TRACEKIT" report "$dir/k.dat" 2>/dev/null >"$dir/k.txt"
	for t in 0 1; do
		want=$([ $t = 0 ] && echo "$p0" || echo "$p1")
		got=$(grep '^user:' "$dir/k.txt" | grep -c " t=$t seq=")
		maxseq=$(grep '^user:' "$dir/k.txt" | grep -o " t=$t seq=[0-9]*" | sed 's/.*=//' | sort -n | tail -1)
		# The kill may fall between an event's commit and the progress store: one more.
		if [ "$want" -gt 0 ] && [ "$got" -ge "$want" ] && [ "$got" -le $((want + 1)) ] &&
			[ "$maxseq" = $((got - 1)) ]; then
			ok "SIGKILL: thread $t committed $want events, the file holds $got (seq 0..$maxseq)"
		else
			fail "SIGKILL: thread $t committed $want events, the file holds $got (last seq $maxseq)"
		fi
	done
else
	fail "record around a SIGKILLed application failed: $(tail -3 "$dir/rec.err")"
fi

# 5. attach to a running process by pid; it outlives the recorder
"$LOAD" 2 0 "$dir/progress2" &
app=$!
sleep 0.3
if "$TRACEKIT" record -e sched:sched_switch --user-pid $app --duration 1 -o "$dir/p.dat" \
	>/dev/null 2>"$dir/rec.err"; then
	sleep 0.3
	n=$("$TRACEKIT" report "$dir/p.dat" 2>/dev/null | grep -c '^user:')
	if [ "$n" -gt 0 ] && kill -0 $app 2>/dev/null && [ ! -e /run/tracekit/$app.sock ]; then
		ok "--user-pid: $n application events of a running process, which runs on"
	else
		fail "--user-pid: $n events, process alive: $(kill -0 $app 2>/dev/null && echo yes || echo no), link left: $(ls /run/tracekit/$app.sock 2>/dev/null)"
	fi
else
	fail "record --user-pid failed: $(tail -3 "$dir/rec.err")"
fi
kill $app 2>/dev/null
wait $app 2>/dev/null

[ $fails -eq 0 ] || exit 1
echo "PASS: application events"
