#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# The flight-recorder commands (start, extract, stop, show, stat, and
# reset -B/--top) as a user types them, without changing tracefs: --help,
# usage errors (exit 2) found before tracefs is touched, and, as root, the
# one-line error (exit 1) for a flight recorder that was never started,
# asked of an instance name no one uses. tests/integration/test-flight.sh
# runs the real start/extract/stop round trip.
#
# Ends with one line "TK-COUNTS: passed=N failed=N skipped=N"; exit status
# 1 if a check failed, 77 if every check was skipped, else 0.

set -u

. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-flight-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

if [ ! -x "$TRACEKIT" ]; then
	echo "FAIL: $TRACEKIT is not an executable"
	echo "TK-COUNTS: passed=0 failed=1 skipped=0"
	exit 1
fi

# A usage error: exit 2, the first stderr line "tracekit CMD: ..." naming $2.
is_usage() { rc_is 2 && head -1 "$tmp/err" | grep -q "^tracekit $1: " && err_has "$2"; }
# An error: exit 1, exactly one stderr line "tracekit CMD: ..." naming $2.
is_error() { rc_is 1 && err_lines 1 && grep -q "^tracekit $1: " "$tmp/err" && err_has "$2"; }

for cmd in start extract stop restart show stat; do
	run "$cmd" --help
	check "$cmd --help prints its usage" \
		eval "rc_is 0 && out_has '^usage: tracekit $cmd' && out_has '--top' && err_empty"
	run "$cmd" --bogus
	check "$cmd: unknown option exits 2" is_usage "$cmd" "--bogus"
	run "$cmd" -B x --top
	check "$cmd: -B and --top exclude each other" is_usage "$cmd" "exclude"
done
run reset --help
check "reset --help names -B and --top" eval "rc_is 0 && out_has '--instance' && out_has '--top'"
run reset -B x --top
check "reset: -B and --top exclude each other" is_usage reset "exclude"

run start
check "start with nothing to trace exits 2" is_usage start "nothing to trace"
run start -e sched sleep 1
check "start takes no command" is_usage start "takes no command"
run start -f 'pid > 0'
check "start: -f needs a preceding -e" is_usage start "preceding -e"
run start -e sched -b 0
check "start: buffer size 0 is refused" is_usage start "buffer size"
run start -e sched -P nope
check "start: a bad pid is refused" is_usage start "invalid pid"
run start -e sched -c
check "start: -c needs -P" is_usage start "give -P"
run extract --file-version 5
check "extract: file version 5 is refused" is_usage extract "6 or 7"
run extract --file-version 6 --compression zstd
check "extract: v6 cannot be compressed" is_usage extract "cannot be compressed"
run extract --compression lz4
check "extract: unknown codec" is_usage extract "lz4"
run extract extra-arg
check "extract takes no argument" is_usage extract "extra-arg"
run show -c one
check "show: a bad CPU is refused" is_usage show "invalid CPU"
check "no output file was made by the usage errors" eval '[ ! -e trace.dat ]'

# Nothing started under this name: one line, exit 1, tracefs untouched.
if [ "$(id -u)" = 0 ] && [ -d /sys/kernel/tracing/instances ]; then
	none=tk-flight-none-$$
	for cmd in extract stop restart show stat; do
		run "$cmd" -B "$none"
		check "$cmd of an instance never started: one-line error, exit 1" \
			is_error "$cmd" "instance $none does not exist"
	done
	run reset -B "$none"
	check "reset -B of an instance never started: one-line error, exit 1" \
		is_error reset "$none"
	check "extract of nothing wrote no file" eval '[ -z "$(ls -A "$tmp" | grep -v "^out$\|^err$")" ]'
else
	skip "errors for a flight recorder never started" "needs root and tracefs"
fi

finish
