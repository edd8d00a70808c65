#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit dump on perf.data files made by the real perf record (file mode,
# callchains, pipe mode, zstd-compressed, killed recorder): the record
# counts by type must equal what perf report -D counts, and a corrupt file
# must fail with a message naming the file and offset.
set -u
TRACEKIT=${TRACEKIT:-tracekit}
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record of tracepoints needs root"; exit 77; fi
dir=$(mktemp -d /tmp/tk-perfdata-it.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# "NAME count" lines from perf report -D's aggregated stats, named as tracekit names them.
perf_counts() {
	perf report -D -i "$1" 2>/dev/null | sed -n '/Aggregated stats/,/stats:$/p' |
		awk '$2 == "events:" && $1 != "TOTAL" { n = $1
			if (n == "ATTR" || n == "FEATURE" || n == "TRACING_DATA" || n == "BUILD_ID") n = "HEADER_" n
			print n, $3 }' | sort
}
our_counts() {
	"$TRACEKIT" dump "$1" 2>"$dir/err" | awk '
		/^records:/ { on = 1; next }
		/^compressed:/ { split($2, a, "="); print "COMPRESSED", a[2]; next }
		on && /^  / { sub(":", "", $1); print $1, $2 }' | sort
}
check() {
	local f=$1
	perf_counts "$f" >"$dir/perf.txt"
	our_counts "$f" >"$dir/ours.txt"
	if [ ! -s "$dir/perf.txt" ]; then fail "$f: perf report -D printed no counts"; return; fi
	if ! diff -u "$dir/perf.txt" "$dir/ours.txt"; then fail "$f: counts differ"; fi
}

perf record -q -e sched:sched_switch -a -o "$dir/a.data" -- sleep 0.2 >/dev/null 2>&1 || fail "perf record a"
perf record -q -e cpu-clock -g -o "$dir/b.data" -- ls / >/dev/null 2>&1 || fail "perf record b"
perf record -q -e sched:sched_switch -a -o - -- sleep 0.2 >"$dir/c.data" 2>/dev/null || fail "perf record c"
perf record -q -z -e sched:sched_switch -a -o "$dir/z.data" -- sleep 0.2 >/dev/null 2>&1 || fail "perf record z"
for f in a b c z; do check "$dir/$f.data"; done

# Samples: tracekit's SAMPLE count equals the lines perf script prints.
n=$(perf script -i "$dir/a.data" 2>/dev/null | wc -l)
ours=$(our_counts "$dir/a.data" | awk '$1 == "SAMPLE" { print $2 }')
[ "$n" = "$ours" ] || fail "a.data: perf script shows $n samples, tracekit $ours"

grep -q 'mode=pipe' <("$TRACEKIT" dump "$dir/c.data") || fail "c.data not shown as pipe mode"

# A killed recorder: data size 0; read to the last complete record with a warning.
perf record -q -e sched:sched_switch -a -o "$dir/k.data" >/dev/null 2>&1 &
pid=$!
sleep 1
kill -9 $pid
wait $pid 2>/dev/null
if "$TRACEKIT" dump "$dir/k.data" >"$dir/k.txt" 2>"$dir/k.err"; then
	grep -q 'data_size_repaired=yes' "$dir/k.txt" || fail "k.data: not marked repaired"
	grep -q 'recorder killed' "$dir/k.err" || fail "k.data: no warning"
	grep -q 'SAMPLE:' "$dir/k.txt" || fail "k.data: no samples read"
else
	fail "k.data: dump failed: $(cat "$dir/k.err")"
fi
# perf script cannot read it; tracekit report names its samples from this
# machine's tracefs (the file was written during this boot), with a warning.
if "$TRACEKIT" report "$dir/k.data" >"$dir/k.rep" 2>"$dir/k.err"; then
	grep -q 'taken from this machine.s tracefs' "$dir/k.err" || fail "k.data: no warning about live formats: $(cat "$dir/k.err")"
	n=$(grep -c ' sched:sched_switch: prev_comm=' "$dir/k.rep")
	ours=$(our_counts "$dir/k.data" | awk '$1 == "SAMPLE" { print $2 }')
	[ "$n" -gt 0 ] && [ "$n" = "$ours" ] || fail "k.data: $n named sched_switch lines for $ours samples"
	grep -q 'unknown-2:' "$dir/k.rep" && fail "k.data: unnamed samples left"
else
	fail "k.data: report failed: $(cat "$dir/k.err")"
fi
# A copy that says it was written before this boot: no guessing, unnamed.
cp "$dir/k.data" "$dir/k-old.data"
touch -d '2001-01-01' "$dir/k-old.data"
if "$TRACEKIT" report "$dir/k-old.data" >"$dir/k.rep" 2>"$dir/k.err"; then
	grep -q 'predates this boot' "$dir/k.err" || fail "k-old.data: no warning: $(cat "$dir/k.err")"
	grep -q 'unknown-2:' "$dir/k.rep" || fail "k-old.data: samples named from a later boot's tracefs"
else
	fail "k-old.data: report failed: $(cat "$dir/k.err")"
fi

# Corrupt: attrs pointing past the end of the file.
cp "$dir/a.data" "$dir/bad.data"
printf '\xff\xff\xff\x00' | dd of="$dir/bad.data" bs=1 seek=24 conv=notrunc 2>/dev/null
if "$TRACEKIT" dump "$dir/bad.data" >/dev/null 2>"$dir/bad.err"; then
	fail "bad.data accepted"
else
	grep -q 'bad.data: offset 0x18' "$dir/bad.err" || fail "bad.data: message '$(cat "$dir/bad.err")'"
fi

# tracekit report prints tracepoint samples byte for byte as perf script:
# two sched events system-wide, raw_syscalls (lots of threads), pipe mode, zstd.
perf record -q -e sched:sched_switch -e sched:sched_wakeup -a -o "$dir/r1.data" -- sleep 0.3 >/dev/null 2>&1 || fail "perf record r1"
perf record -q -e raw_syscalls:sys_enter -a -o "$dir/r2.data" -- sleep 0.1 >/dev/null 2>&1 || fail "perf record r2"
# Threads that fork and exec while recorded: their names change mid-file.
perf record -q -e sched:sched_switch -e sched:sched_process_exec -e sched:sched_process_fork \
	-e sched:sched_wakeup -a -o "$dir/r3.data" -- \
	sh -c 'for i in 1 2 3; do ls / >/dev/null; sh -c true; done' >/dev/null 2>&1 || fail "perf record r3"
for f in r1 r2 r3 a c z; do
	perf script -i "$dir/$f.data" >"$dir/$f.perf" 2>/dev/null
	"$TRACEKIT" report "$dir/$f.data" >"$dir/$f.tk" 2>"$dir/$f.err" || fail "$f.data: report failed: $(cat "$dir/$f.err")"
	[ -s "$dir/$f.perf" ] || fail "$f.data: perf script printed nothing"
	cmp -s "$dir/$f.perf" "$dir/$f.tk" || { fail "$f.data: report differs from perf script"; diff "$dir/$f.perf" "$dir/$f.tk" | head -5; }
done
# Tracepoints with callchains (-g): each sample's text, then its frames and
# a blank line, as perf script prints them. Frames are compared by address
# and dso; which name a shared address gets is checked elsewhere.
perf record -q -e sched:sched_switch -e syscalls:sys_enter_openat -g -o "$dir/g.data" -- \
	sh -c 'sleep 0.05; ls / >/dev/null' >/dev/null 2>&1 || fail "perf record g"
mask_syms() { sed -E 's/^(\t *[0-9a-f]+) [^ ]+ \(/\1 SYM (/'; }
perf script -i "$dir/g.data" 2>/dev/null | mask_syms >"$dir/g.perf"
"$TRACEKIT" report "$dir/g.data" 2>"$dir/g.err" | mask_syms >"$dir/g.tk"
[ "$(grep -c '	' "$dir/g.perf")" -gt 0 ] || fail "g.data: perf script printed no callchain frames"
cmp -s "$dir/g.perf" "$dir/g.tk" || { fail "g.data: tracepoint callchains differ from perf script"; diff "$dir/g.perf" "$dir/g.tk" | head -5; }

# User symbols through the build-id cache: the binary is cached, then moved
# away; perf (--buildid-dir) and tracekit (--cache-dir) still name its
# function, from the recorded build id. Without the cache it is [unknown].
if command -v cc >/dev/null; then
	cat >"$dir/busy.c" <<'EOF'
static volatile unsigned long sink;
__attribute__((noinline)) void leafw(unsigned long n) { for (unsigned long i = 0; i < n; i++) sink += i * i; }
int main(void) { for (int k = 0; k < 30; k++) leafw(2000000); return 0; }
EOF
	cc -O1 -o "$dir/busy" "$dir/busy.c" || fail "cc busy.c"
	perf record -q -N -e cpu-clock -o "$dir/s.data" "$dir/busy" >/dev/null 2>&1 || fail "perf record s"
	"$TRACEKIT" cache --cache-dir "$dir/bcache" --add "$dir/busy" >/dev/null || fail "cache --add busy"
	mv "$dir/busy" "$dir/busy.moved"
	np=$(perf --buildid-dir "$dir/bcache" script -i "$dir/s.data" 2>/dev/null | grep -c ' leafw+')
	nt=$("$TRACEKIT" report --cache-dir "$dir/bcache" "$dir/s.data" 2>/dev/null | grep -c ' leafw+')
	ne=$(TRACEKIT_CACHE_DIR="$dir/bcache" "$TRACEKIT" report "$dir/s.data" 2>/dev/null | grep -c ' leafw+')
	mkdir -p "$dir/nocache"
	n0=$("$TRACEKIT" report --cache-dir "$dir/nocache" "$dir/s.data" 2>/dev/null | grep -c ' leafw+')
	[ "$np" -gt 0 ] && [ "$nt" = "$np" ] && [ "$ne" = "$np" ] && [ "$n0" = 0 ] ||
		fail "symbols through the cache: perf $np leafw samples, tracekit --cache-dir $nt, \$TRACEKIT_CACHE_DIR $ne, no cache $n0 (want 0)"
fi

# Samples in the vDSO: perf caches it as [vdso]/BUILDID/vdso; both name
# __vdso_gettimeofday from that copy, and print [unknown] without it.
if command -v cc >/dev/null; then
	cat >"$dir/gtod.c" <<'EOF'
#include <sys/time.h>
static volatile unsigned long sink;
int main(void) { struct timeval tv; for (int i = 0; i < 3000000; i++) { gettimeofday(&tv, 0); sink += tv.tv_usec; } return 0; }
EOF
	cc -O1 -o "$dir/gtod" "$dir/gtod.c" || fail "cc gtod.c"
	perf --buildid-dir "$dir/vbid" record -q -e cpu-clock -o "$dir/v.data" "$dir/gtod" >/dev/null 2>&1 ||
		fail "perf record v"
	perf --buildid-dir "$dir/vbid" script -i "$dir/v.data" 2>/dev/null | grep '(\[vdso\])' >"$dir/v.perf"
	"$TRACEKIT" report --cache-dir "$dir/vbid" "$dir/v.data" 2>/dev/null | grep '(\[vdso\])' >"$dir/v.tk"
	grep -q '__vdso_gettimeofday+0x' "$dir/v.perf" || fail "v.data: perf names no vdso symbol"
	cmp -s "$dir/v.perf" "$dir/v.tk" || { fail "v.data: vdso frames differ from perf script"; diff "$dir/v.perf" "$dir/v.tk" | head -5; }
	# Without that copy perf 6.1 names none (its own vDSO serves only a
	# [vdso] recorded without a build id), and neither does tracekit.
	mkdir -p "$dir/novbid"
	perf --buildid-dir "$dir/novbid" script -i "$dir/v.data" 2>/dev/null | grep '(\[vdso\])' >"$dir/v0.perf"
	"$TRACEKIT" report --cache-dir "$dir/novbid" "$dir/v.data" 2>/dev/null | grep '(\[vdso\])' >"$dir/v0.tk"
	[ -s "$dir/v0.perf" ] && ! grep -q '__vdso_' "$dir/v0.perf" ||
		fail "v.data without the cached vdso: perf names vdso symbols" "$(head -3 "$dir/v0.perf")"
	cmp -s "$dir/v0.perf" "$dir/v0.tk" ||
		fail "v.data without the cached vdso differs from perf script" "$(diff "$dir/v0.perf" "$dir/v0.tk" | head -5)"
fi

# Filters on perf.data: --cpu as perf script --cpu, -F as the event's lines,
# --comm and -P as perf script --comms / --tid; .dat-only options are refused.
perf script --cpu 0 -i "$dir/r1.data" >"$dir/f.perf" 2>/dev/null
"$TRACEKIT" report --cpu 0 "$dir/r1.data" >"$dir/f.tk" 2>&1
[ -s "$dir/f.perf" ] && cmp -s "$dir/f.perf" "$dir/f.tk" || fail "r1.data: report --cpu 0 differs from perf script --cpu 0"
perf script -i "$dir/r1.data" 2>/dev/null | grep ' sched:sched_wakeup: ' >"$dir/f.perf"
"$TRACEKIT" report -F 'sched:*wakeup' "$dir/r1.data" >"$dir/f.tk" 2>&1
[ -s "$dir/f.perf" ] && cmp -s "$dir/f.perf" "$dir/f.tk" || fail "r1.data: report -F sched:*wakeup differs from perf script's wakeup lines"
comm=$(perf script -F comm -i "$dir/r3.data" 2>/dev/null | awk 'NR == 1 { print $1 }')
tid=$(perf script -F tid -i "$dir/r3.data" 2>/dev/null | awk 'NR == 1 { print $1 }')
perf script --comms "$comm" -i "$dir/r3.data" >"$dir/f.perf" 2>/dev/null
"$TRACEKIT" report --comm "$comm" "$dir/r3.data" >"$dir/f.tk" 2>&1
[ -s "$dir/f.perf" ] && cmp -s "$dir/f.perf" "$dir/f.tk" || fail "r3.data: report --comm '$comm' differs from perf script --comms"
perf script --tid "$tid" -i "$dir/r3.data" >"$dir/f.perf" 2>/dev/null
"$TRACEKIT" report --tid "$tid" "$dir/r3.data" >"$dir/f.tk" 2>&1
[ -s "$dir/f.perf" ] && cmp -s "$dir/f.perf" "$dir/f.tk" || fail "r3.data: report --tid $tid differs from perf script --tid"
"$TRACEKIT" report --json "$dir/r1.data" >/dev/null 2>"$dir/f.err"
[ $? -eq 2 ] && grep -q -- '--json is for .dat files' "$dir/f.err" || fail "r1.data: --json on perf.data: $(cat "$dir/f.err")"
# Pipe mode from a real pipe: "-" and /dev/stdin.
perf script -i "$dir/c.data" >"$dir/f.perf" 2>/dev/null
for src in - /dev/stdin; do
	"$TRACEKIT" report "$src" <"$dir/c.data" >"$dir/f.tk" 2>"$dir/f.err" || fail "report $src < c.data: $(cat "$dir/f.err")"
	[ -s "$dir/f.perf" ] && cmp -s "$dir/f.perf" "$dir/f.tk" || fail "report $src < c.data differs from perf script"
done
# Nanosecond times: -t (trace-cmd's spelling) and --ns (perf's) as perf script --ns.
for f in r1 r3; do
	perf script --ns -i "$dir/$f.data" >"$dir/$f.perf" 2>/dev/null
	for opt in -t --ns; do
		"$TRACEKIT" report $opt "$dir/$f.data" >"$dir/$f.tk" 2>"$dir/$f.err" || fail "$f.data: report $opt failed: $(cat "$dir/$f.err")"
		cmp -s "$dir/$f.perf" "$dir/$f.tk" || { fail "$f.data: report $opt differs from perf script --ns"; diff "$dir/$f.perf" "$dir/$f.tk" | head -5; }
	done
done

# tracekit convert .dat -> perf.data: perf script shows every event of the
# .dat with the same pid, cpu, time (ns), event and text as trace-cmd report.
if "$TRACEKIT" record -q -e sched:sched_switch -e sched:sched_wakeup -o "$dir/t.dat" -- sleep 0.3 >/dev/null 2>&1 ||
   "$TRACEKIT" record -e sched:sched_switch -e sched:sched_wakeup -o "$dir/t.dat" -- sleep 0.3 >/dev/null 2>&1; then
	"$TRACEKIT" convert -q "$dir/t.dat" -o "$dir/t.data" 2>"$dir/cv.err" || fail "convert: $(cat "$dir/cv.err")"
	trace-cmd report -t -N "$dir/t.dat" 2>/dev/null |
		sed -nE 's/^ *(.*)-([0-9]+) +\[([0-9]+)\] +([0-9.]+): +([a-z_0-9]+): +(.*)$/\2 \3 \4 \5 \6/p' >"$dir/t1.txt"
	perf script --ns -i "$dir/t.data" 2>/dev/null |
		sed -nE 's/^ *(.*) +([0-9]+) +\[([0-9]+)\] +([0-9.]+): +[a-z_0-9]+:([a-z_0-9]+): (.*)$/\2 \3 \4 \5 \6/p' >"$dir/t2.txt"
	[ -s "$dir/t1.txt" ] || fail "convert: trace-cmd report printed no events"
	cmp -s "$dir/t1.txt" "$dir/t2.txt" || { fail "convert: perf script differs from trace-cmd report"; diff "$dir/t1.txt" "$dir/t2.txt" | head -5; }
	"$TRACEKIT" report "$dir/t.data" >"$dir/t.tk" 2>/dev/null
	perf script -i "$dir/t.data" >"$dir/t.perf" 2>/dev/null
	cmp -s "$dir/t.tk" "$dir/t.perf" || fail "convert: tracekit report differs from perf script on t.data"
else
	fail "tracekit record t.dat"
fi

# tracekit convert perf.data -> .dat: trace-cmd report (without plugins,
# as perf prints) shows the same events as perf script: pid, cpu, time (ns),
# event and text, compared as sorted sets (the two break time ties
# differently). Names: perf names a thread by its last COMM so far, a .dat
# by one name per pid, so names are compared for the pids perf shows under
# one name only (not pid 0: "swapper" in perf, "<idle>" in trace-cmd).
tc_events() {
	trace-cmd report -t -N "$1" 2>/dev/null |
		sed -nE 's/^ *(.*)-([0-9]+) +\[([0-9]+)\] +([0-9.]+): +([a-z_0-9]+): +(.*)$/\2 \3 \4 \5 \6/p' | sort
}
tc_names() {
	trace-cmd report -t -N "$1" 2>/dev/null |
		sed -nE 's/^ *(.*)-([0-9]+) +\[([0-9]+)\] +([0-9.]+): .*$/\2 \1/p' | sort -u
}
perf_events() {
	perf script --ns -i "$1" 2>/dev/null |
		sed -nE 's/^ *(.*) +(-?[0-9]+) +\[([0-9]+)\] +([0-9.]+): +[a-z_0-9]+:([a-z_0-9]+): +(.*)$/\2 \3 \4 \5 \6/p' | sort
}
perf_names() {
	perf script --ns -i "$1" 2>/dev/null |
		sed -nE 's/^ *(.*[^ ]) +([0-9]+) +\[([0-9]+)\] +([0-9.]+): .*$/\2 \1/p' | sort -u |
		awk '$1 != 0 { n[$1]++; line[$1] = $0 } END { for (p in n) if (n[p] == 1) print line[p] }' | sort
}
# A sample of a task that is exiting carries pid -1 (perf script prints
# ":-1  -1"); its payload's common_pid, which the .dat shows, is the real
# one. So: the same events without the pid, and the same pid wherever perf
# knows it.
same_events() {
	local pf=$1 tc=$2
	cmp -s <(cut -d' ' -f2- "$pf" | sort) <(cut -d' ' -f2- "$tc" | sort) || return 1
	[ -z "$(grep -v '^-1 ' "$pf" | comm -23 - "$tc")" ]
}
for f in r1 r2; do
	if ! "$TRACEKIT" convert "$dir/$f.data" -o "$dir/$f.dat" 2>"$dir/$f.cv.err"; then
		fail "convert $f.data: $(cat "$dir/$f.cv.err")"
		continue
	fi
	grep -q "samples on" "$dir/$f.cv.err" || fail "convert $f.data: no summary line"
	tc_events "$dir/$f.dat" >"$dir/$f.tc.ev"
	perf_events "$dir/$f.data" >"$dir/$f.pf.ev"
	[ -s "$dir/$f.pf.ev" ] || fail "convert $f: perf script printed no events"
	same_events "$dir/$f.pf.ev" "$dir/$f.tc.ev" || { fail "convert $f: trace-cmd report of the .dat differs from perf script"; diff "$dir/$f.pf.ev" "$dir/$f.tc.ev" | head -5; [ -n "${TK_KEEP:-}" ] && cp "$dir/$f".* "$TK_KEEP/"; }
	perf_names "$dir/$f.data" >"$dir/$f.pf.nm"
	tc_names "$dir/$f.dat" >"$dir/$f.tc.nm"
	missing=$(comm -23 "$dir/$f.pf.nm" "$dir/$f.tc.nm")
	[ -z "$missing" ] || fail "convert $f: names perf shows but trace-cmd does not: $(echo "$missing" | head -3)"
	[ -s "$dir/$f.pf.nm" ] || fail "convert $f: no names compared"
done
# Non-tracepoint samples are skipped with a count; a file without tracepoints is refused.
perf record -q -e sched:sched_switch -e cpu-clock -a -o "$dir/m.data" -- sleep 0.2 >/dev/null 2>&1 || fail "perf record m"
if "$TRACEKIT" convert -q "$dir/m.data" -o "$dir/m.dat" 2>"$dir/m.err"; then
	grep -q 'samples of non-tracepoint events skipped' "$dir/m.err" || fail "convert m: no skip count: $(cat "$dir/m.err")"
	tc_events "$dir/m.dat" >"$dir/m.tc.ev"
	perf_events "$dir/m.data" >"$dir/m.pf.ev"
	same_events "$dir/m.pf.ev" "$dir/m.tc.ev" || { fail "convert m: events differ"; diff "$dir/m.pf.ev" "$dir/m.tc.ev" | head -5; }
else
	fail "convert m.data: $(cat "$dir/m.err")"
fi
if "$TRACEKIT" convert "$dir/b.data" -o "$dir/b.dat" 2>"$dir/b.err"; then
	fail "convert b.data (cpu-clock only) accepted"
else
	grep -q 'no TRACING_DATA' "$dir/b.err" || fail "convert b.data: message '$(cat "$dir/b.err")'"
	[ ! -e "$dir/b.dat" ] || fail "convert b.data left an output file"
fi

# tracekit record --perf: perf_event_open into perf.data. PROG makes exactly
# K getppid calls (NR 110); perf script must show K of them for PROG's pid,
# perf report --header-only must open the file, and tracekit report must
# print what perf script prints.
if command -v cc >/dev/null; then
	cat >"$dir/prog.c" <<'EOF_PROG'
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	FILE *f = fopen(argv[2], "w");
	int k = atoi(argv[1]);

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f))
		return 1;
	for (int i = 0; i < k; i++)
		syscall(SYS_getppid);
	return 0;
}
EOF_PROG
	K=777
	if cc -O2 -o "$dir/prog" "$dir/prog.c"; then
		"$TRACEKIT" record -q -e raw_syscalls:sys_enter --perf -o "$dir/F.data" -- \
			"$dir/prog" $K "$dir/prog.pid" 2>"$dir/F.err" || fail "record --perf: $(cat "$dir/F.err")"
		ppid=$(cat "$dir/prog.pid" 2>/dev/null)
		perf script -i "$dir/F.data" >"$dir/F.perf" 2>/dev/null
		n=$(awk -v p="$ppid" '$2 == p' "$dir/F.perf" | grep -c 'NR 110 ')
		[ "$n" = "$K" ] || fail "record --perf: perf script shows $n getppid calls of pid $ppid, not $K"
		awk -v p="$ppid" '$2 == p' "$dir/F.perf" | grep -q '^ *prog ' || fail "record --perf: PROG not named prog"
		perf report --header-only -I -i "$dir/F.data" >"$dir/F.hdr" 2>&1 || fail "record --perf: perf report --header-only failed"
		grep -q 'name = raw_syscalls:sys_enter' "$dir/F.hdr" || fail "record --perf: no event in the header"
		"$TRACEKIT" report "$dir/F.data" >"$dir/F.tk" 2>"$dir/F.err" || fail "record --perf: report: $(cat "$dir/F.err")"
		cmp -s "$dir/F.perf" "$dir/F.tk" || { fail "record --perf: report differs from perf script"; diff "$dir/F.perf" "$dir/F.tk" | head -5; }
		# An output named *.data selects the perf recorder; globs; --duration.
		"$TRACEKIT" record -e 'sched:sched_sw*' -e sched:sched_wakeup -o "$dir/G.data" --duration 0.3 \
			2>"$dir/G.err" || fail "record *.data: $(cat "$dir/G.err")"
		grep -q 'samples lost' "$dir/G.err" || fail "record *.data: no summary"
		perf script -i "$dir/G.data" >"$dir/G.perf" 2>/dev/null
		[ -s "$dir/G.perf" ] || fail "record *.data: perf script printed nothing"
		"$TRACEKIT" report "$dir/G.data" >"$dir/G.tk" 2>/dev/null
		cmp -s "$dir/G.perf" "$dir/G.tk" || fail "record *.data: report differs from perf script"
		if "$TRACEKIT" record --perf -e nosuch:event -o "$dir/N.data" --duration 0.1 2>"$dir/N.err"; then
			fail "record --perf: unknown event accepted"
		else
			grep -q 'no tracepoint matches "nosuch:event"' "$dir/N.err" || fail "record --perf: message '$(cat "$dir/N.err")'"
		fi
	else
		fail "cc prog.c"
	fi
else
	echo "SKIP: record --perf checks need cc"
fi

# Feature sections: tracekit dump prints the ones it decodes as perf report
# --header-only -I words them, so its lines must equal perf's on real files:
# CPU and NUMA topology (sibling lists, per-CPU core, die and socket ids),
# an event group's GROUP_DESC, the STAT flag and STAT_CONFIG of perf stat
# record, BPF_PROG_INFO and BPF_BTF of BPF programs loaded while perf
# records (one named by the kernel, one by its BTF). Malformed sections of
# the same files are skipped with a warning naming the file and offset.
hdr_lines() { perf report --header-only -I -i "$1" 2>/dev/null | sed -n 's/^# //p' | grep -E "$2"; }
dump_lines() { "$TRACEKIT" dump "$1" 2>/dev/null | sed -n 's/^    //p' | grep -E "$2"; }
feat_same() {
	hdr_lines "$1" "$2" >"$dir/fh.perf"
	dump_lines "$1" "$2" >"$dir/fh.tk"
	if [ ! -s "$dir/fh.perf" ]; then fail "$1: perf printed no $3"; return; fi
	cmp -s "$dir/fh.perf" "$dir/fh.tk" || { fail "$1: $3 differ from perf report -I"; diff "$dir/fh.perf" "$dir/fh.tk" | head -5; }
}
feat_off() { "$TRACEKIT" dump "$1" 2>/dev/null | sed -n "s/^  feature [0-9]* $2: offset=\(0x[0-9a-f]*\) .*/\1/p"; }
# corrupt FILE FEATURE DELTA BYTES WANT_DELTA: write BYTES at the feature's
# offset + DELTA; dump must still succeed, mark it malformed and warn at
# offset + WANT_DELTA.
corrupt() {
	local f=$1 feat=$2 off bad=$dir/bad-$2.data
	off=$(feat_off "$f" "$feat")
	[ -n "$off" ] || { fail "$f: no $feat feature"; return; }
	cp "$f" "$bad"
	printf "$4" | dd of="$bad" bs=1 seek=$((off + $3)) conv=notrunc 2>/dev/null
	if "$TRACEKIT" dump "$bad" >"$dir/bad.txt" 2>"$dir/bad.err"; then
		grep -q "feature [0-9]* $feat: .*(malformed)" "$dir/bad.txt" || fail "$bad: $feat not shown as malformed"
		grep -q "bad-$feat.data: offset $(printf 0x%x $((off + $5))): feature $feat (.*) is malformed" "$dir/bad.err" ||
			fail "$bad: warning '$(cat "$dir/bad.err")'"
	else
		fail "$bad: dump failed: $(cat "$dir/bad.err")"
	fi
}
topo='^(sibling (sockets|dies|threads) |CPU [0-9]+: Core ID|Core ID|node[0-9]+ (meminfo|cpu list) )'
perf record -q -e '{cpu-clock,task-clock}' -o "$dir/fg.data" -- true >/dev/null 2>&1 || fail "perf record fg"
perf stat record -o "$dir/fs.data" -- true >/dev/null 2>&1 || fail "perf stat record fs"
for f in a b fg fs; do feat_same "$dir/$f.data" "$topo" "CPU and NUMA topology lines"; done
feat_same "$dir/fg.data" '^group: ' "group lines"
feat_same "$dir/fs.data" '^contains stat data$' "STAT lines"
want=$(perf report -D -i "$dir/fs.data" 2>/dev/null |
	sed -nE 's/^\.\.\. (aggr_mode|interval|scale) +([0-9]+)$/\1=\2/p' | sort | tr '\n' ' ')
got=$("$TRACEKIT" dump "$dir/fs.data" 2>/dev/null | sed -n 's/^stat config: //p' | tr ' ' '\n' | sort | tr '\n' ' ')
[ -n "$want" ] && [ "$want" = "$got" ] || fail "fs.data: stat config '$got', perf report -D says '$want'"
corrupt "$dir/b.data" CPU_TOPOLOGY 0 '\xff\xff\xff\x7f' 0
corrupt "$dir/fg.data" GROUP_DESC 0 '\x00\x00\x01\x00' 0
if command -v cc >/dev/null; then
	cat >"$dir/bpfprogs.c" <<'EOF_BPF'
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
/* Two BPF socket filters ("return 0"): tk_plain without BTF, tk_btf whose
 * BTF names its function tk_feature_func. Holds them until killed. */
static int load(const char *name, int btf_fd)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct bpf_func_info fi = { 0, 3 };
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (unsigned long)insns;
	a.insn_cnt = 2;
	a.license = (unsigned long)"GPL";
	strncpy(a.prog_name, name, sizeof(a.prog_name) - 1);
	if (btf_fd >= 0) {
		a.prog_btf_fd = btf_fd;
		a.func_info_rec_size = sizeof(fi);
		a.func_info = (unsigned long)&fi;
		a.func_info_cnt = 1;
	}
	return syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
}
int main(int argc, char **argv)
{
	static const char strs[] = "\0int\0tk_feature_func";
	const uint32_t types[] = {
		1, BTF_KIND_INT << 24, 4, 0x01000020,   /* [1] int */
		0, BTF_KIND_FUNC_PROTO << 24, 1,        /* [2] int (void) */
		5, BTF_KIND_FUNC << 24, 2,              /* [3] tk_feature_func */
	};
	struct btf_header h = { .magic = BTF_MAGIC, .version = BTF_VERSION, .hdr_len = sizeof(h),
				.type_len = sizeof(types), .str_off = sizeof(types),
				.str_len = sizeof(strs) };
	unsigned char blob[sizeof(h) + sizeof(types) + sizeof(strs)];
	union bpf_attr a;
	FILE *f;
	int btf;

	memcpy(blob, &h, sizeof(h));
	memcpy(blob + sizeof(h), types, sizeof(types));
	memcpy(blob + sizeof(h) + sizeof(types), strs, sizeof(strs));
	memset(&a, 0, sizeof(a));
	a.btf = (unsigned long)blob;
	a.btf_size = sizeof(blob);
	btf = syscall(SYS_bpf, BPF_BTF_LOAD, &a, sizeof(a));
	if (btf < 0 || load("tk_plain", -1) < 0 || load("tk_btf", btf) < 0) {
		perror("bpf");
		return 1;
	}
	if (argc < 2 || !(f = fopen(argv[1], "w")) || fclose(f))
		return 1;
	pause();
	return 0;
}
EOF_BPF
	if cc -O2 -o "$dir/bpfprogs" "$dir/bpfprogs.c"; then
		"$dir/bpfprogs" "$dir/bpf.ready" &
		bpid=$!
		for i in $(seq 50); do [ -e "$dir/bpf.ready" ] || ! kill -0 $bpid 2>/dev/null && break; sleep 0.1; done
		if [ -e "$dir/bpf.ready" ]; then
			perf record -q -e cpu-clock -o "$dir/fb.data" -- true >/dev/null 2>&1 || fail "perf record fb"
			kill $bpid; wait $bpid 2>/dev/null
			feat_same "$dir/fb.data" '^(bpf_prog_info |btf info of id )' "BPF program and BTF lines"
			n=$(dump_lines "$dir/fb.data" '^bpf_prog_info [0-9]+: bpf_prog_[0-9a-f]{16}_(tk_plain|tk_feature_func) ' | wc -l)
			[ "$n" = 2 ] || fail "fb.data: $n of the 2 loaded BPF programs shown by name"
			# The first program's data_len past the section end (count u32, info_len u32, data_len).
			corrupt "$dir/fb.data" BPF_PROG_INFO 8 '\xff\xff\xff\x7f' 4
		else
			wait $bpid 2>/dev/null
			echo "SKIP: BPF_PROG_INFO/BPF_BTF checks: BPF programs could not be loaded"
		fi
	else
		fail "cc bpfprogs.c"
	fi
fi

# Losses perf recorded: tracekit report warns exactly as perf script does
# (LOST records as "chunks", LOST_SAMPLES above 5 % as a share). A tiny
# buffer under a getppid storm loses some.
cat >"$dir/storm.c" <<'EOF_STORM'
#include <unistd.h>
int main(void) { for (long i = 0; i < 2000000; i++) getppid(); return 0; }
EOF_STORM
if cc -O2 -o "$dir/storm" "$dir/storm.c" &&
	perf record -q -m 1 -e raw_syscalls:sys_enter -o "$dir/lost.data" -- "$dir/storm" >/dev/null 2>&1; then
	perf script -i "$dir/lost.data" >"$dir/lost.perf" 2>"$dir/lost.perf.err"
	"$TRACEKIT" report "$dir/lost.data" >"$dir/lost.tk" 2>"$dir/lost.tk.err" || fail "report of lost.data failed"
	if grep -q "lost" "$dir/lost.perf.err"; then
		cmp -s "$dir/lost.perf.err" "$dir/lost.tk.err" ||
			fail "loss warnings differ from perf script's: $(diff "$dir/lost.perf.err" "$dir/lost.tk.err" | head -5)"
	else
		echo "SKIP (part): perf lost nothing under the storm, the loss warnings were not compared"
	fi
	cmp -s "$dir/lost.perf" "$dir/lost.tk" || fail "lost.data: text differs from perf script"
	# A sample id of no event (one attr's id changed in the file): perf
	# script refuses the file; tracekit prints the rest, says how many samples
	# it left out, and exits 1.
	perf record -q -e sched:sched_switch -e sched:sched_wakeup -a -o "$dir/two.data" -- sleep 0.2 \
		>/dev/null 2>&1 || fail "perf record two events"
	python3 - "$dir/two.data" <<'EOF_ID'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
attr_size, attrs_off = struct.unpack_from('<QQ', b, 16)
# each attrs entry: the attr, then the file section of its ids
ids_off, ids_size = struct.unpack_from('<QQ', b, attrs_off + attr_size - 16)
assert ids_size >= 8
struct.pack_into('<Q', b, ids_off, struct.unpack_from('<Q', b, ids_off)[0] ^ 0x5a5a0000)
open(p, 'wb').write(b)
EOF_ID
	"$TRACEKIT" report "$dir/two.data" >"$dir/two.tk" 2>"$dir/two.err"
	rc=$?
	[ $rc = 1 ] && grep -q "samples name an event id the file does not define" "$dir/two.err" ||
		fail "a sample id of no event: rc=$rc, $(cat "$dir/two.err")"
else
	fail "cc storm.c or perf record -m 1"
fi

[ $fails = 0 ] && echo "perfdata: all checks passed"
exit $((fails > 0))
