#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# Symbols only from a file of the recorded build id (issue 16), with perf
# script 6.1 as the oracle: tracekit report must print what perf script
# prints on the same perf.data, and name nothing from a binary rebuilt
# since the recording or from another kernel's kallsyms.
#   - tracepoints with a %ps argument: named from the recorded kernel
#     only, as perf names them;
#   - a small program recorded with -g: named; rebuilt at the same path
#     (another build id): its frames [unknown]; --symfs with the old copy:
#     named again;
#   - the file's kernel build id made another kernel's: kernel frames
#     [unknown]; a kallsyms cached under that id, or --kallsyms: named;
#   - a stripped binary: named from its debug file in the cache, and not
#     once rebuilt (the debug file alone places no address; perf 6.1
#     misplaces them there, so that case is checked without it);
#   - perf record --no-buildid: the path is used as it is (perf does so);
#   - JIT code in anonymous executable memory with a /tmp/perf-PID.map,
#     and an mmap over part of an older one (the rest keeps its map).
# perf's ~/.debug is a fresh one (HOME points into the test's directory),
# and perf record -N leaves it empty unless a step fills it.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
if ! command -v cc >/dev/null; then echo "SKIP: no C compiler to build the test programs"; exit 77; fi
if ! command -v python3 >/dev/null; then echo "SKIP: python3 is needed to edit a build id"; exit 77; fi
dir=$(mktemp -d /tmp/tk-buildid-it.XXXXXX)
jitmap=
trap 'rm -rf "$dir"; [ -n "$jitmap" ] && rm -f "$jitmap"' EXIT
export HOME=$dir/home
mkdir -p "$HOME/.debug"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# compare NAME FILE [OPTIONS...]: tracekit report and perf script print the same.
compare() {
	local name=$1 f=$2
	shift 2
	perf script "$@" -i "$f" >"$dir/$name.perf" 2>"$dir/$name.perf.err" ||
		fail "$name: perf script failed: $(head -3 "$dir/$name.perf.err")"
	"$TRACEKIT" report --cache-dir "$HOME/.debug" "$@" "$f" >"$dir/$name.tk" 2>"$dir/$name.tk.err" ||
		fail "$name: tracekit report failed: $(head -3 "$dir/$name.tk.err")"
	if ! diff -u "$dir/$name.perf" "$dir/$name.tk" >"$dir/$name.diff"; then
		fail "$name: tracekit report differs from perf script:"
		head -20 "$dir/$name.diff"
	fi
}

cat >"$dir/prog.c" <<'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
volatile unsigned long sink;
static char buf[1 << 20];
__attribute__((noinline)) static void spin_inner(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i + VARIANT;
}
__attribute__((noinline)) void spin_outer(unsigned long n) { spin_inner(n); }
int main(void)
{
	int fd = open("/dev/zero", O_RDONLY);

	spin_outer(150000000UL);
	/* Time in the kernel, for kernel frames. */
	for (int i = 0; i < 3000 && fd >= 0; i++)
		if (read(fd, buf, sizeof(buf)) < 0)
			break;
	printf("%lu\n", sink);
	return 0;
}
EOF
build_prog() {
	cc -O1 -g -fno-omit-frame-pointer -DVARIANT="$1" -o "$dir/prog" "$dir/prog.c" ||
		{ fail "cannot build the test program"; exit 1; }
}
build_prog 0
cp "$dir/prog" "$dir/prog.orig"
(cd "$dir" && perf record -q -e cpu-clock -g -N -o "$dir/a.data" ./prog >/dev/null 2>&1) ||
	fail "perf record a.data"
(cd "$dir" && perf record -q -e cpu-clock -g -N --no-buildid -o "$dir/n.data" ./prog \
	>/dev/null 2>&1) || fail "perf record n.data"

# The binary as recorded: named.
compare a "$dir/a.data"
grep -q 'spin_inner+0x[0-9a-f]* (.*/prog)' "$dir/a.tk" || fail "a: the program's frames are not named"
grep -q '[a-z_]+0x[0-9a-f]* (\[kernel.kallsyms\])' "$dir/a.tk" ||
	fail "a: no named kernel frame (is the running kernel's build id not the recorded one?)"

# Rebuilt at the same path, another build id: [unknown], never its names.
build_prog 1
compare rebuilt "$dir/a.data"
grep -q 'spin_inner' "$dir/rebuilt.tk" && fail "rebuilt: named from a binary of another build id"
grep -q '\[unknown\] (.*/prog)' "$dir/rebuilt.tk" || fail "rebuilt: no [unknown] frame of the program"

# --symfs with the recorded binary below it: named again, the kernel not.
mkdir -p "$dir/symfs$dir"
cp "$dir/prog.orig" "$dir/symfs$dir/prog"
compare symfs "$dir/a.data" --symfs "$dir/symfs"
grep -q 'spin_inner+0x[0-9a-f]* (.*/prog)' "$dir/symfs.tk" || fail "symfs: the program is not named"

# A stripped binary: named from its debug file in the cache while the
# binary is there; rebuilt, the debug file alone names nothing (perf 6.1).
build_prog 0
cp "$dir/prog" "$dir/sprog"
strip --strip-all "$dir/sprog"
(cd "$dir" && perf record -q -e cpu-clock -g -N -o "$dir/s.data" ./sprog >/dev/null 2>&1) ||
	fail "perf record s.data"
sbid=$("$TRACEKIT" dump "$dir/s.data" | sed -n 's/.* id=\([0-9a-f]*\) file=".*\/sprog"$/\1/p')
if [ -n "$sbid" ]; then
	mkdir -p "$HOME/.debug/.build-id/${sbid:0:2}/${sbid:2}"
	objcopy --only-keep-debug "$dir/prog" "$HOME/.debug/.build-id/${sbid:0:2}/${sbid:2}/debug"
	compare stripped "$dir/s.data"
	grep -q 'spin_inner+0x[0-9a-f]* (.*/sprog)' "$dir/stripped.tk" ||
		fail "stripped: not named from the cached debug file"
	# Rebuilt: perf 6.1 places the addresses by the debug file's segments,
	# whose file offsets objcopy zeroed, and prints whatever symbol lands
	# there (a .bss array, "buf+0xea"). Not a name to copy: [unknown].
	build_prog 1
	cp "$dir/prog" "$dir/sprog"
	"$TRACEKIT" report "$dir/s.data" >"$dir/strippedrebuilt.tk" 2>&1 ||
		fail "strippedrebuilt: report failed"
	grep -q '\[unknown\] (.*/sprog)' "$dir/strippedrebuilt.tk" ||
		fail "strippedrebuilt: no [unknown] frame of the program"
	grep -q '[a-z_]+0x[0-9a-f]* (.*/sprog)' "$dir/strippedrebuilt.tk" &&
		fail "strippedrebuilt: named though rebuilt"
	rm -rf "$HOME/.debug/.build-id"
else
	fail "s.data: no build id recorded for sprog"
fi

# No build id recorded: perf takes the file at the path as it is, and so do we.
compare nobid "$dir/n.data"
grep -q 'spin_inner+0x[0-9a-f]* (.*/prog)' "$dir/nobid.tk" || fail "nobid: the program is not named"
"$TRACEKIT" dump "$dir/n.data" | grep -q "build_id: " && fail "n.data has build ids"

# Another kernel's build id in the file: kernel frames [unknown].
kbid=$(perf buildid-list -i "$dir/a.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
if [ -z "$kbid" ]; then
	fail "a.data has no kernel build id"
else
	other=$(echo "$kbid" | tr '0-9a-f' '1-9a-f0')
	python3 - "$dir/a.data" "$dir/k.data" "$kbid" "$other" <<'EOF' || fail "cannot edit the kernel build id"
import sys
d = open(sys.argv[1], 'rb').read()
old, new = bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
assert d.count(old) == 1
open(sys.argv[2], 'wb').write(d.replace(old, new))
EOF
	build_prog 0
	compare otherkernel "$dir/k.data"
	grep -q '\[unknown\] (\[kernel.kallsyms\])' "$dir/otherkernel.tk" ||
		fail "otherkernel: no [unknown] kernel frame"
	grep -q '[a-z_]+0x[0-9a-f]* (\[kernel.kallsyms\])' "$dir/otherkernel.tk" &&
		fail "otherkernel: kernel frames named from this machine's kernel"
	# perf trusts a kallsyms it is given.
	compare kallsyms "$dir/k.data" --kallsyms /proc/kallsyms
	grep -q '[a-z_]+0x[0-9a-f]* (\[kernel.kallsyms\])' "$dir/kallsyms.tk" ||
		fail "kallsyms: kernel frames not named from --kallsyms"
	# A kallsyms cached under the recorded id is that kernel's.
	mkdir -p "$HOME/.debug/[kernel.kallsyms]/$other"
	cp /proc/kallsyms "$HOME/.debug/[kernel.kallsyms]/$other/kallsyms"
	compare cachedkernel "$dir/k.data"
	grep -q '[a-z_]+0x[0-9a-f]* (\[kernel.kallsyms\])' "$dir/cachedkernel.tk" ||
		fail "cachedkernel: kernel frames not named from the cache"
	rm -rf "$HOME/.debug/[kernel.kallsyms]"
fi

# A tracepoint's %ps argument (a timer's function) is named from the
# recorded kernel as perf script names it (perf.data carries no kallsyms),
# and from no other kernel: with another kernel's build id perf and
# tracekit print the address.
perf record -q -N -e timer:hrtimer_start -e timer:hrtimer_expire_entry -a -o "$dir/t.data" \
	-- sleep 0.3 2>/dev/null || fail "perf record t.data"
tbid=$(perf buildid-list -i "$dir/t.data" 2>/dev/null | awk '$2 == "[kernel.kallsyms]" { print $1 }')
compare timers "$dir/t.data"
grep -q ' function=[a-z_]' "$dir/timers.tk" || fail "timers: no function named"
if [ -n "$tbid" ]; then
	python3 - "$dir/t.data" "$dir/t-other.data" "$tbid" "$(echo "$tbid" | tr '0-9a-f' '1-9a-f0')" <<'EOF' ||
import sys
d = open(sys.argv[1], 'rb').read()
old, new = bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
assert d.count(old) == 1
open(sys.argv[2], 'wb').write(d.replace(old, new))
EOF
		fail "cannot edit t.data's kernel build id"
	compare timers-otherkernel "$dir/t-other.data"
	grep -q ' function=[a-z_]' "$dir/timers-otherkernel.tk" &&
		fail "timers-otherkernel: a function named from this machine's kernel"
	grep -q ' function=0x' "$dir/timers-otherkernel.tk" ||
		fail "timers-otherkernel: no function printed as an address"
else
	fail "t.data has no kernel build id"
fi

# JIT code: anonymous executable memory is /tmp/perf-PID.map, named from
# that file. A later mmap over the middle page leaves the first page in
# the older map, where the first loop runs.
cat >"$dir/jit.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* mov %rdi,%rax; 1: dec %rax; jnz 1b; ret */
static const unsigned char loop[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
int main(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	int prot = PROT_READ | PROT_WRITE | PROT_EXEC;
	unsigned char *a = mmap(NULL, 3 * pg, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *b;
	char path[64];
	FILE *f;

	if (a == MAP_FAILED)
		return 1;
	b = mmap(a + pg, pg, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (b == MAP_FAILED)
		return 1;
	memcpy(a, loop, sizeof(loop));
	memcpy(b, loop, sizeof(loop));
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_loop_a\n%lx %zx jit_loop_b\n", (unsigned long)a, sizeof(loop),
		(unsigned long)b, sizeof(loop));
	fclose(f);
	((long (*)(long))a)(300000000L);
	((long (*)(long))b)(300000000L);
	printf("%d\n", (int)getpid());
	return 0;
}
EOF
if cc -O1 -fno-omit-frame-pointer -o "$dir/jit" "$dir/jit.c"; then
	perf record -q -e cpu-clock -g -N -o "$dir/j.data" "$dir/jit" >"$dir/jit.pid" 2>/dev/null ||
		fail "perf record j.data"
	jitmap=/tmp/perf-$(cat "$dir/jit.pid").map
	compare jit "$dir/j.data"
	for s in jit_loop_a jit_loop_b; do
		grep -q "$s+0x[0-9a-f]* ($jitmap)" "$dir/jit.tk" || fail "jit: $s not named from $jitmap"
	done
	rm -f "$jitmap"
	# Without the file: the map keeps perf's name, its frames are [unknown].
	compare nojitmap "$dir/j.data"
	grep -q "\[unknown\] ($jitmap)" "$dir/nojitmap.tk" || fail "nojitmap: no [unknown] in $jitmap"
else
	fail "cannot build the JIT program"
fi

[ $fails = 0 ] && echo "PASS: build ids, kernels, symfs, JIT maps as perf script"
exit $((fails > 0))
