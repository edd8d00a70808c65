#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-kmod-compressed: kernel modules shipped compressed (issue 16).
# kmod-ko-{gz,xz,zst}.data are kmod-ko.data with the module recorded as
# usbdemo.ko.gz, .ko.xz and .ko.zst (tests/data/perf/README.md). perf 6.1
# inflates a .ko.gz or .ko.xz found for such a module (below --symfs, or
# the build-id cache's copy) when it starts with that codec's magic, reads
# it as it is otherwise, and has no codec for .ko.zst; the build id is
# checked on the inflated image. With perf installed each case's text must
# be perf script's, byte for byte; the names and [unknown]s are checked
# either way. A damaged .ko.xz is one warning naming the file and offset.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
tmp=$(mktemp -d /tmp/tk-anywhere-kmodz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/none
mkdir -p "$HOME"
dir=/lib/modules/6.1.0-27-amd64/kernel/drivers/net/usb # the recorded directory
bid=5eb1d0c0ffee0000000000000000000000000001

# symfs NAME FILE: a --symfs tree holding FILE at the recorded directory as NAME.
symfs() {
	mkdir -p "$tmp/$1$dir"
	cat >"$tmp/$1$dir/$2"
}
xz -c "$data/usbdemo.ko" | symfs xz-ok usbdemo.ko.xz
xz -c "$data/usbdemo-other.ko" | symfs xz-other usbdemo.ko.xz
symfs xz-plain usbdemo.ko.xz <"$data/usbdemo.ko"
xz -c "$data/usbdemo.ko" | head -c 300 | symfs xz-cut usbdemo.ko.xz
gzip -c "$data/usbdemo.ko" | symfs gz-ok usbdemo.ko.gz
xz -c "$data/usbdemo.ko" | symfs gz-xzdata usbdemo.ko.gz
zstd -q -c "$data/usbdemo.ko" | symfs zst-ok usbdemo.ko.zst

named() { out_has "ffffffffc0a3d003 demo_helper+0x3 ($dir/usbdemo.ko.$1)" &&
	out_has "ffffffffc0a3d063 demo_poll+0x19 ($dir/usbdemo.ko.$1)"; }
unnamed() { out_has "ffffffffc0a3d003 \[unknown\] ($dir/usbdemo.ko.$1)" && ! out_has demo_; }

run report --symfs "$tmp/xz-ok" "$data/kmod-ko-xz.data"
check ".ko.xz of the recorded build id: inflated, its .text named" eval 'rc_is 0 && named xz && err_empty'
run report --symfs "$tmp/xz-other" "$data/kmod-ko-xz.data"
check ".ko.xz of another build id: [unknown]" eval 'rc_is 0 && unnamed xz'
run report --symfs "$tmp/xz-plain" "$data/kmod-ko-xz.data"
check "an uncompressed .ko under the .ko.xz name is read as it is" eval 'rc_is 0 && named xz'
run report --symfs "$tmp/xz-cut" "$data/kmod-ko-xz.data"
check "a cut .ko.xz: [unknown] and one warning naming the file and offset" \
	eval 'rc_is 0 && unnamed xz && err_lines 1 &&
		err_has "xz-cut$dir/usbdemo.ko.xz: offset 0x12c: xz stream cut short"'
run report --symfs "$tmp/gz-ok" "$data/kmod-ko-gz.data"
check ".ko.gz of the recorded build id: named" eval 'rc_is 0 && named gz'
run report --symfs "$tmp/gz-xzdata" "$data/kmod-ko-gz.data"
check "xz data under a .ko.gz name: [unknown], as perf (the codec is the name's)" \
	eval 'rc_is 0 && unnamed gz'
run report --symfs "$tmp/zst-ok" "$data/kmod-ko-zst.data"
check ".ko.zst: no codec in perf 6.1 to 6.17, [unknown]" eval 'rc_is 0 && unnamed zst'
run report "$data/kmod-ko-xz.data"
check "no module file: [unknown]" eval 'rc_is 0 && unnamed xz'

# The build-id cache: tracekit cache --add stores the compressed bytes, as perf does.
run cache --cache-dir "$tmp/cache/.debug" --add "$tmp/xz-ok$dir/usbdemo.ko.xz"
check "cache --add of a .ko.xz: stored by the inflated image's build id" \
	eval 'rc_is 0 && cmp -s "$tmp/cache/.debug/.build-id/5e/${bid#5e}/elf" "$tmp/xz-ok$dir/usbdemo.ko.xz"'
HOME=$tmp/cache run report "$data/kmod-ko-xz.data"
check "the cache's .ko.xz names the module" eval 'rc_is 0 && named xz'
run cache --cache-dir "$tmp/cache/.debug" --list -A
check "cache --list -A: the .ko.xz entry is valid (its image has the id)" \
	eval 'rc_is 0 && out_has "$bid" && ! out_has "(stale)"'

if command -v perf >/dev/null 2>&1; then
	mkdir -p "$tmp/perfcache"
	HOME=$tmp/perfcache perf buildid-cache --add "$tmp/xz-ok$dir/usbdemo.ko.xz" >/dev/null 2>&1
	check "perf buildid-cache --add and cache --add make the same entry" \
		cmp -s "$tmp/perfcache/.debug/.build-id/5e/${bid#5e}/elf" \
		"$tmp/cache/.debug/.build-id/5e/${bid#5e}/elf"
	for c in xz:xz-ok xz:xz-other xz:xz-plain xz:xz-cut gz:gz-ok gz:gz-xzdata zst:zst-ok xz: \
		xz:@cache xz:@perfcache; do
		ext=${c%%:*} where=${c#*:} opt=() home=$tmp/none
		case $where in
		@*) home=$tmp/${where#@} ;;
		?*) opt=(--symfs "$tmp/$where") ;;
		esac
		HOME=$home perf script "${opt[@]}" -i "$data/kmod-ko-$ext.data" >"$tmp/perf.out" 2>/dev/null
		HOME=$home run report "${opt[@]}" "$data/kmod-ko-$ext.data"
		check "kmod-ko-$ext.data, ${where:-nothing}: report prints what perf script prints" \
			eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
	done
else
	skip "comparison with perf script" "perf is not installed"
fi
finish
