#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit cache against perf 6.1, both ways, on private cache directories:
# perf lists what tracekit cached (build ids and SDT probes), tracekit lists
# and queries what perf cached, and both write the same probes file for the
# same SDT binary. Skips (77) without perf, cc or <sys/sdt.h>.
set -u
TRACEKIT=${TRACEKIT:?}
command -v perf >/dev/null || { echo "skip: perf not installed"; exit 77; }
command -v cc >/dev/null || { echo "skip: cc not installed"; exit 77; }
[ -e /usr/include/x86_64-linux-gnu/sys/sdt.h ] || [ -e /usr/include/sys/sdt.h ] ||
	{ echo "skip: <sys/sdt.h> missing (systemtap-sdt-dev)"; exit 77; }

T=$(mktemp -d /tmp/tk-test-cache-XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

cat > "$T/sdtdemo.c" <<'C'
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
unsigned short tkdemo_start_semaphore __attribute__((section(".probes")));
unsigned short tkdemo_tick_semaphore __attribute__((section(".probes")));
int work(int x, long y);
int work(int x, long y) { STAP_PROBE2(tkdemo, start, x, y);
	if (tkdemo_tick_semaphore) STAP_PROBE1(tkdemo, tick, x * 2); return x + (int)y; }
int main(int argc, char **argv) { (void)argv; int s = 0;
	for (int i = 0; i < argc + 2; i++) s += work(i, 3); return s == 12345; }
C
cat > "$T/plain.c" <<'C'
#include <sys/sdt.h>
int main(int argc, char **argv) { (void)argv; DTRACE_PROBE1(tkplain, hit, argc);
	DTRACE_PROBE1(tkplain, hit, argc + 1); return 0; }
C
cc -O1 -o "$T/sdtdemo" "$T/sdtdemo.c" && cc -O1 -no-pie -o "$T/plain" "$T/plain.c" || exit 1
bid=$(readelf -n "$T/sdtdemo" | sed -n 's/.*Build ID: //p')

# tracekit writes, perf reads.
"$TRACEKIT" cache --cache-dir "$T/tk" --add "$T/sdtdemo,$T/plain" || fail "tracekit cache --add"
perf --buildid-dir "$T/tk" buildid-cache --list > "$T/perf-list" 2>/dev/null
grep -qx "$bid $T/sdtdemo" "$T/perf-list" || fail "perf buildid-cache --list misses sdtdemo"
grep -q " $T/plain\$" "$T/perf-list" || fail "perf buildid-cache --list misses plain"
perf --buildid-dir "$T/tk" probe --cache --list > "$T/perf-probes" 2>/dev/null
grep -qx "sdt_tkdemo:start=start" "$T/perf-probes" || fail "perf probe --cache --list misses start"
grep -qx "sdt_tkplain:hit=hit" "$T/perf-probes" || fail "perf probe --cache --list misses hit"

# perf writes, tracekit reads; the probes files are identical.
perf --buildid-dir "$T/perf" buildid-cache --add "$T/sdtdemo,$T/plain" 2>/dev/null ||
	fail "perf buildid-cache --add"
for b in sdtdemo plain; do
	cmp -s "$T/perf$T/$b/"*/probes "$T/tk$T/$b/"*/probes ||
		fail "$b: probes file differs from perf's: $(diff "$T/perf$T/$b/"*/probes "$T/tk$T/$b/"*/probes)"
done
"$TRACEKIT" cache --cache-dir "$T/perf" --list buildid > "$T/tk-list" || fail "tracekit --list"
cmp -s <(sort "$T/perf-list") <(sort "$T/tk-list") || fail "build-id lists differ"
"$TRACEKIT" cache --cache-dir "$T/perf" --list=probe > "$T/tk-probes" || fail "--list=probe"
cmp -s <(sort "$T/perf-probes") <(sort "$T/tk-probes") || fail "probe lists differ"

# Queries by group, event, path and build id.
q() { "$TRACEKIT" cache --cache-dir "$T/perf" --query "$1" 2>/dev/null | grep -c '^sdt_'; }
[ "$(q '%tkdemo:start')" = 1 ] || fail "query by provider:event"
[ "$(q 'sdt_tkplain:*')" = 1 ] || fail "query by group glob"
[ "$(q "tick@$T/sdtdemo")" = 1 ] || fail "query by path"
[ "$(q "*#${bid:0:12}")" = 2 ] || fail "query by build id"
"$TRACEKIT" cache --cache-dir "$T/perf" --query 'nothing' 2>/dev/null && fail "empty query succeeded"

# Removal and stale entries: perf hides what tracekit hides.
cp "$T/plain" "$T/plain.old"
"$TRACEKIT" cache --cache-dir "$T/tk" --remove "$T/sdtdemo" || fail "--remove"
perf --buildid-dir "$T/tk" buildid-cache --list 2>/dev/null | grep -q sdtdemo && fail "removed entry still listed"

# Malformed input: a clear error naming the file, exit 1.
head -c 100 "$T/sdtdemo" > "$T/trunc"
out=$("$TRACEKIT" cache --cache-dir "$T/tk" --add "$T/trunc" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"$T/trunc"* ]] || fail "truncated ELF: rc $rc: $out"
"$TRACEKIT" cache --cache-dir "$T/tk" --list=bogus 2>/dev/null; [ $? = 2 ] || fail "bad --list arg"
# Cut at 3000 bytes: its section headers are gone, and the message says so (file, offset).
head -c 3000 "$T/sdtdemo" > "$T/cut3000"
out=$("$TRACEKIT" cache --cache-dir "$T/tk" --add "$T/cut3000" 2>&1); rc=$?
shoff=$(printf '0x%x' "$(readelf -hW "$T/sdtdemo" | sed -n 's/.*Start of section headers: *\([0-9]*\).*/\1/p')")
[ $rc = 1 ] && [[ $out == *"$T/cut3000: offset $shoff: "*" section headers of 64 bytes end past the end of the file (3000 bytes): truncated"* ]] ||
	fail "cut at 3000 bytes: rc $rc: $out"
# A .symtab of absurd size: cached (build id and probes are sound) with a warning naming file and offset.
cp "$T/sdtdemo" "$T/badsym"
python3 - "$T/badsym" <<'PY'
import struct, sys
d = bytearray(open(sys.argv[1], 'rb').read())
shoff, = struct.unpack_from('<Q', d, 0x28)
for i in range(struct.unpack_from('<H', d, 0x3c)[0]):
    if struct.unpack_from('<I', d, shoff + 64 * i + 4)[0] == 2:
        struct.pack_into('<Q', d, shoff + 64 * i + 32, 0x7fffffffffff)
open(sys.argv[1], 'wb').write(d)
PY
symoff=$(readelf -SW "$T/sdtdemo" | awk '$2 == ".symtab" {print "0x" $5}' | sed 's/^0x0*/0x/')
out=$("$TRACEKIT" cache --cache-dir "$T/badsym-cache" --add "$T/badsym" 2>&1); rc=$?
[ $rc = 0 ] && [[ $out == *"warning: $T/badsym: offset $symoff: symbol table of 140737488355327 bytes exceeds the file size"* ]] ||
	fail "absurd .symtab size: rc $rc: $out"

# --stats, --max-size, --gc.
"$TRACEKIT" cache --cache-dir "$T/perf" --stats | grep -q '^entries: *2 (2 valid' || fail "--stats"
"$TRACEKIT" cache --cache-dir "$T/perf" --max-size 1 | grep -q 'evicted 2' || fail "--max-size"
"$TRACEKIT" cache --cache-dir "$T/perf" --gc >/dev/null || fail "--gc"
[ -z "$(perf --buildid-dir "$T/perf" buildid-cache --list 2>/dev/null)" ] || fail "evicted entries listed"

# Least-recently-used order at the command line: t1, a1, f1 added in that order
# (descending build ids, so that a fallback to build-id order would evict f1, the
# newest); --stats, --list and a listing of every entry in between are no use;
# --max-size then evicts t1, and next a1.
for i in 0 1 2; do
	printf 'int main(void) { return %d; }\n' $((40 + i)) > "$T/lru$i.c"
	cc -O1 -o "$T/lru$i" "$T/lru$i.c" || exit 1
done
n=0
for b in $(for i in 0 1 2; do echo "$(readelf -n "$T/lru$i" | sed -n 's/.*Build ID: //p') $i"; done |
	   sort -r | cut -d' ' -f2); do
	name=$(echo t1 a1 f1 | cut -d' ' -f$((n + 1)))
	mv "$T/lru$b" "$T/$name"
	n=$((n + 1))
done
for b in t1 a1 f1; do "$TRACEKIT" cache --cache-dir "$T/lru" --add "$T/$b" || fail "--add $b"; done
cache_bytes() { "$TRACEKIT" cache --cache-dir "$T/lru" --stats | sed -n 's/^size:.*(\([0-9]*\) bytes)$/\1/p'; }
"$TRACEKIT" cache --cache-dir "$T/lru" --list --all >/dev/null || fail "--list"
ls -laR "$T/lru" >/dev/null
"$TRACEKIT" cache --cache-dir "$T/lru" --max-size $(($(cache_bytes) - 1)) | grep -q 'evicted 1 ' ||
	fail "--max-size total-1 did not evict one entry"
lru_left() { "$TRACEKIT" cache --cache-dir "$T/lru" --list --all | sed 's/.* //' | xargs -n1 basename | sort | xargs; }
[ "$(lru_left)" = "a1 f1" ] || fail "LRU: after one eviction want a1 f1, have: $(lru_left)"
"$TRACEKIT" cache --cache-dir "$T/lru" --max-size $(($(cache_bytes) - 1)) >/dev/null
[ "$(lru_left)" = "f1" ] || fail "LRU: after two evictions want f1, have: $(lru_left)"

# One build id at two paths: the tree is perf's (link on the first path, the
# second path's directory with its elf only, both paths' SDT lines in the first
# one's probes); removing either path orphans nothing.
cp "$T/plain" "$T/twinA" && cp "$T/plain" "$T/twinB"
"$TRACEKIT" cache --cache-dir "$T/twin" --add "$T/twinA" && "$TRACEKIT" cache --cache-dir "$T/twin" --add "$T/twinB" ||
	fail "--add twins"
mkdir -p "$T/ptwin"
perf --buildid-dir "$T/ptwin" buildid-cache --add "$T/twinA" 2>/dev/null &&
	perf --buildid-dir "$T/ptwin" buildid-cache --add "$T/twinB" 2>/dev/null || fail "perf --add twins"
tree() { (cd "$1" && find . ! -name .tk-use -printf '%y %p %l\n' | sort); }
[ "$(tree "$T/twin")" = "$(tree "$T/ptwin")" ] ||
	fail "two paths, one build id: tree differs from perf's: $(diff <(tree "$T/twin") <(tree "$T/ptwin"))"
cmp -s "$T/twin$T/twinA/"*/probes "$T/ptwin$T/twinA/"*/probes || fail "two paths: probes differ from perf's"
"$TRACEKIT" cache --cache-dir "$T/twin" --remove "$T/twinB" || fail "--remove twinB"
"$TRACEKIT" cache --cache-dir "$T/twin" --list | grep -q " $T/twinA\$" || fail "twinA not listed after --remove twinB"
"$TRACEKIT" cache --cache-dir "$T/twin" --stats | grep -q '^entries: *1 (1 valid' || fail "--stats after --remove twinB"
"$TRACEKIT" cache --cache-dir "$T/twin" --stats | grep -q '^size: *0 B' && fail "--stats: 0 B with twinA cached"
"$TRACEKIT" cache --cache-dir "$T/twin" --remove "$T/twinA" || fail "--remove twinA"
[ -z "$(find "$T/twin" -mindepth 1)" ] || fail "left after removing both: $(find "$T/twin" -mindepth 1)"
# perf --remove of the linked path leaves the other path unlinked: counted, then collected.
perf --buildid-dir "$T/ptwin" buildid-cache --remove "$T/twinA" 2>/dev/null
"$TRACEKIT" cache --cache-dir "$T/ptwin" --stats | grep -q '^entries: *1 ' || fail "--stats misses perf's orphan"
"$TRACEKIT" cache --cache-dir "$T/ptwin" --gc >/dev/null || fail "--gc"
[ -z "$(find "$T/ptwin" -type f)" ] || fail "--gc left perf's orphan: $(find "$T/ptwin" -type f)"

# --compress: tracekit reads its probes.gz, perf sees an empty probe cache (no error).
"$TRACEKIT" cache --cache-dir "$T/gz" --compress --add "$T/sdtdemo" || fail "--compress --add"
ls "$T/gz$T/sdtdemo/"*/probes.gz >/dev/null 2>&1 || fail "--compress wrote no probes.gz"
[ "$("$TRACEKIT" cache --cache-dir "$T/gz" --query '%tkdemo:*' | grep -c '^sdt_')" = 2 ] ||
	fail "query of gzip probes"
perf --buildid-dir "$T/gz" buildid-cache --list 2>/dev/null | grep -q sdtdemo ||
	fail "perf misses the --compress entry"
perf --buildid-dir "$T/gz" probe --cache --list 2>/dev/null | grep -q sdt_ &&
	fail "perf read gzip probes?"

# --kcore with a made-up kcore (no /proc/kcore here): ROOT/proc/{kcore,kallsyms,modules}
# and ROOT/sys/kernel/notes, as perf expects them.
K=$T/root
mkdir -p "$K/proc" "$K/sys/kernel"
python3 - "$K" <<'PY'
import struct, sys
root = sys.argv[1]
segs = [(0xffffffff81000000, 0x1000, 0x4000), (0xffffffffc0000000, 0x5000, 0x2000)]
img = bytearray(0x7000)
img[0:16] = b'\x7fELF\x02\x01\x01' + bytes(9)
struct.pack_into('<HHIQQQIHHHHHH', img, 16, 4, 62, 1, 0, 64, 0, 0, 64, 56, 2, 0, 0, 0)
for i, (va, off, ln) in enumerate(segs):
    struct.pack_into('<IIQQQQQQ', img, 64 + 56 * i, 1, 7, off, va, 0, ln, ln, 4096)
    img[off:off + ln] = bytes([0x40 + i]) * ln
open(root + '/proc/kcore', 'wb').write(img)
open(root + '/proc/kallsyms', 'w').write(
    'ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff81000800 T do_work\n'
    'ffffffff81002000 T _etext\nffffffffc0000010 t mod_fn\t[mymod]\n')
open(root + '/proc/modules', 'w').write('mymod 8192 0 - Live 0xffffffffc0000000\n')
open(root + '/sys/kernel/notes', 'wb').write(struct.pack('<III', 4, 20, 3) + b'GNU\0' + bytes(range(1, 21)))
PY
kbid=0102030405060708090a0b0c0d0e0f1011121314
"$TRACEKIT" cache --cache-dir "$T/k" --kcore "$K/proc/kcore" --probe 'do_work' ||
	fail "--kcore"
kc=$(ls -d "$T/k/[kernel.kcore]/$kbid/"* 2>/dev/null | head -1)
[[ $(basename "$kc") =~ ^[0-9]{16}$ ]] || fail "--kcore directory: '$kc'"
[ -r "$kc/kallsyms" ] && [ -r "$kc/modules" ] || fail "--kcore: kallsyms/modules not copied"
[ "$(readelf -lW "$kc/kcore" 2>/dev/null | grep -c LOAD)" = 2 ] || fail "--kcore: want 2 PT_LOAD"
grep -qx 'p:probe/do_work _text+2048' "$T/k/[kernel.kallsyms]/$kbid/probes" ||
	fail "--kcore --probe: $(cat "$T/k/[kernel.kallsyms]/$kbid/probes")"
out=$("$TRACEKIT" cache --cache-dir "$T/k" --kcore "$T/sdtdemo" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"named 'kcore'"* ]] || fail "--kcore on a non-kcore: rc $rc: $out"
cp "$T/sdtdemo" "$K/proc/kcore"
out=$("$TRACEKIT" cache --cache-dir "$T/k" --kcore "$K/proc/kcore" 2>&1); rc=$?
[ $rc = 1 ] && [[ $out == *"not a kcore"* ]] || fail "--kcore on an executable: rc $rc: $out"

# Symbols in perf.data reports, frame for frame against perf script: ld.so's
# labels (_start, _dl_start_user with libc6-dbg), PLT entries ("getpid@plt+0x0",
# "@plt+0x0", or _init when perf's tree finds that first), demangled C++ names
# without parameters. perf record -N keeps ~/.debug as it is.
frames() { grep -P '^\t' "$1"; }
same_frames() { # NAME DATA
	perf script -i "$2" > "$T/$1.perf" 2>/dev/null || { fail "$1: perf script"; return; }
	"$TRACEKIT" report "$2" > "$T/$1.tk" 2>"$T/$1.err" || fail "$1: tracekit report: $(cat "$T/$1.err")"
	[ "$(frames "$T/$1.perf" | wc -l)" -gt 0 ] || fail "$1: no frames recorded"
	cmp -s <(frames "$T/$1.perf") <(frames "$T/$1.tk") ||
		fail "$1: frames differ from perf script: $(diff <(frames "$T/$1.perf") <(frames "$T/$1.tk") | head -20)"
}
perf record -N -q -e cpu-clock -g -o "$T/ls.data" -- ls / >/dev/null 2>&1 || fail "perf record ls"
same_frames ls "$T/ls.data"
if command -v g++ >/dev/null; then
	# C++ functions with parameters, a method and a template, sampled by
	# time; then, recording every page fault, calls through the PLT into a
	# small library, each after dropping the page that holds .init and .plt
	# (main sits on a page of its own), so every call faults on its PLT
	# entry: cleaf@plt, ns::other@plt, and _init where perf's tree finds
	# the stretched _init before ns::leaf@plt.
	cat > "$T/leaf.cc" <<'CC'
namespace ns { int leaf(int x) { return x ^ 0x5a; } int other(long x) { return (int)x - 1; } }
extern "C" int cleaf(int x) { return x + 3; }
CC
	cat > "$T/cxx.cc" <<'CC'
#include <sys/mman.h>
#include <stdint.h>
namespace ns { int leaf(int x); int other(long x); }
extern "C" int cleaf(int x);
extern "C" void _init(void);
enum rtx_code { A, B };
struct Widget { long v; __attribute__((noinline)) long twice(int k) const { return v * k + 1; } };
template <typename T> __attribute__((noinline)) T maxof(T a, T b) { return a > b ? a : b; }
__attribute__((noinline)) long rtx_alloc(rtx_code c)
{ volatile long x = c; for (int i = 0; i < 20; i++) x += i; return x; }
__attribute__((noinline, aligned(4096))) int main(int argc, char **)
{
	Widget w{argc};
	long s = 0;
	if (argc > 1) {
		void *page = (void *)((uintptr_t)&_init & ~(uintptr_t)4095);
		for (int i = 0; i < 20; i++) {
			madvise(page, 4096, MADV_DONTNEED);
			s += ns::leaf(i);
			madvise(page, 4096, MADV_DONTNEED);
			s += cleaf(i);
			madvise(page, 4096, MADV_DONTNEED);
			s += ns::other(i);
		}
		return s == 42;
	}
	for (long i = 0; i < 20000000; i++)
		s += ns::leaf((int)i) + cleaf((int)i) + (i & 7 ? 0 : rtx_alloc(i & 1 ? A : B) +
		     w.twice((int)i) + maxof<long>(i, s & 7));
	return s == 42;
}
CC
	g++ -O1 -shared -fPIC -o "$T/libleaf.so" "$T/leaf.cc" &&
		g++ -O1 -o "$T/cxx" "$T/cxx.cc" -L"$T" -lleaf -Wl,-rpath,"$T" || fail "g++"
	perf record -N -q -e cpu-clock -g -o "$T/cxx.data" -- "$T/cxx" >/dev/null 2>&1 ||
		fail "perf record cxx"
	same_frames cxx "$T/cxx.data"
	grep -q ' rtx_alloc+0x' "$T/cxx.perf" || fail "cxx: perf shows no rtx_alloc frame (too few samples?)"
	perf record -N -q -e page-faults -c 1 -g -o "$T/plt.data" -- "$T/cxx" plt >/dev/null 2>&1 ||
		fail "perf record cxx plt"
	same_frames plt "$T/plt.data"
	for f in ' cleaf@plt+0x0 ' ' ns::other@plt+0x0 ' ' _init+0x'; do
		[ "$(grep -c -- "$f" "$T/plt.perf")" -ge 20 ] || fail "plt: perf shows no '$f' frames"
	done
else
	echo "SKIP (part): g++ not installed: C++ names and PLT entries not compared with perf"
fi

[ $fails = 0 ] && echo "cache: all perf oracle checks passed"
exit $((fails > 0))
