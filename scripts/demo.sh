#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# demo.sh BUILDDIR: a short tour of tracekit on a real trace.
#
#   1. record: 2 seconds of scheduler and IRQ events on this machine around a
#      small command, with tracekit record (root and tracefs needed); when
#      tracing is not permitted, say why and use the committed
#      tests/data/sample-v7-zstd.dat instead;
#   2. the first lines of its text: tracekit report;
#   3. a summary of it: tracekit report --stat (per-event counts, per-CPU
#      lost events), or tracekit dump --summary when report lacks --stat;
#   4. tracekit convert to v6 and to v7 without compression;
#   5. tracekit dump of the v6 copy: same events, same page checksums;
#   6. trace-cmd report on the converted file, when trace-cmd is installed:
#      the rest of the ecosystem reads what tracekit writes.
#
# Exit status: 0 when every step worked, 1 otherwise.
set -u

src=$(cd "$(dirname "$0")/.." && pwd)
builddir=${1:-build}
tracekit=$builddir/src/cli/tracekit

bold=
plain=
if [ -t 1 ]; then
	bold=$(printf '\033[1m')
	plain=$(printf '\033[0m')
fi

heading() { printf '\n%s== %s ==%s\n' "$bold" "$*" "$plain"; }
say() { printf '%s\n' "$*" | fold -s -w 100; }
die() { echo "demo: $*" >&2; exit 1; }
# show CMD...: print the command as a user would type it, then run it.
show() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

[ -x "$tracekit" ] || die "$tracekit not found: build first (make, or ninja -C $builddir)"
case $tracekit in /*) ;; *) tracekit=$PWD/$tracekit ;; esac
app=$builddir/examples/app-events
case $app in /*) ;; *) app=$PWD/$app ;; esac
# The commands below are shown as a user types them, with "tracekit" on PATH.
tracekit() { "$tracekit" "$@"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tracekit-demo.XXXXXX") || die "cannot make a temporary directory"
trap 'rm -rf "$tmp"' EXIT

# ------------------------------------------------------------------ 1. a trace

heading "1. Recording: tracekit record"
# Work in the temporary directory so that the commands below read as typed.
cd "$tmp" || die "cannot enter $tmp"
sample=trace.dat
fallback_reason=
tracefs=/sys/kernel/tracing
if [ "$(id -u)" -ne 0 ]; then
	fallback_reason="not running as root, and the kernel lets only root trace"
else
	if [ ! -e "$tracefs/tracing_on" ]; then
		mount -t tracefs nodev "$tracefs" 2>/dev/null
	fi
	if [ ! -e "$tracefs/tracing_on" ]; then
		fallback_reason="tracefs is not mounted at $tracefs and cannot be mounted"
	fi
fi
if [ -z "$fallback_reason" ]; then
	say "Two seconds of scheduler and IRQ events around a small command (a few"
	say "directory walks with pauses), in a tracefs instance of tracekit's own that is"
	say "removed at the end. The summary counts events and lost events per CPU."
	echo
	workload='for i in 1 2 3 4 5 6; do ls -R /usr/share/doc >/dev/null 2>&1; sleep 0.3; done'
	printf '%s$ tracekit record -e sched -e irq --duration 2 -o %s -- sh -c "%s"%s\n' \
		"$bold" "$sample" "$workload" "$plain"
	if tracekit record -e sched -e irq --duration 2 -o "$sample" -- sh -c "$workload" \
		2>"$tmp/record.err"; then
		sed 's/^/    /' "$tmp/record.err"
	else
		sed 's/^/    /' "$tmp/record.err"
		fallback_reason="tracekit record failed (its message is above)"
		rm -f "$sample"
	fi
fi
if [ -n "$fallback_reason" ]; then
	bundled=$src/tests/data/sample-v7-zstd.dat
	[ -f "$bundled" ] || die "no trace to show: $fallback_reason, and $bundled is missing"
	say "Cannot trace here: $fallback_reason."
	say "Using the bundled sample tests/data/sample-v7-zstd.dat instead."
	cp "$bundled" "$sample" || die "cannot copy $bundled"
fi

# ------------------------------------------------------------------ 2. the events

heading "2. The events: tracekit report (the first 20 lines)"
say "The text trace-cmd report prints for the same file, line for line."
echo
tracekit report "$sample" 2>/dev/null | head -20 | sed 's/^/    /'
tracekit report -F 'sched_switch:prev_pid>0' "$sample" >/dev/null 2>&1 &&
	say "(-F takes trace-cmd's filters too: tracekit report -F 'sched_switch:prev_pid>0' FILE)"

# ------------------------------------------------------------------ 2. summary

if tracekit report --help 2>/dev/null | grep -q -e '--stat'; then
	heading "3. What happened: tracekit report --stat"
	say "Events per type, and per CPU the events and the events the kernel lost."
	echo
	show tracekit report --stat "$sample" || die "report --stat failed"
else
	heading "3. What the file holds: tracekit dump --summary"
	say "The header facts, how big each metadata part is, and per buffer its pages,"
	say "events and lost events. Every page of every CPU is decompressed and decoded"
	say "to get these counts: exit status 0 means the whole trace is readable."
	echo
	show tracekit dump --summary "$sample" || die "dump --summary failed"
fi

# ------------------------------------------------------------------ 3. convert

heading "4. Converting: to v6, and to v7 without compression"
say "trace-cmd 3.x writes v7 (sections, zstd). Older tools read only v6, and an"
say "uncompressed v7 can be read page by page without decompression. convert"
say "streams the pages, writes a temporary file and renames it when complete."
echo
v6=trace-v6.dat
v7none=trace-v7-none.dat
show tracekit convert "$sample" -o "$v6" --file-version 6 || die "convert to v6 failed"
show tracekit convert "$sample" -o "$v7none" --compression none ||
	die "convert to v7-none failed"

# ------------------------------------------------------------------ 4. dump v6

heading "5. The v6 copy, in full (first 40 lines)"
say "Sections, options and per-CPU lines. The crc32 of each CPU's pages and of"
say "each metadata body is the same as in the original: nothing was lost."
echo
printf '%s$ tracekit dump %s | head -40%s\n' "$bold" "$v6" "$plain"
tracekit dump "$v6" >"$tmp/dump-v6" || die "dump of the v6 copy failed"
head -40 "$tmp/dump-v6"
echo
say "and its buffer lines: per CPU the pages, events, lost events, first and last"
say "raw timestamps and the crc32 of the pages:"
grep -E '^  buffer|^    cpu |^totals:' "$tmp/dump-v6"

tracekit dump "$sample" >"$tmp/dump-orig" || die "dump of the sample failed"
tracekit dump "$v7none" >"$tmp/dump-v7none" || die "dump of the v7-none copy failed"
facts() { grep -E '^    cpu |^totals:' "$1" | grep -v ' pages=0 ' | sed 's/offset=[^ ]* size=[^ ]* //'; }
echo
if [ "$(facts "$tmp/dump-orig")" = "$(facts "$tmp/dump-v6")" ] &&
   [ "$(facts "$tmp/dump-orig")" = "$(facts "$tmp/dump-v7none")" ]; then
	say "Check: events, lost events and page checksums of every CPU are identical in"
	say "the original, the v6 copy and the v7-none copy."
else
	diff <(facts "$tmp/dump-orig") <(facts "$tmp/dump-v6")
	die "the converted files do not carry the same pages"
fi

# ------------------------------------------------------------------ 5. trace-cmd

heading "6. trace-cmd reads the converted file"
if command -v trace-cmd >/dev/null 2>&1; then
	say "The real trace-cmd decodes the events of the v6 copy tracekit wrote:"
	echo
	printf '%s$ trace-cmd report -i %s | head -10%s\n' "$bold" "$v6" "$plain"
	trace-cmd report -i "$v6" >"$tmp/report" 2>"$tmp/report-err" ||
		{ cat "$tmp/report-err" >&2; die "trace-cmd report failed"; }
	head -10 "$tmp/report"
	[ "$(wc -l <"$tmp/report")" -gt 1 ] || die "trace-cmd report printed no events"
else
	say "trace-cmd is not installed: skipping this step."
fi

# ------------------------------------------------------------------ 7. app events

heading "7. Application events between the kernel's: tracekit record --user"
if [ -n "$fallback_reason" ] || [ ! -x "$app" ]; then
	say "Skipped: ${fallback_reason:-$app was not built}."
else
	say "examples/app-events emits events of its own (tracekit/appevent.h) from two"
	say "threads, with getppid() around each; the recorder takes them through shared"
	say "memory, no daemon, into the buffer instance 'user' of the same file:"
	echo
	printf '%s$ tracekit record -e raw_syscalls --user -o app.dat -- app-events 6%s\n' \
		"$bold" "$plain"
	tracekit record -e raw_syscalls --user -q -o app.dat -- "$app" 6 >/dev/null ||
		die "tracekit record --user failed"
	printf '%s$ tracekit report app.dat | grep -A2 -B2 -m2 step:%s\n' "$bold" "$plain"
	tracekit report app.dat 2>/dev/null | grep -v 'NR 230\|NR 202' |
		grep -A2 -B2 -m2 'step:' || die "no application event in app.dat"
fi

heading "Done"
say "See docs/man/tracekit-dump.1 and docs/man/tracekit-convert.1 (man -l FILE)."
