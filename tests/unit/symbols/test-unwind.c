// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of the DWARF unwinder: a stack captured from this test's own
 * functions (registers as perf's x86-64 user registers, the stack from the
 * stack pointer up, the maps of /proc/self/maps) unwinds through them by
 * their CFI, also through a frame whose CFA is rbx-based over a callee
 * whose CFI leaves rbx unnamed; a binary of another build id stops the
 * unwinding after its frame; a lower stale map of a binary's file moves perf's lookup of its
 * table as it moves ours; frames without CFI step as perf's libunwind
 * steps them (a PLT entry by its bytes, no step from memory no binary
 * maps); samples without usable state give no frames.
 * x86-64 only (the unwinder's one architecture): skipped elsewhere.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/symbolizer.h>

#include "tk-test.h"
#include "unwind-internal.h"

#define STACK_COPY 16384
#define MAPS_MAX   256

/* A captured user state, laid out as a perf sample's (perf's x86 register numbers). */
struct snap {
	uint64_t regs[24];
	uint8_t stack[STACK_COPY];
	uint64_t stack_size;
};

struct maps {
	struct tk_unwind_map m[MAPS_MAX];
	char *paths[MAPS_MAX];
	size_t n;
	const char *force_bid; /* a build id to give every map, or NULL */
};

static volatile unsigned long sink;

/* The stack above @sp up to its end: ASan's redzones in it are no error here. */
__attribute__((noinline, no_sanitize_address)) static void copy_stack(struct snap *sn, uint64_t sp)
{
	unsigned long long start, end;
	uint64_t n = STACK_COPY;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (strstr(line, "[stack]") && sscanf(line, "%llx-%llx", &start, &end) == 2 &&
		    sp >= start && sp < end && end - sp < n)
			n = end - sp;
	}
	if (f)
		fclose(f);
	for (uint64_t i = 0; i < n; i++)
		sn->stack[i] = ((const volatile uint8_t *)(uintptr_t)sp)[i];
	sn->stack_size = n;
}

#if defined(__x86_64__)
__attribute__((noinline, noclone)) static void capture(struct snap *sn)
{
	uint64_t *r = sn->regs;

	/* perf's order: ax bx cx dx si di bp sp ip flags cs ss ds es fs gs r8..r15. */
	__asm__ volatile("movq %%rax, 0(%0)\n\t"
			 "movq %%rbx, 8(%0)\n\t"
			 "movq %%rcx, 16(%0)\n\t"
			 "movq %%rdx, 24(%0)\n\t"
			 "movq %%rsi, 32(%0)\n\t"
			 "movq %%rdi, 40(%0)\n\t"
			 "movq %%rbp, 48(%0)\n\t"
			 "movq %%rsp, 56(%0)\n\t"
			 "leaq 0(%%rip), %%rax\n\t"
			 "movq %%rax, 64(%0)\n\t"
			 "movq %%r8, 128(%0)\n\t"
			 "movq %%r9, 136(%0)\n\t"
			 "movq %%r10, 144(%0)\n\t"
			 "movq %%r11, 152(%0)\n\t"
			 "movq %%r12, 160(%0)\n\t"
			 "movq %%r13, 168(%0)\n\t"
			 "movq %%r14, 176(%0)\n\t"
			 "movq %%r15, 184(%0)\n\t"
			 :
			 : "r"(r)
			 : "rax", "memory");
	copy_stack(sn, r[7]);
}

__attribute__((noinline, noclone)) static void level2(struct snap *sn)
{
	capture(sn);
	sink++; /* no tail call: level2 stays on the stack */
}

__attribute__((noinline, noclone)) static void level1(struct snap *sn)
{
	level2(sn);
	sink++;
}

/*
 * A frame whose CFA is rbx-based, over a callee sampled at its first
 * instruction, where its CFI names no register but the return address:
 * ld.so's lazy-binding trampoline over _dl_fixup, as perf records it.
 * rbx_tramp(sn, copy) saves rbx, keeps its stack pointer there, aligns
 * the stack and calls rbx_leaf(sn, copy), which stores its registers on
 * entry (perf's order, its own address as the ip) and then calls
 * copy(sn, entry stack pointer) below that stack.
 */
typedef void copy_fn(struct snap *sn, uint64_t sp);
__attribute__((visibility("hidden"))) void rbx_tramp(struct snap *sn, copy_fn *copy);
__asm__(".text\n"
	".p2align 4\n"
	".globl rbx_tramp\n"
	".hidden rbx_tramp\n"
	".type rbx_tramp, @function\n"
	"rbx_tramp:\n"
	".cfi_startproc\n"
	"pushq %rbx\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbx, -16\n"
	"movq %rsp, %rbx\n"
	".cfi_def_cfa_register %rbx\n"
	"andq $-32, %rsp\n"
	"call rbx_leaf\n"
	"movq %rbx, %rsp\n"
	".cfi_def_cfa_register %rsp\n"
	"popq %rbx\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rbx_tramp, .-rbx_tramp\n"
	".p2align 4\n"
	".type rbx_leaf, @function\n"
	"rbx_leaf:\n"
	".cfi_startproc\n"
	"movq %rax, 0(%rdi)\n"
	"movq %rbx, 8(%rdi)\n"
	"movq %rcx, 16(%rdi)\n"
	"movq %rdx, 24(%rdi)\n"
	"movq %rsi, 32(%rdi)\n"
	"movq %rdi, 40(%rdi)\n"
	"movq %rbp, 48(%rdi)\n"
	"movq %rsp, 56(%rdi)\n"
	"leaq rbx_leaf(%rip), %rax\n"
	"movq %rax, 64(%rdi)\n"
	"movq %r8, 128(%rdi)\n"
	"movq %r9, 136(%rdi)\n"
	"movq %r10, 144(%rdi)\n"
	"movq %r11, 152(%rdi)\n"
	"movq %r12, 160(%rdi)\n"
	"movq %r13, 168(%rdi)\n"
	"movq %r14, 176(%rdi)\n"
	"movq %r15, 184(%rdi)\n"
	"subq $8, %rsp\n"
	".cfi_def_cfa_offset 16\n"
	"movq %rsi, %rax\n"
	"leaq 8(%rsp), %rsi\n"
	"call *%rax\n"
	"addq $8, %rsp\n"
	".cfi_def_cfa_offset 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size rbx_leaf, .-rbx_leaf\n");

__attribute__((noinline, noclone)) static void rbx_caller(struct snap *sn)
{
	rbx_tramp(sn, copy_stack);
	sink++;
}

/*
 * The bytes of a lazy-binding PLT entry ("jmp *slot(%rip); push $n; jmp
 * PLT0"), with no CFI: never run, only unwound from.
 */
__attribute__((visibility("hidden"))) extern const unsigned char plt_shaped[];
__asm__(".text\n"
	".p2align 4\n"
	".globl plt_shaped\n"
	".hidden plt_shaped\n"
	".type plt_shaped, @function\n"
	"plt_shaped:\n"
	".byte 0xff, 0x25, 0, 0, 0, 0\n"
	".byte 0x68, 0, 0, 0, 0\n"
	".byte 0xe9, 0, 0, 0, 0\n"
	".size plt_shaped, .-plt_shaped\n");
#endif

static int load_maps(struct maps *mp)
{
	unsigned long long start, end, pgoff;
	char line[1024];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (mp->n < MAPS_MAX && fgets(line, sizeof(line), f)) {
		int pos = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &start, &end, &pgoff, &pos) < 3 ||
		    !pos || line[pos] != '/')
			continue;
		mp->paths[mp->n] = strdup(line + pos);
		mp->m[mp->n].start = start;
		mp->m[mp->n].end = end;
		mp->m[mp->n].pgoff = pgoff;
		mp->m[mp->n].path = mp->paths[mp->n];
		mp->m[mp->n].build_id = mp->force_bid;
		mp->n++;
	}
	fclose(f);
	return 0;
}

static void free_maps(struct maps *mp)
{
	for (size_t i = 0; i < mp->n; i++)
		free(mp->paths[i]);
}

static const struct tk_unwind_map *find_map(void *ctx, uint64_t addr)
{
	struct maps *mp = ctx;

	for (size_t i = 0; i < mp->n; i++)
		if (addr >= mp->m[i].start && addr < mp->m[i].end)
			return &mp->m[i];
	return NULL;
}

static void sample_of(const struct snap *sn, struct tk_unwind_sample *us)
{
	memset(us, 0, sizeof(*us));
	us->pid = us->tid = getpid();
	us->maps_gen = 1;
	us->regs_abi = 2;
	us->regs_mask = (1ull << 24) - 1;
	us->regs_nr = 24;
	us->regs = sn->regs;
	us->stack_size = sn->stack_size;
	us->stack = sn->stack;
}

/* The symbol @ip is in, or "" (through the symbolizer, as report names frames). */
static const char *name_of(struct tk_symbolizer *s, uint64_t ip)
{
	struct tk_symbol_info info;

	if (tk_symbolizer_lookup(s, ip, &info) || !info.symbol)
		return "";
	return info.symbol;
}

/* A walk of a stack captured from this process, by its own maps and symbols. */
struct own_walk {
	struct maps mp;
	struct tk_symbolizer *s;
	struct tk_unwind *uw;
	struct tk_unwind_sample us;
	uint64_t ips[32];
	int n;
};

static void own_walk_run(struct own_walk *w, const struct snap *sn)
{
	memset(w, 0, sizeof(*w));
	assert_int_equal(load_maps(&w->mp), 0);
	w->s = tk_symbolizer_new(NULL);
	assert_non_null(w->s);
	assert_true(tk_symbolizer_add_pid(w->s, getpid()) > 0);
	w->uw = tk_unwind_new(w->s);
	assert_non_null(w->uw);
	sample_of(sn, &w->us);
	w->n = tk_unwind_sample(w->uw, &w->us, find_map, &w->mp, w->ips, 32);
}

static void own_walk_end(struct own_walk *w)
{
	tk_unwind_free(w->uw);
	tk_symbolizer_free(w->s);
	free_maps(&w->mp);
}

static void test_unwind_self(void **state)
{
#if defined(__x86_64__)
	struct snap *sn = calloc(1, sizeof(*sn));
	struct own_walk w;
	const char *const *names;
	int k;

	(void)state;
	assert_non_null(sn);
	level1(sn);
	own_walk_run(&w, sn);
	assert_true(w.n >= 4);
	assert_string_equal(name_of(w.s, w.ips[0]), "capture");
	assert_string_equal(name_of(w.s, w.ips[1]), "level2");
	assert_string_equal(name_of(w.s, w.ips[2]), "level1");
	assert_string_equal(name_of(w.s, w.ips[3]), "test_unwind_self");
	/* With DWARF (a -g build), the frame's function is the last of its names. */
	k = tk_unwind_inlines(w.uw, w.ips[1], &names);
	if (k > 0)
		assert_string_equal(names[k - 1], "level2");
	/* Again, from the kept process state and caches: the same frames. */
	uint64_t again[32];

	assert_int_equal(tk_unwind_sample(w.uw, &w.us, find_map, &w.mp, again, 32), w.n);
	assert_memory_equal(again, w.ips, (size_t)w.n * sizeof(w.ips[0]));
	/* At most what the caller has room for. */
	assert_int_equal(tk_unwind_sample(w.uw, &w.us, find_map, &w.mp, again, 2), 2);
	own_walk_end(&w);
	free(sn);
#else
	(void)state;
	skip();
#endif
}

/*
 * The rule stepper (the default) and libdwfl alone give the same frames:
 * on the whole stack, and on copies cut short at every 8 bytes up to
 * 1 KiB past the stack pointer, where the walk ends on reads outside the
 * copy (a word of the binary, a 0, a failed read) as perf's would.
 */
static void test_unwind_fast_same_as_libdwfl(void **state)
{
#if defined(__x86_64__)
	struct snap *sn = calloc(1, sizeof(*sn));
	struct maps mp = {.n = 0};
	struct tk_unwind_sample us;
	struct tk_symbolizer *s;
	struct tk_unwind *fast, *slow;
	uint64_t a[32], b[32], full;
	int na, nb, compared = 0;

	(void)state;
	assert_non_null(sn);
	level1(sn);
	assert_int_equal(load_maps(&mp), 0);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_true(tk_symbolizer_add_pid(s, getpid()) > 0);
	fast = tk_unwind_new(s);
	slow = tk_unwind_new(s);
	assert_non_null(fast);
	assert_non_null(slow);
	tk_unwind_set_fast(slow, false);
	sample_of(sn, &us);
	full = us.stack_size;
	for (uint64_t size = 8; size <= full; size += size < 1024 ? 8 : full) {
		us.stack_size = size < full ? size : full;
		for (size_t max = 1; max <= 32; max += max < 8 ? 1 : 24) {
			na = tk_unwind_sample(fast, &us, find_map, &mp, a, max);
			nb = tk_unwind_sample(slow, &us, find_map, &mp, b, max);
			assert_int_equal(na, nb);
			assert_true(na >= 1);
			assert_memory_equal(a, b, (size_t)na * sizeof(a[0]));
			compared++;
		}
		if (us.stack_size == full)
			break;
	}
	assert_true(compared > 100);
	/* The whole stack goes through every level. */
	us.stack_size = full;
	assert_true(tk_unwind_sample(fast, &us, find_map, &mp, a, 32) >= 4);
	tk_unwind_free(fast);
	tk_unwind_free(slow);
	tk_symbolizer_free(s);
	free_maps(&mp);
	free(sn);
#else
	(void)state;
	skip();
#endif
}

/*
 * A register the CFI leaves unnamed keeps its value in the caller, as
 * in libunwind (perf's unwinder): rbx_leaf's first instruction names
 * none, libdw's x86-64 rules call rbx undefined there, and rbx_tramp's
 * CFA is rbx + 16. The walk goes on through rbx_tramp to its callers.
 */
static void test_unwind_unnamed_register_kept(void **state)
{
#if defined(__x86_64__)
	struct snap *sn = calloc(1, sizeof(*sn));
	struct own_walk w;

	(void)state;
	assert_non_null(sn);
	rbx_caller(sn);
	own_walk_run(&w, sn);
	assert_true(w.n >= 4);
	/* A walk's first frame keeps its ip: the leaf's first instruction. */
	assert_int_equal(w.ips[0], sn->regs[8]);
	assert_string_equal(name_of(w.s, w.ips[0]), "rbx_leaf");
	assert_string_equal(name_of(w.s, w.ips[1]), "rbx_tramp");
	assert_string_equal(name_of(w.s, w.ips[2]), "rbx_caller");
	assert_string_equal(name_of(w.s, w.ips[3]), "test_unwind_unnamed_register_kept");
	own_walk_end(&w);
	free(sn);
#else
	(void)state;
	skip();
#endif
}

#if defined(__x86_64__)
/*
 * @sn captured by level1() as a sample interrupted at @ip instead, one
 * word pushed: @top at the new stack pointer, rbp @rbp.
 */
static void pushed_sample(const struct snap *sn, struct snap *out, uint64_t ip, uint64_t top,
			  uint64_t rbp)
{
	memcpy(out->regs, sn->regs, sizeof(out->regs));
	memcpy(out->stack, &top, 8);
	memcpy(out->stack + 8, sn->stack, STACK_COPY - 8);
	out->stack_size = sn->stack_size + 8 > STACK_COPY ? STACK_COPY : sn->stack_size + 8;
	out->regs[6] = rbp;
	out->regs[7] = sn->regs[7] - 8;
	out->regs[8] = ip;
}
#endif

/*
 * perf's unwinder at a frame without CFI (libunwind, -UNW_ENOINFO): a
 * lazy-binding PLT entry, recognised by its bytes, steps to the return
 * address at the stack pointer, all registers kept; a caller's address
 * of 1 makes a frame at 0, walked past but not printed; an address in no
 * binary (anonymous memory, no map) ends the walk there, frame pointer
 * or not, since perf's lookup fails outright (-EINVAL) and libunwind then
 * tries nothing else.
 */
static void test_unwind_without_cfi(void **state)
{
#if defined(__x86_64__)
	struct snap *sn = calloc(1, sizeof(*sn)), *alt = calloc(1, sizeof(*alt));
	uint64_t *heap = calloc(8, sizeof(*heap));
	struct own_walk w;
	uint64_t ret = 0;

	(void)state;
	assert_non_null(sn);
	assert_non_null(alt);
	assert_non_null(heap);
	level1(sn);
	/*
	 * Called from capture's sampled instruction: a return address one
	 * past it, every register as captured (capture's CFA may be rbp-based).
	 */
	pushed_sample(sn, alt, (uint64_t)(uintptr_t)plt_shaped, sn->regs[8] + 1, sn->regs[6]);
	own_walk_run(&w, alt);
	assert_true(w.n >= 4);
	assert_int_equal(w.ips[0], (uint64_t)(uintptr_t)plt_shaped);
	assert_int_equal(w.ips[1], sn->regs[8]);
	assert_string_equal(name_of(w.s, w.ips[1]), "capture");
	assert_string_equal(name_of(w.s, w.ips[2]), "level2");
	assert_string_equal(name_of(w.s, w.ips[3]), "level1");
	own_walk_end(&w);

	/* A return address of 1: the frame at 0 is dropped, and the walk ends in no map. */
	pushed_sample(sn, alt, (uint64_t)(uintptr_t)plt_shaped, 1, 0);
	own_walk_run(&w, alt);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.ips[0], (uint64_t)(uintptr_t)plt_shaped);
	own_walk_end(&w);

	/*
	 * Interrupted in the heap, with a frame pointer whose caller is
	 * capture: the walk ends at the heap's frame all the same.
	 */
	pushed_sample(sn, alt, (uint64_t)(uintptr_t)heap, 0, 0);
	alt->regs[6] = alt->regs[7] + 64;
	ret = alt->regs[7] + 128;
	memcpy(alt->stack + 64, &ret, 8);
	ret = sn->regs[8] + 1;
	memcpy(alt->stack + 72, &ret, 8);
	own_walk_run(&w, alt);
	assert_int_equal(w.n, 1);
	assert_int_equal(w.ips[0], (uint64_t)(uintptr_t)heap);
	own_walk_end(&w);
	free(heap);
	free(alt);
	free(sn);
#else
	(void)state;
	skip();
#endif
}

static void test_unwind_other_build_id(void **state)
{
#if defined(__x86_64__)
	struct snap *sn = calloc(1, sizeof(*sn));
	struct maps mp = {.n = 0, .force_bid = "00112233445566778899aabbccddeeff00112233"};
	struct tk_unwind_sample us;
	struct tk_symbolizer *s;
	struct tk_unwind *uw;
	uint64_t ips[32];

	(void)state;
	assert_non_null(sn);
	level1(sn);
	assert_int_equal(load_maps(&mp), 0);
	s = tk_symbolizer_new(NULL);
	uw = tk_unwind_new(s);
	assert_non_null(uw);
	sample_of(sn, &us);
	/* No file of that build id: the sampled frame, and no CFI to go further by. */
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 32), 1);
	assert_int_equal(ips[0], sn->regs[8]);
	tk_unwind_free(uw);
	tk_symbolizer_free(s);
	free_maps(&mp);
	free(sn);
#else
	(void)state;
	skip();
#endif
}

/* The lowest start of @ctx's maps of @path (tk_unwind_file_low_fn). */
static uint64_t file_low(void *ctx, const char *path, const char *bid)
{
	struct maps *mp = ctx;
	uint64_t low = 0;

	(void)bid;
	for (size_t i = 0; i < mp->n; i++)
		if (!strcmp(mp->m[i].path, path) && (!low || mp->m[i].start < low))
			low = mp->m[i].start;
	return low;
}

/*
 * perf looks for a binary's .eh_frame_hdr from the lowest map of its
 * file in the process: a stale map of the file below the frame's (a
 * process keeps the maps of the program it exec'd from) sends the lookup
 * there. Found in a map, it finds no FDE and the frame steps by its frame
 * pointer; in no map, the step fails and the walk ends at the frame.
 */
static void test_unwind_stale_lower_map(void **state)
{
#if defined(__x86_64__)
	struct snap *sn = calloc(1, sizeof(*sn));
	struct maps mp = {.n = 0};
	struct tk_unwind_sample us;
	struct tk_symbolizer *s;
	struct tk_unwind *uw;
	const struct tk_unwind_map *self;
	uint64_t ips[32], plain[32], lo = UINT64_MAX, hi = 0, sp;
	int n;

	(void)state;
	assert_non_null(sn);
	level1(sn);
	assert_int_equal(load_maps(&mp), 0);
	s = tk_symbolizer_new(NULL);
	assert_non_null(s);
	assert_true(tk_symbolizer_add_pid(s, getpid()) > 0);
	sample_of(sn, &us);

	/* The file's own maps only: the lowest is its own, nothing changes. */
	uw = tk_unwind_new(s);
	assert_non_null(uw);
	n = tk_unwind_sample(uw, &us, find_map, &mp, plain, 32);
	assert_true(n >= 4);
	tk_unwind_free(uw);
	uw = tk_unwind_new(s);
	us.file_low = file_low;
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 32), n);
	assert_memory_equal(ips, plain, (size_t)n * sizeof(ips[0]));
	tk_unwind_free(uw);

	/*
	 * A frame pointer that perf's fallback follows to a known end: rbp
	 * 64 bytes above rsp, holding 0 and a return address of 0 (one more
	 * frame, at 0 - 1).
	 */
	sp = sn->regs[7];
	sn->regs[6] = sp + 64;
	memset(sn->stack + 64, 0, 16);
	self = find_map(&mp, sn->regs[8]);
	assert_non_null(self);
	for (size_t i = 0; i < mp.n; i++) {
		if (strcmp(mp.m[i].path, self->path))
			continue;
		lo = mp.m[i].start < lo ? mp.m[i].start : lo;
		hi = mp.m[i].end > hi ? mp.m[i].end : hi;
	}
	assert_true(lo < hi && hi - lo < 0x40000000);

	/* A stale map of the file lower down, whole: no FDE found, the frame pointer steps. */
	assert_true(mp.n < MAPS_MAX);
	mp.paths[mp.n] = strdup(self->path);
	assert_non_null(mp.paths[mp.n]);
	mp.m[mp.n] = (struct tk_unwind_map){
		.start = 0x100000, .end = 0x100000 + (hi - lo), .path = mp.paths[mp.n]};
	mp.n++;
	uw = tk_unwind_new(s);
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 32), 2);
	assert_int_equal(ips[0], sn->regs[8]);
	assert_int_equal(ips[1], UINT64_MAX);
	tk_unwind_free(uw);

	/* Its table in no map (only its first page is left): the walk ends at the frame. */
	mp.m[mp.n - 1].end = 0x101000;
	uw = tk_unwind_new(s);
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 32), 1);
	assert_int_equal(ips[0], sn->regs[8]);
	tk_unwind_free(uw);

	tk_symbolizer_free(s);
	free_maps(&mp);
	free(sn);
#else
	(void)state;
	skip();
#endif
}

static void test_unwind_no_state(void **state)
{
	static struct snap sn;
	struct maps mp = {.n = 0};
	struct tk_unwind_sample us;
	struct tk_symbolizer *s = tk_symbolizer_new(NULL);
	struct tk_unwind *uw = tk_unwind_new(s);
	uint64_t ips[4];

	(void)state;
	assert_non_null(uw);
	sn.stack_size = 64;
	sample_of(&sn, &us);
	us.regs_abi = 0; /* a kernel thread: no user registers */
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 4), 0);
	sample_of(&sn, &us);
	us.stack_size = 0;
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 4), 0);
	sample_of(&sn, &us);
	us.regs_mask = 0xff; /* no IP among the registers */
	us.regs_nr = 8;
	assert_int_equal(tk_unwind_sample(uw, &us, find_map, &mp, ips, 4), 0);
	tk_unwind_free(uw);
	tk_unwind_free(NULL);
	tk_symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_self),
		cmocka_unit_test(test_unwind_fast_same_as_libdwfl),
		cmocka_unit_test(test_unwind_unnamed_register_kept),
		cmocka_unit_test(test_unwind_without_cfi),
		cmocka_unit_test(test_unwind_other_build_id),
		cmocka_unit_test(test_unwind_stale_lower_map),
		cmocka_unit_test(test_unwind_no_state),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
