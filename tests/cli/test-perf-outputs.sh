#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# perf.data outputs that are not regular files, and damaged perf.data
# inputs, as a user meets them:
#   - convert --to perf onto a FIFO, standard output ("-o -") and a
#     character device made here with mknod: perf's pipe format, read back
#     by tracekit report/dump "-" and, when installed, by perf script -i -;
#     nothing but a regular file is ever unlinked or renamed;
#   - onto a symbolic link (its target is replaced, the link stays) and a
#     directory (refused); a .dat onto a FIFO is refused in one line;
#   - report, dump and convert of a damaged perf.data: one warning line per
#     damaged region, exit 1, what could be read printed; --strict: the
#     old one-line error, exit 1, no events.
# Never touches the system's /dev nodes.
set -u
. "$(dirname "$0")/../lib.sh"
SAMPLE=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat
CORPUS=$TK_SOURCE_DIR/fuzz/corpus/perfdata
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-perf-outputs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# ------------------------------------------------------------- streams

if [ -f "$SAMPLE" ]; then
	"$TRACEKIT" convert -q --to perf "$SAMPLE" -o "$tmp/file.data" 2>/dev/null
	"$TRACEKIT" convert -q --to perf "$SAMPLE" -o - 2>"$tmp/err" | cat >"$tmp/stdout.data"
	rc=${PIPESTATUS[0]}
	check "convert -o - into a pipe (exit 0)" eval 'rc_is 0 && err_empty && [ -s "$tmp/stdout.data" ]'
	run dump "$tmp/stdout.data"
	check "-o - writes pipe mode" eval 'rc_is 0 && out_has "mode=pipe" && out_has "SAMPLE: "'
	"$TRACEKIT" report - <"$tmp/stdout.data" >"$tmp/pipe.rep" 2>"$tmp/err"
	rc=$?
	check "report - reads it from standard input" eval 'rc_is 0 && err_empty && [ -s "$tmp/pipe.rep" ]'

	mkfifo "$tmp/fifo"
	"$TRACEKIT" report - <"$tmp/fifo" >"$tmp/fifo.rep" 2>"$tmp/fifo.err" &
	reader=$!
	run convert -q --to perf "$SAMPLE" -o "$tmp/fifo"
	wait $reader
	check "convert --to perf onto a FIFO (exit 0)" rc_is 0
	check "the FIFO stays a FIFO" test -p "$tmp/fifo"
	check "the reader of the FIFO sees what -o - wrote" cmp -s "$tmp/fifo.rep" "$tmp/pipe.rep"

	if command -v perf >/dev/null; then
		perf script -i "$tmp/file.data" >"$tmp/file.perf" 2>/dev/null
		perf script -i - <"$tmp/fifo" >"$tmp/fifo.perf" 2>"$tmp/fifo.perr" &
		reader=$!
		run convert -q --to perf "$SAMPLE" -o "$tmp/fifo"
		wait $reader
		check "perf script -i - reads the FIFO as it reads the file" eval \
			'rc_is 0 && [ -s "$tmp/file.perf" ] && cmp -s "$tmp/file.perf" "$tmp/fifo.perf"'
		check "report of the stream prints what perf script prints" cmp -s "$tmp/fifo.perf" "$tmp/pipe.rep"
	else
		skip "perf script on the FIFO" "perf is not installed"
	fi

	# A character device of our own: /dev/null's numbers, in the test's directory.
	if mknod "$tmp/null" c 1 3 2>/dev/null; then
		run convert -q --to perf "$SAMPLE" -o "$tmp/null"
		check "convert onto a character device (exit 0)" eval 'rc_is 0 && err_empty'
		check "the device node stays, nothing beside it" eval \
			'test -c "$tmp/null" && ! compgen -G "$tmp/null.tmp.*" >/dev/null'
	else
		skip "character device" "mknod needs root"
	fi

	# A link: its target is replaced (a whole perf.data), the link stays.
	echo old >"$tmp/target.data"
	ln -s target.data "$tmp/link.data"
	run convert -q --to perf "$SAMPLE" -o "$tmp/link.data"
	check "convert onto a symbolic link (exit 0)" rc_is 0
	check "the link stays a link to a file-mode perf.data" eval \
		'test -L "$tmp/link.data" && "$TRACEKIT" dump "$tmp/target.data" | grep -q "mode=file"'

	mkdir "$tmp/dir"
	run convert -q --to perf "$SAMPLE" -o "$tmp/dir"
	check "convert onto a directory is refused" eval 'rc_is 1 && err_lines 1 && err_has "is a directory"'

	# A .dat needs seeking: onto a FIFO, one line that says so.
	timeout 20 cat "$tmp/fifo" >/dev/null &
	reader=$!
	run convert "$SAMPLE" -o "$tmp/fifo"
	wait $reader
	check "a .dat onto a FIFO is refused in one line" eval \
		'rc_is 1 && err_lines 1 && err_has "regular file"'
else
	skip "streams" "$SAMPLE is absent"
fi

# ------------------------------------------------------------- damage

in=$CORPUS/tracepoint.data
cp "$in" "$tmp/bad.data"
# Zero the first record's header: its size 0 starts a damaged region.
data=$("$TRACEKIT" dump "$in" | sed -n 's/.* data=\(0x[0-9a-f]*\)+.*/\1/p')
dd if=/dev/zero of="$tmp/bad.data" bs=1 seek=$((data)) count=8 conv=notrunc 2>/dev/null
"$TRACEKIT" report "$in" >"$tmp/good.rep" 2>/dev/null
line="^tracekit report: $tmp/bad.data: offset $data: record size 0 is smaller than its header (skipped [0-9]* bytes, events lost unknown)$"
run report "$tmp/bad.data"
check "report of a damaged file: exit 1, one warning line" eval 'rc_is 1 && err_lines 1 && grep -q "$line" "$tmp/err"'
check "report prints the rest" eval '[ "$(wc -l <"$tmp/out")" -gt 0 ] && [ "$(wc -l <"$tmp/out")" -lt "$(wc -l <"$tmp/good.rep")" ]'
run report --strict "$tmp/bad.data"
check "report --strict: one error line, no events" eval 'rc_is 1 && err_lines 1 && err_has "offset $data: record size 0" && [ ! -s "$tmp/out" ]'
run dump "$tmp/bad.data"
check "dump of a damaged file: exit 1, the warning line" eval 'rc_is 1 && err_lines 1 && err_has "^tracekit dump: .*record size 0" && out_has "SAMPLE: "'
run dump --strict "$tmp/bad.data"
check "dump --strict: one error line" eval 'rc_is 1 && err_lines 1 && err_has "record size 0 is smaller"'
run convert -q "$tmp/bad.data" -o "$tmp/bad.dat"
check "convert of a damaged file: exit 1, the warning line, an output" eval 'rc_is 1 && err_lines 1 && err_has "^tracekit convert: .*record size 0" && [ -s "$tmp/bad.dat" ]'
run convert -q --strict "$tmp/bad.data" -o "$tmp/strict.dat"
check "convert --strict: one error line, no output" eval 'rc_is 1 && err_lines 1 && [ ! -e "$tmp/strict.dat" ]'
for cmd in report dump convert; do
	run "$cmd" --help
	check "$cmd --help names --strict" out_has "--strict"
	if [ -f "$TK_SOURCE_DIR/docs/man/tracekit-$cmd.1" ]; then
		check "tracekit-$cmd.1 names --strict" grep -q 'strict' "$TK_SOURCE_DIR/docs/man/tracekit-$cmd.1"
	fi
done

finish
