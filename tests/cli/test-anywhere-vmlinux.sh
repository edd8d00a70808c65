#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# anywhere-vmlinux: report/profile --vmlinux FILE (perf's -k, issue 16).
# Kernel symbols come from that ELF alone, and only when its build id is
# the one the perf.data recorded for the kernel; otherwise every kernel
# address prints [unknown] and one warning says why. The ELFs are made
# here with as and ld --build-id=0x...: a NOBITS .text at the recorded
# _text holding the kernel functions that mod-k.data and group-read-g.data
# sample and tracepoints-long.data's %ps argument names (addresses of the
# kernel they were recorded on, listed below;
# handle_softirqs is left out so that one address stays unnamed), once
# with the recorded build id, once with another, and once linked 16 MiB
# lower (a KASLR kernel's vmlinux: its symbols move by the recorded _text
# minus its own). With perf installed the text must be perf's, byte for
# byte (perf script --vmlinux, and perf report --stdio --vmlinux for
# profile); without, the names and [unknown]s are checked.
set -u
. "$(dirname "$0")/../lib.sh"
data=$TK_SOURCE_DIR/tests/data/perf
for t in as ld; do
	if ! command -v $t >/dev/null; then
		echo "SKIP: $t (binutils) is not installed"
		exit 77
	fi
done
tmp=$(mktemp -d /tmp/tk-anywhere-vmlinux.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
kbid=4a5a9b0affb66c437abcd455d2738af879985fa9 # [kernel.kallsyms] in both files

# address size name, from the recording kernel's kallsyms
{
	printf '\t.section .text,"ax"\n\t.globl _text\n_text:\n'
	while read -r addr size name; do
		off=$((0x$addr - 0xffffffff81000000))
		printf '\t.org %d\n\t.globl %s\n\t.type %s,@function\n%s:\n\t.org %d\n\t.size %s, .-%s\n' \
			"$off" "$name" "$name" "$name" "$((off + 0x$size))" "$name" "$name"
	done <<'SYMS'
ffffffff810000ba 7e entry_SYSCALL_64_after_hwframe
ffffffff81000df0 20 asm_sysvec_apic_timer_interrupt
ffffffff813a4380 2b0 finish_task_switch.isra.0
ffffffff814204b0 30 hrtimer_wakeup
ffffffff8158e5e0 810 filemap_map_pages
ffffffff816c4040 160 vfs_statx
ffffffff816c47e0 b0 vfs_fstatat
ffffffff816c48a0 60 __do_sys_newfstatat
ffffffff816cd820 160 lookup_fast
ffffffff816d10d0 190 walk_component
ffffffff816d20e0 180 path_lookupat
ffffffff816d25d0 200 filename_lookup
ffffffff816e1ee0 110 __d_lookup_rcu
ffffffff821ef620 280 do_syscall_64
ffffffff821f5a60 1a0 irqentry_exit_to_user_mode
ffffffff821fa6c0 f50 __schedule
ffffffff821fb620 a0 schedule
SYMS
} >"$tmp/k.s"
link() { # OUT TEXT-ADDRESS BUILD-ID
	printf 'SECTIONS {\n . = %s - 0x1000;\n .note.gnu.build-id : { *(.note.gnu.build-id) }\n . = %s;\n .text (NOLOAD) : { *(.text) }\n}\n' \
		"$2" "$2" >"$tmp/k.lds"
	ld -o "$tmp/$1" -T "$tmp/k.lds" --build-id="0x$3" -e _text "$tmp/k.o"
}
if ! as -o "$tmp/k.o" "$tmp/k.s" 2>"$tmp/as.err" ||
	! link vmlinux-ok 0xffffffff81000000 $kbid ||
	! link vmlinux-other 0xffffffff81000000 1111111111111111111111111111111111111111 ||
	! link vmlinux-kaslr 0xffffffff80000000 $kbid; then
	echo "SKIP: as/ld cannot make the test vmlinux: $(head -2 "$tmp/as.err")"
	exit 77
fi

run report --vmlinux "$tmp/vmlinux-ok" "$data/mod-k.data"
check "matching build id: kernel symbols from the vmlinux" \
	eval 'rc_is 0 && err_empty && out_has "ffffffff8158e81f filemap_map_pages+0x23f (\[kernel.kallsyms\])"'
check "matching build id: an address it has no symbol for is [unknown]" \
	out_has "ffffffff813620e2 \[unknown\] (\[kernel.kallsyms\])"
run report --vmlinux "$tmp/vmlinux-kaslr" "$data/mod-k.data"
check "a vmlinux linked elsewhere is moved to the recorded _text" \
	eval 'rc_is 0 && out_has "ffffffff8158e81f filemap_map_pages+0x23f (\[kernel.kallsyms\])"'
run report --vmlinux "$tmp/vmlinux-other" "$data/mod-k.data"
check "another build id: no kernel symbol, from kallsyms neither" \
	eval 'rc_is 0 && ! out_has "filemap_map_pages" && out_has "ffffffff8158e81f \[unknown\] (\[kernel.kallsyms\])"'
check "another build id: one warning naming both ids" \
	eval 'err_lines 1 && err_has "vmlinux .*vmlinux-other: build id 1111111111111111111111111111111111111111 is not the recorded kernel.s $kbid: kernel symbols \[unknown\]"'
run report --vmlinux "$tmp/vmlinux-other" --kallsyms /proc/kallsyms "$data/mod-k.data"
check "--vmlinux wins over --kallsyms, as in perf" eval '! out_has "filemap_map_pages"'
run profile --vmlinux "$tmp/vmlinux-ok" "$data/mod-k.data"
check "profile --vmlinux names kernel symbols" eval 'rc_is 0 && out_has "\[k\] filemap_map_pages"'
run profile --vmlinux "$tmp/vmlinux-other" "$data/mod-k.data"
check "profile --vmlinux of another build id: one warning" \
	eval 'rc_is 0 && ! out_has "filemap_map_pages" && err_lines 1 && err_has "is not the recorded kernel"'
run report --vmlinux "$tmp/missing" "$data/mod-k.data"
check "a vmlinux that cannot be read: a warning, [unknown]" \
	eval 'rc_is 0 && err_has "vmlinux .*missing" && ! out_has filemap_map_pages'
run report --help
check "report --help shows --vmlinux" out_has "--vmlinux FILE"
run profile --help
check "profile --help shows --vmlinux" out_has "--vmlinux FILE"

# A tracepoint's %ps argument (hrtimer_start's function) is named from it too.
run report --vmlinux "$tmp/vmlinux-ok" "$data/wordsize/tracepoints-long.data"
check "a %ps argument is named from the vmlinux" out_has "function=hrtimer_wakeup expires="
run report --vmlinux "$tmp/vmlinux-other" "$data/wordsize/tracepoints-long.data"
check "a %ps argument of another build id's vmlinux stays a number" \
	out_has "function=0xffffffff814204b0 expires="

if command -v perf >/dev/null; then
	for f in mod-k group-read-g g wordsize/tracepoints-long; do
		for v in ok other kaslr; do
			perf script --vmlinux "$tmp/vmlinux-$v" -i "$data/$f.data" >"$tmp/perf.out" 2>/dev/null
			run report --vmlinux "$tmp/vmlinux-$v" "$data/$f.data"
			check "$f, vmlinux-$v: report prints what perf script --vmlinux prints" \
				eval 'rc_is 0 && cmp -s "$tmp/perf.out" "$tmp/out"'
		done
	done
	# perf report's table (its own tip lines and blank lines aside).
	for v in ok other kaslr; do
		perf report --stdio --vmlinux "$tmp/vmlinux-$v" -i "$data/mod-k.data" 2>/dev/null |
			grep -v '^#' | grep -v '^$' >"$tmp/perf.out"
		run profile --vmlinux "$tmp/vmlinux-$v" "$data/mod-k.data"
		grep -v '^#' "$tmp/out" | grep -v '^$' >"$tmp/tk.out"
		check "mod-k, vmlinux-$v: profile prints what perf report --vmlinux prints" \
			cmp -s "$tmp/perf.out" "$tmp/tk.out"
	done
else
	skip "comparison with perf script --vmlinux" "perf is not installed"
fi
finish
