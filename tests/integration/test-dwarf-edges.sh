#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# DWARF unwinding where perf's unwinder (libunwind, in perf 6.1) and
# libdwfl part ways, with perf script as the oracle: stacks deeper than
# the 4096-byte stack copy (perf ends them with a 0xffffffffffffffff
# frame: the return address beyond the copy reads as 0), and a function
# without any CFI (perf steps it by its frame pointer, taking the caller's
# stack pointer as the frame's own + 16 even where locals lie between),
# and a function of a shared object without debug info that has a global
# alias at its address (perf's inline mode prints addr2line's name for it,
# "(inlined)", when that is not perf's own pick among the aliases).
# tracekit report must print what perf script prints, with and without
# --no-inline.
set -u
. "$(dirname "$0")/../lib.sh"
if ! command -v perf >/dev/null; then echo "SKIP: perf is not installed"; exit 77; fi
if [ "$(id -u)" != 0 ]; then echo "SKIP: perf record needs root here"; exit 77; fi
if ! command -v cc >/dev/null; then echo "SKIP: no C compiler to build the test program"; exit 77; fi
dir=$(mktemp -d /tmp/tk-dwarf-edges.XXXXXX)
trap 'rm -rf "$dir"' EXIT
tmp=$dir
export HOME=$dir/home
mkdir -p "$HOME/.debug"

cat >"$dir/prog.c" <<'PROG'
#include <stdlib.h>
volatile unsigned long sink;
/* No CFI at all: a frame-pointer function whose locals put rsp below rbp. */
__asm__(".text\n.globl nocfi\n.type nocfi,@function\nnocfi:\n"
	"push %rbp\nmov %rsp,%rbp\nsub $32,%rsp\nmov %rdi,%rcx\n"
	"1: dec %rcx\njnz 1b\nleave\nret\n.size nocfi,.-nocfi\n");
void nocfi(unsigned long n);
__attribute__((noinline)) void call_nocfi(void)
{
	for (int i = 0; i < 20; i++)
		nocfi(100000);
	sink++;
}
/* Frames of ~512 bytes, 12 deep: more stack than a 4096-byte copy holds. */
__attribute__((noinline)) unsigned long deep(int d)
{
	volatile char pad[500];
	pad[d] = (char)d;
	if (d == 0) {
		unsigned long s = 0;
		for (unsigned long i = 0; i < 200000; i++)
			s += i ^ sink;
		return s + pad[0];
	}
	return deep(d - 1) + pad[d];
}
unsigned long alias_long_a(unsigned long n);
int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], 0, 0) : 100;
	for (unsigned long i = 0; i < rounds; i++) {
		sink += deep(12);
		call_nocfi();
		sink += alias_long_a(200000);
	}
	return 0;
}
PROG
# Without -g: addr2line names alias_b (first in both tables, as this
# linker orders them; checked below), perf alias_long_a (the longer name).
cat >"$dir/a2l.c" <<'LIB'
volatile unsigned long lsink;
__attribute__((noinline)) unsigned long alias_b(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i ^ lsink;
	return s;
}
unsigned long alias_long_a(unsigned long n) __attribute__((alias("alias_b")));
LIB
cc -O1 -shared -fPIC -o "$dir/liba2l.so" "$dir/a2l.c" &&
	cc -O2 -g -fomit-frame-pointer -o "$dir/prog" "$dir/prog.c" -L"$dir" -la2l \
		-Wl,-rpath,"$dir" || { fail "cannot build the test program"; finish; }
(cd "$dir" && perf record -q -N -e cpu-clock -F 2000 --call-graph dwarf,4096 -o "$dir/d.data" \
	./prog 100 >/dev/null 2>&1) || fail "perf record --call-graph dwarf"

# compare NAME [OPTIONS...]: perf script and tracekit report print the same text.
compare() {
	local name=$1
	shift
	perf script "$@" -i "$dir/d.data" >"$dir/$name.perf" 2>/dev/null || fail "$name: perf script failed"
	"$TRACEKIT" report --cache-dir "$HOME/.debug" "$@" "$dir/d.data" >"$dir/$name.tk" \
		2>"$dir/$name.err" || fail "$name: tracekit report failed" "$(head -3 "$dir/$name.err")"
	if [ -s "$dir/$name.perf" ] && cmp -s "$dir/$name.perf" "$dir/$name.tk"; then
		pass "$name: tracekit report prints what perf script $* prints"
	else
		fail "$name: tracekit report differs from perf script $*" \
			"$(diff "$dir/$name.perf" "$dir/$name.tk" | head -20)"
	fi
}

compare inline
compare noinline --no-inline
grep -q 'nocfi+0x[0-9a-f]* (.*/prog)' "$dir/inline.tk" &&
	pass "a sample in the function without CFI" ||
	fail "no sample in the function without CFI"
grep -q '^	ffffffffffffffff \[unknown\] (\[unknown\])$' "$dir/inline.tk" &&
	pass "a stack that ends beyond the copy ends as perf's" ||
	fail "no stack ending beyond the stack copy"
a2l=$(addr2line -f -e "$dir/liba2l.so" "0x$(nm -D "$dir/liba2l.so" | awk '$3 == "alias_b" { print $1 }')" | head -1)
if [ "$a2l" = alias_b ]; then
	grep -q ' alias_b+0x[0-9a-f]* (inlined)$' "$dir/inline.tk" &&
		pass "a frame of the alias pair prints addr2line's name, inlined" ||
		fail "no inlined alias_b frame"
	grep -q ' alias_long_a+0x[0-9a-f]* (.*/liba2l.so)$' "$dir/noinline.tk" &&
		pass "--no-inline prints perf's own pick, alias_long_a" ||
		fail "no alias_long_a frame with --no-inline"
else
	echo "# addr2line names the alias pair $a2l here: only the comparisons above apply"
fi

# libdw is opened on first use: a libdw.so.1 without its functions makes
# the report say so once and print the samples with their kernel frames.
mkdir -p "$dir/nolibdw"
echo 'int not_libdw;' >"$dir/nolibdw/f.c"
if cc -shared -fPIC -Wl,-soname,libdw.so.1 -o "$dir/nolibdw/libdw.so.1" "$dir/nolibdw/f.c"; then
	LD_LIBRARY_PATH=$dir/nolibdw "$TRACEKIT" report --cache-dir "$HOME/.debug" "$dir/d.data" \
		>"$dir/nolibdw.tk" 2>"$dir/nolibdw.err"
	rc=$?
	n=$(grep -c 'user stacks are not unwound: cannot load libdw' "$dir/nolibdw.err")
	if [ "$rc" = 0 ] && [ "$n" = 1 ] && grep -q ' cpu-clock' "$dir/nolibdw.tk"; then
		pass "without a usable libdw the report says so once and prints its samples"
	else
		fail "without a usable libdw: exit $rc, $n warnings" "$(head -3 "$dir/nolibdw.err")"
	fi
else
	fail "cannot build the stand-in libdw.so.1"
fi
finish
