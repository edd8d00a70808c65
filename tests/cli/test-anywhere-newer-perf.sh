#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-newer-perf: perf.data files Debian's perf 6.1 cannot read, whose
# text a newer perf printed (issue 16). tests/data/perf/perf612/F.txt is
# what perf 6.12.95 (Debian bookworm-backports' linux-perf, unpacked by
# hand; see tests/data/perf/README.md) printed for F with no build-id
# cache: public-formbench-perf68.data (a real perf 6.8 recording perf 6.1
# refuses), attr136.data (attrs of 136 bytes) and pipe-attr152.data.
# tracekit prints in perf 6.1's columns, so the comparison squeezes runs
# of blanks: perf 6.12 widened the pid column to 7. On attr136.data, perf
# 6.12 names a slot of libc's PLT ("malloc@plt+0x0") where 6.1, and
# tracekit, print [unknown] (both name dash's PLT slots: 6.12 reads libc's
# .plt.sec too); that is the one other difference allowed. The kernel's
# frames are named only when the running kernel is the recorded one (same
# build id); on another, perf 6.12 and tracekit print [unknown] for them,
# so the expected text is made so. A file without the kernel's build id
# (pipe mode) is named from the running kernel by both tools: on a kernel
# other than the recorded release, those names are masked on both sides.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
tmp=$(mktemp -d /tmp/tk-anywhere-newer-perf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/none
mkdir -p "$HOME"

squeeze() { tr -s ' \t' ' ' <"$1"; }

# The running kernel's build id (the GNU note in /sys/kernel/notes), or nothing.
running_kernel_bid() {
	python3 - <<'PY' 2>/dev/null
import struct
d = open('/sys/kernel/notes', 'rb').read()
i = 0
while i + 12 <= len(d):
    namesz, descsz, kind = struct.unpack_from('<III', d, i)
    name = d[i + 12:i + 12 + namesz]
    desc_at = i + 12 + (namesz + 3) // 4 * 4
    if kind == 3 and name.rstrip(b'\0') == b'GNU':
        print(d[desc_at:desc_at + descsz].hex())
        break
    i = desc_at + (descsz + 3) // 4 * 4
PY
}
kernel_bid=$(running_kernel_bid)

# Text on stdin for file $1 (perf 6.12's when $2 is "expected"): its
# kernel frames as they print on this kernel (see above).
kernel_frames() {
	local recorded release
	recorded=$("$TRACEKIT" dump "$1" 2>/dev/null |
		sed -n 's/.* id=\([0-9a-f]*\) file="\[kernel.kallsyms\]".*/\1/p' | head -1)
	release=$("$TRACEKIT" dump "$1" 2>/dev/null | sed -n 's/.* OSRELEASE: .* value="\(.*\)"$/\1/p')
	if [ -n "$recorded" ] && [ "$recorded" != "$kernel_bid" ] && [ "$2" = expected ]; then
		sed -E 's/[^ ]+\+0x[0-9a-f]+ (\(\[kernel\.kallsyms\]\))/[unknown] \1/'
	elif [ -z "$recorded" ] && [ "$release" != "$(uname -r)" ]; then
		sed -E 's/[^ ]+\+0x[0-9a-f]+ (\(\[kernel\.kallsyms\]\))/(a name on this kernel) \1/'
	else
		cat
	fi
}

for f in public-formbench-perf68.data pipe-attr152.data attr136.data; do
	run report "$data/$f"
	squeeze "$tmp/out" | kernel_frames "$data/$f" tracekit >"$tmp/tk.txt"
	# perf 6.12's names for libc's PLT slots are perf 6.1's [unknown] (see above).
	squeeze "$data/perf612/$f.txt" |
		sed -E 's|[A-Za-z0-9_]+@plt\+0x[0-9a-f]+ (\(/usr/lib/x86_64-linux-gnu/libc\.so\.6\))|[unknown] \1|' |
		kernel_frames "$data/$f" expected >"$tmp/p612.txt"
	check "$f: the samples perf 6.12 prints, in perf 6.1's columns" \
		eval 'rc_is 0 && [ -s "$tmp/tk.txt" ] && cmp -s "$tmp/p612.txt" "$tmp/tk.txt"'
done
n=$(grep -c '@plt+0x[0-9a-f]* (/usr/lib/x86_64-linux-gnu/libc.so.6)' "$data/perf612/attr136.data.txt")
check "attr136.data: perf 6.12 names one slot of libc's PLT, the one difference allowed" [ "$n" -eq 1 ]
finish
