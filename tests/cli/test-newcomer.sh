#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# newcomer: the README's two set-up commands keep their promises (issue
# 17's "small untruths"). `make demo` (scripts/demo.sh over a build) shows
# tracekit's own event text, a screenful of `tracekit report` lines, before
# any summary, and ends with exit 0; `make check` streams each test's
# "N/M name OK" line as the test ends rather than printing everything at the
# end; and --help and the README say which trace-cmd reads which codec. The demo records from tracefs when it may (run one at a time: it
# uses the tracefs lock's tests' slot) and otherwise reports the committed
# sample; either way the checks are the same.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-newcomer.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
build=${TK_BUILD_DIR:-$TK_SOURCE_DIR/build}

if [ ! -x "$build/src/cli/tracekit" ]; then
	skip "make demo" "no tracekit in $build"
else
	(cd "$TK_SOURCE_DIR" && timeout 300 scripts/demo.sh "$build") >"$tmp/demo.out" 2>"$tmp/demo.err"
	rc=$?
	check "make demo's script exits 0" eval '[ "$rc" = 0 ] || { tail -5 "$tmp/demo.err"; false; }'
	# The lines between the report heading and the next heading.
	awk '/^.*== 2\. The events: tracekit report/ { on = 1; next } /^.*== 3\./ { on = 0 } on' \
		"$tmp/demo.out" >"$tmp/events"
	events=$(grep -c -E '\[[0-9]{3}\] +[0-9]+\.[0-9]{6}: ' "$tmp/events")
	check "make demo shows tracekit report's event lines before the summaries ($events lines)" \
		test "$events" -ge 15
	first_report=$(grep -n -m1 '== 2\. The events' "$tmp/demo.out" | cut -d: -f1)
	first_summary=$(grep -n -m1 '== 3\. What' "$tmp/demo.out" | cut -d: -f1)
	check "make demo: the event text comes before the summary" \
		test "${first_report:-999999}" -lt "${first_summary:-0}"
fi

# The codecs: what --help and the README promise about trace-cmd reading
# tracekit's files must say that Debian 12's trace-cmd 3.1.6 reads no zlib.
run convert --help
check "convert --help says Debian 12's trace-cmd 3.1.6 has zstd but no zlib" \
	eval 'rc_is 0 && tr -s " \n" " " <"$tmp/out" | grep -q "3.1.6 has zstd but no zlib"'
check "the README says which trace-cmd builds read zlib" \
	grep -q "with zlib only when it was built" "$TK_SOURCE_DIR/README.md"

# make check's recipe: each test's line goes through a line-buffered filter
# as it ends (progress), and the full log stays in a file.
if command -v make >/dev/null 2>&1; then
	make -s -n -C "$TK_SOURCE_DIR" check BUILD="$build" >"$tmp/recipe" 2>&1
	check "make check streams each test's N/M line as it ends" \
		eval "grep -q -- \"--line-buffered -E '\\^ \\*\\[0-9\\]+/\\[0-9\\]+ '\" \"\$tmp/recipe\""
else
	skip "make check's progress" "make is not installed"
fi
finish
