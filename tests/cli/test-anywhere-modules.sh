#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-modules: kernel module addresses named from the module's .ko,
# only from a .ko of the build id the perf.data recorded (issue 16).
# The machines here load no modules, so the files are crafted
# (tests/data/perf/README.md): kmod-ko.data and kmod-ko-g.data map
# usbdemo.ko at 0xffffffffc0a3d000 as perf record maps a loaded module and
# record its build id; kmod-ko-nobid.data records none. usbdemo.ko has
# that build id, usbdemo-other.ko another (and other code). The .ko is
# found as perf 6.1 finds it: in the build-id cache (tracekit cache --add,
# or perf buildid-cache --add), else at the recorded path below --symfs
# when that file has the recorded id; without it, from a kallsyms that lists
# the module, by perf's rules. With perf installed the text must be
# perf's, byte for byte (perf script; perf report --stdio --sort dso,sym
# for profile); without, the names and [unknown]s are checked.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
tmp=$(mktemp -d /tmp/tk-anywhere-modules.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/none
mkdir -p "$HOME"
ko=/lib/modules/6.1.0-27-amd64/kernel/drivers/net/usb/usbdemo.ko # the recorded path
bid=5eb1d0c0ffee0000000000000000000000000001
mkdir -p "$tmp/ok/.debug" "$tmp/other/.debug" "$tmp/symfs-ok${ko%/*}" "$tmp/symfs-other${ko%/*}"
cp "$data/usbdemo.ko" "$tmp/symfs-ok$ko"
cp "$data/usbdemo-other.ko" "$tmp/symfs-other$ko"

# The build-id cache, as tracekit cache --add makes it: perf's layout.
run cache --cache-dir "$tmp/ok/.debug" --add "$data/usbdemo.ko"
check "cache --add stores a .ko by its build id" \
	eval 'rc_is 0 && [ -f "$tmp/ok/.debug/.build-id/5e/${bid#5e}/elf" ]'
run cache --cache-dir "$tmp/other/.debug" --add "$data/usbdemo-other.ko"
check "cache --add stores the other .ko" rc_is 0

# No .ko anywhere: the module's dso (its path: the build id was recorded), no names.
run report "$data/kmod-ko.data"
check "no .ko: module addresses are [unknown] with the .ko's path as dso" \
	eval 'rc_is 0 && out_has "ffffffffc0a3d003 \[unknown\] ($ko)" && ! out_has demo_'
HOME=$tmp/ok run report "$data/kmod-ko.data"
check "the cache's .ko names the module's .text" \
	eval 'rc_is 0 && out_has "ffffffffc0a3d003 demo_helper+0x3 ($ko)" &&
		out_has "ffffffffc0a3d00c demo_probe+0x2 ($ko)" &&
		out_has "ffffffffc0a3d063 demo_poll+0x19 ($ko)"'
check "past .text (.init.text is not placed) and in the map: [unknown] of the module" \
	eval 'out_has "ffffffffc0a3d066 \[unknown\] ($ko)" && out_has "ffffffffc0a3f000 \[unknown\] ($ko)"'
check "past the module's map: no map" out_has "ffffffffc0a40010 \[unknown\] (\[unknown\])"
HOME=$tmp/other run report "$data/kmod-ko.data"
check "a cached .ko of another build id names nothing" \
	eval 'rc_is 0 && ! out_has demo_ && out_has "ffffffffc0a3d003 \[unknown\] ($ko)"'
run report --symfs "$tmp/symfs-ok" "$data/kmod-ko.data"
check "the recorded path below --symfs, with the build id" \
	out_has "ffffffffc0a3d003 demo_helper+0x3 ($ko)"
run report --symfs "$tmp/symfs-other" "$data/kmod-ko.data"
check "the recorded path below --symfs, another build id: [unknown]" \
	eval 'rc_is 0 && ! out_has demo_'
HOME=$tmp/ok run report "$data/kmod-ko-g.data"
check "callchain entries in the module" \
	eval 'rc_is 0 && out_has "ffffffffc0a3d02c demo_probe+0x22 ($ko)"'
run report --symfs "$tmp/symfs-other" "$data/kmod-ko-nobid.data"
check "no recorded build id: the file at the path as it is, dso [usbdemo]" \
	eval 'rc_is 0 && out_has "ffffffffc0a3d003 demo_helper+0x3 (\[usbdemo\])"'
HOME=$tmp/ok run profile --sort dso,sym -g none "$data/kmod-ko.data"
check "profile: the module's symbols, and an unnamed address at its .ko offset" \
	eval 'rc_is 0 && out_has "\[usbdemo\] *\[k\] demo_helper" &&
		out_has "\[usbdemo\] *\[k\] 0x00000000000000ca"'
run profile --sort dso,sym -g none "$data/kmod-ko.data"
check "profile without the .ko: addresses in the map" \
	eval 'rc_is 0 && out_has "\[usbdemo\] *\[k\] 0x0000000000000003" && ! out_has demo_'
HOME=$tmp/ok run flamegraph -o "$tmp/f.svg" "$data/kmod-ko-g.data"
check "flamegraph frames from the .ko" eval 'rc_is 0 && grep -q "demo_probe" "$tmp/f.svg"'
HOME=$tmp/other run flamegraph -o "$tmp/f.svg" "$data/kmod-ko-g.data"
check "flamegraph: none from the other .ko" eval 'rc_is 0 && ! grep -q "demo_" "$tmp/f.svg"'

# pftrace frames are the report's (pftrace-check.py compares them).
for h in ok other; do
	HOME=$tmp/$h run convert -q "$data/kmod-ko-g.data" -o "$tmp/t.pftrace"
	HOME=$tmp/$h "$TRACEKIT" report "$data/kmod-ko-g.data" >"$tmp/t.rep" 2>/dev/null
	if ! command -v protoc >/dev/null; then
		skip "pftrace frames, cache $h" "protoc is not installed"
	elif python3 "$TK_SOURCE_DIR/tests/cli/pftrace-check.py" "$tmp/t.pftrace" "$tmp/t.rep" perf >"$tmp/check" 2>&1; then
		pass "pftrace frames are the report's, cache $h"
	else
		fail "pftrace frames, cache $h" "$(cat "$tmp/check")"
	fi
done
HOME=$tmp/ok run convert -q "$data/kmod-ko-g.data" -o "$tmp/t.pftrace" --compression none
check "pftrace holds the module's function names" grep -q "demo_probe" "$tmp/t.pftrace"

# Without the .ko, a kallsyms listing the module's symbols names it once the
# kernel's are loaded; the module's first address came before, so perf 6.1
# has dropped its first symbol (demo_fake) by then, and so does tracekit.
printf '%s\n' 'ffffffff81000000 T _text' 'ffffffff81000000 T _stext' \
	'ffffffff8158e5e0 T filemap_map_pages' 'ffffffff8220bb08 T _etext' \
	"ffffffffc0a3d000 t demo_fake	[usbdemo]" "ffffffffc0a3d040 t demo_fake2	[usbdemo]" \
	>"$tmp/kallsyms"
run report --kallsyms "$tmp/kallsyms" "$data/kmod-ko.data"
check "no .ko: a module first seen before the kernel loses its first kallsyms symbol" \
	eval 'rc_is 0 && out_has "ffffffffc0a3d050 demo_fake2+0x10 ($ko)" &&
		out_has "ffffffffc0a3d00c \[unknown\] ($ko)" && ! out_has "demo_fake+"'

if command -v perf >/dev/null; then
	for f in kmod-ko kmod-ko-g kmod-ko-nobid; do
		perf script --kallsyms "$tmp/kallsyms" -i "$data/$f.data" >"$tmp/perf.out" 2>/dev/null
		run report --kallsyms "$tmp/kallsyms" "$data/$f.data"
		check "$f, no .ko, --kallsyms with the module: report prints what perf script prints" \
			eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
		perf report --stdio --sort dso,sym -g none --kallsyms "$tmp/kallsyms" \
			-i "$data/$f.data" 2>/dev/null | grep -v '^#' | grep -v '^$' >"$tmp/perf.out"
		run profile --sort dso,sym -g none --kallsyms "$tmp/kallsyms" "$data/$f.data"
		grep -v '^#' "$tmp/out" | grep -v '^$' >"$tmp/tk.out"
		check "$f, no .ko, --kallsyms with the module: profile prints what perf report prints" \
			cmp -s "$tmp/perf.out" "$tmp/tk.out"
	done
	# perf's own cache, read by tracekit; tracekit's, read by perf.
	mkdir -p "$tmp/perfcache"
	HOME=$tmp/perfcache perf buildid-cache --add "$data/usbdemo.ko" >/dev/null 2>&1
	check "perf buildid-cache and cache --add make the same entry" \
		cmp -s "$tmp/perfcache/.debug/.build-id/5e/${bid#5e}/elf" \
		"$tmp/ok/.debug/.build-id/5e/${bid#5e}/elf"
	for h in none ok other perfcache; do
		for f in kmod-ko kmod-ko-g kmod-ko-nobid; do
			for s in "" symfs-ok symfs-other; do
				opt=()
				[ -n "$s" ] && opt=(--symfs "$tmp/$s")
				HOME=$tmp/$h perf script "${opt[@]}" -i "$data/$f.data" >"$tmp/perf.out" 2>/dev/null
				HOME=$tmp/$h run report "${opt[@]}" "$data/$f.data"
				check "$f, cache $h${s:+, $s}: report prints what perf script prints" \
					eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
				# perf report's table (its own tip lines and blank lines aside).
				# Not for kmod-ko-g below --symfs: its user frames are then
				# unnamed addresses, 2.94% each, and which way perf orders
				# those ties is the profile's open question, not the modules'.
				[ "$f" = kmod-ko-g ] && [ -n "$s" ] && continue
				HOME=$tmp/$h perf report --stdio --sort dso,sym -g none "${opt[@]}" \
					-i "$data/$f.data" 2>/dev/null | grep -v '^#' | grep -v '^$' >"$tmp/perf.out"
				HOME=$tmp/$h run profile --sort dso,sym -g none "${opt[@]}" "$data/$f.data"
				grep -v '^#' "$tmp/out" | grep -v '^$' >"$tmp/tk.out"
				check "$f, cache $h${s:+, $s}: profile prints what perf report prints" \
					cmp -s "$tmp/perf.out" "$tmp/tk.out"
			done
		done
	done
else
	skip "comparison with perf script and perf report" "perf is not installed"
fi
finish
