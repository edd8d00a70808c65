#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# The tracekit binary as a user runs it: help texts, exit codes (0 success,
# 1 failure, 2 usage), one-line error messages that name the file, and the
# dump/convert round trip on a small real trace.
#
# Environment: TRACEKIT (the binary; default ./build/src/cli/tracekit),
# TK_SOURCE_DIR (the source tree; default: two levels above this script).
# The checks that need tests/data/sample-v7-zstd.dat are skipped, with a
# "SKIP:" line, when it is absent.
#
# Ends with one line "TK-COUNTS: passed=N failed=N skipped=N"; exit status
# 1 if a check failed, 77 if every check was skipped, else 0.

set -u

. "$(dirname "$0")/../lib.sh"
SAMPLE=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# An error: exit 1, exactly one stderr line "tracekit CMD: ...", naming $3.
is_error() {
	rc_is 1 && err_lines 1 && grep -q "^tracekit $1: " "$tmp/err" && err_has "$2"
}
# A usage error: exit 2 and a message that names $2.
is_usage() { rc_is 2 && grep -q "^tracekit" "$tmp/err" && err_has "$1"; }

no_temp_files() { ! compgen -G "$1.tmp.*" >/dev/null; }

if [ ! -x "$TRACEKIT" ]; then
	echo "FAIL: $TRACEKIT is not an executable"
	echo "TK-COUNTS: passed=0 failed=1 skipped=0"
	exit 1
fi

# ---------------------------------------------------------------- help, version

for args in "--help" "-h" "help"; do
	run $args
	check "tracekit $args lists the commands" \
		eval 'rc_is 0 && out_has "^usage: tracekit" && out_has "^ *dump " && out_has "^ *convert "'
done

for cmd in dump convert; do
	run "$cmd" --help
	check "tracekit $cmd --help" eval "rc_is 0 && out_has '^usage: tracekit $cmd' && err_empty"
	run "$cmd" -h
	check "tracekit $cmd -h" eval "rc_is 0 && out_has '^usage: tracekit $cmd'"
	cp "$tmp/out" "$tmp/usage-$cmd"
	run help "$cmd"
	check "tracekit help $cmd prints the same usage" eval "rc_is 0 && cmp -s '$tmp/out' '$tmp/usage-$cmd'"
done

# list --systems: each system once, though available_events interleaves them.
if [ "$(id -u)" = 0 ] && [ -r /sys/kernel/tracing/available_events ]; then
	run list --systems
	check "list --systems prints each system once" \
		eval '[ $rc -eq 0 ] && [ -s "$tmp/out" ] && [ -z "$(sort "$tmp/out" | uniq -d)" ]'
else
	skip "list --systems" "needs root and tracefs"
fi

# Every command the top-level help lists: its --help works, and it has a
# manual page that meson installs (a new command must bring both).
run --help
commands=$(sed -n '/^commands:/,/^$/s/^   \([a-z][a-z-]*\) .*/\1/p' "$tmp/out")
check "tracekit --help lists commands" eval '[ "$(echo $commands | wc -w)" -ge 8 ]'
for cmd in $commands; do
	run "$cmd" --help
	check "tracekit $cmd --help prints its usage" \
		eval "rc_is 0 && out_has '^usage: tracekit $cmd' && err_empty"
done

man_dir=$TK_SOURCE_DIR/docs/man
missing=
for cmd in $commands; do
	[ -f "$man_dir/tracekit-$cmd.1" ] || missing="$missing tracekit-$cmd.1"
done
[ -f "$man_dir/tracekit.1" ] || missing="$missing tracekit.1"
if [ -z "$missing" ]; then
	pass "every command has a manual page"
else
	fail "every command has a manual page" "missing in $man_dir:$missing"
fi

not_installed=
for page in "$man_dir"/*.1; do
	grep -q "'docs/man/${page##*/}'" "$TK_SOURCE_DIR/meson.build" ||
		not_installed="$not_installed ${page##*/}"
done
if [ -z "$not_installed" ]; then
	pass "meson.build installs every manual page"
else
	fail "meson.build installs every manual page" "not in install_man():$not_installed"
fi

if command -v groff >/dev/null; then
	bad_pages=
	for page in "$man_dir"/*.1; do
		[ -z "$(groff -ww -man -z "$page" 2>&1)" ] || bad_pages="$bad_pages ${page##*/}"
	done
	if [ -z "$bad_pages" ]; then
		pass "manual pages render without groff warnings"
	else
		fail "manual pages render without groff warnings" "groff -ww -man -z warns on:$bad_pages"
	fi
else
	skip "manual pages render without groff warnings" "groff is not installed"
fi

run --version
check "--version prints the version" eval 'rc_is 0 && grep -qx "tracekit [0-9]*\.[0-9]*\.[0-9]*" "$tmp/out"'
version=$(cat "$tmp/out")
check "every man page names the version --version prints" eval '! grep -L "^\.TH .*\"$version\"" "$TK_SOURCE_DIR"/docs/man/*.1 | grep -q .'

# ---------------------------------------------------------------- usage errors

run
check "no command is a usage error" eval 'rc_is 2 && err_has "usage: tracekit"'
run frobnicate
check "unknown command exits 2" is_usage "frobnicate"
run help frobnicate
check "help for an unknown command exits 2" is_usage "frobnicate"
run --bogus
check "unknown global option exits 2" is_usage "--bogus"
run dump --bogus x.dat
check "dump: unknown long option exits 2" is_usage "--bogus"
run dump -Z x.dat
check "dump: unknown short option exits 2" is_usage "-Z"
run dump --section nosuch x.dat
check "dump: unknown section name exits 2" is_usage "nosuch"
run dump --section 3 x.dat
check "dump: a non-metadata section id exits 2" is_usage "'3'"
run dump a.dat b.dat
check "dump: two files exit 2" is_usage "more than one"
run convert --bogus in.dat -o out.dat
check "convert: unknown option exits 2" is_usage "--bogus"
run convert in.dat -o
check "convert: -o without a value exits 2" is_usage "-o"
run convert in.dat
check "convert: no output exits 2" is_usage "output"
run convert -o out.dat
check "convert: no input exits 2" is_usage "input"
run convert in.dat -o out.dat --file-version 5
check "convert: --file-version 5 exits 2" is_usage "5"
run convert in.dat -o out.dat --file-version 6 --compression zstd
check "convert: v6 with zstd exits 2" is_usage "version 6"
run convert in.dat -o out.dat --compression lz4
check "convert: unknown codec exits 2" is_usage "lz4"

# record --perf speaks perf: its letters and lists are read as perf reads them, and
# what they cannot mean is refused before any event opens (so these run anywhere).
run record --perf -F lots -e cpu-clock -- true
check "record --perf -F takes perf's frequency" is_usage "-F must be a positive number, not 'lots'"
run record --perf -F 999 -c 10 -e cpu-clock -- true
check "record --perf -F with -c exits 2" is_usage "-F and -c exclude each other"
run record -o x.data -F 999 -c 10 -e cpu-clock -- true
check "record -o FILE.data is perf mode too" is_usage "-F and -c exclude each other"
run record --perf -e '{cpu-clock,page-faults' -- true
check "record --perf -e with an open group exits 2" is_usage "'{' without '}'"
run record --perf -e 'cpu-clock,,page-faults' -- true
check "record --perf -e with an empty list element exits 2" is_usage "empty event"
run record --perf --call-graph frame -e cpu-clock -- true
check "record --perf --call-graph frame exits 2" is_usage "not fp, dwarf\[,SIZE\] or lbr"
run record --perf --call-graph dwarf,70000 -e cpu-clock -- true
check "record --perf --call-graph dwarf,70000 exits 2" is_usage "stack dump size"
run record --perf -C 1-0 -e cpu-clock --duration 1
check "record --perf -C 1-0 exits 2" is_usage "-C: \"1-0\" is not a list"
run record --perf -p 1 -a -e cpu-clock --duration 1
check "record --perf -p with -a exits 2" is_usage "-p and -t follow running tasks"
run record --perf -t 1 -e cpu-clock -- true
check "record --perf -t with a command exits 2" is_usage "-p and -t follow running tasks"
run record --perf --top -e cpu-clock -- true
check "record --perf --top exits 2" is_usage "--top records into a .dat file"
run record --perf -m 3 -e cpu-clock -- true
check "record --perf -m 3 exits 2" is_usage "power of two"
# .dat mode keeps trace-cmd's letters: -F follows, so a number after it is the command.
run record -F -e sched:sched_switch -o "$tmp/f.dat"
check "record -F without a command still needs one" is_usage "-F needs a command"
run record -c 10 -e sched:sched_switch -o "$tmp/f.dat" -- true
check "record -c without --perf exits 2" is_usage "record into perf.data"

# ---------------------------------------------------------------- missing and bad files

run dump "$tmp/nope.dat"
check "dump: missing file exits 1 with one line naming it" is_error dump "nope.dat"
mkdir "$tmp/empty"
(cd "$tmp/empty" && "$TRACEKIT" dump >"$tmp/out" 2>"$tmp/err")
rc=$?
check "dump without FILE reads trace.dat" is_error dump "trace.dat"
run dump -i "$tmp/nope.dat"
check "dump -i: missing file exits 1" is_error dump "nope.dat"
run convert "$tmp/nope.dat" -o "$tmp/nope-out.dat"
check "convert: missing input exits 1, writes nothing" \
	eval 'is_error convert "nope.dat" && [ ! -e "$tmp/nope-out.dat" ] && no_temp_files "$tmp/nope-out.dat"'
printf 'this is not a trace file\n' >"$tmp/text.dat"
run dump "$tmp/text.dat"
check "dump: a text file exits 1 with one line" is_error dump "text.dat"
head -c 16 "$SAMPLE" >"$tmp/short.dat" 2>/dev/null || printf '\027\010Dtracing' >"$tmp/short.dat"
run dump "$tmp/short.dat"
check "dump: a truncated header exits 1 with one line" is_error dump "short.dat"
# A file that is neither format says so, naming both; perf's first format is named.
head -c 200 /dev/urandom >"$tmp/junk.bin"
run report "$tmp/junk.bin"
check "report of a file of neither kind names both formats" eval 'rc_is 1 && err_lines 1 && err_has "junk.bin: offset 0x0: not a trace-cmd .dat or perf.data file"'
printf 'PERFFILE\0\0\0\0\0\0\0\0' >"$tmp/v1.data"
run report "$tmp/v1.data"
check "report of a perf.data version 1 says what it is" eval 'rc_is 1 && err_lines 1 && err_has "perf.data version 1"'

# ---------------------------------------------------------------- with a real trace

sample_checks=(
	"convert the sample" "convert -q is quiet" "dump of the converted file"
	"dump --summary has no per-section lines" "convert keeps events and page CRCs"
	"--section words, names and ids agree" "--section copies the header text"
	"convert to v6" "dump of the v6 file"
	"v6 keeps events and page CRCs" "v6 -> v7 none keeps the page CRCs"
	"convert refuses IN == OUT" "convert refuses IN == OUT by another path"
	"convert into a missing directory" "output file mode follows the umask"
	"dump of a corrupt page names file, cpu and offset"
	"convert of a corrupt page leaves no file" "failed convert keeps an existing OUT"
	"failed convert to perf.data keeps an existing OUT"
	"failed convert of a cut perf.data keeps an existing OUT"
	"convert -o SYMLINK replaces the target, keeps the link"
	"convert -o DIRECTORY: exit 1, nothing written"
	"convert -o FIFO: exit 1, the FIFO stays, says why"
	"convert -o a character device writes through it"
)

if [ ! -f "$SAMPLE" ]; then
	for name in "${sample_checks[@]}"; do
		skip "$name" "$SAMPLE not found"
	done
else
	# Per-CPU facts that must survive any conversion: events, lost, CRC.
	# (CPUs without pages are left out: v6 lists every CPU, v7 only those with data.)
	cpu_facts() { grep '^    cpu ' "$1" | grep -v ' pages=0 ' | sed 's/offset=[^ ]* size=[^ ]* //'; }
	totals() { grep '^totals:' "$1"; }

	small=$tmp/small.dat
	run convert "$SAMPLE" -o "$small"
	check "convert the sample" eval 'rc_is 0 && [ -s "$small" ] && err_lines 1 && err_has " -> .*(v7, zstd): .* pages, .* buffers"'

	run convert -q -i "$SAMPLE" -o "$tmp/quiet.dat"
	check "convert -q is quiet" eval 'rc_is 0 && err_empty && [ -s "$tmp/quiet.dat" ]'

	"$TRACEKIT" dump "$SAMPLE" >"$tmp/dump-sample" 2>"$tmp/dump-sample-err"
	run dump "$small"
	cp "$tmp/out" "$tmp/dump-small"
	check "dump of the converted file" eval 'rc_is 0 && err_empty && out_has "^sections: " && out_has "^options: " && out_has "^buffers: " && out_has "^  buffer (top): " && out_has "^    cpu 0: " && out_has "^totals: events=[1-9]" && out_has " HEADER_INFO .* crc32="'

	run dump --summary "$small"
	check "dump --summary has no per-section lines" eval 'rc_is 0 && out_has "^totals: " && out_has "^sections: " && ! out_has "^  0x" && ! out_has "^    cpu "'

	check "convert keeps events and page CRCs" eval '[ "$(totals "$tmp/dump-sample")" = "$(totals "$tmp/dump-small")" ] && [ "$(cpu_facts "$tmp/dump-sample")" = "$(cpu_facts "$tmp/dump-small")" ] && [ -n "$(cpu_facts "$tmp/dump-small")" ]'

	ok=true
	for spec in "headers 16 header_info HEADER_INFO" "events 18 event_formats" \
		"ftrace-events 17 ftrace_events" "cmdlines 21 CMDLINES" "kallsyms 19" "printk 20"; do
		set -- $spec
		"$TRACEKIT" dump --section "$1" "$small" >"$tmp/sec-ref" 2>/dev/null || ok=false
		"$TRACEKIT" dump --section "$1" "$SAMPLE" >"$tmp/sec-in" 2>/dev/null || ok=false
		cmp -s "$tmp/sec-ref" "$tmp/sec-in" || ok=false
		shift
		for alias in "$@"; do
			"$TRACEKIT" dump --section "$alias" "$small" >"$tmp/sec-alias" 2>/dev/null || ok=false
			cmp -s "$tmp/sec-ref" "$tmp/sec-alias" || ok=false
		done
	done
	rc=0
	check "--section words, names and ids agree" $ok

	run dump --section headers "$small"
	check "--section copies the header text" eval 'rc_is 0 && [ "$(head -c 12 "$tmp/out" | tr "\0" "@")" = "header_page@" ]'

	# A v6 file converted back must carry the same pages.
	v6=$tmp/small-v6.dat
	run convert "$small" -o "$v6" --file-version 6
	check "convert to v6" eval 'rc_is 0 && err_has "(v6, none)" && [ "$(head -c 12 "$v6" | tail -c 2 | tr "\0" "@")" = "6@" ]'
	run dump "$v6"
	cp "$tmp/out" "$tmp/dump-v6"
	check "dump of the v6 file" eval 'rc_is 0 && err_empty && out_has "^  version: 6"'
	check "v6 keeps events and page CRCs" eval '[ "$(totals "$tmp/dump-v6")" = "$(totals "$tmp/dump-small")" ] && [ "$(cpu_facts "$tmp/dump-v6")" = "$(cpu_facts "$tmp/dump-small")" ]'

	none=$tmp/small-none.dat
	"$TRACEKIT" convert -q "$v6" -o "$none" --compression none >/dev/null 2>&1
	run dump "$none"
	cp "$tmp/out" "$tmp/dump-none"
	check "v6 -> v7 none keeps the page CRCs" eval 'rc_is 0 && out_has "compressed=no" && [ "$(cpu_facts "$tmp/out")" = "$(cpu_facts "$tmp/dump-small")" ]'

	# The file was converted into itself in place: refuse, keep it intact.
	cp "$small" "$tmp/before.dat"
	run convert "$small" -o "$small"
	check "convert refuses IN == OUT" eval 'is_error convert "same file" && cmp -s "$small" "$tmp/before.dat" && no_temp_files "$small"'
	ln -s "$small" "$tmp/link.dat"
	run convert "$tmp/link.dat" -o "$tmp/./small.dat"
	check "convert refuses IN == OUT by another path" eval 'is_error convert "same file" && cmp -s "$small" "$tmp/before.dat"'

	run convert "$small" -o "$tmp/no/such/dir/out.dat"
	check "convert into a missing directory" eval 'is_error convert "no/such/dir" && [ ! -e "$tmp/no" ]'

	(umask 027 && "$TRACEKIT" convert -q "$small" -o "$tmp/mode.dat" >/dev/null 2>&1)
	rc=0
	check "output file mode follows the umask" eval '[ "$(stat -c %a "$tmp/mode.dat")" = 640 ]'

	# Break the commit word of CPU 0's first page in the uncompressed file:
	# a data size far beyond the page must be an error, never a crash.
	off=$(sed -n 's/^    cpu 0: offset=\(0x[0-9a-f]*\) .*/\1/p' "$tmp/dump-none" | head -1)
	bad=$tmp/bad.dat
	cp "$none" "$bad"
	if [ -n "$off" ]; then
		printf '\377\377\377\007' | dd of="$bad" bs=1 seek=$((off + 8)) conv=notrunc 2>/dev/null
	fi
	run dump "$bad"
	check "dump of a corrupt page names file, cpu and offset" eval '[ -n "$off" ] && is_error dump "bad.dat" && grep -qi "cpu 0" "$tmp/err" && err_has "offset"'
	run convert --strict "$bad" -o "$tmp/bad-out.dat"
	check "convert of a corrupt page leaves no file" eval 'is_error convert "bad.dat" && [ ! -e "$tmp/bad-out.dat" ] && no_temp_files "$tmp/bad-out.dat"'
	cp "$small" "$tmp/keep.dat"
	run convert --strict "$bad" -o "$tmp/keep.dat"
	check "failed convert keeps an existing OUT" eval 'rc_is 1 && cmp -s "$small" "$tmp/keep.dat" && no_temp_files "$tmp/keep.dat"'
	printf 'an older recording\n' >"$tmp/keep.data"
	cp "$tmp/keep.data" "$tmp/keep.orig"
	run convert --strict "$bad" -o "$tmp/keep.data"
	check "failed convert to perf.data keeps an existing OUT" eval 'rc_is 1 && cmp -s "$tmp/keep.orig" "$tmp/keep.data" && no_temp_files "$tmp/keep.data"'
	"$TRACEKIT" convert -q "$small" -o "$tmp/whole.data" 2>/dev/null
	head -c 200 "$tmp/whole.data" >"$tmp/cut.data"
	run convert "$tmp/cut.data" -o "$tmp/keep.dat"
	check "failed convert of a cut perf.data keeps an existing OUT" eval 'rc_is 1 && [ -s "$tmp/whole.data" ] && cmp -s "$small" "$tmp/keep.dat" && no_temp_files "$tmp/keep.dat"'

	# -o onto what is not a regular file: nothing but a regular file is
	# ever replaced (the nodes are the test's own, never the system's /dev).
	mkdir -p "$tmp/o/sub"
	ln -s sub/target.dat "$tmp/o/link.dat"
	run convert -q "$SAMPLE" -o "$tmp/o/link.dat"
	check "convert -o SYMLINK replaces the target, keeps the link" eval 'rc_is 0 && [ -L "$tmp/o/link.dat" ] && [ -s "$tmp/o/sub/target.dat" ] && no_temp_files "$tmp/o/sub/target.dat"'
	run convert -q "$SAMPLE" -o "$tmp/o/sub"
	check "convert -o DIRECTORY: exit 1, nothing written" eval 'rc_is 1 && err_lines 1 && err_has "is a directory" && [ "$(ls "$tmp/o/sub")" = target.dat ]'
	mkfifo "$tmp/o/fifo"
	# A reader, so that opening the FIFO for writing does not wait.
	cat "$tmp/o/fifo" >/dev/null 2>&1 &
	reader=$!
	run convert -q "$SAMPLE" -o "$tmp/o/fifo"
	kill $reader 2>/dev/null
	wait $reader 2>/dev/null
	check "convert -o FIFO: exit 1, the FIFO stays, says why" eval 'rc_is 1 && err_lines 1 && err_has "needs a regular file" && [ -p "$tmp/o/fifo" ]'
	if mknod "$tmp/o/null" c 1 3 2>/dev/null; then
		run convert -q "$SAMPLE" -o "$tmp/o/null"
		check "convert -o a character device writes through it" eval 'rc_is 0 && [ -c "$tmp/o/null" ] && no_temp_files "$tmp/o/null"'
	else
		skip "convert -o a character device writes through it" "mknod needs root"
	fi
fi

finish
