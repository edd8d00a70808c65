#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# perf-compressed-damage: a COMPRESSED record whose size was damaged so
# that it runs past the data section still holds its zstd chunk at its
# start; perf decodes that chunk until zstd stops at bytes that are not its
# stream and prints its samples. tracekit report must print them too (one
# damage line, exit 1), never fewer samples than perf script. Found by
# damage-perf on a live `perf record -z` file: 11 samples where perf
# printed 98.
set -u
. "$(dirname "$0")/../lib.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-perf-zdamage.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 is not installed"; exit 77; }

# set_size IN OUT NTH SIZE: the NTH COMPRESSED record's size becomes SIZE
# (a line "OFFSET" is printed, nothing when the file has no NTH one).
set_size() {
	python3 - "$@" <<'PY'
import struct, sys
src, dst, nth, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d = bytearray(open(src, 'rb').read())
off, length = struct.unpack_from('<QQ', d, 40)
end, seen = off + length, 0
while off + 8 <= end:
    typ, _, sz = struct.unpack_from('<IHH', d, off)
    if sz < 8:
        break
    if typ == 81:
        if seen == nth:
            struct.pack_into('<H', d, off + 6, size)
            open(dst, 'wb').write(d)
            print(off)
            break
        seen += 1
    if typ == 66:
        sz += (struct.unpack_from('<I', d, off + 8)[0] + 7) // 8 * 8
    off += sz
PY
}
samples() { grep -c -E '[0-9]+\.[0-9]{6,9}: ' "$1"; }

# The corpus's zstd file: one COMPRESSED record holding all 15 samples.
z=$TK_SOURCE_DIR/fuzz/corpus/perfdata/compressed.data
run report "$z"
cp "$tmp/out" "$tmp/intact"
for size in 400 65535; do
	off=$(set_size "$z" "$tmp/bad.data" 0 "$size")
	run report "$tmp/bad.data"
	hex=$(printf '0x%x' "$off")
	if [ "$rc" = 1 ] && cmp -s "$tmp/out" "$tmp/intact" && [ "$(wc -l <"$tmp/err")" = 1 ] &&
		grep -q "offset $hex: record of $size bytes crosses the end of the data" "$tmp/err"; then
		pass "size $size: the chunk's 15 samples print, one damage line at $hex, exit 1"
	else
		fail "size $size" "exit $rc, $(samples "$tmp/out") samples: $(head -3 "$tmp/err")"
	fi
done
run report --strict "$tmp/bad.data"
if [ "$rc" = 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ]; then
	pass "--strict: one error, no samples"
else
	fail "--strict" "exit $rc: $(head -3 "$tmp/err")"
fi

# A live zstd recording: each of its first COMPRESSED records enlarged in
# turn prints at least what perf script prints whenever perf reads the copy.
if ! command -v perf >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
	skip "beside perf script on a live -z recording" "perf or root missing"
	finish
fi
if ! perf record -q -z -e sched:sched_switch -a -o "$tmp/live.data" -- sleep 0.3 >/dev/null 2>&1; then
	skip "beside perf script on a live -z recording" "perf record -z failed"
	finish
fi
checked=0
for nth in 0 2 4 6 8 10; do
	off=$(set_size "$tmp/live.data" "$tmp/bad.data" "$nth" 65535)
	[ -n "$off" ] || break
	run report "$tmp/bad.data"
	prc=$(sh -c 'timeout 20 perf script -i "$1" >"$2" 2>/dev/null; echo $?' sh "$tmp/bad.data" "$tmp/perf.out")
	n=$(samples "$tmp/out")
	pn=$(samples "$tmp/perf.out")
	if [ "$rc" -ge 2 ]; then
		fail "COMPRESSED record $nth enlarged" "exit $rc: $(head -3 "$tmp/err")"
	elif [ "$prc" = 0 ] && [ "$n" -lt "$pn" ]; then
		fail "COMPRESSED record $nth enlarged" "$n samples, perf script $pn"
	else
		checked=$((checked + 1))
	fi
done
if [ "$checked" -gt 0 ]; then
	pass "$checked enlarged COMPRESSED records of a live -z file: never fewer samples than perf script"
else
	skip "beside perf script on a live -z recording" "the recording has no COMPRESSED record"
fi
finish
