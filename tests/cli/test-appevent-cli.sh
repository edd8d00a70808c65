#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# Application events as a user meets them without tracefs: record's
# --user options in --help and their usage errors (exit 2, found before
# tracefs is touched), and an instrumented program (build/examples/
# app-events) that runs normally without a recorder, and with a
# TRACEKIT_SESSION nobody listens on (one warning, events off, exit 0).
# tests/integration/test-appevents.sh records for real.
#
# Ends with one line "TK-COUNTS: passed=N failed=N skipped=N"; exit status
# 1 if a check failed, 77 if every check was skipped, else 0.

set -u

. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-appevent-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# A usage error: exit 2, the first stderr line "tracekit record: ..." naming $1.
is_usage() { rc_is 2 && head -1 "$tmp/err" | grep -q "^tracekit record: " && err_has "$1"; }

run record --help
check "record --help names the --user options" \
	eval 'rc_is 0 && out_has "--user " && out_has "--user-pid PID" && out_has "--user-buffer KB" && out_has "--user-mode drop|overwrite"'
run record --user -e sched
check "--user without a command or --user-pid is a usage error" eval 'is_usage "--user needs"'
run record --user-mode sometimes -- true
check "--user-mode takes drop or overwrite" eval 'is_usage "drop or overwrite"'
run record --user-buffer 4 -- true
check "--user-buffer below 8 KiB is a usage error" eval 'is_usage "8..3968"'
run record --user-buffer 99999 -- true
check "--user-buffer above 3968 KiB is a usage error" eval 'is_usage "8..3968"'
run record --user-pid nope
check "--user-pid takes a pid" eval 'is_usage "invalid pid"'

app=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}/examples/app-events
if [ -x "$app" ]; then
	env -u TRACEKIT_SESSION "$app" 200 3 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "app-events runs without a recorder: events off, nothing lost" \
		eval 'rc_is 0 && out_has "200 events from 3 threads, 0 lost" && err_empty'
	TRACEKIT_SESSION=$tmp/nobody.sock "$app" 50 >"$tmp/out" 2>"$tmp/err"
	rc=$?
	check "app-events with a session nobody listens on: one warning, runs on" \
		eval 'rc_is 0 && out_has "50 events" && err_lines 1 && err_has "application events are off"'
else
	skip "app-events" "$app was not built"
fi

finish
