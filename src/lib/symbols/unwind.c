// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * unwind: user stacks of `perf record --call-graph dwarf` samples.
 *
 * Such a sample carries no user callchain: the kernel copies the user
 * registers (PERF_SAMPLE_REGS_USER: a u64 ABI, then one u64 per bit of
 * the attr's sample_regs_user, in bit order) and the top of the user stack
 * (PERF_SAMPLE_STACK_USER: the bytes from the stack pointer up, of which
 * the dynamic size is valid). The frames are recovered afterwards by
 * running the call frame information (.eh_frame, else .debug_frame) of
 * the mapped binaries over that copy, as perf does. elfutils' libdwfl
 * does the stepping: each process gets a Dwfl with thread callbacks that
 * hand it the sample's registers (x86-64 only: perf's register numbers
 * mapped to DWARF's) and read memory from the stack copy, or from the
 * mapped binary for addresses inside one.
 *
 * Which binary: the one the symbolizer names symbols from, found through
 * tk_symbolizer_binary_file() (the build-id cache, --symfs, the path when
 * its build id is the recorded one). A binary without such a file here
 * gives no CFI, so unwinding stops at its frame, which still prints (as
 * [unknown], since no symbols come from it either). perf 6.1 opens the
 * file at the path whatever its build id, and so steps through a rebuilt
 * binary with the new binary's tables; we do not trust them.
 *
 * Stepping: most frames are stepped without libdwfl (fast_walk()). Per
 * frame address, once per process Dwfl, the FDE libdwfl would use is
 * read into rules (struct step_rule: CFA = register + offset, each
 * register undefined, unchanged, at CFA + N or equal to CFA + N), and
 * the walk applies them with the same word reads in the same order as
 * libdwfl's handle_cfi(): ~300 instructions a frame instead of ~4 k
 * (libdwfl interprets the CFI and allocates per frame). A frame whose CFI
 * says more (expressions, a signal frame, .debug_frame only) hands the
 * walk to dwfl_getthread_frames() from that frame's registers, through
 * the same restart as a frame-pointer step.
 *
 * Frames: the sampled ip, then for each caller its return address - 1,
 * the call instruction's last byte, which is where its names and inline
 * scopes are (libdwfl's "activation" flag says which frames are the
 * interrupted ones, e.g. a signal frame, and keep their exact ip). At most
 * the caller's count, perf's 127 by default.
 *
 * perf 6.1 unwinds with libunwind, not libdwfl, and the two part ways
 * where a stack is not what the CFI expects; libdwfl's steps are kept
 * and libunwind's outcome reproduced around them:
 *   - Memory: the stack copy except its last word (perf's bound), else the
 *     file mapped at the address, by build id; a map whose file has no
 *     such word (the [stack] beyond the copy, anonymous memory) reads as 0,
 *     no map at all fails the read (memory_read()).
 *   - A return address of 0 is one more frame, printed at 0 - 1, unless
 *     the CFI marks the return address undefined (the outermost frame).
 *   - A frame without CFI (no .eh_frame FDE; .debug_frame only from the
 *     binary itself) is stepped by its frame pointer, with libunwind's
 *     test of the guess and its stack pointer (the frame's own + 16), and
 *     the walk starts again from there (fp_step()); at a lazy-binding PLT
 *     entry (libunwind knows its bytes) by the return address at the
 *     stack pointer instead. A frame in no binary (anonymous memory, the
 *     stack, no map) ends the walk: perf's table lookup fails there
 *     outright, and libunwind then tries no frame pointer.
 *   - A frame at address 0 (a caller's address of 1) is walked past and
 *     counted against the limit, but not printed (drop_zero_frames()).
 *   - A register the CFI leaves unnamed keeps its value in the caller
 *     (libunwind's default; libdw's x86-64 rules call most of them
 *     undefined, rbx among them): in the rule stepper only, so a frame
 *     handed to libdwfl still loses them (rule_from_cfi()).
 *
 * Caches, each capped: the Dwfl of a process (its modules, each with its
 * CFI, loaded on first use by libdwfl, and its ELF, a handle over the
 * binary's one mapped image: proc_find_elf()) lives while no file map of
 * the process changes (the caller's maps_gen: anonymous maps, the heap and
 * buffers, leave it), up to UPROCS processes, the least recently used
 * dropped first; each is attached once, with the current sample handed to
 * the callbacks through the handle. Whether CFI covers an address, per
 * maps generation (CFI_MEMO); each frame address's step rules, per Dwfl
 * (sets of two slots: RULES_FIRST slots, then STEP_RULES on one 2 MiB
 * huge page). Per binary, shared by every process: its resolved file,
 * its mapped image and where its loads lie (bin_range()), a Dwfl of it
 * alone for its DWARF (libc's debug file is compressed: libdw inflates
 * it whole, ~230 M instructions, once per run rather than once per
 * process, unless its inflated copy in the build-id cache is read
 * instead: find_debuginfo(), debug-inflate.c), a dwarf-read.c reader of
 * that DWARF, which names most addresses without libdw (bin_dwr(): libdw's
 * addrdie interned every unit of libc in order, ~10 M instructions and
 * hundreds of page faults), and for what the reader leaves to libdw an
 * index of each compile unit's functions by address range and the DIEs
 * the inline lookups went through; the inline names of every address
 * asked for (up to
 * INLINE_CACHE_MAX addresses); also the lowest start of its maps in the
 * last process asked about (perf_eh_table()), while that process's maps
 * stay. A sample then costs the rule steps and hash lookups; the text
 * of each frame is kept by the caller (perfdata-report.c).
 */
#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/symbolizer.h>

#include "bigbuf.h"
#include "dwarf-read.h"
#include "error.h"
#include "symbolizer-internal.h"
#include "unwind-internal.h"

/*
 * libdw is opened (dlopen()) by the first tk_unwind_new(), the only way
 * to the calls below, not linked: linked, it and libbz2 were mapped and
 * relocated at the start of every command (~2 500 relocations, ~25 page
 * faults), which a report that never unwinds paid for nothing. The calls
 * go through dw_api (the macros below), filled once: an indirect call,
 * as through the PLT before.
 */
#define DW_CALLS(X)                                                                                \
	X(dwarf_attr)                                                                              \
	X(dwarf_attr_integrate)                                                                    \
	X(dwarf_cfi_addrframe)                                                                     \
	X(dwarf_child)                                                                             \
	X(dwarf_cu_getdwarf)                                                                       \
	X(dwarf_diename)                                                                           \
	X(dwarf_dieoffset)                                                                         \
	X(dwarf_formref_die)                                                                       \
	X(dwarf_formstring)                                                                        \
	X(dwarf_frame_cfa)                                                                         \
	X(dwarf_frame_info)                                                                        \
	X(dwarf_frame_register)                                                                    \
	X(dwarf_getelf)                                                                            \
	X(dwarf_getscopes)                                                                         \
	X(dwarf_getscopes_die)                                                                     \
	X(dwarf_hasattr)                                                                           \
	X(dwarf_highpc)                                                                            \
	X(dwarf_lowpc)                                                                             \
	X(dwarf_offdie)                                                                            \
	X(dwarf_ranges)                                                                            \
	X(dwarf_siblingof)                                                                         \
	X(dwarf_tag)                                                                               \
	X(dwfl_addrmodule)                                                                         \
	X(dwfl_attach_state)                                                                       \
	X(dwfl_begin)                                                                              \
	X(dwfl_build_id_find_elf)                                                                  \
	X(dwfl_end)                                                                                \
	X(dwfl_frame_pc)                                                                           \
	X(dwfl_frame_reg)                                                                          \
	X(dwfl_getthread_frames)                                                                   \
	X(dwfl_module_addrdie)                                                                     \
	X(dwfl_module_build_id)                                                                    \
	X(dwfl_module_dwarf_cfi)                                                                   \
	X(dwfl_module_eh_cfi)                                                                      \
	X(dwfl_module_getdwarf)                                                                    \
	X(dwfl_module_getelf)                                                                      \
	X(dwfl_module_getsrc)                                                                      \
	X(dwfl_module_getsym_info)                                                                 \
	X(dwfl_module_getsymtab)                                                                   \
	X(dwfl_module_info)                                                                        \
	X(dwfl_offline_section_address)                                                            \
	X(dwfl_report_begin)                                                                       \
	X(dwfl_report_elf)                                                                         \
	X(dwfl_report_end)                                                                         \
	X(dwfl_report_module)                                                                      \
	X(dwfl_thread_state_register_pc)                                                           \
	X(dwfl_thread_state_registers)

static struct {
#define DW_FIELD(f) __typeof__(&f) f;
	DW_CALLS(DW_FIELD)
#undef DW_FIELD
} dw_api;
static pthread_once_t dw_once = PTHREAD_ONCE_INIT;
static char dw_load_error[256];

static void dw_resolve(void)
{
	/* The soname elfutils has always given libdw. */
	void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(dw_load_error, sizeof(dw_load_error), "%s", dlerror());
		return;
	}
#define DW_SYM(f)                                                                                  \
	if (!dw_load_error[0] && !(dw_api.f = (__typeof__(dw_api.f))dlsym(h, #f)))                 \
		snprintf(dw_load_error, sizeof(dw_load_error), "libdw.so.1 has no %s", #f);
	DW_CALLS(DW_SYM)
#undef DW_SYM
	/* The handle stays open: the functions are used until the program ends. */
}

/* Load libdw once; Return: 0, or -ENOENT naming what is missing. */
static int dw_load(void)
{
	pthread_once(&dw_once, dw_resolve);
	if (dw_load_error[0])
		return tk_fail(ENOENT, "cannot load libdw: %s", dw_load_error);
	return 0;
}

#define dwarf_attr		      (*dw_api.dwarf_attr)
#define dwarf_attr_integrate	      (*dw_api.dwarf_attr_integrate)
#define dwarf_cfi_addrframe	      (*dw_api.dwarf_cfi_addrframe)
#define dwarf_child		      (*dw_api.dwarf_child)
#define dwarf_cu_getdwarf	      (*dw_api.dwarf_cu_getdwarf)
#define dwarf_diename		      (*dw_api.dwarf_diename)
#define dwarf_dieoffset		      (*dw_api.dwarf_dieoffset)
#define dwarf_formref_die	      (*dw_api.dwarf_formref_die)
#define dwarf_formstring	      (*dw_api.dwarf_formstring)
#define dwarf_frame_cfa		      (*dw_api.dwarf_frame_cfa)
#define dwarf_frame_info	      (*dw_api.dwarf_frame_info)
#define dwarf_frame_register	      (*dw_api.dwarf_frame_register)
#define dwarf_getelf		      (*dw_api.dwarf_getelf)
#define dwarf_getscopes		      (*dw_api.dwarf_getscopes)
#define dwarf_getscopes_die	      (*dw_api.dwarf_getscopes_die)
#define dwarf_hasattr		      (*dw_api.dwarf_hasattr)
#define dwarf_highpc		      (*dw_api.dwarf_highpc)
#define dwarf_lowpc		      (*dw_api.dwarf_lowpc)
#define dwarf_offdie		      (*dw_api.dwarf_offdie)
#define dwarf_ranges		      (*dw_api.dwarf_ranges)
#define dwarf_siblingof		      (*dw_api.dwarf_siblingof)
#define dwarf_tag		      (*dw_api.dwarf_tag)
#define dwfl_addrmodule		      (*dw_api.dwfl_addrmodule)
#define dwfl_attach_state	      (*dw_api.dwfl_attach_state)
#define dwfl_begin		      (*dw_api.dwfl_begin)
#define dwfl_build_id_find_elf	      (*dw_api.dwfl_build_id_find_elf)
#define dwfl_end		      (*dw_api.dwfl_end)
#define dwfl_frame_pc		      (*dw_api.dwfl_frame_pc)
#define dwfl_frame_reg		      (*dw_api.dwfl_frame_reg)
#define dwfl_getthread_frames	      (*dw_api.dwfl_getthread_frames)
#define dwfl_module_addrdie	      (*dw_api.dwfl_module_addrdie)
#define dwfl_module_build_id	      (*dw_api.dwfl_module_build_id)
#define dwfl_module_dwarf_cfi	      (*dw_api.dwfl_module_dwarf_cfi)
#define dwfl_module_eh_cfi	      (*dw_api.dwfl_module_eh_cfi)
#define dwfl_module_getdwarf	      (*dw_api.dwfl_module_getdwarf)
#define dwfl_module_getelf	      (*dw_api.dwfl_module_getelf)
#define dwfl_module_getsrc	      (*dw_api.dwfl_module_getsrc)
#define dwfl_module_getsym_info	      (*dw_api.dwfl_module_getsym_info)
#define dwfl_module_getsymtab	      (*dw_api.dwfl_module_getsymtab)
#define dwfl_module_info	      (*dw_api.dwfl_module_info)
#define dwfl_offline_section_address  (*dw_api.dwfl_offline_section_address)
#define dwfl_report_begin	      (*dw_api.dwfl_report_begin)
#define dwfl_report_elf		      (*dw_api.dwfl_report_elf)
#define dwfl_report_end		      (*dw_api.dwfl_report_end)
#define dwfl_report_module	      (*dw_api.dwfl_report_module)
#define dwfl_thread_state_register_pc (*dw_api.dwfl_thread_state_register_pc)
#define dwfl_thread_state_registers   (*dw_api.dwfl_thread_state_registers)

#define UPROCS		 16
#define REGS_ABI_64	 2
#define INLINE_MAX_NEST	 64
#define INLINE_CACHE_MAX (1u << 18) /* addresses whose inline names are kept (~20 MB at most) */

/* A function (a compile unit's child DIE) covering [lo, hi). */
struct cu_range {
	uint64_t lo, hi, hi_max; /* hi_max: the largest hi of this and every earlier range */
	Dwarf_Off die;
	uint32_t order; /* the DIE's place among the unit's children */
};

/* The ranges of one compile unit's children, sorted by lo. */
struct cu_index {
	Dwarf_Off off; /* the unit's DIE; 0: empty slot */
	bool imports;  /* it imports partial units: leave it to dwarf_getscopes() */
	size_t n;
	struct cu_range *r;
};

/* A child of a DIE with a range of code: one per range, in DIE order (die_node_get()). */
struct die_kid {
	uint64_t lo, hi;
	Dwarf_Off off;
};

/* A DIE that an inline lookup went through: what the lookup needs of it, read once. */
struct die_node {
	Dwarf_Off off; /* 0: empty slot */
	int tag;
	uint8_t named;	   /* 1: name is set, 2: inner is */
	const char *name;  /* die_name() */
	const char *inner; /* inner_name() */
	uint32_t nkids;
	struct die_kid *kids;
};

/* A mapped binary: path and recorded build id, and what was found for them. */
struct bin {
	struct tk_unwind *uw;
	char *path;
	char *bid;  /* "" when none was recorded */
	char *file; /* the file of that build id here; NULL: none */
	char *debug;
	bool debug_tried;
	bool map_tried;
	bool inl_tried;
	Dwfl *inl_dwfl; /* @file alone, for its inline scopes (bin_inline_module()) */
	Dwfl_Module *inl_mod;
	bool dwr_tried;
	struct tk_dwr *dwr;   /* our own reader of its DWARF (bin_dwr()); NULL: libdw answers */
	uint64_t dwr_bias;    /* the debug file's bias in the inline Dwfl (libdw's addrdie bias) */
	struct cu_index *cus; /* open addressing by unit offset (cu_index_get()) */
	size_t cu_cap, ncus;
	struct die_node *nodes; /* open addressing by DIE offset (die_node_get()) */
	size_t node_cap, nnodes;
	struct origin_name *onames; /* open addressing by origin DIE (die_name()) */
	size_t oname_cap, nonames;
	signed char debug_frame; /* the file has .debug_frame: 1, has not: -1, unknown: 0 */
	const uint8_t *image;	 /* the file, mapped on first use (bin_map()) */
	size_t size;
	/* Its place in a process, as libdwfl's dwfl_report_elf() works it out (bin_range()). */
	signed char range; /* known: 1, the file has no usable program headers: -1, unread: 0 */
	bool exec;	   /* ET_EXEC: at its own addresses */
	uint64_t vaddr;	   /* the first PT_LOAD's address, aligned down to its p_align */
	uint64_t load_end; /* the end of the last PT_LOAD that ends above 0 */
	bool hdr_tried;
	uint64_t eh_hdr;   /* .eh_frame_hdr's address in the file; 0: none (perf_eh_table()) */
	uint64_t elf_base; /* the first PT_LOAD's address, page-aligned */
	/* The last file_low() answer for it, and the process and maps it was for. */
	uint64_t low, low_gen, low_adds;
	int32_t low_pid;
};

/* The name of an abstract function DIE, which its inline instances share (die_name()). */
struct origin_name {
	Dwarf *dbg; /* NULL: empty slot */
	Dwarf_Off off;
	const char *name;
};

/* The inline names of one address of one binary. */
struct inl {
	const struct bin *bin; /* NULL: empty slot */
	uint64_t addr;	       /* the file's own address (link-time vaddr) */
	uint32_t n;
	const char **names; /* borrowed from the binary's inline Dwfl (bin_inline_module()) */
};

/* A process: its Dwfl, valid for one generation of its maps. */
struct uproc {
	int32_t pid;
	uint64_t gen, used;
	uint64_t epoch; /* which Dwfl this is, of all made (struct step_rule's key) */
	Dwfl *dwfl;	/* NULL: free slot */
};

/*
 * How a frame steps to its caller (fast_walk()), from its CFI: the CFA
 * is a register plus an offset; each register (DWARF numbers, 16 the
 * return address) is undefined, keeps its value, is read at CFA + off or
 * is CFA + off. Frames whose CFI says anything else go to libdwfl.
 */
#define STEP_RULES  16384 /* two-way sets by address: 1.5 MiB, one huge page (tk_big_zalloc()) */
#define RULES_FIRST 1024  /* the table's slots until a quarter are filled (rules_grow()) */

enum { RULE_UNDEF, RULE_SAME, RULE_AT, RULE_VAL };
#define DWARF_X86_64_RA 16 /* the return address's DWARF register number */
enum {
	STEP_CFI,    /* the rules below */
	STEP_NOCFI,  /* a mapped binary without CFI there: fp_step() */
	STEP_NOFILE, /* no binary of the recorded build id, or perf's lookup fails: the walk ends */
	STEP_SLOW,   /* libdwfl steps it */
};

/*
 * 96 bytes, so that STEP_RULES of them fit one 2 MiB huge page: as
 * 144-byte slots in a calloc()ed table, each 4 KiB page faulted twice
 * (a lookup reads a slot before filling it: the zero page, then its
 * copy), 1 130 page faults on the inline workload.
 */
struct step_rule {
	uint64_t pc, epoch; /* the frame's address in that Dwfl; epoch 0: empty */
	bool initial;	    /* a walk's first frame: looked up at pc, not pc - 1 */
	uint8_t kind;
	uint8_t cfa_reg;
	bool pc_undef;	  /* the return address's rule is RULE_UNDEF */
	uint8_t nat;	  /* act[0, nat): the registers read (RULE_AT) in register order, */
	uint8_t nact;	  /* act[nat, nact): those computed (RULE_VAL), likewise */
	int16_t rd_lo;	  /* the lowest and highest off[] of the registers read, */
	int16_t rd_hi;	  /* for one bounds check of them all (fast_walk()) */
	uint32_t same;	  /* the registers whose rule is RULE_SAME */
	uint32_t at_mask; /* the registers read */
	int32_t cfa_off;  /* larger offsets go to libdwfl */
	uint8_t act[17];  /* the walk visits only these */
	int16_t off[17];  /* by register; a saved register further from the CFA goes to libdwfl */
};
_Static_assert(STEP_RULES * sizeof(struct step_rule) + 64 <= (2u << 20),
	       "the rules table fits one huge page with tk_big_alloc()'s header");

#define CFI_MEMO 4096

/* What perf's unwinder finds for a frame's address (has_cfi()). */
enum {
	CFI_FAIL = -1, /* its lookup fails outright: the walk ends at the frame */
	CFI_NONE = 0,  /* no FDE for it: libunwind steps by the frame pointer */
	CFI_FOUND = 1,
};

struct cfi_memo {
	uint64_t pc, gen;
	bool used;
	signed char has; /* CFI_* */
};

struct tk_unwind {
	struct tk_symbolizer *sym;
	Elf *machine; /* a bare x86-64 ELF header: what libdwfl takes the machine from */
	struct bin **bins;
	size_t nbins;
	struct inl *inls;
	size_t inl_cap, ninls;
	struct uproc procs[UPROCS];
	uint64_t clock;
	struct uproc *cur; /* the process of the last sample */

	/* The sample being unwound, for the callbacks. */
	const struct tk_unwind_sample *s;
	tk_unwind_find_map_fn find;
	void *ctx;
	uint64_t sp;
	uint64_t *ips;
	size_t n, max;
	bool last_ok;		 /* the last memory_read() succeeded, */
	Dwarf_Word last_val;	 /* with this word */
	unsigned int step_reads; /* memory_read() calls since frame_cb() asked for a step */
	struct cfi_memo cfi_memo[CFI_MEMO];
	bool restart;	   /* unwind on from these registers (fp_step(), fast_walk()) */
	bool from_fp;	   /* the walk starts from them */
	size_t walk_start; /* uw->n at the walk's first frame */
	uint64_t restart_pc;
	uint32_t restart_mask; /* which of restart_regs (DWARF numbers 0-16) are known */
	uint64_t restart_regs[17];
	struct step_rule *rules;      /* rules_cap slots, made on first use (rules_grow()) */
	size_t rules_cap, rules_used; /* slots, and slots filled */
	uint64_t rmap_mask, rmap_nr;  /* the register layout rmap is of (reg_map()) */
	bool rmap_valid;
	int8_t rmap[17];
	bool slow;	      /* every step by libdwfl (tk_unwind_set_fast()) */
	signed char dwr_mode; /* TRACEKIT_DWARF_READ: 1 on, 0 off (libdw only), 2 check */
	uint64_t dwr_asked, dwr_answered, dwr_differ;
	uint64_t epochs; /* Dwfls made so far: the rules' key */
};

static unsigned char machine_ehdr[sizeof(Elf64_Ehdr)];

#define TABLE_MAP_MIN (64u << 10) /* a hash table this large is mapped (table_new()) */

/*
 * calloc(@n, @size) for a hash table, but one of TABLE_MAP_MIN bytes or
 * more mapped with its pages in place (MAP_POPULATE): a lookup reads its
 * slot before filling it, so each 4 KiB page of a calloc()ed table
 * faulted twice (the zero page, then its copy), ~400 page faults of the
 * inline workload's inline names and DIE nodes. A table grows when half
 * full, so most of its pages are soon touched anyway.
 */
static void *table_new(size_t n, size_t size)
{
	void *p;

	if (n * size < TABLE_MAP_MIN)
		return calloc(n, size);
	p = mmap(NULL, n * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		 -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* Free a table_new() table of @n slots of @size bytes; NULL is accepted. */
static void table_free(void *p, size_t n, size_t size)
{
	if (!p)
		return;
	if (n * size < TABLE_MAP_MIN)
		free(p);
	else
		munmap(p, n * size);
}

/*
 * TRACEKIT_DWARF_READ, a debugging knob for the inline names: "off" asks
 * libdw alone, "check" asks both and warns of every address where they
 * differ (a count at tk_unwind_free()); unset or anything else, dwarf-read
 * answers what it can.
 */
static signed char dwr_mode_get(void)
{
	const char *m = getenv("TRACEKIT_DWARF_READ");

	if (m && !strcmp(m, "off"))
		return 0;
	if (m && !strcmp(m, "check"))
		return 2;
	return 1;
}

struct tk_unwind *tk_unwind_new(struct tk_symbolizer *sym)
{
	struct tk_unwind *uw;
	Elf64_Ehdr *eh = (Elf64_Ehdr *)machine_ehdr;

	if (dw_load() < 0) {
		errno = ENOENT;
		return NULL;
	}
	uw = calloc(1, sizeof(*uw));
	if (!uw)
		return tk_fail_null(ENOMEM, "out of memory");
	uw->sym = sym;
	uw->dwr_mode = dwr_mode_get();
	elf_version(EV_CURRENT);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_EXEC;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(*eh);
	uw->machine = elf_memory((char *)machine_ehdr, sizeof(machine_ehdr));
	if (!uw->machine) {
		free(uw);
		return tk_fail_null(ENOMEM, "libelf: %s", elf_errmsg(-1));
	}
	return uw;
}

void tk_unwind_set_fast(struct tk_unwind *uw, bool on)
{
	uw->slow = !on;
}

void tk_unwind_free(struct tk_unwind *uw)
{
	if (!uw)
		return;
	if (uw->dwr_mode == 2)
		tk_warn("dwarf-read check: %" PRIu64 " addresses, %" PRIu64
			" answered by the reader, %" PRIu64 " differ from libdw",
			uw->dwr_asked, uw->dwr_answered, uw->dwr_differ);
	for (size_t i = 0; i < UPROCS; i++)
		if (uw->procs[i].dwfl)
			dwfl_end(uw->procs[i].dwfl);
	for (size_t i = 0; i < uw->nbins; i++) {
		free(uw->bins[i]->path);
		free(uw->bins[i]->bid);
		free(uw->bins[i]->file);
		free(uw->bins[i]->debug);
		for (size_t k = 0; k < uw->bins[i]->cu_cap; k++)
			free(uw->bins[i]->cus[k].r);
		table_free(uw->bins[i]->cus, uw->bins[i]->cu_cap, sizeof(*uw->bins[i]->cus));
		for (size_t k = 0; k < uw->bins[i]->node_cap; k++)
			free(uw->bins[i]->nodes[k].kids);
		table_free(uw->bins[i]->nodes, uw->bins[i]->node_cap, sizeof(*uw->bins[i]->nodes));
		free(uw->bins[i]->onames);
		tk_dwr_free(uw->bins[i]->dwr);
		if (uw->bins[i]->inl_dwfl)
			dwfl_end(uw->bins[i]->inl_dwfl);
		if (uw->bins[i]->image)
			munmap((void *)uw->bins[i]->image, uw->bins[i]->size);
		free(uw->bins[i]);
	}
	free(uw->bins);
	for (size_t i = 0; i < uw->inl_cap; i++) {
		if (uw->inls[i].bin)
			free(uw->inls[i].names);
	}
	table_free(uw->inls, uw->inl_cap, sizeof(*uw->inls));
	if (uw->rules_cap == RULES_FIRST)
		free(uw->rules);
	else
		tk_big_free(uw->rules);
	elf_end(uw->machine);
	free(uw);
}

/* ------------------------------------------------------------ binaries */

static struct bin *bin_get(struct tk_unwind *uw, const char *path, const char *bid)
{
	struct bin *b, **nv;

	if (!bid)
		bid = "";
	for (size_t i = 0; i < uw->nbins; i++) {
		b = uw->bins[i];
		if (!strcmp(b->path, path) && !strcmp(b->bid, bid))
			return b;
	}
	nv = realloc(uw->bins, (uw->nbins + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	uw->bins = nv;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->uw = uw;
	b->path = strdup(path);
	b->bid = strdup(bid);
	if (!b->path || !b->bid) {
		free(b->path);
		free(b->bid);
		free(b);
		return NULL;
	}
	b->file = tk_symbolizer_binary_file(uw->sym, path, *bid ? bid : NULL);
	uw->bins[uw->nbins++] = b;
	return b;
}

/* Map @b's file for reading words from it; -1 when it cannot be. */
static int bin_map(struct bin *b)
{
	struct stat st;
	void *p;
	int fd;

	if (b->image)
		return 0;
	if (b->map_tried)
		return -1;
	b->map_tried = true;
	fd = open(b->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return -1;
	}
	/*
	 * Writable but private: every process's Dwfl reads the file through
	 * an elf_memory() handle over this image (proc_find_elf()), and
	 * libelf takes that memory as its own to convert in place should it
	 * need to; no page is copied unless written.
	 */
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	b->image = p;
	b->size = (size_t)st.st_size;
	return 0;
}

/*
 * libdwfl asks for DWARF when the binary has none of its own (a stripped
 * library): the debug file of the same build id, as the symbolizer finds
 * it, or its inflated copy in the cache (tk_symbolizer_dwarf_file()). Only
 * a file whose build id is the binary's is ever handed over.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct bin *b = *userdata;
	const unsigned char *id;
	GElf_Addr vaddr;
	int fd, n;

	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	if (!b)
		return -1;
	if (!b->debug_tried) {
		char hex[2 * 64 + 1];

		b->debug_tried = true;
		n = dwfl_module_build_id(mod, &id, &vaddr);
		if (n > 0 && n <= 64) {
			for (int i = 0; i < n; i++)
				snprintf(hex + 2 * i, 3, "%02x", id[i]);
			b->debug = tk_symbolizer_dwarf_file(b->uw->sym, hex);
		}
	}
	if (!b->debug)
		return -1;
	fd = open(b->debug, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		*debuginfo_file_name = strdup(b->debug);
		if (!*debuginfo_file_name) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static char *debuginfo_path;

/* libdwfl's own callbacks, called through dw_api (a table entry is no constant). */
static int build_id_find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, char **file_name, Elf **elfp)
{
	return dwfl_build_id_find_elf(mod, userdata, modname, base, file_name, elfp);
}

static int offline_section_address(Dwfl_Module *mod, void **userdata, const char *modname,
				   Dwarf_Addr base, const char *secname, GElf_Word shndx,
				   const GElf_Shdr *shdr, Dwarf_Addr *addr)
{
	return dwfl_offline_section_address(mod, userdata, modname, base, secname, shndx, shdr,
					    addr);
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/*
 * A process's module's ELF: a libelf handle over its binary's one mapped
 * image, which the handle does not own (elf_end() leaves it mapped).
 * dwfl_report_elf() opened and mapped the file again in every process's
 * Dwfl, and each dwfl_end() unmapped it: on the big workload ~80 of each,
 * at ~80 us a munmap() on this machine.
 */
static int proc_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			 char **file_name, Elf **elfp)
{
	struct bin *b = *userdata;
	Elf *elf;

	(void)mod;
	(void)modname;
	(void)base;
	if (!b || !b->image)
		return -1;
	*file_name = strdup(b->file);
	if (!*file_name)
		return -1;
	elf = elf_memory((char *)b->image, b->size);
	if (!elf) {
		free(*file_name);
		*file_name = NULL;
		return -1;
	}
	*elfp = elf;
	return -1;
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = proc_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/*
 * Map @b's file and read where its loads lie, for reporting it to a
 * process's Dwfl at the place dwfl_report_elf() would give it: from the
 * first PT_LOAD (its address aligned down to its p_align) to the end of
 * the last one that ends above 0. -1 when it cannot be mapped or has no
 * such loads (dwfl_report_elf() fails on both).
 */
static int bin_range(struct bin *b)
{
	GElf_Ehdr eh;
	size_t nph = 0;
	Elf *elf;

	if (b->range)
		return b->range > 0 ? 0 : -1;
	b->range = -1;
	if (bin_map(b) < 0)
		return -1;
	elf = elf_memory((char *)b->image, b->size);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getphdrnum(elf, &nph) != 0 || eh.e_type == ET_REL) {
		elf_end(elf);
		return -1;
	}
	b->exec = eh.e_type == ET_EXEC || eh.e_type == ET_CORE;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			elf_end(elf);
			return -1;
		}
		if (ph.p_type == PT_LOAD) {
			b->vaddr = ph.p_vaddr & -ph.p_align;
			break;
		}
	}
	for (size_t i = nph; i-- > 0;) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			elf_end(elf);
			return -1;
		}
		if (ph.p_type == PT_LOAD && ph.p_vaddr + ph.p_memsz > 0) {
			b->load_end = ph.p_vaddr + ph.p_memsz;
			break;
		}
	}
	elf_end(elf);
	if (!b->load_end)
		return -1;
	b->range = 1;
	return 0;
}

/*
 * The module of @addr in @p's Dwfl, reported from the map holding it when
 * it is not yet. NULL when no map holds @addr (*@nofile false) or its
 * binary has no file here (*@nofile true).
 */
static Dwfl_Module *module_at(struct tk_unwind *uw, struct uproc *p, uint64_t addr, bool *nofile)
{
	Dwfl_Module *mod = dwfl_addrmodule(p->dwfl, addr);
	const struct tk_unwind_map *m;
	uint64_t base, bias;
	void **userdata;
	struct bin *b;

	*nofile = false;
	if (mod)
		return mod;
	m = uw->find(uw->ctx, addr);
	if (!m || m->anon)
		return NULL;
	b = bin_get(uw, m->path, m->build_id);
	if (!b || !b->file || bin_range(b) < 0) {
		*nofile = true;
		return NULL;
	}
	/*
	 * A file's first byte is mapped at start - pgoff: libdwfl places its
	 * segments from there (an ET_EXEC file at its own addresses), its
	 * ELF asked for later (proc_find_elf()).
	 */
	base = m->start - m->pgoff;
	bias = b->exec ? 0 : base - b->vaddr;
	mod = dwfl_report_module(p->dwfl, b->path, b->exec ? b->vaddr : base, bias + b->load_end);
	if (!mod || dwfl_addrmodule(p->dwfl, addr) != mod) {
		*nofile = true;
		return NULL;
	}
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = b;
	return mod;
}

/* ------------------------------------------------------------ libdwfl's thread callbacks */

static int reg_index(uint64_t mask, unsigned int bit)
{
	if (!(mask & (1ull << bit)))
		return -1;
	return __builtin_popcountll(mask & ((1ull << bit) - 1));
}

static bool reg_value(const struct tk_unwind_sample *s, unsigned int bit, uint64_t *v)
{
	int i = reg_index(s->regs_mask, bit);

	if (i < 0 || (uint64_t)i >= s->regs_nr)
		return false;
	memcpy(v, (const uint8_t *)s->regs + 8 * (size_t)i, 8);
	return true;
}

/* perf's x86 register numbers (arch/x86 perf_regs.h) of DWARF registers 0..16. */
static const unsigned char x86_64_dwarf_to_perf[17] = {
	0 /* ax */, 3 /* dx */, 2 /* cx */,  1 /* bx */,   4 /* si */, 5 /* di */,
	6 /* bp */, 7 /* sp */, 16 /* r8 */, 17,	   18,	       19,
	20,	    21,		22,	     23 /* r15 */, 8 /* ip */,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct tk_unwind *uw = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = uw;
	return uw->s->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct tk_unwind *uw = arg;

	(void)dwfl;
	(void)tid;
	*thread_argp = uw;
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct tk_unwind *uw = arg;
	Dwarf_Word regs[17];

	if (uw->from_fp) {
		/* A step's result (fp_step(), fast_walk()): only these are known. */
		for (unsigned int i = 0; i < 17; i++)
			if ((uw->restart_mask >> i & 1) &&
			    !dwfl_thread_state_registers(thread, (int)i, 1, &uw->restart_regs[i]))
				return false;
		dwfl_thread_state_register_pc(thread, uw->restart_pc);
		return true;
	}
	for (unsigned int i = 0; i < 17; i++) {
		uint64_t v;

		if (!reg_value(uw->s, x86_64_dwarf_to_perf[i], &v))
			return false;
		regs[i] = v;
	}
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

/*
 * A word of the process's memory at @addr, as perf script 6.1 reads it
 * (its libunwind unwinder's access_mem()). From the stack copy when the
 * word lies inside it, except its last word: perf's bound is
 * addr + 8 < end. Otherwise from the file mapped there, at the offset the
 * map puts @addr at (addr - start + pgoff), by the recorded build id.
 * There perf tells libunwind apart two failures: no map at all holds the
 * address (an error: the step fails) and a map holds it but its file has
 * no such word, e.g. the [stack] beyond the copy or anonymous memory
 * (perf returns a positive error, which libunwind takes as success, with
 * the value 0). The last read is noted for tk_unwind_sample()'s end.
 */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct tk_unwind *uw = arg;
	const struct tk_unwind_map *m;
	struct bin *b;
	uint64_t off;

	(void)dwfl;
	uw->step_reads++;
	uw->last_ok = false;
	if (addr + 8 < addr)
		return false;
	if (addr >= uw->sp && addr + 8 < uw->sp + uw->s->stack_size) {
		memcpy(result, (const uint8_t *)uw->s->stack + (addr - uw->sp), 8);
	} else {
		m = uw->find(uw->ctx, addr);
		if (!m)
			return false;
		off = addr - m->start + m->pgoff;
		if (!m->anon && (b = bin_get(uw, m->path, m->build_id)) && b->file &&
		    bin_map(b) == 0 && off <= b->size && b->size - off >= 8)
			memcpy(result, b->image + off, 8);
		else
			*result = 0;
	}
	uw->last_ok = true;
	uw->last_val = *result;
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* ------------------------------------------------------------ unwinding */

/* The Dwfl of @pid for maps generation @gen: the kept one, or a new one. */
static struct uproc *uproc_get(struct tk_unwind *uw, int32_t pid, uint64_t gen)
{
	struct uproc *p = NULL, *lru = &uw->procs[0];

	/* Most samples follow one of the same process: no search of the slots. */
	if (uw->cur && uw->cur->dwfl && uw->cur->pid == pid && uw->cur->gen == gen) {
		uw->cur->used = ++uw->clock;
		return uw->cur;
	}
	for (size_t i = 0; i < UPROCS; i++) {
		if (uw->procs[i].dwfl && uw->procs[i].pid == pid) {
			p = &uw->procs[i];
			break;
		}
		if (!uw->procs[i].dwfl || (lru->dwfl && uw->procs[i].used < lru->used))
			lru = &uw->procs[i];
	}
	if (p && p->gen != gen) {
		dwfl_end(p->dwfl);
		p->dwfl = NULL;
	}
	if (!p) {
		p = lru;
		if (p->dwfl)
			dwfl_end(p->dwfl);
		p->dwfl = NULL;
	}
	if (!p->dwfl) {
		p->dwfl = dwfl_begin(&proc_callbacks);
		if (!p->dwfl)
			return NULL;
		if (!dwfl_attach_state(p->dwfl, uw->machine, pid, &thread_callbacks, uw)) {
			dwfl_end(p->dwfl);
			p->dwfl = NULL;
			return NULL;
		}
		p->pid = pid;
		p->gen = gen;
		p->epoch = ++uw->epochs;
	}
	p->used = ++uw->clock;
	return p;
}

static void add_frame(struct tk_unwind *uw, uint64_t ip)
{
	if (uw->n < uw->max)
		uw->ips[uw->n++] = ip;
}

/* Whether @elf has a section named @name. */
static bool elf_has_section(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, name))
			return true;
	}
	return false;
}

/* @b's .eh_frame_hdr address and first loaded page, from its ELF @elf (perf_eh_table()). */
static void bin_read_hdr(struct bin *b, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx, nph = 0;
	long page = sysconf(_SC_PAGESIZE);

	b->hdr_tried = true;
	if (!elf || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (gelf_getshdr(scn, &sh) && (n = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(n, ".eh_frame_hdr")) {
			b->eh_hdr = sh.sh_addr;
			break;
		}
	}
	if (elf_getphdrnum(elf, &nph) < 0)
		nph = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD) {
			b->elf_base = ph.p_vaddr & ~(uint64_t)(page > 0 ? page - 1 : 4095);
			break;
		}
	}
}

/*
 * Where perf looks for the .eh_frame_hdr of binary @b (module @mod): not
 * from the map of the frame but from the lowest map of the same file in
 * the process (read_unwind_spec_eh_frame() takes the lowest start of the
 * maps of the dso, less the first PT_LOAD's page). A process that exec'd
 * keeps the maps of the program it replaced where no new map overlaps
 * them (perf drops no map on exec, nor do we), so a library both
 * programs use is found at the old program's address when that is the
 * lower one: `sh -c 'prog'` unwinds through libc only when prog's libc
 * lies below the shell's. Then libunwind searches the table of the old
 * mapping for the frame's address (as an offset from the old base, cut to
 * 32 bits), finds an FDE of the old addresses, which does not cover it,
 * and answers -UNW_ENOINFO: the frame steps by its frame pointer. When no
 * map holds the address it reads, the read fails and so does the step.
 * An FDE of the old mapping that happens to cover the new address (the
 * two bases less apart than the library is long) is not followed.
 * Return: 1 the table is where the frame's map puts it, 0 elsewhere in a
 * map, -1 in none.
 */
static int perf_eh_table(struct tk_unwind *uw, struct bin *b, Dwfl_Module *mod)
{
	Dwarf_Addr bias;
	uint64_t low;
	Elf *elf;

	if (!uw->s->file_low || !b)
		return 1;
	elf = dwfl_module_getelf(mod, &bias);
	if (!b->hdr_tried)
		bin_read_hdr(b, elf);
	if (!elf || !b->eh_hdr)
		return 1;
	/*
	 * Kept per binary while the process's maps stay: the caller's search
	 * compares paths and build ids map by map, and was asked again for
	 * each new frame address (~350 instructions each).
	 */
	if (uw->s->maps_adds && b->low_adds == uw->s->maps_adds && b->low_pid == uw->s->pid &&
	    b->low_gen == uw->s->maps_gen) {
		low = b->low;
	} else {
		low = uw->s->file_low(uw->ctx, b->path, b->bid);
		b->low = low;
		b->low_pid = uw->s->pid;
		b->low_gen = uw->s->maps_gen;
		b->low_adds = uw->s->maps_adds;
	}
	if (!low || low - b->elf_base == bias)
		return 1;
	return uw->find(uw->ctx, low - b->elf_base + b->eh_hdr) ? 0 : -1;
}

/*
 * What perf's unwinder finds for @pc (CFI_*): an FDE in the .eh_frame of
 * the binary mapped there, looked up where perf_eh_table() says, else in
 * its .debug_frame when the binary itself has one (perf never looks for
 * it in a separate debug file, and asking libdwfl would load that file's
 * DWARF; perf places .debug_frame by the frame's own map). When @eh is
 * not NULL, an FDE found in the .eh_frame is handed back there (the
 * caller frees it) rather than freed: rule_get() reads its rules from the
 * same FDE, and looking it up twice was half of the CFI lookups' cost.
 */
static int has_cfi_lookup(struct tk_unwind *uw, uint64_t pc, Dwarf_Frame **eh)
{
	Dwfl_Module *mod = dwfl_addrmodule(uw->cur->dwfl, pc);
	Dwarf_Frame *frame;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;
	struct bin *b;
	void **userdata;
	Elf *elf;
	int table;

	/*
	 * No binary there (anonymous memory, the stack, no map): perf's
	 * lookup reads no unwind table and fails outright (-EINVAL, not
	 * libunwind's -UNW_ENOINFO), so libunwind tries no frame pointer.
	 */
	if (!mod)
		return CFI_FAIL;
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	b = *userdata;
	table = perf_eh_table(uw, b, mod);
	cfi = table > 0 ? dwfl_module_eh_cfi(mod, &bias) : NULL;
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0) {
		if (eh)
			*eh = frame;
		else
			free(frame);
		return CFI_FOUND;
	}
	if (!b)
		return CFI_NONE;
	if (!b->debug_frame) {
		elf = dwfl_module_getelf(mod, &bias);
		b->debug_frame = elf && elf_has_section(elf, ".debug_frame") ? 1 : -1;
	}
	if (b->debug_frame < 0)
		return table < 0 ? CFI_FAIL : CFI_NONE;
	cfi = dwfl_module_dwarf_cfi(mod, &bias);
	if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &frame) == 0) {
		free(frame);
		return CFI_FOUND;
	}
	return table < 0 ? CFI_FAIL : CFI_NONE;
}

/*
 * Whether the CFI at @pc (a frame of the current walk, found by has_cfi())
 * gives the return address a rule, rather than marking it undefined as
 * the outermost frame's does.
 */
static bool ra_defined(struct tk_unwind *uw, uint64_t pc)
{
	Dwfl_Module *mod = dwfl_addrmodule(uw->cur->dwfl, pc);
	Dwarf_Op ops_mem[3], *ops;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;
	size_t nops;
	bool defined;

	if (!mod)
		return false;
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0) {
		frame = NULL;
		if (has_cfi_lookup(uw, pc, NULL) == CFI_FOUND &&
		    (cfi = dwfl_module_dwarf_cfi(mod, &bias)) &&
		    dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
			frame = NULL;
	}
	if (!frame)
		return false;
	defined = dwarf_frame_register(frame, 16, ops_mem, &ops, &nops) == 0 &&
		  !(nops == 0 && ops == ops_mem);
	free(frame);
	return defined;
}

/*
 * has_cfi_lookup(), remembered per address of a maps generation: the
 * answer only changes with the binaries mapped, and most frames recur
 * (it was a tenth of a --no-inline report). @eh as has_cfi_lookup()'s,
 * set only when the lookup is made.
 */
static int has_cfi(struct tk_unwind *uw, uint64_t pc, Dwarf_Frame **eh)
{
	uint64_t h = (pc ^ uw->cur->gen * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
	struct cfi_memo *m = &uw->cfi_memo[(h >> 40) & (CFI_MEMO - 1)];

	if (m->pc != pc || m->gen != uw->cur->gen || !m->used) {
		m->pc = pc;
		m->gen = uw->cur->gen;
		m->used = true;
		m->has = (signed char)has_cfi_lookup(uw, pc, eh);
	}
	return m->has;
}

/* Whether the code at @pc is a lazy-binding PLT entry, by the bytes libunwind tests. */
static bool is_plt_entry(struct tk_unwind *uw, uint64_t pc)
{
	Dwarf_Word code0, code1;

	return memory_read(NULL, pc, &code0, uw) && memory_read(NULL, pc + 8, &code1, uw) &&
	       (code0 & 0xffff) == 0x25ff && (code0 >> 48 & 0xff) == 0x68 &&
	       (code1 >> 24 & 0xff) == 0xe9;
}

/*
 * The walk goes on from a caller's address @ip, looked up and printed at
 * ip - 1, a call's last byte; one of 0 is the last frame, at 0 - 1.
 * Return: whether it goes on (the caller sets the registers).
 */
static bool restart_at(struct tk_unwind *uw, Dwarf_Word ip)
{
	if (!ip) {
		add_frame(uw, (uint64_t)-1);
		return false;
	}
	uw->restart = true;
	uw->restart_pc = ip - 1;
	return true;
}

/*
 * The caller of a frame without CFI, as libunwind (perf's unwinder) steps
 * it. At a lazy-binding PLT entry (its code "jmp *GOT(%rip); push $n;
 * jmp PLT0", which libunwind recognises by those bytes at the frame's
 * address @pc): the caller's address at rsp, its stack pointer rsp + 8,
 * every register kept. Otherwise by the frame pointer, the caller's
 * address at rbp + 8 and its rbp at rbp, but its stack pointer the
 * frame's own plus 16 (libunwind moves its CFA on by 16 and takes an
 * rsp-based CFA of the next frame from there), every other register
 * unknown; no caller when the frame pointer is 0 or fails libunwind's
 * test below. libdwfl's own fallback sets rsp to rbp + 16, and so names
 * other callers than perf. @regs: DWARF registers 0-16, those of @mask
 * known. Sets uw->restart when the walk goes on from there; adds the
 * frame at 0 - 1 perf prints for a caller's address read as 0.
 */
static void fp_step_regs(struct tk_unwind *uw, const uint64_t regs[17], uint32_t mask, uint64_t pc)
{
	Dwarf_Word ip, rbp1;
	uint64_t rbp = regs[6], rsp = regs[7];

	if ((mask >> 7 & 1) && is_plt_entry(uw, pc)) {
		if (memory_read(NULL, rsp, &ip, uw) && restart_at(uw, ip)) {
			uw->restart_mask = mask & ((1u << 16) - 1);
			memcpy(uw->restart_regs, regs, sizeof(uw->restart_regs));
			uw->restart_regs[7] = rsp + 8;
		}
		return;
	}
	if (!(mask >> 6 & 1) || !(mask >> 7 & 1) || !rbp)
		return;
	/*
	 * libunwind's test of its guess: a frame pointer below the frame's
	 * stack pointer, or more than 16 kB above it, is no frame pointer.
	 */
	if (!memory_read(NULL, rbp, &rbp1, uw) || rbp < rsp || rbp - rsp > 0x4000 ||
	    !memory_read(NULL, rbp + 8, &ip, uw) || !restart_at(uw, ip))
		return;
	uw->restart_mask = 1u << 6 | 1u << 7;
	uw->restart_regs[6] = rbp1;
	uw->restart_regs[7] = rsp + 16;
}

static void fp_step(struct tk_unwind *uw, Dwfl_Frame *state, uint64_t pc)
{
	uint64_t regs[17] = {0};
	uint32_t mask = 0;

	for (unsigned int i = 0; i < 16; i++) {
		Dwarf_Word v;

		if (!dwfl_frame_reg(state, i, &v)) {
			regs[i] = v;
			mask |= 1u << i;
		}
	}
	fp_step_regs(uw, regs, mask, pc);
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct tk_unwind *uw = arg;
	Dwarf_Addr pc;
	bool activation, nofile;
	int cfi;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	/* The module must be known before libdwfl asks whether this is an activation. */
	module_at(uw, uw->cur, pc, &nofile);
	/*
	 * Without CFI, step as perf does (fp_step()), before libdwfl's own
	 * step: asking for the activation flag takes that step. Such a frame
	 * is an activation only as a walk's first. A failed lookup ends the
	 * walk there.
	 */
	if (!nofile &&
	    (cfi = has_cfi(uw, uw->n == uw->walk_start ? pc : pc - 1, NULL)) != CFI_FOUND) {
		add_frame(uw, uw->n == uw->walk_start ? pc : pc - 1);
		if (cfi == CFI_NONE && uw->n < uw->max)
			fp_step(uw, state, pc);
		return DWARF_CB_ABORT;
	}
	/* Asking that steps to the caller: what it reads decides whether the stack ends at 0. */
	uw->step_reads = 0;
	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (!activation)
		pc--;
	add_frame(uw, pc);
	/* No binary of the recorded build id: its frame is shown, its CFI is not trusted. */
	if (nofile || uw->n >= uw->max)
		return DWARF_CB_ABORT;
	return DWARF_CB_OK;
}

/* ------------------------------------------------------------ the fast path */

/* @r's rules from the CFI @frame holds; false when libdwfl must step it. */
static bool rule_from_cfi(struct step_rule *r, Dwarf_Frame *frame)
{
	uint8_t rule[17];
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	bool signal = false;

	if (dwarf_frame_info(frame, NULL, NULL, &signal) != DWARF_X86_64_RA || signal)
		return false;
	if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_bregx ||
	    ops[0].number >= 17)
		return false;
	if ((int64_t)ops[0].number2 < INT32_MIN || (int64_t)ops[0].number2 > INT32_MAX)
		return false;
	r->cfa_reg = (uint8_t)ops[0].number;
	r->cfa_off = (int32_t)(int64_t)ops[0].number2;
	for (int i = 0; i < 17; i++) {
		int64_t off = 0;

		if (dwarf_frame_register(frame, i, ops_mem, &ops, &nops) != 0)
			return false;
		/*
		 * Undefined, as libdw reports a register the CFI never names
		 * (its x86-64 initial rules keep rax, rbp and r12-r15 only:
		 * rbx is numbered 0 there), is kept for every register but the
		 * return address: libunwind, perf's unwinder, starts each
		 * register at "same value". The difference shows where a
		 * caller's CFA is rbx-based, as in ld.so's lazy-binding
		 * trampoline over _dl_fixup's first instructions: libdwfl
		 * loses rbx there and ends the walk; perf goes on.
		 */
		if (nops == 0) {
			if (ops == ops_mem)
				rule[i] = i == DWARF_X86_64_RA ? RULE_UNDEF : RULE_SAME;
			else if (!ops)
				rule[i] = RULE_SAME;
			else
				return false;
			continue;
		}
		/* CFA [+ N] [stack_value], as dwarf_frame_register() spells offset rules. */
		if (ops[0].atom != DW_OP_call_frame_cfa)
			return false;
		if (nops > 1 && ops[1].atom == DW_OP_plus_uconst) {
			off = (int64_t)ops[1].number;
			ops++;
			nops--;
		}
		if (off < INT16_MIN || off > INT16_MAX)
			return false;
		r->off[i] = (int16_t)off;
		if (nops == 1)
			rule[i] = RULE_AT;
		else if (nops == 2 && ops[1].atom == DW_OP_stack_value)
			rule[i] = RULE_VAL;
		else
			return false;
	}
	r->nact = 0;
	r->same = 0;
	r->at_mask = 0;
	r->rd_lo = INT16_MAX;
	r->rd_hi = INT16_MIN;
	r->pc_undef = rule[16] == RULE_UNDEF;
	for (uint8_t i = 0; i < 17; i++) {
		if (rule[i] == RULE_SAME) {
			r->same |= 1u << i;
		} else if (rule[i] == RULE_AT) {
			r->act[r->nact++] = i;
			r->at_mask |= 1u << i;
			r->rd_lo = r->off[i] < r->rd_lo ? r->off[i] : r->rd_lo;
			r->rd_hi = r->off[i] > r->rd_hi ? r->off[i] : r->rd_hi;
		}
	}
	r->nat = r->nact;
	for (uint8_t i = 0; i < 17; i++)
		if (rule[i] == RULE_VAL)
			r->act[r->nact++] = i;
	return true;
}

static uint64_t rule_hash(uint64_t pc, uint64_t epoch, bool initial)
{
	return (pc ^ epoch * 0x9e3779b97f4a7c15ull ^ (uint64_t)initial << 63) *
	       0xff51afd7ed558ccdull;
}

/*
 * The slot of a new rule in the pair @p (two-way sets: the first slot
 * holds the newer rule). The newer moves into the first slot and the
 * older of the two to the second, whose rule goes: a rule is evicted only
 * by two newer ones of its pair, not by the first key that shares its
 * slot, as in a direct-mapped table.
 */
static struct step_rule *rule_take(struct tk_unwind *uw, struct step_rule *p)
{
	if (!p[0].epoch) {
		uw->rules_used++;
		return p;
	}
	uw->rules_used += !p[1].epoch;
	p[1] = p[0];
	return p;
}

/*
 * Make the rules table (RULES_FIRST slots, calloc()ed), or move its rules
 * to the full one (STEP_RULES, one huge page); -ENOMEM. The full table
 * as 4 KiB pages faulted twice each (a lookup reads a slot before filling
 * it: the zero page, then its copy), 1 130 page faults on the inline
 * workload; a huge page is one fault, but zeroing 2 MiB cost a report of
 * one sample ~0.4 ms, so it waits until a quarter of the small table is
 * in use.
 */
static int rules_grow(struct tk_unwind *uw)
{
	size_t cap = uw->rules ? STEP_RULES : RULES_FIRST;
	struct step_rule *t =
		cap == RULES_FIRST ? calloc(cap, sizeof(*t)) : tk_big_zalloc(cap * sizeof(*t));

	if (!t)
		return -ENOMEM;
	uw->rules_used = 0;
	for (size_t i = 0; uw->rules && i < uw->rules_cap; i++) {
		const struct step_rule *o = &uw->rules[i];
		struct step_rule *n;

		if (!o->epoch)
			continue;
		n = rule_take(uw, &t[(rule_hash(o->pc, o->epoch, o->initial) >> 40) & (cap - 2)]);
		*n = *o;
	}
	free(uw->rules);
	uw->rules = t;
	uw->rules_cap = cap;
	return 0;
}

/*
 * The step of the frame at @pc (a walk's first when @initial), not in
 * the rules table (its pair @r, of hash @h): worked out once per Dwfl of
 * the current process: which binary holds it
 * (module_at(), which also reports it to the Dwfl, as frame_cb() does),
 * whether perf finds CFI there (has_cfi()), and the CFI's rules, read
 * from the FDE libdwfl would use (the .eh_frame one; a frame stepped by
 * .debug_frame alone goes to libdwfl).
 */
static const struct step_rule *__attribute__((noinline))
rule_make(struct tk_unwind *uw, struct step_rule *r, uint64_t pc, bool initial, uint64_t h)
{
	uint64_t epoch = uw->cur->epoch, lpc = initial ? pc : pc - 1;
	Dwfl_Module *mod;
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr bias;
	Dwarf_CFI *cfi;
	bool nofile;
	int has;

	/* A table that cannot grow keeps its size: its slots are replaced. */
	if (!r[1].epoch && uw->rules_cap == RULES_FIRST && (uw->rules_used + 1) * 4 > RULES_FIRST &&
	    rules_grow(uw) == 0)
		r = &uw->rules[(h >> 40) & (uw->rules_cap - 2)];
	r = rule_take(uw, r);
	r->epoch = epoch;
	r->pc = pc;
	r->initial = initial;
	mod = module_at(uw, uw->cur, pc, &nofile);
	(void)mod;
	if (nofile) {
		r->kind = STEP_NOFILE;
		return r;
	}
	has = has_cfi(uw, lpc, &frame);
	if (has != CFI_FOUND) {
		/* A failed lookup ends the walk at the frame, as a missing file does. */
		r->kind = has == CFI_NONE ? STEP_NOCFI : STEP_NOFILE;
		return r;
	}
	r->kind = STEP_SLOW;
	/* The FDE has_cfi() just found, else (remembered, or found in .debug_frame) look it up. */
	if (!frame) {
		mod = dwfl_addrmodule(uw->cur->dwfl, lpc);
		cfi = mod ? dwfl_module_eh_cfi(mod, &bias) : NULL;
		if (!cfi || dwarf_cfi_addrframe(cfi, lpc - bias, &frame) != 0)
			frame = NULL;
	}
	if (frame) {
		if (rule_from_cfi(r, frame))
			r->kind = STEP_CFI;
		free(frame);
	}
	return r;
}

/*
 * The step of the frame at @pc (a walk's first when @initial) in the
 * current process's Dwfl: its rule from the table, else rule_make()'s
 * (out of line: the walk's loop stays small).
 */
static inline const struct step_rule *rule_get(struct tk_unwind *uw, uint64_t pc, bool initial)
{
	uint64_t epoch = uw->cur->epoch;
	uint64_t h = rule_hash(pc, epoch, initial);
	struct step_rule *r = &uw->rules[(h >> 40) & (uw->rules_cap - 2)];

	if (r->epoch == epoch && r->pc == pc && r->initial == initial)
		return r;
	if (r[1].epoch == epoch && r[1].pc == pc && r[1].initial == initial)
		return r + 1;
	return rule_make(uw, r, pc, initial, h);
}

/*
 * Where DWARF register k (0..16) lies among the registers of a sample of
 * @s's layout (its mask and count), as reg_value() finds it: -1 when the
 * sample has none. Worked out once per layout, which one event keeps for
 * all its samples: finding 17 registers through the mask per sample (a
 * pass over its bits, or reg_value()'s popcounts, a libgcc call without
 * -mpopcnt) was ~370 instructions a sample, 9.6 M on the inline workload.
 */
static const int8_t *reg_map(struct tk_unwind *uw, const struct tk_unwind_sample *s)
{
	if (!uw->rmap_valid || uw->rmap_mask != s->regs_mask || uw->rmap_nr != s->regs_nr) {
		for (unsigned int k = 0; k < 17; k++) {
			int i = reg_index(s->regs_mask, x86_64_dwarf_to_perf[k]);

			uw->rmap[k] = (int8_t)(i < 0 || (uint64_t)i >= s->regs_nr ? -1 : i);
		}
		uw->rmap_mask = s->regs_mask;
		uw->rmap_nr = s->regs_nr;
		uw->rmap_valid = true;
	}
	return uw->rmap;
}

/* DWARF registers 0..16 of the current sample, as reg_value() gives each; false when one is
 * missing. */
static bool sample_regs(struct tk_unwind *uw, uint64_t regs[17])
{
	const int8_t *map = reg_map(uw, uw->s);

	for (unsigned int k = 0; k < 17; k++) {
		if (map[k] < 0)
			return false;
		memcpy(&regs[k], (const uint8_t *)uw->s->regs + 8 * (size_t)map[k], 8);
	}
	return true;
}

/*
 * A walk as dwfl_getthread_frames() over frame_cb() makes it, for as long
 * as every frame's step is one rule_get() knows: each step then costs
 * a few word reads instead of libdwfl's CFI lookup, interpretation and
 * allocations (~4 k instructions a frame, nine tenths of a --no-inline
 * report). The same frames, the same reads (memory_read(), in libdwfl's
 * register order: the return address last) and the same end; a frame it
 * cannot step hands the walk to libdwfl from there (uw->restart_*).
 * Return: 0 when the walk ended at an undefined or zero return address
 * (dwfl_getthread_frames()'s 0), 1 when it stopped (a frame without CFI or
 * file, the frame limit), -1 when libdwfl takes over.
 */
static int fast_walk(struct tk_unwind *uw)
{
	const uint8_t *stack = uw->s->stack;
	uint64_t sp = uw->sp, stack_end = uw->sp + uw->s->stack_size;
	/* Below it a word lies whole in the copy (memory_read()'s bound); 0: no word does. */
	uint64_t word_lim = stack_end > sp && uw->s->stack_size > 8 ? stack_end - 8 : 0;
	uint64_t regs[17], pc;
	uint32_t mask = 0;
	bool initial = true;

	if (uw->from_fp) {
		mask = uw->restart_mask;
		memcpy(regs, uw->restart_regs, sizeof(regs));
		pc = uw->restart_pc;
	} else {
		if (!sample_regs(uw, regs))
			return -1;
		mask = (1u << 17) - 1;
		pc = regs[16];
	}
	for (;;) {
		const struct step_rule *r = rule_get(uw, pc, initial);
		uint64_t lpc = initial ? pc : pc - 1, cfa = 0;
		uint32_t next_mask = 0;
		bool cfa_ok, each, pc_undef = false;

		if (r->kind == STEP_SLOW) {
			if (initial)
				return -1; /* from the walk's own start */
			uw->restart = true;
			uw->restart_pc = lpc;
			uw->restart_mask = mask;
			memcpy(uw->restart_regs, regs, sizeof(regs));
			return -1;
		}
		if (r->kind == STEP_NOCFI) {
			add_frame(uw, lpc);
			if (uw->n < uw->max)
				fp_step_regs(uw, regs, mask, pc);
			return 1;
		}
		add_frame(uw, lpc);
		if (r->kind == STEP_NOFILE || uw->n >= uw->max)
			return 1;
		uw->step_reads = 0;
		cfa_ok = mask >> r->cfa_reg & 1;
		if (cfa_ok)
			cfa = regs[r->cfa_reg] + (uint64_t)r->cfa_off;
		/*
		 * The registers are stepped in place: no rule reads another
		 * register (the CFA is taken first), so a kept register (RULE_SAME)
		 * is its mask bit alone, and only those read or computed are
		 * visited, in register order (the word reads stay libdwfl's).
		 * Visiting every register with a rule and copying the set
		 * cost 40 % more of the walk's own instructions.
		 */
		pc_undef = r->pc_undef;
		next_mask = mask & r->same;
		/*
		 * Every word the frame reads in the stack copy: its lowest and
		 * highest address checked once (lo <= hi: the offsets between do
		 * not wrap), the reads' bookkeeping done once. ~15 instructions
		 * less a saved register than the loop below, which handles the
		 * rest (a word outside the copy, no CFA) one read at a time.
		 */
		each = cfa_ok;
		if (cfa_ok && r->nat) {
			uint64_t lo = cfa + (uint64_t)(int64_t)r->rd_lo;
			uint64_t hi = cfa + (uint64_t)(int64_t)r->rd_hi;

			if (lo >= sp && lo <= hi && hi < word_lim) {
				Dwarf_Word v = 0;

				for (unsigned int a = 0; a < r->nat; a++) {
					unsigned int i = r->act[a];

					memcpy(&v,
					       stack + (cfa + (uint64_t)(int64_t)r->off[i] - sp),
					       8);
					regs[i] = v;
				}
				uw->step_reads += r->nat;
				uw->last_ok = true;
				uw->last_val = v;
				next_mask |= r->at_mask;
				each = false;
			}
		}
		for (unsigned int a = 0; each && a < r->nat; a++) {
			unsigned int i = r->act[a];
			uint64_t addr = cfa + (uint64_t)(int64_t)r->off[i];
			Dwarf_Word v;

			/*
			 * memory_read()'s first case, the stack copy, done here
			 * with its bookkeeping: the call was ~45 instructions a
			 * word, 14 M on the inline workload.
			 */
			if (addr >= sp && addr + 8 > addr && addr + 8 < stack_end) {
				memcpy(&v, stack + (addr - sp), 8);
				uw->step_reads++;
				uw->last_ok = true;
				uw->last_val = v;
			} else if (!memory_read(NULL, addr, &v, uw)) {
				continue;
			}
			regs[i] = v;
			next_mask |= 1u << i;
		}
		/* Computed ones read nothing: after the reads, whose order is libdwfl's. */
		for (unsigned int a = r->nat; cfa_ok && a < r->nact; a++) {
			unsigned int i = r->act[a];

			regs[i] = cfa + (uint64_t)(int64_t)r->off[i];
			next_mask |= 1u << i;
		}
		/* libdwfl's end: the return address undefined, unknown or 0. */
		if (pc_undef || !(next_mask >> 16 & 1) || !regs[16])
			return 0;
		pc = regs[16];
		mask = next_mask;
		initial = false;
	}
}

/*
 * perf walks on past a frame at address 0 (a caller's address of 1, less
 * one) but prints no entry for it: its frames are counted against the
 * limit, then those at 0 skipped. Return: the frames left in @ips.
 */
static size_t drop_zero_frames(uint64_t *ips, size_t n)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++)
		if (ips[i])
			ips[kept++] = ips[i];
	return kept;
}

int tk_unwind_sample(struct tk_unwind *uw, const struct tk_unwind_sample *s,
		     tk_unwind_find_map_fn find, void *ctx, uint64_t *ips, size_t max)
{
	const int8_t *map;
	struct uproc *p;

	if (!max || s->regs_abi != REGS_ABI_64 || !s->regs || !s->stack_size)
		return 0;
	/* The ip (DWARF 16, perf's 8) and sp (7 in both), as reg_value() would find them. */
	map = reg_map(uw, s);
	if (map[16] < 0 || map[7] < 0)
		return 0;
	memcpy(&uw->sp, (const uint8_t *)s->regs + 8 * (size_t)map[7], 8);
	uw->s = s;
	uw->find = find;
	uw->ctx = ctx;
	uw->ips = ips;
	uw->n = 0;
	uw->max = max;
	p = uproc_get(uw, s->pid, s->maps_gen);
	uw->cur = p;
	if (!p)
		return -ENOMEM;
	uw->restart = false;
	uw->from_fp = false;
	if (!uw->rules && rules_grow(uw) < 0)
		return -ENOMEM;
	do {
		int ended;

		uw->step_reads = 0;
		uw->walk_start = uw->n;
		uw->from_fp = uw->restart;
		uw->restart = false;
		ended = uw->slow ? -1 : fast_walk(uw);
		if (ended < 0 && uw->restart) {
			/* Handed over after some frames: libdwfl goes on from there. */
			uw->step_reads = 0;
			uw->walk_start = uw->n;
			uw->from_fp = true;
			uw->restart = false;
		}
		if (ended < 0)
			ended = dwfl_getthread_frames(p->dwfl, s->tid, frame_cb, uw);
		/*
		 * libdwfl ends a stack at a return address of 0; libunwind only
		 * where the CFI says the return address is undefined (_start).
		 * Elsewhere it takes the 0 read (libdwfl reads the return
		 * address last: a 0 in the stack, or a word perf could not
		 * read, see memory_read()) as one more frame, printed at 0 - 1.
		 */
		if (ended == 0 && uw->n && uw->n < uw->max && uw->step_reads && uw->last_ok &&
		    !uw->last_val && ra_defined(uw, uw->ips[uw->n - 1]))
			add_frame(uw, (uint64_t)-1);
	} while (uw->restart && uw->n < uw->max);
	uw->restart = false;
	uw->from_fp = false;
	uw->s = NULL;
	return (int)drop_zero_frames(ips, uw->n);
}

/* ------------------------------------------------------------ inline scopes */

static uint64_t inl_hash(const struct bin *b, uint64_t addr)
{
	uint64_t h = (uint64_t)(uintptr_t)b * 0x9e3779b97f4a7c15ull ^ addr * 0xff51afd7ed558ccdull;

	return h ^ (h >> 29);
}

static int inl_grow(struct tk_unwind *uw)
{
	size_t cap = uw->inl_cap ? uw->inl_cap * 2 : 1024;
	struct inl *t = table_new(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < uw->inl_cap; i++) {
		size_t j;

		if (!uw->inls[i].bin)
			continue;
		j = inl_hash(uw->inls[i].bin, uw->inls[i].addr) & (cap - 1);
		while (t[j].bin)
			j = (j + 1) & (cap - 1);
		t[j] = uw->inls[i];
	}
	table_free(uw->inls, uw->inl_cap, sizeof(*uw->inls));
	uw->inls = t;
	uw->inl_cap = cap;
	return 0;
}

/* Append @name (or "??") to @e's names. */
/*
 * Add @name to @e's names. Names are not copied: they point into the
 * DWARF string and symbol tables of the binary's inline Dwfl, which lives
 * until tk_unwind_free(), as the cache does (a strdup() and a free() per
 * name were 8 M instructions on the inline workload). The array grows
 * from four entries by doubling.
 */
static int inl_add(struct inl *e, const char *name)
{
	if (!e->n || (e->n >= 4 && !(e->n & (e->n - 1)))) {
		const char **nv = realloc(e->names, (e->n ? 2 * e->n : 4) * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		e->names = nv;
	}
	e->names[e->n++] = name ? name : "??";
	return 0;
}

/* A DIE offset's slot in a table of @cap (a power of two) entries. */
static uint64_t node_hash(Dwarf_Off off, size_t cap)
{
	return (off * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

/*
 * A function's name as addr2line prints it: its linkage name when it has
 * one (glibc's __GI___qsort_r for __qsort_r, a C++ mangled name), else
 * its name.
 */
static const char *die_name_read(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));

	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	return name ? name : dwarf_diename(die);
}

/*
 * die_name_read() of @die, kept per abstract origin in @b (NULL: not
 * kept). An inline instance carries none of the three name attributes,
 * so dwarf_attr_integrate() finds each at its DW_AT_abstract_origin: the
 * names are the origin's, and every instance of one inlined function
 * shares them. Reading them followed the origin three times per instance
 * (~6 k instructions; 18 M on the inline workload).
 */
static const char *die_name(struct bin *b, Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;
	Dwarf *dbg;
	Dwarf_Off off;
	size_t j;

	if (!b || dwarf_hasattr(die, DW_AT_linkage_name) ||
	    dwarf_hasattr(die, DW_AT_MIPS_linkage_name) || dwarf_hasattr(die, DW_AT_name) ||
	    !dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &a), &origin) ||
	    !(dbg = dwarf_cu_getdwarf(origin.cu)))
		return die_name_read(die);
	off = dwarf_dieoffset(&origin);
	if ((b->nonames + 1) * 2 > b->oname_cap) {
		size_t cap = b->oname_cap ? 2 * b->oname_cap : 256;
		struct origin_name *t = calloc(cap, sizeof(*t));

		if (!t)
			return die_name_read(die);
		for (size_t i = 0; i < b->oname_cap; i++) {
			if (!b->onames[i].dbg)
				continue;
			j = node_hash(b->onames[i].off, cap);
			while (t[j].dbg)
				j = (j + 1) & (cap - 1);
			t[j] = b->onames[i];
		}
		free(b->onames);
		b->onames = t;
		b->oname_cap = cap;
	}
	j = node_hash(off, b->oname_cap);
	while (b->onames[j].dbg) {
		if (b->onames[j].off == off && b->onames[j].dbg == dbg)
			return b->onames[j].name;
		j = (j + 1) & (b->oname_cap - 1);
	}
	b->onames[j].dbg = dbg;
	b->onames[j].off = off;
	b->onames[j].name = die_name_read(&origin);
	b->nonames++;
	return b->onames[j].name;
}

/*
 * Code with line information but no function DIE (assembly): addr2line
 * names it from the symbol table, by the function symbol starting
 * closest below @ip that covers it; of symbols at one address the larger,
 * and of equal ones the later in the table
 * (__memcpy_avx512_unaligned_erms, where perf names the address
 * __memmove_avx512_unaligned_erms).
 */
static const char *symtab_name(Dwfl_Module *mod, uint64_t ip)
{
	const char *best = NULL;
	GElf_Addr best_addr = 0;
	GElf_Xword best_size = 0;
	int n = dwfl_module_getsymtab(mod);

	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || (type != STT_FUNC && type != STT_GNU_IFUNC) || addr > ip ||
		    (sym.st_size && ip - addr >= sym.st_size))
			continue;
		if (!best || addr > best_addr || (addr == best_addr && sym.st_size >= best_size)) {
			best = name;
			best_addr = addr;
			best_size = sym.st_size;
		}
	}
	return best;
}

/*
 * The name addr2line gives the innermost function @die: of several
 * function DIEs with the same range (an assembly unit gives each alias of
 * a function one: __getppid, __GI___getppid, getppid, __GI_getppid), the
 * last one's.
 */
static const char *inner_name(struct bin *b, Dwarf_Die *die)
{
	Dwarf_Addr lo, hi, lo2, hi2;
	Dwarf_Die cur = *die, next;
	const char *name = die_name(b, die);

	if (dwarf_lowpc(die, &lo) || dwarf_highpc(die, &hi))
		return name;
	while (dwarf_siblingof(&cur, &next) == 0 && dwarf_tag(&next) == DW_TAG_subprogram &&
	       !dwarf_lowpc(&next, &lo2) && !dwarf_highpc(&next, &hi2) && lo2 == lo && hi2 == hi) {
		if (die_name(b, &next))
			name = die_name(b, &next);
		cur = next;
	}
	return name;
}

/*
 * The names of the functions whose code holds @ip in @mod, innermost
 * first, into @e. dwarf_getscopes() finds the innermost function scope
 * at the address; for an inlined subroutine its scopes then continue in
 * the inlined function's abstract definition, so the callers come from
 * the DIE's place in the concrete tree instead (dwarf_getscopes_die()):
 * each enclosing inlined subroutine, up to the subprogram that holds
 * them all.
 */
/*
 * Whether dwarf_ranges() can give @die any range: only through its own
 * DW_AT_low_pc or DW_AT_ranges (libdw looks further only for a split
 * unit's DIE, which no child is). Most children have neither (types,
 * declarations, parameters, variables: 95 % of libc's DIEs), and asking
 * their abbreviation costs ~60 instructions where dwarf_ranges() decoded
 * every attribute twice (~650): it was a quarter of a report of the big
 * bench-dwarf profile, indexing the units of tracekit and libc.
 */
static bool may_have_ranges(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Index @cu's children by their address ranges; -ENOMEM. */
static int cu_index_build(struct cu_index *ci, Dwarf_Die *cu)
{
	Dwarf_Die child;
	size_t cap = 0;
	uint32_t order = 0;

	if (dwarf_child(cu, &child) != 0)
		return 0;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (dwarf_tag(&child) == DW_TAG_imported_unit)
			ci->imports = true;
		if (!may_have_ranges(&child))
			off = -1;
		while (off >= 0 && (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
			if (ci->n == cap) {
				struct cu_range *nr;

				cap = cap ? 2 * cap : 64;
				nr = realloc(ci->r, cap * sizeof(*nr));
				if (!nr)
					return -ENOMEM;
				ci->r = nr;
			}
			ci->r[ci->n].lo = lo;
			ci->r[ci->n].hi = hi;
			ci->r[ci->n].die = dwarf_dieoffset(&child);
			ci->r[ci->n].order = order;
			ci->n++;
		}
		order++;
	} while (dwarf_siblingof(&child, &child) == 0);
	qsort(ci->r, ci->n, sizeof(*ci->r), cu_range_cmp);
	for (size_t i = 0; i < ci->n; i++)
		ci->r[i].hi_max =
			i && ci->r[i - 1].hi_max > ci->r[i].hi ? ci->r[i - 1].hi_max : ci->r[i].hi;
	return 0;
}

/* @b's index of the unit @cu, built on first use; NULL on ENOMEM. */
static struct cu_index *cu_index_get(struct bin *b, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	size_t j;

	if ((b->ncus + 1) * 2 > b->cu_cap) {
		size_t cap = b->cu_cap ? 2 * b->cu_cap : 256;
		struct cu_index *t = table_new(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < b->cu_cap; i++) {
			if (!b->cus[i].off)
				continue;
			j = (b->cus[i].off * 0x9e3779b97f4a7c15ull >> 20) & (cap - 1);
			while (t[j].off)
				j = (j + 1) & (cap - 1);
			t[j] = b->cus[i];
		}
		table_free(b->cus, b->cu_cap, sizeof(*b->cus));
		b->cus = t;
		b->cu_cap = cap;
	}
	j = (off * 0x9e3779b97f4a7c15ull >> 20) & (b->cu_cap - 1);
	while (b->cus[j].off) {
		if (b->cus[j].off == off)
			return &b->cus[j];
		j = (j + 1) & (b->cu_cap - 1);
	}
	b->cus[j].off = off;
	b->ncus++;
	if (cu_index_build(&b->cus[j], cu) < 0) {
		b->cus[j].imports = true; /* the slow path still answers */
		free(b->cus[j].r);
		b->cus[j].r = NULL;
		b->cus[j].n = 0;
	}
	return &b->cus[j];
}

/* Read @n's tag and its children's ranges from the DIE at @n->off; -ENOMEM. */
static int die_node_fill(struct die_node *n, Dwarf *dw)
{
	Dwarf_Die die, c;
	uint32_t cap = 0;

	if (!dwarf_offdie(dw, n->off, &die)) {
		n->tag = -1;
		return 0;
	}
	n->tag = dwarf_tag(&die);
	if (dwarf_child(&die, &c) != 0)
		return 0;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t o = may_have_ranges(&c) ? 0 : -1;

		while (o >= 0 && (o = dwarf_ranges(&c, o, &base, &lo, &hi)) > 0) {
			if (n->nkids == cap) {
				struct die_kid *nk;

				cap = cap ? 2 * cap : 8;
				nk = realloc(n->kids, cap * sizeof(*nk));
				if (!nk)
					return -ENOMEM;
				n->kids = nk;
			}
			n->kids[n->nkids].lo = lo;
			n->kids[n->nkids].hi = hi;
			n->kids[n->nkids].off = dwarf_dieoffset(&c);
			n->nkids++;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

/*
 * @b's node of the DIE at @off, read on first use; NULL on ENOMEM. The
 * pointer holds until the next call (the table grows).
 */
static struct die_node *die_node_get(struct bin *b, Dwarf *dw, Dwarf_Off off)
{
	size_t j;

	if ((b->nnodes + 1) * 2 > b->node_cap) {
		size_t cap = b->node_cap ? 2 * b->node_cap : 1024;
		struct die_node *t = table_new(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t i = 0; i < b->node_cap; i++) {
			if (!b->nodes[i].off)
				continue;
			j = node_hash(b->nodes[i].off, cap);
			while (t[j].off)
				j = (j + 1) & (cap - 1);
			t[j] = b->nodes[i];
		}
		table_free(b->nodes, b->node_cap, sizeof(*b->nodes));
		b->nodes = t;
		b->node_cap = cap;
	}
	j = node_hash(off, b->node_cap);
	while (b->nodes[j].off) {
		if (b->nodes[j].off == off)
			return &b->nodes[j];
		j = (j + 1) & (b->node_cap - 1);
	}
	b->nodes[j].off = off;
	b->nnodes++;
	if (die_node_fill(&b->nodes[j], dw) < 0) {
		/* Keep the slot (its offset is taken) but say what is missing. */
		free(b->nodes[j].kids);
		b->nodes[j].kids = NULL;
		b->nodes[j].nkids = 0;
		b->nodes[j].tag = -1;
		return NULL;
	}
	return &b->nodes[j];
}

/* @n's name as an outer (@inner false: die_name()) or the innermost function (inner_name()). */
static const char *die_node_name(struct bin *b, struct die_node *n, Dwarf *dw, bool inner)
{
	Dwarf_Die die;

	if (!(n->named & (inner ? 2 : 1))) {
		n->named |= inner ? 2 : 1;
		if (!dwarf_offdie(dw, n->off, &die))
			return NULL;
		if (inner)
			n->inner = inner_name(b, &die);
		else
			n->name = die_name(b, &die);
	}
	return inner ? n->inner : n->name;
}

/*
 * The names of the functions at @pc (the unit's address) as inl_scan()
 * gives them, from @ci: the first of the unit's children (in DIE order)
 * that covers @pc, then down its tree the first child covering @pc at
 * each level: the path dwarf_getscopes() walks, without visiting the
 * whole unit for every address (it was a fifth of a report with inline
 * frames). Each DIE on the way is read once per binary (die_node_get()):
 * its tag, its names and its children's ranges, so that the next address
 * under it costs range compares, not libdw's attribute decoding (which
 * was half of a report of 6 500 addresses five inline frames deep).
 * 1 when @pc is in no function, 0 or -ENOMEM when named.
 */
static int inl_scan_indexed(struct bin *b, const struct cu_index *ci, Dwarf *dw, uint64_t pc,
			    struct inl *e)
{
	Dwarf_Off path[INLINE_MAX_NEST * 2];
	int tags[INLINE_MAX_NEST * 2];
	const struct cu_range *best = NULL;
	size_t lo = 0, hi = ci->n;
	int depth = 0, k, ret = 0;
	struct die_node *n;

	/* The last range starting at or below @pc, then back while one may still cover it. */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ci->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && ci->r[i].hi_max > pc;)
		if (pc < ci->r[i].hi && (!best || ci->r[i].order < best->order))
			best = &ci->r[i];
	if (!best)
		return 1;
	n = die_node_get(b, dw, best->die);
	if (!n)
		return -ENOMEM;
	if (n->tag < 0)
		return 1;
	path[0] = best->die;
	tags[0] = n->tag;
	while (depth + 1 < (int)(sizeof(path) / sizeof(path[0]))) {
		const struct die_kid *kid = NULL;

		for (uint32_t i = 0; i < n->nkids && !kid; i++)
			if (pc >= n->kids[i].lo && pc < n->kids[i].hi)
				kid = &n->kids[i];
		if (!kid)
			break;
		path[++depth] = kid->off;
		n = die_node_get(b, dw, kid->off);
		if (!n)
			return -ENOMEM;
		tags[depth] = n->tag;
	}
	for (k = depth; k >= 0; k--)
		if (tags[k] == DW_TAG_subprogram || tags[k] == DW_TAG_inlined_subroutine)
			break;
	if (k < 0)
		return 1;
	for (; k >= 0 && e->n < INLINE_MAX_NEST && !ret; k--) {
		if (tags[k] != DW_TAG_subprogram && tags[k] != DW_TAG_inlined_subroutine)
			continue;
		n = die_node_get(b, dw, path[k]);
		if (!n)
			return -ENOMEM;
		ret = inl_add(e, die_node_name(b, n, dw, !e->n));
		if (tags[k] == DW_TAG_subprogram)
			break;
	}
	return ret;
}

static int inl_scan(struct bin *b, Dwfl_Module *mod, uint64_t ip, struct inl *e)
{
	Dwarf_Die *scopes = NULL, *chain = NULL, *cu;
	const char *name;
	Dwarf_Addr bias;
	int ns, nc, i, ret = 0;

	cu = dwfl_module_addrdie(mod, ip, &bias);
	if (!cu) {
		name = dwfl_module_getsrc(mod, ip) ? symtab_name(mod, ip) : NULL;
		return name ? inl_add(e, name) : 0;
	}
	{
		struct cu_index *ci = cu_index_get(b, cu);

		if (ci && !ci->imports) {
			ret = inl_scan_indexed(b, ci, dwarf_cu_getdwarf(cu->cu), ip - bias, e);
			if (ret <= 0)
				return ret;
			/* A compile unit holds @ip, none of its functions does. */
			name = symtab_name(mod, ip);
			return name ? inl_add(e, name) : 0;
		}
	}
	ns = dwarf_getscopes(cu, ip - bias, &scopes);
	for (i = 0; i < ns; i++) {
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine)
			break;
	}
	if (i >= ns) {
		free(scopes);
		/* A compile unit holds @ip, none of its functions does. */
		name = symtab_name(mod, ip);
		return name ? inl_add(e, name) : 0;
	}
	if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram) {
		ret = inl_add(e, inner_name(b, &scopes[i]));
		free(scopes);
		return ret;
	}
	nc = dwarf_getscopes_die(&scopes[i], &chain);
	for (int k = 0; k < nc && e->n < INLINE_MAX_NEST && !ret; k++) {
		int tag = dwarf_tag(&chain[k]);

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		ret = inl_add(e, e->n ? die_name(b, &chain[k]) : inner_name(b, &chain[k]));
		if (tag == DW_TAG_subprogram)
			break;
	}
	free(chain);
	free(scopes);
	return ret;
}

/*
 * @b's own Dwfl, with @b alone at its link-time addresses: the DWARF that
 * names inline scopes is loaded (for libc, inflated) once per binary, not
 * once per process. NULL when libdwfl cannot load the file.
 */
static Dwfl_Module *bin_inline_module(struct bin *b)
{
	void **userdata;

	if (b->inl_tried)
		return b->inl_mod;
	b->inl_tried = true;
	b->inl_dwfl = dwfl_begin(&dwfl_callbacks);
	if (!b->inl_dwfl)
		return NULL;
	dwfl_report_begin(b->inl_dwfl);
	b->inl_mod = dwfl_report_elf(b->inl_dwfl, b->path, b->file, -1, 0, false);
	dwfl_report_end(b->inl_dwfl, NULL, NULL);
	if (b->inl_mod) {
		dwfl_module_info(b->inl_mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		*userdata = b;
	}
	return b->inl_mod;
}

/*
 * The section @name of @e as a dwarf-read section; false when it is
 * absent, or still compressed (libdw inflates only what it reads).
 */
static bool dwr_sect_get(Elf *e, size_t shstrndx, struct tk_dwr_sect sect[TK_DWR_NSECT])
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		int k;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		for (k = 0; k < TK_DWR_NSECT; k++)
			if (!strcmp(name, tk_dwr_sect_names[k]))
				break;
		if (k == TK_DWR_NSECT)
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			return false;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			continue;
		sect[k].p = d->d_buf;
		sect[k].size = d->d_size;
	}
	return true;
}

/*
 * @b's own DWARF reader over the sections libdw loaded for @imod (the same
 * bytes, inflated once), made on first use; NULL when the file has no
 * .debug_aranges or the reader refuses it: libdw answers then.
 */
static struct tk_dwr *bin_dwr(struct tk_unwind *uw, struct bin *b, Dwfl_Module *imod)
{
	struct tk_dwr_sect sect[TK_DWR_NSECT] = {{0}};
	Dwarf_Addr dbias;
	size_t shstrndx;
	Dwarf *dw;
	Elf *e;

	if (b->dwr_tried || !uw->dwr_mode)
		return b->dwr;
	b->dwr_tried = true;
	dw = dwfl_module_getdwarf(imod, &dbias);
	if (!dw || !(e = dwarf_getelf(dw)) || elf_getshdrstrndx(e, &shstrndx) < 0 ||
	    !dwr_sect_get(e, shstrndx, sect))
		return NULL;
	b->dwr = tk_dwr_new(sect);
	b->dwr_bias = dbias;
	return b->dwr;
}

/* Whether @a and @b hold the same names. */
static bool inl_same(const struct inl *a, const struct inl *b)
{
	if (a->n != b->n)
		return false;
	for (uint32_t i = 0; i < a->n; i++)
		if (strcmp(a->names[i], b->names[i]))
			return false;
	return true;
}

/*
 * The inline names of @ip (@imod's address) into @e: from dwarf-read where
 * it answers, else from libdw (inl_scan()).
 */
static void inl_lookup(struct tk_unwind *uw, struct bin *b, Dwfl_Module *imod, uint64_t ip,
		       struct inl *e)
{
	const char *nv[INLINE_MAX_NEST];
	struct tk_dwr *r;
	struct inl mine = {0};
	int n = -EOPNOTSUPP;

	if (!(r = bin_dwr(uw, b, imod))) {
		inl_scan(b, imod, ip, e);
		return;
	}
	uw->dwr_asked++;
	n = tk_dwr_inlines(r, ip - b->dwr_bias, nv, INLINE_MAX_NEST);
	if (n == -ENOENT || n >= 0) {
		struct inl *to = uw->dwr_mode == 2 ? &mine : e;
		const char *name;

		uw->dwr_answered++;
		for (int i = 0; i < n; i++)
			if (inl_add(to, nv[i]) < 0)
				break;
		/* A compile unit holds @ip, none of its functions does (as inl_scan()). */
		if (!n && (name = symtab_name(imod, ip)))
			inl_add(to, name);
		if (uw->dwr_mode != 2)
			return;
	}
	inl_scan(b, imod, ip, e);
	if (uw->dwr_mode == 2 && (n == -ENOENT || n >= 0) && !inl_same(&mine, e)) {
		uw->dwr_differ++;
		tk_warn("dwarf-read check: %s: address %#" PRIx64 ": %u names (%s), libdw %u (%s)",
			b->path, ip - b->dwr_bias, mine.n, mine.n ? mine.names[0] : "", e->n,
			e->n ? e->names[0] : "");
	}
	free(mine.names);
}

/* Empty the inline names cache (at its cap). */
static void inl_clear(struct tk_unwind *uw)
{
	for (size_t i = 0; i < uw->inl_cap; i++) {
		if (uw->inls[i].bin)
			free(uw->inls[i].names);
	}
	memset(uw->inls, 0, uw->inl_cap * sizeof(*uw->inls));
	uw->ninls = 0;
}

int tk_unwind_inlines(struct tk_unwind *uw, uint64_t ip, const char *const **names)
{
	Dwfl_Module *mod, *imod;
	struct bin *b;
	void **userdata;
	Dwarf_Addr bias, ibias;
	uint64_t vaddr;
	size_t j;

	*names = NULL;
	if (!uw->cur || !uw->cur->dwfl)
		return 0;
	mod = dwfl_addrmodule(uw->cur->dwfl, ip);
	if (!mod || !dwfl_module_getelf(mod, &bias))
		return 0;
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	b = *userdata;
	if (!b)
		return 0;
	/* The address in the file's own terms, which every process of it shares. */
	vaddr = ip - bias;
	if (uw->ninls >= INLINE_CACHE_MAX)
		inl_clear(uw);
	if ((uw->ninls + 1) * 2 > uw->inl_cap && inl_grow(uw) < 0)
		return 0;
	j = inl_hash(b, vaddr) & (uw->inl_cap - 1);
	while (uw->inls[j].bin) {
		if (uw->inls[j].bin == b && uw->inls[j].addr == vaddr) {
			*names = (const char *const *)uw->inls[j].names;
			return (int)uw->inls[j].n;
		}
		j = (j + 1) & (uw->inl_cap - 1);
	}
	uw->inls[j].bin = b;
	uw->inls[j].addr = vaddr;
	uw->ninls++;
	imod = bin_inline_module(b);
	/* A lookup that ran out of memory keeps what it found: the frame prints, maybe poorer. */
	if (imod && dwfl_module_getelf(imod, &ibias))
		inl_lookup(uw, b, imod, vaddr + ibias, &uw->inls[j]);
	*names = (const char *const *)uw->inls[j].names;
	return (int)uw->inls[j].n;
}
