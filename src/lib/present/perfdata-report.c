// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-report: print the samples of a perf.data file as `perf script`
 * (perf 6.1) prints them by default.
 *
 * What perf script does, and so what this does:
 *
 *   Order. perf queues every kernel record that carries a timestamp
 *   (samples, and side-band records through their sample_id_all trailer)
 *   and delivers them sorted by time, ties in arrival order. A
 *   FINISHED_ROUND record flushes the queued records whose time is at most
 *   the highest time seen before the previous round, then remembers the
 *   highest time seen so far; the end of the file flushes everything.
 *   Records without a timestamp (time 0, e.g. the COMM and MMAP records
 *   perf synthesizes from /proc) are delivered at once. A late record is
 *   still queued and so comes out after later ones, as in perf.
 *
 *   Names. A thread's name is the last COMM delivered for its tid; a
 *   forked thread takes its parent's name when the parent has one; pid 0
 *   is "swapper"; any other unknown thread prints as ":TID".
 *
 *   Line. Tracepoint samples: "%16s %5d [%03d] %12s: %*s: TEXT\n" with
 *   comm, tid, cpu, time in seconds with microseconds, the event name
 *   right-aligned to the longest name of the file, and the tracepoint's
 *   text from its TRACING_DATA format. Other samples: comm ("%s " instead
 *   of "%16s " when the event has callchains), tid, cpu, time, period
 *   ("%10lu "), event name, then " %16lx sym+0xoff (dso)" for the ip, or a
 *   newline and one "\t%16lx sym+0xoff (dso)\n" line per callchain entry.
 *   A field whose sample_type bit is missing (CPU when not -a) is left out.
 *   Callchains are cut at --max-stack and dropped whole when they hold a
 *   context value perf does not know (put_callchain()). A sample with
 *   counter values (PERF_SAMPLE_READ) prints a line per value, as the
 *   event of the value's id, its period the change since that id's last
 *   sample (print_read_members()). Events the file does not name take
 *   perf's name with modifiers from the attr ("cpu-clock:uH"). Kernel
 *   addresses in a module the file mapped (a kernel MMAP record) print
 *   with the dso "[module]", or its .ko's path when the file recorded the
 *   module's build id, named from that .ko (perfdata-maps.c).
 *
 *   DWARF callchains. A sample of an event with REGS_USER and STACK_USER
 *   (--call-graph dwarf) always prints the multi-line form: its kernel
 *   callchain, then the user frames unwound from its registers and stack
 *   copy (unwind.c), each preceded by one "name+0xoff (inlined)" line per
 *   function inlined at it unless TK_PERFDATA_REPORT_NO_INLINE, which is
 *   what perf script 6.1 adds through addr2line -i (put_unwound()). In a
 *   binary without DWARF addr2line answers from the symbol table, and where
 *   its pick among aliases is not perf's symbol, that name prints as the
 *   frame's one, inlined, line (tk_symbolizer_a2l_alias()). A
 *   frame's text is made once per process maps and address, and kept;
 *   so is a kernel callchain entry's, per state of the kernel's maps
 *   (put_frame()).
 *
 * Formats. TRACING_DATA's event formats are parsed (libtraceevent, then
 * compiled) when a sample of their event first prints, not all at the
 * first tracepoint: `perf record -e 'syscalls:*'` stores ~700 formats, each
 * an event of the file, and samples a few dozen of them (load_tracing(),
 * bind_event()). What a bad format of a sampled event prints is what
 * parsing all at once printed: its damage line goes where the format's
 * turn would have put it, and --strict parses all up front.
 *
 * Per line, the work that depends only on the event or the run is done
 * when that changes: whether a worker may print the event's lines
 * (log_ok), whether the direct path applies (direct_ok), the "[CPU] " texts
 * (cpu_cols), the name column padded and sized for fixed-size copies.
 * Per sample, each thing is read once where it can be: the reader hands
 * out runs of samples with the event their id names (process_srefs()),
 * which are queued by offset and time alone (the time sits at a fixed
 * offset whatever follows it, so a DWARF sample is decoded only when it
 * prints), and those the --time window drops are not queued at all once
 * their event is ready (time_drops()); the delivery loop prints
 * them through print_direct() inline; a time in the millisecond of the
 * line before rewrites three digits of the kept time text.
 *
 * The queue is a set of sorted runs (one per CPU buffer perf drained),
 * noted as records are queued; a flush merges them as it prints and
 * leaves what stays in place but for the earlier runs' tails
 * (flush_queue()), so no record is copied to sort it.
 *
 * Memory: two rounds of queue entries (16 bytes each: a time and a word
 * with the file offset and evsel, struct qent), and the records they name: read in
 * place from the reader's mapping of the file (which keeps the pages from
 * the oldest queued record on resident, tk_perfdata_keep_from()), or on
 * one thread from its kept window (tk_perfdata_read_kept(): pread() copies
 * that keep the bytes from the oldest queued record on; a first touch of
 * each mapped page cost more than the copy), whose base moves as it slides
 * and is asked for after each read, or copied into two arenas when the
 * reader's bytes do not stay (a pipe, a COMPRESSED record's output, an odd
 * offset); plus the thread and map tables. Symbols: kernel ips through
 * kallsyms, user ips through the process's MMAP/MMAP2 maps (kept only
 * when a line may name a user address: user_maps_needed()) and the mapped
 * file's ELF symbols (through the cache module's symbolizer, which loads
 * each file once), each DSO named only from a file of the build id the
 * BUILD_ID feature recorded for it.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tracekit/cache.h>
#include <tracekit/elf.h>
#include <tracekit/event.h>
#include <tracekit/perfdata.h>
#include <tracekit/tracefs.h>

#include "event-internal.h"
#include "perfdata-evname.h"
#include "perfdata-internal.h"
#include "perfdata-maps.h"
#include "internal/bigbuf.h"
#include "internal/error.h"
#include "internal/fsutil.h"
#include "internal/opts.h"
#include "internal/handoff.h"
#include "internal/idtable.h"
#include "perf-mem.h"
#include "cache-internal.h"
#include "ksyms-copy.h"
#include "ksyms-lazy.h"
#include "print-pool.h"
#include "symbolizer-internal.h"
#include "unwind-internal.h"

#define CONTEXT_MAX	    ((uint64_t)-4095) /* PERF_CONTEXT_* markers are above this */
#define CONTEXT_KERNEL	    ((uint64_t)-128)
#define CONTEXT_USER	    ((uint64_t)-512)
#define CONTEXT_HV	    ((uint64_t)-32)
#define MAX_STACK_DEFAULT   127 /* perf's when kernel.perf_event_max_stack cannot be read */
#define MISC_CPUMODE_MASK   7
#define MISC_KERNEL	    1
#define MISC_GUEST_KERNEL   4
#define PERF_TYPE_SOFTWARE  1
#define PERF_COUNT_SW_DUMMY 9

enum {
	F_COMM = 1 << 0,
	F_TID = 1 << 1,
	F_CPU = 1 << 2,
	F_TIME = 1 << 3,
	F_PERIOD = 1 << 4,
	F_EVNAME = 1 << 5,
	F_TRACE = 1 << 6,
	F_IP = 1 << 7,
	/* A raw PMU event's memory sample fields (perf script's defaults for attr.type 4). */
	F_ADDR = 1 << 8,
	F_DATA_SRC = 1 << 9,
	F_WEIGHT = 1 << 10,
	F_INS_LAT = 1 << 11,
	F_PHYS_ADDR = 1 << 12,
	F_DATA_PAGE_SIZE = 1 << 13,
	F_CODE_PAGE_SIZE = 1 << 14,
	F_MEM = F_ADDR | F_DATA_SRC | F_WEIGHT | F_INS_LAT | F_PHYS_ADDR | F_DATA_PAGE_SIZE |
		F_CODE_PAGE_SIZE,
	/*
	 * Not a field: the event's format is not parsed yet (bind_event()).
	 * In the mask print_direct() tests anyway, so a sample of such an
	 * event takes the slower path, which parses it, at no cost per line.
	 */
	F_PENDING = 1 << 15,
};

/* The --fields that only the full sample decoder reads. */
#define PD_MEM_FIELDS                                                                              \
	(TK_PERFDATA_FIELD_ADDR | TK_PERFDATA_FIELD_DATA_SRC | TK_PERFDATA_FIELD_WEIGHT |          \
	 TK_PERFDATA_FIELD_INS_LAT | TK_PERFDATA_FIELD_PHYS_ADDR |                                 \
	 TK_PERFDATA_FIELD_DATA_PAGE_SIZE | TK_PERFDATA_FIELD_CODE_PAGE_SIZE)

/*
 * Where the fixed sample fields sit when no variable-length field (READ,
 * CALLCHAIN) comes before RAW: offsets within the record, 0 = absent.
 * Tracepoint samples always have this shape, so they are read with a few
 * loads instead of the generic cursor walk.
 */
struct fast_layout {
	bool ok;
	uint16_t ip, tid, time, cpu, period, raw;
	uint16_t min; /* record bytes the fixed fields need */
};

struct rep_evsel {
	bool ready;
	char *name;
	char *name_col;	    /* name right-aligned to the name column, then ": " */
	bool wanted;	    /* passes the event filters */
	int name_col_width; /* the column width name_col was built for */
	uint32_t name_col_len;
	const struct tk_event *ev;
	unsigned int fields;
	bool callchain;
	bool bare_chain; /* callchain entries print "ip sym" alone (put_callchain()) */
	uint64_t sample_type;
	uint64_t attr_period;
	struct fast_layout fast;
	uint16_t time_at; /* where a sample's time is, whatever its layout; 0: none */
	/* Its queue entries' word but the file offset (struct qent), QENT_COPY: queue copies. */
	uint64_t qword;
	bool ksyms; /* its text may name kernel symbols (event_reads_kallsyms()) */
	/* ev is not looked up yet (F_PENDING in fields): parsed at its first sample (bind_event())
	 */
	bool ev_pending;
	bool log_ok; /* a worker can print its lines, as far as the event decides (evsels_ready())
		      */
	bool direct_ok; /* print_direct() may print its lines (evsel_direct_ok()) */
	int32_t ev_id;
};

/* The sample fields the printer uses; a subset of struct tk_perf_sample. */
struct psample {
	uint64_t fields;
	uint64_t ip, time, period;
	uint32_t pid, tid, cpu;
	uint32_t raw_size;
	const void *raw;
	uint64_t callchain_nr;
	const void *callchain;
	const void *read; /* PERF_SAMPLE_READ block, read_size bytes */
	uint64_t read_size;
	bool fixed; /* read at the event's fixed offsets (fast_sample()) */
	/* --call-graph dwarf: user registers and stack (full decoder only) */
	uint64_t regs_abi, regs_nr, stack_size;
	const void *regs, *stack;
	/* memory samples (full decoder only) */
	uint64_t addr, weight, data_src, phys_addr, data_page_size, code_page_size;
};

/*
 * A thread's line start lives in a store that only grows until the report
 * ends: a worker may still print lines with a name the merge has since
 * replaced (a later COMM record).
 */
#define PREFIX_BYTES 40
#define PREFIX_CHUNK 1024 /* prefixes per chunk of the store */

/* A direct-mapped memo in front of the thread table: a hit is a load and a compare. */
#define TMEMO_SIZE 64

struct thread {
	int32_t tid; /* -1: free slot */
	bool comm_set;
	uint8_t prefix_len; /* 0: prefix not built for the current name */
	const char *prefix; /* PREFIX_BYTES of "%16s %5d " (name and tid): most lines start so */
	char comm[24];
};

struct map {
	uint64_t start, end, pgoff;
	char *path;
	char bid[TK_BUILD_ID_HEX_MAX]; /* the recorded build id of the file, or "" */
	bool identity; /* anonymous memory: ips are shown and looked up as they are */
};

/*
 * The text of an unwound frame of a process's maps generation, or of a
 * kernel callchain entry in one state of the kernel's maps (put_frame()).
 */
struct frame_memo {
	uint64_t ip, gen; /* gen: the process's maps generation, or FRAME_KERNEL | kernel epoch */
	int32_t pid;
	uint32_t len;
	char *text; /* NULL: empty */
};

struct proc {
	int32_t pid; /* -1: free slot */
	struct map *maps;
	size_t nmaps, capmaps;
	uint64_t gen;  /* a new value whenever a file's map changes (the unwinder's caches) */
	uint64_t adds; /* maps added so far, beside the others too (the unwinder's file_low) */
};

/*
 * The time column of the last microsecond printed: samples come several per
 * microsecond, and a hit is a compare and a copy. Times in [lo, lo + span)
 * print as text. One per printing thread.
 */
struct time_col {
	uint64_t lo, span, secs, sec_ns;
	uint64_t ms_ns, ms_span; /* the text's millisecond (ms_span 0: --ns, or no text yet) */
	uint8_t len;
	char text[40]; /* 20 digits of seconds, 9 of fraction: always fits (copy40()) */
};

/* Where queued copies live: arena ARENA_OF(w) at ARENA_OFF(w) of an entry's word (struct qent). */
struct arena {
	uint8_t *buf;
	uint64_t len, cap;
	uint64_t live; /* queued records in it */
};

/*
 * The runs flush_queue() merges as it delivers: a round holds one sorted run
 * per CPU buffer perf drained, and what the round before left one more per
 * CPU, so a flush sees a handful. A queue of more runs is sorted first.
 */
#define MERGE_RUNS 16

/*
 * A queued record in 16 bytes: its time, and one word that says where it
 * is. A record of the file's bytes (mapping or kept window): QENT_OFF_BITS
 * of file offset and, above them, its evsel + 1 (0: not known), bit 63
 * clear. A copy: bit 63 set, bit 62 its arena, the rest its offset there,
 * where a struct qcopy precedes the record's bytes with what the word has
 * no room for. Half the entry of the four fields side by side: the queue
 * holds two of perf's rounds (often 100 k entries and more), so its
 * arrays, their huge pages and the merge's moves are halved. A record at
 * a file offset or of an evsel the word cannot hold is queued as a copy.
 */
struct qent {
	uint64_t time;
	uint64_t w;
};

#define QENT_COPY      (1ull << 63)
#define QENT_OFF_BITS  42 /* 4 TiB of file */
#define QENT_OFF_MASK  ((1ull << QENT_OFF_BITS) - 1)
#define QENT_EVSEL_MAX ((1ull << (63 - QENT_OFF_BITS)) - 2) /* evsel + 1 fits 21 bits */
#define ARENA_BIT      (1ull << 62)
#define ARENA_OF(w)    (((w) >> 62) & 1)
#define ARENA_OFF(w)   ((w) & (ARENA_BIT - 1))

/* What a copy's entry does not hold, in the arena before the record's bytes. */
struct qcopy {
	uint64_t file_offset;
	int32_t evsel; /* -1: not known (side-band record without ids) */
	uint32_t compressed;
};

/* The counter value a PERF_SAMPLE_READ id had at its previous sample. */
struct read_last {
	uint64_t id, value;
	bool used;
};

/*
 * A format of TRACING_DATA not parsed yet (load_tracing()): parsed when a
 * sample of its id first prints. @id is read from its "ID: " line.
 */
struct lazy_format {
	int32_t id;
	uint32_t index; /* its place among the file's formats */
	bool parsed;
	const char *system;
	struct tk_perfdata_text text;
};

/* Samples taken from the reader at once (tk_perfdata_next_samples()): 2 KiB. */
#define SREF_BATCH 128

/* A direct-mapped memo of event id -> evsel index. */
#define IDCACHE_SIZE 64

struct idcache_ent {
	uint64_t id;
	int32_t evsel; /* -1: empty */
};

struct ppool;

struct rep {
	struct tk_perfdata *pd;
	struct ppool *pool; /* NULL: one thread prints */
	const struct tk_perfdata_report_opts *opts;
	struct tk_outbuf out;
	struct tk_event_set *set;
	bool set_tried;
	bool fields_checked; /* --fields: check_fields() passed */
	bool set_live;	     /* set holds this machine's formats (the file has no TRACING_DATA) */
	struct lazy_format *lazy; /* sorted by id, then index */
	size_t nlazy;
	uint32_t *fmt_bad; /* indices of the formats that did not parse, ascending */
	size_t nfmt_bad;
	size_t fmt_damage_base; /* damage regions listed before the first format's */
	struct rep_evsel *evs;
	size_t nevs;
	int name_width;
	size_t mem_width; /* the widest data source text so far (perf pads to it) */

	struct tk_idtable threads;	  /* struct thread by tid */
	struct thread *tmemo[TMEMO_SIZE]; /* by tid's low bits: threads found lately */
	struct tk_idtable procs;	  /* struct proc by pid */

	struct tk_symbolizer *sym;
	struct tk_unwind *unwind;		/* made for the first --call-graph dwarf sample */
	bool unwind_failed;			/* no unwinder could be made: said once */
	struct frame_memo *frame_memo;		/* frame texts, unwound and kernel (put_frame()) */
	size_t frame_cap, nframes;		/* its slots (a power of two), and those filled */
	char **frame_chunks;			/* where the texts are (frame_text_keep()) */
	size_t nframe_chunks, frame_chunk_used; /* chunks, and bytes used of the last, */
	size_t frame_chunk_size;		/* of its size */
	struct tk_outbuf frame_text;		/* where a frame's text is made before it is kept */
	uint64_t kframe_epoch;			/* the kernel maps' state (kernel_frame_epoch()) */
	uint64_t kframe_kmods_gen, kframe_start; /* what it was last seen as */
	bool kframe_loaded, kframe_mapped;
	struct tk_unwind_map unwind_map; /* the map unwind_find_map() found */
	struct proc *unwind_proc;	 /* the process being unwound */
	uint64_t maps_gen;
	struct tk_cache *cache;
	char (*bids)[TK_BUILD_ID_HEX_MAX]; /* the BUILD_ID feature's ids as hex */
	size_t nbids;

	/*
	 * The queue. Records are copied into arenas[cur]. A FINISHED_ROUND
	 * delivers every record queued before the previous one (their times
	 * are at most its limit), so a record lives through at most two
	 * rounds: the rounds alternate between the two arenas, and an arena
	 * whose records are all delivered starts over from its beginning.
	 * Nothing queued is ever moved.
	 */
	struct arena arenas[2];
	int cur;
	const uint8_t *map; /* the reader's mapping of the file: records there are not copied */
	uint64_t map_len;
	/* map is the reader's kept window's base (tk_perfdata_kept_base()), new after each read */
	bool map_moves;
	struct qent *q, *qtmp;
	size_t qhead, qlen, qcap, qtmp_cap; /* queued: q[qhead] to q[qlen - 1] */
	/*
	 * Where the queue's sorted runs after the first start (noted as
	 * records are queued: a time below the one before), and whether
	 * there were more than fit (flush_queue() then sorts).
	 */
	size_t qruns[MERGE_RUNS - 1], nqruns;
	bool qruns_over;
	uint64_t qlast; /* the time of the queue's last entry, 0 when it is empty */
	size_t *runs;
	size_t runs_cap;
	uint64_t max_ts, next_flush;
	uint64_t
		keep_low; /* the lowest file offset the queue holds after a flush (flush_queue()) */
	uint64_t printed;
	struct tk_perfdata_report_stats st; /* the file's records and losses */

	struct time_col tc; /* the merge thread's */
	bool nsec;	    /* --ns */

	char **pfx_chunks; /* the prefix store (struct thread) */
	size_t npfx_chunks, pfx_used;
	size_t file_evsels;	 /* evsels of the file (pipe mode: so far) */
	size_t sample_id_off;	 /* where a SAMPLE's id is (perf puts it alike for all); 0: none */
	bool filtering;		 /* some filter of the options is set */
	bool user_maps;		 /* a line may name a user address: keep processes' maps */
	bool window;		 /* --time gave a start or an end (time_drops()) */
	uint64_t qt_lo, qt_span; /* times t with t - qt_lo < qt_span: queued, in the window */
	struct idcache_ent idcache[IDCACHE_SIZE];

	/* PERF_SAMPLE_READ: the last value per id (open addressing, power-of-2 cap). */
	struct read_last *rlast;
	size_t rlast_cap, rlast_n;
	/* Callchain entries printed at most (perf's --max-stack). */
	uint64_t max_stack;
	/* Kernel modules from the file's kernel MMAP records. */
	struct tk_perf_kmods kmods;
	bool kernel_loaded;
	bool kernel_mapped;
	uint64_t kernel_start; /* the kernel map's first address: below it, no map */
	bool tracing_kallsyms; /* TRACING_DATA carries kallsyms (perf's never does) */
	bool ksyms_decided;    /* decide_kernel_symbols() ran */
	bool ksyms_pending;    /* it wants kallsyms, which no event printed has needed yet */
	char *ksym_text;       /* the kallsyms the event set borrows */
	/* the file has the kernel's MMAP record ([kernel.kallsyms]_text) */ /* kallsyms
										named a
										kernel
										address
										(perf loaded
										the kernel)
									      */
};

/* ------------------------------------------------------------ threads */

/* thread_get() past its memo: the table itself. */
static struct thread *__attribute__((noinline))
thread_find(struct rep *r, int32_t tid, bool create, struct thread **m)
{
	const void *before = r->threads.slots;
	struct thread *t = create ? tk_idtable_get(&r->threads, sizeof(*t), tid, 1024, NULL)
				  : tk_idtable_find(&r->threads, sizeof(*t), tid);

	if (r->threads.slots != before)
		memset(r->tmemo, 0, sizeof(r->tmemo)); /* they pointed into the old table */
	if (t)
		*m = t;
	return t;
}

/* The thread of @tid, created (unnamed) when new; NULL on ENOMEM or tid < 0. */
static inline __attribute__((always_inline)) struct thread *thread_get(struct rep *r, int32_t tid,
								       bool create)
{
	struct thread **m = &r->tmemo[(uint32_t)tid % TMEMO_SIZE];

	/* Slots are never freed, so a memo stays right until the table grows. */
	if (*m && (*m)->tid == tid)
		return *m;
	return thread_find(r, tid, create, m);
}

static void thread_set_comm(struct thread *t, const char *comm, size_t max)
{
	size_t n = strnlen(comm, max);

	if (n >= sizeof(t->comm))
		n = sizeof(t->comm) - 1;
	memcpy(t->comm, comm, n);
	t->comm[n] = 0;
	t->comm_set = true;
	t->prefix_len = 0;
}

static const char *thread_comm(struct rep *r, int32_t tid, char *buf, size_t len)
{
	struct thread *t = thread_get(r, tid, false);

	if (t && t->comm_set)
		return t->comm;
	if (tid == 0)
		return "swapper";
	snprintf(buf, len, ":%" PRId32, tid);
	return buf;
}

/* PREFIX_BYTES bytes of the prefix store, for a new line start; NULL on ENOMEM. */
static char *prefix_slot(struct rep *r)
{
	if (!r->pfx_chunks || r->pfx_used == PREFIX_CHUNK) {
		char **c = realloc(r->pfx_chunks, (r->npfx_chunks + 1) * sizeof(*c));

		if (!c)
			return NULL;
		r->pfx_chunks = c;
		c[r->npfx_chunks] = malloc((size_t)PREFIX_CHUNK * PREFIX_BYTES);
		if (!c[r->npfx_chunks])
			return NULL;
		r->npfx_chunks++;
		r->pfx_used = 0;
	}
	return r->pfx_chunks[r->npfx_chunks - 1] + PREFIX_BYTES * r->pfx_used++;
}

/*
 * The line start "%16s %5d " of thread @t, built once per name. Return:
 * false when it does not fit (the caller prints the two fields itself).
 */
static bool thread_prefix(struct rep *r, struct thread *t)
{
	char buf[24], text[PREFIX_BYTES];
	const char *comm = t->comm;
	char *slot;
	int n;

	if (t->prefix_len)
		return true;
	if (!t->comm_set && t->tid == 0) {
		comm = "swapper";
	} else if (!t->comm_set) {
		snprintf(buf, sizeof(buf), ":%" PRId32, t->tid);
		comm = buf;
	}
	n = snprintf(text, sizeof(text), "%16s %5" PRId32 " ", comm, t->tid);
	if (n <= 0 || (size_t)n >= sizeof(text) || !(slot = prefix_slot(r)))
		return false;
	memcpy(slot, text, PREFIX_BYTES);
	t->prefix = slot;
	t->prefix_len = (uint8_t)n;
	return true;
}

/* ------------------------------------------------------------ maps */

static struct proc *proc_get(struct rep *r, int32_t pid, bool create)
{
	if (!create)
		return tk_idtable_find(&r->procs, sizeof(struct proc), pid);
	return tk_idtable_get(&r->procs, sizeof(struct proc), pid, 256, NULL);
}

/* @owned: @path itself, malloc'ed, which the map takes (freed on failure), or NULL. */
static int proc_add_map(struct proc *p, uint64_t start, uint64_t len, uint64_t pgoff,
			const char *path, char *owned, const char *bid, bool identity)
{
	static uint64_t gens;
	struct map *m;
	size_t n;

	if (!len || start + len < start) {
		free(owned);
		return 0;
	}
	/*
	 * The unwinder keeps a process's binaries loaded while this stays:
	 * a map added beside the others (anonymous memory, a library loaded
	 * into a free range) leaves what it loaded true, hiding part of a
	 * file's map does not (below). A process's first map starts anew.
	 */
	if (!p->nmaps)
		p->gen = __atomic_add_fetch(&gens, 1, __ATOMIC_RELAXED);
	/*
	 * A new map hides what it overlaps, as a new mmap() does, and only
	 * that: the part of an older map before it and the part after it
	 * stay, the latter with its file offset moved on (perf's
	 * maps__fixup_overlappings()). Each overlap leaves at most two pieces,
	 * so room for two more maps than now is enough.
	 */
	if (p->nmaps + 3 > p->capmaps) {
		/*
		 * Grown by half, not by one: perf record -a writes a map record
		 * for every map of every process, ~57 k in a 0.5 s recording,
		 * and two realloc() calls each were a sixth of its report.
		 */
		size_t cap = p->nmaps + 3 + p->nmaps / 2;

		m = realloc(p->maps, cap * sizeof(*m));
		if (!m) {
			free(owned);
			return -ENOMEM;
		}
		p->maps = m;
		p->capmaps = cap;
	}
	for (size_t i = 0; i < p->nmaps;) {
		struct map *o = &p->maps[i];
		uint64_t end = start + len;

		if (o->end <= start || end <= o->start) {
			i++;
			continue;
		}
		if (!o->identity)
			p->gen = __atomic_add_fetch(&gens, 1, __ATOMIC_RELAXED);
		if (o->start < start && o->end > end) {
			/* The new map falls inside: the old one becomes two. */
			struct map *after = &p->maps[p->nmaps];

			*after = *o;
			after->path = strdup(o->path);
			if (!after->path) {
				free(owned);
				return -ENOMEM;
			}
			after->pgoff += end - o->start;
			after->start = end;
			o->end = start;
			p->nmaps++;
			break; /* no other map can overlap a part of this one */
		}
		if (o->start < start) {
			o->end = start;
			i++;
		} else if (o->end > end) {
			o->pgoff += end - o->start;
			o->start = end;
			i++;
		} else {
			free(o->path);
			*o = p->maps[--p->nmaps];
		}
	}
	m = &p->maps[p->nmaps];
	m->path = owned ? owned : strdup(path);
	if (!m->path)
		return -ENOMEM;
	p->adds++;
	m->start = start;
	m->end = start + len;
	m->pgoff = pgoff;
	/* snprintf() of "%s" cost ~500 instructions a map. */
	n = bid ? strnlen(bid, sizeof(m->bid) - 1) : 0;
	memcpy(m->bid, bid ? bid : "", n);
	m->bid[n] = '\0';
	m->identity = identity;
	p->nmaps++;
	return 0;
}

static int proc_clone(struct rep *r, int32_t ppid, int32_t pid)
{
	struct proc *parent = proc_get(r, ppid, false), *child;
	int ret = 0;

	if (!parent || !parent->nmaps || pid < 0) /* a negative pid: damaged, no process */
		return 0;
	child = proc_get(r, pid, true);
	/* The table may have moved: look the parent up again. */
	parent = proc_get(r, ppid, false);
	if (!child || !parent)
		return -ENOMEM;
	for (size_t i = 0; i < parent->nmaps && !ret; i++)
		ret = proc_add_map(child, parent->maps[i].start,
				   parent->maps[i].end - parent->maps[i].start,
				   parent->maps[i].pgoff, parent->maps[i].path, NULL,
				   parent->maps[i].bid, parent->maps[i].identity);
	return ret;
}

/* ------------------------------------------------------------ output */

/*
 * Copy a line start or time column (40 bytes) as five 8-byte moves. GCC
 * turned memcpy() of these into `rep movsl`, whose start-up cost made the
 * two copies a line ~20% of a report's CPU time (perf record -e cpu-clock
 * on raw_syscalls: 10% in print_direct()'s, 11% in put_time()'s).
 */
static inline __attribute__((always_inline)) void copy40(void *dst, const void *src)
{
	const char *s = src;
	char *d = dst;
	uint64_t a, b, c, e, f;

	memcpy(&a, s, 8);
	memcpy(&b, s + 8, 8);
	memcpy(&c, s + 16, 8);
	memcpy(&e, s + 24, 8);
	memcpy(&f, s + 32, 8);
	memcpy(d, &a, 8);
	memcpy(d + 8, &b, 8);
	memcpy(d + 16, &c, 8);
	memcpy(d + 24, &e, 8);
	memcpy(d + 32, &f, 8);
}

_Static_assert(PREFIX_BYTES == 40 && sizeof(((struct time_col *)0)->text) == 40,
	       "copy40() copies line starts and time columns");

static inline __attribute__((always_inline)) void copy24(void *dst, const void *src)
{
	const char *s = src;
	char *d = dst;
	uint64_t a, b, c;

	memcpy(&a, s, 8);
	memcpy(&b, s + 8, 8);
	memcpy(&c, s + 16, 8);
	memcpy(d, &a, 8);
	memcpy(d + 8, &b, 8);
	memcpy(d + 16, &c, 8);
}

/* A short name column (64 bytes) as eight 8-byte moves: memcpy() became `rep movsl` too. */
static inline __attribute__((always_inline)) void copy64(void *dst, const void *src)
{
	copy40(dst, src);
	copy24((char *)dst + 40, (const char *)src + 40);
}

/* Room for one field; longer texts go through tk_outbuf_write(). */
static char *room(struct tk_outbuf *out, size_t n)
{
	if (out->cap - out->len < n)
		tk_outbuf_flush(out);
	return out->buf + out->len;
}

static void put_str(struct tk_outbuf *out, const char *s)
{
	tk_outbuf_write(out, s, strlen(s));
}

/* @s right-aligned in @width columns, then @tail. */
static void put_padded(struct tk_outbuf *out, const char *s, int width, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	char *p;

	if (n + t + (size_t)(width > 0 ? width : 0) + 1 > 4096) {
		put_str(out, s);
		put_str(out, tail);
		return;
	}
	p = room(out, (size_t)width + n + t + 1);
	for (int i = (int)n; i < width; i++)
		*p++ = ' ';
	memcpy(p, s, n);
	p += n;
	memcpy(p, tail, t);
	p += t;
	out->len = (size_t)(p - out->buf);
}

/*
 * Decimal digits of @v, right-aligned in @width (space padded), or zero
 * padded. The digits go two at a time into a buffer already padded,
 * and the field leaves it in one fixed 24-byte copy: the digit loop and
 * the padding loop cost ~140 instructions a call, two calls a sample
 * line (tid and period).
 */
static void put_u64(struct tk_outbuf *out, uint64_t v, int width, bool zero)
{
	char tmp[48];
	char *d = tmp + 24;
	size_t n;

	for (; width > 24; width--) {
		*room(out, 1) = zero ? '0' : ' ';
		out->len++;
	}
	/* All of it: the copy below reads past the digits. */
	memset(tmp, zero ? '0' : ' ', sizeof(tmp));
	while (v >= 100) {
		d -= 2;
		memcpy(d, tk_dec_pairs + 2 * (v % 100), 2);
		v /= 100;
	}
	if (v >= 10) {
		d -= 2;
		memcpy(d, tk_dec_pairs + 2 * v, 2);
	} else {
		*--d = (char)('0' + v);
	}
	n = (size_t)(tmp + 24 - d);
	if (n < (size_t)(width > 0 ? width : 0))
		n = (size_t)width;
	memcpy(room(out, 24), tmp + 24 - n, 24);
	out->len += n;
}

/*
 * An event's name column (rep_evsel.name_col, allocated to whole chunks):
 * copied in fixed chunks, not by a memcpy() of its length, which cost
 * ~40 instructions a line.
 */
#define NAME_CHUNK 16
#define NAME_MIN   64 /* a name column is allocated to at least this (evsels_ready(), copy64()) */

static inline __attribute__((always_inline)) void put_name_col(struct tk_outbuf *out,
							       const char *col, uint32_t len)
{
	uint32_t n = (len + NAME_CHUNK - 1) & ~(uint32_t)(NAME_CHUNK - 1);
	char *o;

	/* Most columns fit NAME_MIN bytes: one fixed copy, no loop (~20 instructions). */
	if (n <= NAME_MIN) {
		copy64(room(out, NAME_MIN), col);
		out->len += len;
		return;
	}
	o = room(out, n);
	for (uint32_t i = 0; i < n; i += NAME_CHUNK)
		memcpy(o + i, col + i, NAME_CHUNK);
	out->len += len;
}

static void put_char(struct tk_outbuf *out, char c)
{
	*room(out, 1) = c;
	out->len++;
}

/*
 * "[CPU] " as perf prints it: "[%03d] ", 6 bytes of each 8-byte entry,
 * made once for CPUs below 1000 (cpu_cols_init()): a line stores one word
 * where the digits by multiplication cost ~40 instructions a line (GCC's
 * divisions by 10, before those, cost more).
 */
static uint64_t cpu_cols[1000];
static pthread_once_t cpu_cols_once = PTHREAD_ONCE_INIT;

static void cpu_cols_init(void)
{
	for (uint32_t cpu = 0; cpu < 1000; cpu++) {
		char b[8] = {'[',
			     (char)('0' + cpu / 100),
			     (char)('0' + cpu / 10 % 10),
			     (char)('0' + cpu % 10),
			     ']',
			     ' ',
			     0,
			     0};

		memcpy(&cpu_cols[cpu], b, 8);
	}
}

static inline __attribute__((always_inline)) void put_cpu(struct tk_outbuf *out, uint32_t cpu)
{
	if (cpu < 1000) {
		memcpy(room(out, 8), &cpu_cols[cpu], 8);
		out->len += 6;
	} else {
		put_char(out, '[');
		put_u64(out, cpu, 3, true);
		put_str(out, "] ");
	}
}

/*
 * "SECS.USECS: " right-aligned in 12 columns (nanoseconds in 15). The
 * text is kept: the other samples of the same microsecond (perf truncates
 * to it) copy it whole, those of the same millisecond rewrite its last
 * three digits (time_col_ms(), inline) and those of the same second its
 * fraction. Sparse events (irq and timer samples microseconds apart) miss
 * the microsecond on six lines in ten, nearly all within the millisecond.
 */
static void __attribute__((noinline))
put_time_miss(struct time_col *tc, struct tk_outbuf *out, bool nsec, uint64_t t)
{
	unsigned int digits = nsec ? 9 : 6;
	uint64_t secs;
	uint32_t frac, frac0;
	char *p;

	/* Within the second last printed, no 64-bit divide. */
	if (tc->len && t - tc->sec_ns < 1000000000u) {
		secs = tc->secs;
		frac = (uint32_t)(t - tc->sec_ns);
	} else {
		secs = t / 1000000000u;
		frac = (uint32_t)(t % 1000000000u);
	}
	if (!nsec)
		frac /= 1000u;
	frac0 = frac;
	if (secs != tc->secs || !tc->len) {
		char buf[48];
		int n = snprintf(buf, sizeof(buf), "%" PRIu64 ".%0*" PRIu32, secs, (int)digits,
				 frac);

		/* perf script: "%5lu.%06lu", "%5lu.%09lu" with --ns, as one column. */
		n = snprintf(tc->text, sizeof(tc->text), "%*s: ", nsec ? 15 : 12, buf);
		tc->len = (uint8_t)n;
		tc->secs = secs;
		tc->sec_ns = secs * 1000000000u;
	} else {
		/* The same second: only the fraction changes, two digits at a time. */
		p = tc->text + tc->len - 2;
		for (unsigned int i = digits; i >= 2; i -= 2) {
			p -= 2;
			memcpy(p, tk_dec_pairs + 2 * (frac % 100), 2);
			frac /= 100;
		}
		if (digits & 1)
			p[-1] = (char)('0' + frac);
	}
	tc->lo = nsec ? t : t - t % 1000u;
	tc->span = nsec ? 1 : 1000;
	tc->ms_ns = tc->sec_ns + (uint64_t)(frac0 - frac0 % 1000u) * 1000u;
	tc->ms_span = nsec ? 0 : 1000000u;
	p = room(out, sizeof(tc->text));
	copy40(p, tc->text);
	out->len += tc->len;
}

/*
 * @t lies in the millisecond of @tc's text (microseconds only): its last
 * three digits rewritten in place, ~25 instructions where a call to
 * put_time_miss() cost ~95 (irq-timer's perf.data: 869.6 -> 835.7 M).
 */
static inline __attribute__((always_inline)) bool time_col_ms(struct time_col *tc, uint64_t t)
{
	uint32_t us;
	char *p;

	if (t - tc->ms_ns >= tc->ms_span)
		return false;
	us = (uint32_t)(t - tc->ms_ns) / 1000u;
	/* The text ends with the microseconds' last three digits, then ": ". */
	p = tc->text + tc->len - 5;
	memcpy(p, tk_dec_pairs + 2 * (us / 10u), 2);
	p[2] = (char)('0' + us % 10u);
	tc->lo = tc->ms_ns + us * 1000u;
	return true;
}

static inline __attribute__((always_inline)) void
put_time(struct time_col *tc, struct tk_outbuf *out, bool nsec, uint64_t t)
{
	if (t - tc->lo < tc->span || time_col_ms(tc, t)) {
		char *o = room(out, sizeof(tc->text));

		copy40(o, tc->text);
		out->len += tc->len;
		return;
	}
	put_time_miss(tc, out, nsec, t);
}

/*
 * The build id the file's BUILD_ID feature gives @path (as hex, borrowed
 * until the report ends), or "" when it names none. Looked up when a map
 * is created, not per sample.
 */
static const char *recorded_build_id(struct rep *r, const char *path)
{
	size_t n = tk_perfdata_build_id_count(r->pd);

	if (n != r->nbids) {
		char(*t)[TK_BUILD_ID_HEX_MAX] = realloc(r->bids, n * sizeof(*t));

		if (!t)
			return "";
		r->bids = t;
		for (size_t i = 0; i < n; i++) {
			const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(r->pd, i);

			if (tk_elf_build_id_hex(b->id, b->size, t[i], sizeof(t[i])) <= 0)
				t[i][0] = '\0';
		}
		r->nbids = n;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(r->pd, i);

		if (b->filename && !strcmp(b->filename, path))
			return r->bids[i];
	}
	return "";
}

/*
 * @lead, then @v in lowercase hex right-aligned in @width columns (space
 * padded): printf's "%*lx" of the frame lines. snprintf() cost ~880
 * instructions a call, a fifth of a DWARF report with inline frames (three
 * calls per frame line). The digits' count comes from the highest bit
 * set, so they are written in place, not reversed, and the padding of the
 * frame lines' 16 columns is one fixed copy.
 */
static void put_hex(struct tk_outbuf *out, const char *lead, uint64_t v, int width)
{
	static const char digits[] = "0123456789abcdef";
	size_t ll = strlen(lead);
	int n = v ? (64 - __builtin_clzll(v) + 3) / 4 : 1;
	char *p;

	if (ll > 32) {
		put_str(out, lead);
		ll = 0;
	}
	p = room(out, 64);
	memcpy(p, lead, ll);
	p += ll;
	if (width <= 16) {
		/* Room: 32 (lead) + 16 (spaces) + 16 (digits) bytes. */
		memcpy(p, "                ", 16);
		p += width > n ? width - n : 0;
	} else {
		for (int i = n; i < width; i++)
			*p++ = ' ';
	}
	for (int i = n; i-- > 0; v >>= 4)
		p[i] = digits[v & 15];
	out->len = (size_t)(p + n - out->buf);
}

/*
 * "@prefix%16lx sym+0xoff (dso)" of @ip, as perf's sample__fprintf_sym()
 * writes it; callchain entries (@relative) show a user ip as its offset in
 * the mapped file.
 */
/* What put_sym_parts() shows of an ip (perf script's ip, sym, symoff and dso fields). */
enum {
	SYM_IP = 1 << 0,
	SYM_NAME = 1 << 1,
	SYM_OFF = 1 << 2,
	SYM_DSO = 1 << 3,
	SYM_ALL = SYM_IP | SYM_NAME | SYM_OFF | SYM_DSO,
};

static void put_sym_parts(struct rep *r, int32_t pid, uint64_t ip, bool kernel, const char *prefix,
			  bool relative, unsigned int show);

static void put_sym(struct rep *r, int32_t pid, uint64_t ip, bool kernel, const char *prefix,
		    bool relative)
{
	put_sym_parts(r, pid, ip, kernel, prefix, relative, SYM_ALL);
}

/*
 * @prefix, then as perf's sample__fprintf_sym() with @show: "%16lx", " sym"
 * ("+0xoff" with SYM_OFF), " (dso)"; unknown ones as "[unknown]".
 */
static void put_sym_parts(struct rep *r, int32_t pid, uint64_t ip, bool kernel, const char *prefix,
			  bool relative, unsigned int show)
{
	uint64_t shown = ip;
	struct tk_symbol_info info;
	const char *dso = NULL, *symbol = NULL;
	uint64_t off = 0;

	if (kernel) {
		const char *kbid = recorded_build_id(r, "[kernel.kallsyms]");
		bool outside;
		struct tk_perf_kmod *km = tk_perf_kmods_find(&r->kmods, ip, &outside);
		const char *mod = km ? km->shown : NULL;

		/*
		 * A module's addresses: from its .ko when one of its build id
		 * is here, else from kallsyms only once perf has loaded the
		 * kernel's symbols (perfdata-maps.c).
		 */
		if (km &&
		    tk_perf_kmod_symbol(r->sym, km, ip, kbid[0] ? kbid : NULL, r->kernel_loaded,
					&info) >= 0 &&
		    info.symbol) {
			symbol = info.symbol;
			off = info.offset;
		}
		/*
		 * No kernel map in the file, or an ip below it (a callchain's
		 * kernel part holding user addresses): perf finds no map and
		 * prints "[unknown] ([unknown])". perf extends the kernel map
		 * up to the next module or the end, never below its start.
		 */
		outside |= !mod && (!r->kernel_mapped || ip < r->kernel_start);
		if (r->sym && !outside && !mod &&
		    tk_symbolizer_lookup_file(r->sym, "[kernel.kallsyms]", kbid[0] ? kbid : NULL,
					      ip, &info) == 0) {
			symbol = info.symbol;
			off = info.offset;
			r->kernel_loaded = true;
		}
		dso = mod ? mod : outside ? NULL : "[kernel.kallsyms]";
	} else {
		struct proc *p = proc_get(r, pid, false);

		for (size_t i = 0; p && i < p->nmaps; i++) {
			const struct map *m = &p->maps[i];

			if (ip < m->start || ip >= m->end)
				continue;
			dso = m->path;
			if (relative && !m->identity)
				shown = ip - m->start + m->pgoff;
			/*
			 * By the build id the file had when recorded: the cache
			 * holds that binary even after the file changed or went.
			 */
			if (r->sym && (m->path[0] == '/' || !strcmp(m->path, "[vdso]")) &&
			    tk_symbolizer_lookup_file(r->sym, m->path, m->bid,
						      m->identity ? ip : ip - m->start + m->pgoff,
						      &info) == 0) {
				symbol = info.symbol;
				off = info.offset;
			}
			break;
		}
	}
	if (show & SYM_IP)
		put_hex(&r->out, prefix, shown, 16);
	else
		put_str(&r->out, prefix);
	if (show & SYM_NAME) {
		put_char(&r->out, ' ');
		if (symbol) {
			put_str(&r->out, symbol);
			if (show & SYM_OFF)
				put_hex(&r->out, "+0x", off, 0);
		} else {
			put_str(&r->out, "[unknown]");
		}
	}
	if (show & SYM_DSO) {
		put_str(&r->out, " (");
		put_str(&r->out, dso ? dso : "[unknown]");
		put_char(&r->out, ')');
	}
}

/* ------------------------------------------------------------ DWARF unwinding */

#define DWARF_FIELDS  (TK_PERF_SAMPLE_REGS_USER | TK_PERF_SAMPLE_STACK_USER)
#define FRAME_FIRST   1024	  /* the frame memo's first slots (frame_memo_grow()) */
#define FRAME_MAX     (1u << 17)  /* frame texts kept at most (~20 MB); then the memo starts over */
#define FRAME_CHUNK   (64u << 10) /* frame texts are kept in a first chunk of this size, */
#define FRAME_CHUNK2  ((2u << 20) - 64) /* then in chunks of one huge page (tk_big_alloc()) */
#define FRAME_COPY    1024		/* texts up to this long are copied in 32-byte blocks */
#define UNWIND_FRAMES 127		/* perf script's --max-stack default */

/* The first map of @p (NULL: none) that holds @addr, or NULL. */
static const struct map *proc_map_at(const struct proc *p, uint64_t addr)
{
	for (size_t i = 0; p && i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return &p->maps[i];
	return NULL;
}

/* The map of the process being unwound that holds @addr (tk_unwind_find_map_fn). */
static const struct tk_unwind_map *unwind_find_map(void *ctx, uint64_t addr)
{
	struct rep *r = ctx;
	const struct map *m = proc_map_at(r->unwind_proc, addr);

	if (!m)
		return NULL;
	r->unwind_map.anon = m->identity || (m->path[0] != '/' && strcmp(m->path, "[vdso]"));
	r->unwind_map.start = m->start;
	r->unwind_map.end = m->end;
	r->unwind_map.pgoff = m->pgoff;
	r->unwind_map.path = m->path;
	r->unwind_map.build_id = m->bid;
	return &r->unwind_map;
}

/*
 * A frame's line from a lookup already made in @m: "\tOFF NAME+0xSYMOFF"
 * then " (inlined)", or, for the symbol's @own name, " (PATH)" as put_sym().
 */
static void put_frame_name(struct rep *r, const struct map *m, uint64_t ip, const char *name,
			   uint64_t symoff, bool own)
{
	put_hex(&r->out, "\t", ip - m->start + m->pgoff, 16);
	put_char(&r->out, ' ');
	put_str(&r->out, name);
	put_hex(&r->out, "+0x", symoff, 0);
	if (own) {
		put_str(&r->out, " (");
		put_str(&r->out, m->path);
		put_char(&r->out, ')');
	} else {
		put_str(&r->out, " (inlined)");
	}
}

/* The lowest start of the unwound process's maps of a file (tk_unwind_file_low_fn). */
static uint64_t unwind_file_low(void *ctx, const char *path, const char *bid)
{
	const struct rep *r = ctx;
	const struct proc *p = r->unwind_proc;
	uint64_t low = 0;

	for (size_t i = 0; p && i < p->nmaps; i++) {
		const struct map *m = &p->maps[i];

		if (!m->identity && (!low || m->start < low) && !strcmp(m->path, path) &&
		    !strcmp(m->bid, bid))
			low = m->start;
	}
	return low;
}

/*
 * One unwound frame as perf script prints a callchain entry: a line per
 * function inlined at @ip (innermost first), then the frame's own. perf
 * takes the names from addr2line -i: a name that is the symbol's own
 * prints as the frame (sym+0xoff (dso)), any other as "name+0xoff
 * (inlined)", at the symbol's offset; a frame without a symbol gets no
 * inline lines. Without DWARF, addr2line's name among aliases at the
 * symbol's address replaces the frame's line, inlined, when it is not the
 * symbol's (libelf: elf_getshstrndx for perf's elf_getshdrstrndx).
 */
static void make_unwound_frame(struct rep *r, int32_t pid, uint64_t ip)
{
	const struct map *m = proc_map_at(r->unwind_proc, ip);
	bool inlines = !(r->opts->flags & TK_PERFDATA_REPORT_NO_INLINE);
	const char *const *names = NULL;
	struct tk_symbol_info info;
	const char *alias;
	int n = 0;

	if (inlines)
		n = tk_unwind_inlines(r->unwind, ip, &names);
	if (n > 0 && m && !m->identity && r->sym &&
	    !tk_symbolizer_lookup_file(r->sym, m->path, m->bid, ip - m->start + m->pgoff, &info) &&
	    info.symbol) {
		/* Where put_sym_parts() looks the symbol up too. */
		bool file_map = m->path[0] == '/' || !strcmp(m->path, "[vdso]");

		for (int k = 0; k < n; k++) {
			bool own = !strcmp(names[k], info.symbol);

			if (own && !file_map)
				put_sym(r, pid, ip, false, "\t", true);
			else /* An inline line, or put_sym()'s from the lookup just made. */
				put_frame_name(r, m, ip, names[k], info.offset, own);
			put_char(&r->out, '\n');
		}
		return;
	}
	/*
	 * No DWARF here: addr2line names the frame from the symbol table, and
	 * when its pick among aliases is not perf's, perf prints that name as
	 * the frame's only, inlined, line.
	 */
	if (inlines && n == 0 && m && !m->identity && m->path[0] == '/' && r->sym &&
	    (alias = tk_symbolizer_a2l_alias(r->sym, m->path, m->bid, ip - m->start + m->pgoff)) &&
	    !tk_symbolizer_lookup_file(r->sym, m->path, m->bid, ip - m->start + m->pgoff, &info) &&
	    info.symbol) {
		put_frame_name(r, m, ip, alias, info.offset, false);
		put_char(&r->out, '\n');
		return;
	}
	put_sym(r, pid, ip, false, "\t", true);
	put_char(&r->out, '\n');
}

static uint64_t frame_hash(uint64_t ip, uint64_t gen, int32_t pid)
{
	return (ip ^ gen * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uint32_t)pid << 32) *
	       0xff51afd7ed558ccdull;
}

/*
 * Double the frame memo (FRAME_FIRST slots at first), or empty it once
 * FRAME_MAX texts are kept; -ENOMEM. A table of a megabyte or more is on
 * huge pages (tk_big_zalloc()): the inline workload's 1 MiB table faulted
 * its 256 pages in one by one.
 */
static int frame_memo_grow(struct rep *r)
{
	size_t cap = r->frame_cap ? 2 * r->frame_cap : FRAME_FIRST;
	struct frame_memo *t;

	if (r->nframes >= FRAME_MAX) {
		for (size_t i = 0; i < r->nframe_chunks; i++)
			tk_big_free(r->frame_chunks[i]);
		r->nframe_chunks = 0;
		memset(r->frame_memo, 0, r->frame_cap * sizeof(*r->frame_memo));
		r->nframes = 0;
		return 0;
	}
	t = tk_big_zalloc(cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < r->frame_cap; i++) {
		const struct frame_memo *o = &r->frame_memo[i];
		size_t j;

		if (!o->text)
			continue;
		j = (frame_hash(o->ip, o->gen, o->pid) >> 32) & (cap - 1);
		while (t[j].text)
			j = (j + 1) & (cap - 1);
		t[j] = *o;
	}
	tk_big_free(r->frame_memo);
	r->frame_memo = t;
	r->frame_cap = cap;
	return 0;
}

/*
 * A copy of @len bytes of @text that lives as long as the memo's texts,
 * its size rounded up to 32 bytes (put_frame() copies whole blocks); NULL
 * on ENOMEM. Kept in chunks, not one malloc() each: a first one of
 * FRAME_CHUNK (a small report's texts), then huge pages, one fault each
 * where 4 KiB pages faulted ~500 times for the inline workload's 2 MB of
 * texts (a fault is ~11 us on the reference VM).
 */
static char *frame_text_keep(struct rep *r, const char *text, size_t len)
{
	size_t need = len ? (len + 31) & ~(size_t)31 : 32;
	size_t size = r->nframe_chunks ? FRAME_CHUNK2 : FRAME_CHUNK;
	char *p;

	if (!r->nframe_chunks || need > r->frame_chunk_size - r->frame_chunk_used) {
		char **nv = realloc(r->frame_chunks, (r->nframe_chunks + 1) * sizeof(*nv));

		if (!nv)
			return NULL;
		r->frame_chunks = nv;
		size = need > size ? need : size;
		p = tk_big_alloc(size);
		if (!p)
			return NULL;
		r->frame_chunks[r->nframe_chunks++] = p;
		r->frame_chunk_size = size;
		r->frame_chunk_used = 0;
	}
	p = r->frame_chunks[r->nframe_chunks - 1] + r->frame_chunk_used;
	r->frame_chunk_used += need;
	memcpy(p, text, len);
	memset(p + len, 0, need - len); /* the block copies read it */
	return p;
}

/* Bit 63 of a frame_memo's gen: a kernel callchain entry's text (put_kernel_frame()). */
#define FRAME_KERNEL (1ull << 63)

/* A kernel callchain entry's line, as put_callchain() prints it. */
static void make_kernel_frame(struct rep *r, uint64_t ip)
{
	put_sym(r, -1, ip, true, "\t", true);
	put_char(&r->out, '\n');
}

/* The text of frame @ip of the kind @gen names, into r->out. */
static void make_frame(struct rep *r, int32_t pid, uint64_t ip, uint64_t gen)
{
	if (gen & FRAME_KERNEL)
		make_kernel_frame(r, ip);
	else
		make_unwound_frame(r, pid, ip);
}

/*
 * The text of one frame, made once per key: an unwound frame's per
 * (process maps, address), a kernel callchain entry's per (kernel maps'
 * state, address) (@gen has FRAME_KERNEL). The same frames recur in most
 * samples, and their symbol, inline and formatting work was a fifth of a
 * report. Texts are kept in an open hash table that doubles when half
 * full: a direct-mapped table of 16 k slots made a third more texts than
 * there were frame addresses (its conflicts), each ~3.4 k instructions
 * besides the inline names.
 */
static void frame_make(struct rep *r, int32_t pid, uint64_t ip, uint64_t gen, uint64_t h, size_t j);

static inline __attribute__((always_inline)) void put_frame(struct rep *r, int32_t pid, uint64_t ip,
							    uint64_t gen)
{
	uint64_t h = frame_hash(ip, gen, pid);
	size_t j;

	for (j = (h >> 32) & (r->frame_cap - 1); r->frame_cap && r->frame_memo[j].text;
	     j = (j + 1) & (r->frame_cap - 1)) {
		const struct frame_memo *m = &r->frame_memo[j];

		if (m->ip == ip && m->gen == gen && m->pid == pid) {
			/*
			 * Whole 32-byte blocks (the kept text is rounded up to
			 * them): ~half the instructions of tk_outbuf_write()'s
			 * memcpy() for texts of one to four lines.
			 */
			if (m->len <= FRAME_COPY) {
				char *o = room(&r->out, FRAME_COPY);

				for (uint32_t i = 0; i < m->len; i += 32)
					memcpy(o + i, m->text + i, 32);
				r->out.len += m->len;
			} else {
				tk_outbuf_write(&r->out, m->text, m->len);
			}
			return;
		}
	}
	frame_make(r, pid, ip, gen, h, j);
}

/* put_frame()'s text not kept yet (@h its key's hash, @j the free slot found): make it, keep it. */
static void __attribute__((noinline))
frame_make(struct rep *r, int32_t pid, uint64_t ip, uint64_t gen, uint64_t h, size_t j)
{
	struct frame_memo *m;
	struct tk_outbuf saved;
	char *text;

	if (!r->frame_text.buf && tk_outbuf_init(&r->frame_text, -1, 4096) < 0) {
		make_frame(r, pid, ip, gen);
		return;
	}
	/* Make it in frame_text (in memory: it grows, never flushes), then copy. */
	saved = r->out;
	r->frame_text.len = 0;
	r->out = r->frame_text;
	make_frame(r, pid, ip, gen);
	r->frame_text = r->out;
	r->out = saved;
	tk_outbuf_write(&r->out, r->frame_text.buf, r->frame_text.len);
	if ((r->nframes + 1) * 2 > r->frame_cap) {
		if (frame_memo_grow(r) < 0)
			return;
		for (j = (h >> 32) & (r->frame_cap - 1); r->frame_memo[j].text;
		     j = (j + 1) & (r->frame_cap - 1))
			;
	}
	text = frame_text_keep(r, r->frame_text.buf, r->frame_text.len);
	if (!text)
		return;
	m = &r->frame_memo[j];
	m->text = text;
	m->len = (uint32_t)r->frame_text.len;
	m->ip = ip;
	m->gen = gen;
	m->pid = pid;
	r->nframes++;
}

static void put_unwound_frame(struct rep *r, int32_t pid, uint64_t ip)
{
	put_frame(r, pid, ip, r->unwind_proc ? r->unwind_proc->gen : 0);
}

/*
 * A number that changes whenever what a kernel address's text depends on
 * does (the module maps, the kernel map, whether perf has loaded the
 * kernel's symbols: put_sym_parts()), so that a kept kernel text is only
 * used under the state it was made in.
 */
static uint64_t kernel_frame_epoch(struct rep *r)
{
	if (r->kframe_kmods_gen != r->kmods.gen || r->kframe_loaded != r->kernel_loaded ||
	    r->kframe_mapped != r->kernel_mapped || r->kframe_start != r->kernel_start) {
		r->kframe_kmods_gen = r->kmods.gen;
		r->kframe_loaded = r->kernel_loaded;
		r->kframe_mapped = r->kernel_mapped;
		r->kframe_start = r->kernel_start;
		r->kframe_epoch++;
	}
	return r->kframe_epoch;
}

/*
 * A kernel callchain entry's line ("\t%16lx sym+0xoff (dso)\n"), kept:
 * its symbol lookup (module search, kallsyms) and formatting were ~2 k
 * instructions an entry, and a profile's kernel stacks repeat. The text
 * does not depend on the sample's process. Looking the first kallsyms
 * address up changes the state (perf has then loaded the kernel's
 * symbols, which module addresses are named from): the text made then is
 * kept under the epoch before, which is never asked for again.
 */
static void put_kernel_frame(struct rep *r, uint64_t ip)
{
	put_frame(r, -1, ip, FRAME_KERNEL | kernel_frame_epoch(r));
}

/*
 * The user frames of a --call-graph dwarf sample, after its kernel
 * callchain: unwound from the recorded registers and stack (unwind.c), as
 * perf script adds them.
 */
static void __attribute__((noinline))
put_unwound(struct rep *r, const struct psample *s, int32_t idx)
{
	const struct tk_perfdata_evsel *es = tk_perfdata_evsel_get(r->pd, (size_t)idx);
	uint64_t ips[UNWIND_FRAMES];
	struct tk_unwind_sample us;
	int n;

	if (!s->regs || !s->stack_size || !r->sym)
		return;
	if (!r->unwind) {
		if (r->unwind_failed)
			return;
		r->unwind = tk_unwind_new(r->sym);
		if (!r->unwind) {
			const char *path = tk_perfdata_get_info(r->pd)->path;

			/* The samples still print, with their kernel frames only. */
			r->unwind_failed = true;
			tk_warn("%s: user stacks are not unwound: %s", path ? path : "pipe",
				tk_errmsg());
			return;
		}
	}
	r->unwind_proc = proc_get(r, (int32_t)s->pid, false);
	memset(&us, 0, sizeof(us));
	us.pid = (int32_t)s->pid;
	us.tid = (int32_t)s->tid;
	us.maps_gen = r->unwind_proc ? r->unwind_proc->gen : 0;
	us.maps_adds = r->unwind_proc ? r->unwind_proc->adds : 0;
	us.regs_abi = s->regs_abi;
	us.regs_mask = es ? es->attr.sample_regs_user : 0;
	us.regs_nr = s->regs_nr;
	us.regs = s->regs;
	us.stack_size = s->stack_size;
	us.stack = s->stack;
	us.file_low = unwind_file_low;
	n = tk_unwind_sample(r->unwind, &us, unwind_find_map, r, ips, UNWIND_FRAMES);
	for (int i = 0; i < n; i++)
		put_unwound_frame(r, (int32_t)s->pid, ips[i]);
}

/* ------------------------------------------------------------ events */

/*
 * The fixed layout of @st's samples, when it has one (see struct
 * fast_layout). The order is the kernel's: IDENTIFIER, IP, TID, TIME, ADDR,
 * ID, STREAM_ID, CPU, PERIOD, READ, CALLCHAIN, RAW.
 */
static void fast_layout_init(struct fast_layout *f, uint64_t st)
{
	uint32_t pos = 8;

	memset(f, 0, sizeof(*f));
	/* Fields after RAW would go unchecked: leave those to the full decoder. */
	if (st & ~(uint64_t)(TK_PERF_SAMPLE_IDENTIFIER | TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID |
			     TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_ADDR | TK_PERF_SAMPLE_ID |
			     TK_PERF_SAMPLE_STREAM_ID | TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD |
			     TK_PERF_SAMPLE_RAW))
		return;
	if (st & TK_PERF_SAMPLE_IDENTIFIER)
		pos += 8;
	if (st & TK_PERF_SAMPLE_IP) {
		f->ip = (uint16_t)pos;
		pos += 8;
	}
	if (st & TK_PERF_SAMPLE_TID) {
		f->tid = (uint16_t)pos;
		pos += 8;
	}
	if (st & TK_PERF_SAMPLE_TIME) {
		f->time = (uint16_t)pos;
		pos += 8;
	}
	pos += 8 * (uint32_t)__builtin_popcountll(st & (TK_PERF_SAMPLE_ADDR | TK_PERF_SAMPLE_ID |
							TK_PERF_SAMPLE_STREAM_ID));
	if (st & TK_PERF_SAMPLE_CPU) {
		f->cpu = (uint16_t)pos;
		pos += 8;
	}
	if (st & TK_PERF_SAMPLE_PERIOD) {
		f->period = (uint16_t)pos;
		pos += 8;
	}
	if (st & TK_PERF_SAMPLE_RAW) {
		f->raw = (uint16_t)pos;
		pos += 4;
	}
	f->min = (uint16_t)pos;
	f->ok = true;
}

/* Whether @path was last written after this machine booted (btime of /proc/stat). */
static bool written_this_boot(const char *path)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	long long btime = -1;
	struct stat st;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	}
	fclose(f);
	return btime > 0 && stat(path, &st) == 0 && (long long)st.st_mtime >= btime;
}

/* Whether the tracefs event @sys/@name has the id @id. */
static bool live_id_is(const char *sys, const char *name, uint64_t id)
{
	char *rel, *text;
	size_t len;
	bool yes = false;

	if (asprintf(&rel, "events/%s/%s/id", sys, name) < 0)
		return false;
	if (tk_tracefs_read_top_file(rel, &text, &len) == 0) {
		yes = strtoull(text, NULL, 10) == id;
		free(text);
	}
	free(rel);
	return yes;
}

/* Add the live format of @sys/@name. Return: 0, -ENOENT when unreadable, -ENOMEM. */
static int add_live_event(struct tk_event_set *set, const char *sys, const char *name)
{
	char *rel, *text;
	size_t len;
	int ret = -ENOENT;

	if (asprintf(&rel, "events/%s/%s/format", sys, name) < 0)
		return -ENOMEM;
	if (tk_tracefs_read_top_file(rel, &text, &len) == 0) {
		ret = tk_event_set_add_format(set, sys, text, len) == -ENOMEM ? -ENOMEM : 0;
		free(text);
	}
	free(rel);
	return ret;
}

/* Add the live format of the event whose tracefs id is @id, if one has it. */
static int add_live_format(struct tk_event_set *set, const char *root, uint64_t id)
{
	char *dir;
	DIR *systems;
	struct dirent *sd;
	int ret = -ENOENT;

	if (asprintf(&dir, "%s/events", root) < 0)
		return -ENOMEM;
	systems = opendir(dir);
	free(dir);
	while (systems && ret == -ENOENT && (sd = readdir(systems))) {
		char *sysdir;
		DIR *events;
		struct dirent *ed;

		if (sd->d_name[0] == '.' || sd->d_type != DT_DIR ||
		    asprintf(&sysdir, "%s/events/%s", root, sd->d_name) < 0)
			continue;
		events = opendir(sysdir);
		while (events && ret == -ENOENT && (ed = readdir(events))) {
			if (ed->d_name[0] != '.' && ed->d_type == DT_DIR &&
			    live_id_is(sd->d_name, ed->d_name, id))
				ret = add_live_event(set, sd->d_name, ed->d_name);
		}
		if (events)
			closedir(events);
		free(sysdir);
	}
	if (systems)
		closedir(systems);
	return ret;
}

/*
 * No TRACING_DATA: a recorder killed before it wrote its features (perf
 * writes them last). When the file was written during this boot, the
 * tracepoint ids in its attrs are this kernel's, so the formats come from
 * tracefs, with a warning; otherwise the events stay unnamed.
 */
static int load_live_tracing(struct rep *r)
{
	const struct tk_perfdata_info *info = tk_perfdata_get_info(r->pd);
	const char *root;
	char *text;
	size_t len;
	int found = 0;

	if (info->pipe || !info->path)
		return -ENOENT;
	if (!written_this_boot(info->path)) {
		tk_warn("%s: no TRACING_DATA, and the file predates this boot: tracepoints print "
			"unnamed",
			info->path);
		return -ENOENT;
	}
	root = tk_tracefs_root();
	if (!root)
		return -ENOENT;
	r->set = tk_event_set_new(sizeof(long), false, (uint32_t)sysconf(_SC_PAGESIZE));
	if (!r->set)
		return -errno;
	r->set_live = true;
	if (tk_tracefs_read_top_file("events/header_page", &text, &len) == 0) {
		tk_event_set_add_header_page(r->set, text, len);
		free(text);
	}
	for (size_t i = 0; i < tk_perfdata_evsel_count(r->pd); i++) {
		const struct tk_perf_attr *a = &tk_perfdata_evsel_get(r->pd, i)->attr;
		int ret;

		if (a->type != 2 || tk_event_find(r->set, (int)a->config))
			continue;
		ret = add_live_format(r->set, root, a->config);
		if (ret == -ENOMEM)
			return ret;
		found += ret == 0;
	}
	if (found)
		tk_warn("%s: no TRACING_DATA (the recorder stopped before writing its features): "
			"tracepoint names and formats are taken from this machine's tracefs",
			info->path);
	return 0;
}

/* Whether a format of TRACING_DATA prints a kernel symbol (%ps, %pS, %pF, %pf, %pB). */
static bool formats_print_symbols(const struct tk_perfdata *pd)
{
	const char *system;
	struct tk_perfdata_text text;

	for (uint32_t i = 0; tk_perfdata_tracing_format(pd, i, &system, &text) == 0; i++) {
		const char *p = text.data, *end = p + text.len;

		while ((p = memchr(p, '%', (size_t)(end - p))) && end - p >= 3) {
			if (p[1] == 'p' && strchr("sSfFB", p[2]))
				return true;
			p++;
		}
	}
	return false;
}

/*
 * perf's TRACING_DATA carries no kallsyms: perf script names a %ps
 * argument (a timer's function, a call site) from the kernel the file
 * recorded, through its own kernel map. The same kallsyms kernel ips are
 * named from (the recorded build id's: this machine's only when it runs
 * that kernel) goes to the event set; none, and the address prints as a
 * number, as perf prints it without symbols.
 *
 * Whether to is decided once, at the first tracepoint sample delivered:
 * the kernel's MMAP (time 0) is in by then, without which perf has no
 * kernel map to name anything from. Reading them (5 MB of /proc/kallsyms,
 * ~25 ms, a fifth of a report of 730 k sched samples) waits for the first
 * sample of an event whose text can name a symbol (load_kernel_symbols()):
 * a file of every sched event has the kthread_work ones, which print
 * "function=%ps", and seldom a sample of them. For the running kernel they
 * come from the kept copy of its image's lines where it is still valid
 * (kernel_symbols_from_copy()): the event set reads /proc/kallsyms only
 * for an address or name those lines cannot answer as the whole would.
 */
static bool evsel_direct_ok(const struct rep *r, const struct rep_evsel *e);

/*
 * print_sample()'s test for print_direct(), made again for every event
 * when a part that is the run's changes (the name column's width, the
 * kallsyms decision and load) rather than per sample.
 */
static void direct_update(struct rep *r)
{
	for (size_t i = 0; i < r->nevs; i++)
		r->evs[i].direct_ok = evsel_direct_ok(r, &r->evs[i]);
}

static void decide_kernel_symbols(struct rep *r)
{
	r->ksyms_decided = true;
	r->ksyms_pending = r->set && r->sym && !r->tracing_kallsyms && r->kernel_mapped &&
			   formats_print_symbols(r->pd);
	direct_update(r);
}

/*
 * The event set's table of the copy's lines is kept beside the copy
 * (tk_event_set_kallsyms_table()), keyed by the copy file's identity: a
 * copy written anew (another boot's load address) is another file.
 */
static void kernel_symbols_table(struct rep *r, const char *bid)
{
	char *copy = tk_ksyms_copy_path(tk_cache_dir(r->cache), bid), *tab = NULL;
	struct stat st;

	if (copy && !stat(copy, &st) && asprintf(&tab, "%s.tab", copy) >= 0)
		tk_event_set_kallsyms_table(r->set, tab,
					    ((uint64_t)st.st_dev * 0x9e3779b97f4a7c15ull) ^
						    (uint64_t)st.st_ino ^
						    ((uint64_t)st.st_size << 20) ^
						    ((uint64_t)st.st_mtim.tv_sec * 1000000000ull +
						     (uint64_t)st.st_mtim.tv_nsec));
	free(copy);
	free(tab);
}

/*
 * The running kernel's kallsyms from the kept copy of its image's lines
 * (ksyms-copy.c: by the kernel's build id, and only while /proc/kallsyms
 * still begins with them), where the kernel would format the whole 5 MB
 * anew (~20 ms of system time, a third of a timer file's report). The
 * event set reads /proc/kallsyms itself for the first address those lines
 * cannot name as the whole text would (a module's). Without a valid copy,
 * *@keep is the build id to keep one for once the whole text is read.
 */
static bool kernel_symbols_from_copy(struct rep *r, const char *kbid, const char **keep)
{
	const char *cbid, *ctext;
	const void *clines;
	size_t len, n, map_len;
	bool done = false;
	char *path;
	void *map;

	*keep = NULL;
	if (!r->cache)
		return false;
	/* /proc/kallsyms only for the running kernel's build id, or none recorded. */
	path = tk_symbolizer_kernel_file(r->sym, kbid[0] ? kbid : NULL);
	if (path && !strcmp(path, "/proc/kallsyms")) {
		cbid = kbid[0] ? kbid : tk_cache_kernel_bid(r->cache);
		if (cbid && cbid[0] &&
		    tk_ksyms_copy_get(tk_cache_dir(r->cache), cbid, &ctext, &len, &clines, &n, &map,
				      &map_len) == 0) {
			done = tk_event_set_add_kallsyms_image(r->set, ctext, len, map, map_len,
							       path) == 0;
			if (!done)
				munmap(map, map_len);
			else
				kernel_symbols_table(r, cbid);
		} else if (cbid && cbid[0]) {
			*keep = cbid;
		}
	}
	free(path);
	return done;
}

/*
 * Keep the copy of @text (the whole /proc/kallsyms of the running kernel
 * of build id @bid) that the next report reads instead, as the symbolizer
 * does when it reads the text (symbolizer.c kernel_load()): once per boot
 * and load address, only on x86-64 (the only place a copy is used) and
 * into a cache directory this user may write.
 */
static void kernel_symbols_keep(struct rep *r, const char *bid, const char *text, size_t len)
{
#if defined(__x86_64__)
	const char *dir = tk_cache_dir(r->cache);
	struct tk_ksyms_lazy *k;
	char *dup;

	if (!dir || access(dir, W_OK) || !len)
		return;
	dup = malloc(len);
	if (!dup)
		return;
	memcpy(dup, text, len);
	/* The index the copy carries, made of its own text (which it takes over). */
	k = tk_ksyms_lazy_new(dup, len, "/proc/kallsyms");
	if (!k) {
		free(dup);
		return;
	}
	tk_ksyms_copy_put(dir, bid, text, len, k);
	tk_ksyms_lazy_free(k);
#else
	(void)r;
	(void)bid;
	(void)text;
	(void)len;
#endif
}

static void read_kernel_symbols(struct rep *r)
{
	const char *kbid, *keep;
	char *text;
	size_t len;

	kbid = recorded_build_id(r, "[kernel.kallsyms]");
	if (kernel_symbols_from_copy(r, kbid, &keep))
		return;
	/* kallsyms, or a --vmlinux's functions in its format */
	if (tk_symbolizer_kernel_text(r->sym, kbid[0] ? kbid : NULL, &text, &len) == 0) {
		if (keep)
			kernel_symbols_keep(r, keep, text, len);
		/* Lent, not copied (a 5 MB copy): freed after the set. */
		tk_event_set_add_kallsyms_borrowed(r->set, text, len);
		free(r->ksym_text);
		r->ksym_text = text;
	}
}

static struct ppool *ppool_new(struct rep *r);
static void ppool_finish(struct ppool *pool);
static void ppool_free(struct ppool *pool);

/*
 * Load the kallsyms decide_kernel_symbols() wanted, now that an event
 * prints that may name a symbol. Adding them changes every event's symbol
 * atoms, which workers read: the pool prints all it was handed and stops
 * first, and a new one starts after (the text is written in order).
 */
static int __attribute__((noinline)) load_kernel_symbols(struct rep *r)
{
	int werr = 0;

	r->ksyms_pending = false;
	direct_update(r);
	if (r->pool) {
		ppool_finish(r->pool);
		werr = r->out.error;
		ppool_free(r->pool);
		r->pool = NULL;
	}
	read_kernel_symbols(r);
	if (werr)
		return werr;
	r->pool = ppool_new(r);
	return 0;
}

/*
 * Whether @ev's text may name a kernel symbol: a %ps-like conversion, the
 * kmem plugin's call site, an expression that reads a kernel symbol's
 * address (jiffies, vmemmap_base), or libtraceevent printing it (its
 * plugins may look functions up).
 */
static bool op_reads_kallsyms(const struct tk_op *op)
{
	return op->kind == TK_OP_FUNC || op->kind == TK_OP_FUNCF || op->kind == TK_OP_CALLSITE ||
	       (op->kids && (op_reads_kallsyms(&op->kids[0]) || op_reads_kallsyms(&op->kids[1])));
}

static bool event_reads_kallsyms(const struct tk_event *ev)
{
	if (ev->kind == TK_EVENT_SLOW || ev->atom_names)
		return true;
	for (size_t i = 0; i < ev->nops; i++)
		if (op_reads_kallsyms(&ev->ops[i]))
			return true;
	return false;
}

/*
 * Parse format @index of TRACING_DATA into the set. One that does not
 * parse leaves its event without text, as in perf; the file says so rather
 * than printing empty events, at the place in the damage list the format's
 * turn in the file gives it (formats parse out of order: bind_event()).
 * Return: 1 parsed, 0 listed as damage, -ENOMEM, -EBADMSG (strict).
 */
static int add_tracing_format(struct rep *r, uint32_t index, const char *system,
			      const struct tk_perfdata_text *text)
{
	int ret = tk_event_set_add_format(r->set, system, text->data, text->len);
	char what[400];
	uint32_t *bad;
	size_t k;

	if (ret >= 0 || ret == -ENOMEM)
		return ret < 0 ? ret : 1;
	snprintf(what, sizeof(what), "%s (its events print without fields)", tk_errmsg());
	for (k = r->nfmt_bad; k > 0 && r->fmt_bad[k - 1] > index; k--)
		;
	bad = realloc(r->fmt_bad, (r->nfmt_bad + 1) * sizeof(*bad));
	if (!bad)
		return -ENOMEM;
	memmove(&bad[k + 1], &bad[k], (r->nfmt_bad - k) * sizeof(*bad));
	bad[k] = index;
	r->fmt_bad = bad;
	r->nfmt_bad++;
	ret = tk_perfdata_note_damage_at(r->pd, r->fmt_damage_base + k,
					 tk_perfdata_tracing_offset(r->pd, text->data), 0, -1,
					 what);
	return ret < 0 ? ret : 0;
}

/*
 * The id a format's second line names ("name: N\nID: 123\n"), or -1 when
 * it is not plainly there: such a format is parsed at once, so whatever
 * libtraceevent makes of it is what it always made.
 */
static int32_t format_id(const struct tk_perfdata_text *text)
{
	const char *p = text->data, *end = p + (text->len < 512 ? text->len : 512);
	int32_t id = 0;
	int digits = 0;

	p = memchr(p, '\n', (size_t)(end - p));
	if (!p || end - p < 6 || memcmp(p + 1, "ID: ", 4))
		return -1;
	for (p += 5; p < end && *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
		id = id * 10 + (*p - '0');
	/* "0123" is octal to libtraceevent's strtoull(..., 0). */
	if (!digits || p >= end || *p != '\n' || id > 0xffff || (digits > 1 && p[-digits] == '0'))
		return -1;
	return id;
}

static int lazy_cmp(const void *a, const void *b)
{
	const struct lazy_format *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* The first lazy format of @id, or NULL. */
static struct lazy_format *lazy_find(struct rep *r, uint64_t id)
{
	size_t lo = 0, hi = r->nlazy;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((uint64_t)r->lazy[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nlazy && (uint64_t)r->lazy[lo].id == id ? &r->lazy[lo] : NULL;
}

/* Parse the formats of @id still waiting, in file order. */
static int parse_lazy(struct rep *r, uint64_t id)
{
	struct lazy_format *l = lazy_find(r, id);
	int ret;

	for (; l && l < r->lazy + r->nlazy && (uint64_t)l->id == id; l++) {
		if (l->parsed)
			continue;
		l->parsed = true;
		ret = add_tracing_format(r, l->index, l->system, &l->text);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * The event set from TRACING_DATA; built once, when a tracepoint first
 * needs it. A file of `perf record -e 'syscalls:*'` carries ~700 formats,
 * each an event of the file, and samples a few dozen of them: parsing and
 * compiling a format costs ~200 k instructions, so only the first one is
 * parsed here (the set takes the common fields' layout from it) and the
 * others when a sample of their id first prints (bind_event()). A strict
 * report parses all here, so that a bad one stops it before any output.
 */
static int load_tracing(struct rep *r)
{
	struct tk_perfdata_tracing t;
	const char *system;
	struct tk_perfdata_text text;
	bool eager;
	int ret, parsed = 0;

	if (r->set_tried)
		return r->set ? 0 : -ENOENT;
	r->set_tried = true;
	if (tk_perfdata_tracing(r->pd, &t, NULL, NULL))
		return load_live_tracing(r);
	r->set = tk_event_set_new(t.long_size, t.big_endian, t.page_size);
	if (!r->set)
		return -errno;
	if (t.header_page.len)
		tk_event_set_add_header_page(r->set, t.header_page.data, t.header_page.len);
	r->fmt_damage_base = tk_perfdata_damage_count(r->pd);
	eager = tk_perfdata_strict(r->pd);
	for (uint32_t i = 0; tk_perfdata_tracing_format(r->pd, i, &system, &text) == 0; i++) {
		int32_t id = eager || !parsed ? -1 : format_id(&text);

		if (id >= 0) {
			struct lazy_format *l;

			if (r->nlazy % 64 == 0) {
				l = realloc(r->lazy, (r->nlazy + 64) * sizeof(*l));
				if (!l)
					return -ENOMEM;
				r->lazy = l;
			}
			r->lazy[r->nlazy++] = (struct lazy_format){id, i, false, system, text};
			continue;
		}
		ret = add_tracing_format(r, i, system, &text);
		if (ret < 0)
			return ret;
		parsed |= ret;
	}
	if (r->nlazy > 1)
		qsort(r->lazy, r->nlazy, sizeof(*r->lazy), lazy_cmp);
	if (t.kallsyms.len &&
	    tk_event_set_add_kallsyms_borrowed(r->set, t.kallsyms.data, t.kallsyms.len))
		return -ENOMEM;
	r->tracing_kallsyms = t.kallsyms.len != 0;
	if (t.printk.len && tk_event_set_add_printk(r->set, t.printk.data, t.printk.len))
		return -ENOMEM;
	return 0;
}

/* Whether -F specs name the event @name ("system:name", or a name alone). */
static bool event_wanted(const struct tk_perfdata_report_opts *o, const char *name)
{
	const char *colon = strchr(name, ':');
	char sys[256] = "";

	if (!o->nevents)
		return true;
	if (colon && (size_t)(colon - name) < sizeof(sys)) {
		memcpy(sys, name, (size_t)(colon - name));
		sys[colon - name] = '\0';
		name = colon + 1;
	}
	for (size_t i = 0; i < o->nevents; i++) {
		if (tk_event_spec_match(o->events[i], sys, name))
			return true;
	}
	return false;
}

/*
 * Every -F spec names an event of the file: one that names none would
 * select nothing, and an empty report is no answer to a typo (nor to perf
 * script's field list, "-F comm,pid,time", which is not what -F means here).
 */
static int check_event_specs(struct tk_perfdata *pd, const struct tk_perfdata_report_opts *o)
{
	for (size_t i = 0; i < o->nevents; i++) {
		bool found = false;

		for (size_t k = 0; k < tk_perfdata_evsel_count(pd) && !found; k++) {
			const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, k);
			struct tk_perfdata_report_opts one = {.nevents = 1,
							      .events = &o->events[i]};

			/* A file without EVENT_DESC names its events later: not checked here. */
			found = e && (!e->name || event_wanted(&one, e->name));
		}
		if (!found)
			return tk_fail(EINVAL, "-F '%s': no event of %s is named so%s",
				       o->events[i], tk_perfdata_get_info(pd)->path,
				       strchr(o->events[i], ',')
					       ? " (for perf script's fields, see --help)"
					       : "");
	}
	return 0;
}

/* The filters other than the event's: CPU, pid, tid, time window, thread name. */
static bool sample_wanted(struct rep *r, const struct psample *s)
{
	const struct tk_perfdata_report_opts *o = r->opts;
	size_t i;

	if (o->cpu_mask &&
	    (s->cpu >= o->cpu_mask_bits || !(o->cpu_mask[s->cpu / 8] & (1u << (s->cpu % 8)))))
		return false;
	if ((o->has_start && s->time < o->start_ns) || (o->has_end && s->time >= o->end_ns))
		return false;
	for (i = 0; i < o->npids; i++) {
		if ((uint32_t)o->pids[i] == s->pid) /* process ids, as perf script --pid */
			break;
	}
	if (o->npids && i == o->npids)
		return false;
	for (i = 0; i < o->ntids; i++) {
		if ((uint32_t)o->tids[i] == s->tid)
			break;
	}
	if (o->ntids && i == o->ntids)
		return false;
	if (o->ncomms) {
		char buf[24];
		const char *comm = thread_comm(r, (int32_t)s->tid, buf, sizeof(buf));

		for (i = 0; i < o->ncomms; i++) {
			if (!fnmatch(o->comms[i], comm, 0))
				return true;
		}
		return false;
	}
	return true;
}

/*
 * Whether this machine's format @ev (found by the recorded id @id) is the
 * event the file names @name ("sys:name", from EVENT_DESC). Ids are handed
 * out anew at boot and as probes come and go: a kprobe recorded as id 1195
 * may be some ext4 tracepoint here, whose fields would decode its payload
 * as garbage. Such an event prints by its recorded name without fields.
 */
static bool live_format_fits(const struct rep *r, const struct tk_event *ev, const char *name,
			     uint64_t id)
{
	const char *sys = tk_event_system(ev), *ename = tk_event_name(ev);
	size_t slen = strlen(sys);

	if (!strncmp(name, sys, slen) && name[slen] == ':' && !strcmp(name + slen + 1, ename))
		return true;
	tk_warn("%s: tracepoint %s was recorded with id %" PRIu64 ", which is %s:%s on this "
		"machine: printed without its fields",
		tk_perfdata_get_info(r->pd)->path, name, id, sys, ename);
	return false;
}

#define PERF_TYPE_RAW 4

/*
 * The memory fields perf script prints by default for raw PMU events (perf
 * mem, numatop): each unless some raw event of the file lacks its sample
 * bit, since perf keeps one field list per event type and drops a default
 * field from it for the first event that cannot fill it.
 */
static unsigned int raw_mem_fields(const struct tk_perfdata *pd)
{
	static const struct {
		unsigned int field;
		uint64_t bits;
	} need[] = {
		{F_ADDR, TK_PERF_SAMPLE_ADDR},
		{F_DATA_SRC, TK_PERF_SAMPLE_DATA_SRC},
		{F_WEIGHT, TK_PERF_SAMPLE_WEIGHT | TK_PERF_SAMPLE_WEIGHT_STRUCT},
		{F_INS_LAT, TK_PERF_SAMPLE_WEIGHT_STRUCT},
		{F_PHYS_ADDR, TK_PERF_SAMPLE_PHYS_ADDR},
		{F_DATA_PAGE_SIZE, TK_PERF_SAMPLE_DATA_PAGE_SIZE},
		{F_CODE_PAGE_SIZE, TK_PERF_SAMPLE_CODE_PAGE_SIZE},
	};
	unsigned int fields = F_MEM;

	for (size_t i = 0; i < tk_perfdata_evsel_count(pd); i++) {
		const struct tk_perf_attr *a = &tk_perfdata_evsel_get(pd, i)->attr;

		if (a->type != PERF_TYPE_RAW)
			continue;
		for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++) {
			if (!(a->sample_type & need[k].bits))
				fields &= ~need[k].field;
		}
	}
	return fields;
}

static int evsel_prepare(struct rep *r, size_t index, struct rep_evsel *e)
{
	const struct tk_perfdata_evsel *es = tk_perfdata_evsel_get(r->pd, index);
	const struct tk_perf_attr *a = &es->attr;
	uint64_t st = a->sample_type;
	const char *name = es->name;
	char buf[128];

	e->ready = true;
	if (a->type == 2) {
		e->fields = F_COMM | F_TID | F_CPU | F_TIME | F_EVNAME | F_TRACE;
		int ret = load_tracing(r);

		if (ret == -ENOMEM || ret == -EBADMSG) /* -EBADMSG: --strict */
			return ret;
		if (r->set && name && lazy_find(r, a->config)) {
			/* Its format waits for its first sample (bind_event()). */
			e->ev_pending = true;
			e->ev_id = (int32_t)a->config;
			e->fields |= F_PENDING;
		} else if (r->set) {
			if ((ret = parse_lazy(r, a->config)))
				return ret;
			e->ev = tk_event_find(r->set, (int)a->config);
		}
		if (e->ev && r->set_live && name && !live_format_fits(r, e->ev, name, a->config))
			e->ev = NULL;
		e->ksyms = e->ev && event_reads_kallsyms(e->ev);
		if (!name && e->ev) {
			snprintf(buf, sizeof(buf), "%s:%s", tk_event_system(e->ev),
				 tk_event_name(e->ev));
			name = buf;
		}
	} else {
		e->fields = F_COMM | F_TID | F_CPU | F_TIME | F_EVNAME | F_IP | F_PERIOD;
		if (!name)
			name = tk_perfdata_attr_base_name(a->type, a->config);
	}
	if (name && !es->name && (a->type == 0 || a->type == 1)) {
		name = tk_perfdata_add_modifiers(buf, sizeof(buf), name, a->flags);
	}
	if (!name) {
		snprintf(buf, sizeof(buf), "unknown-%" PRIu32 ":%" PRIu64, a->type, a->config);
		name = buf;
	}
	/* perf drops a default field the samples cannot fill. */
	if (!(st & TK_PERF_SAMPLE_TID))
		e->fields &= ~(unsigned int)(F_TID | F_COMM);
	if (!(st & TK_PERF_SAMPLE_CPU))
		e->fields &= ~(unsigned int)F_CPU;
	if (!(st & TK_PERF_SAMPLE_TIME))
		e->fields &= ~(unsigned int)F_TIME;
	/* PERIOD stays: without the bit perf shows the attr's fixed period. */
	if (!(st & TK_PERF_SAMPLE_IP))
		e->fields &= ~(unsigned int)F_IP;
	if (a->type == PERF_TYPE_RAW)
		e->fields |= raw_mem_fields(r->pd);
	e->callchain = st & TK_PERF_SAMPLE_CALLCHAIN;
	/* Tracepoints recorded with -g: perf script adds the callchain after the text. */
	if (a->type == 2 && e->callchain)
		e->fields |= F_IP;
	e->bare_chain = a->type == 2 && e->callchain && tk_perfdata_get_info(r->pd)->pipe;
	e->sample_type = st;
	e->attr_period = a->sample_period;
	fast_layout_init(&e->fast, st);
	/* Only fixed-size fields come before TIME, whatever follows it. */
	if (st & TK_PERF_SAMPLE_TIME)
		e->time_at = (uint16_t)(8 + 8 * (!!(st & TK_PERF_SAMPLE_IDENTIFIER) +
						 !!(st & TK_PERF_SAMPLE_IP) +
						 !!(st & TK_PERF_SAMPLE_TID)));
	/* The fixed layout skips the memory fields --fields may ask for. */
	if (r->opts->fields & PD_MEM_FIELDS)
		e->fast.ok = false;
	e->name = strdup(name);
	if (!e->name)
		return -ENOMEM;
	e->wanted = event_wanted(r->opts, e->name);
	return 0;
}

/*
 * The word of an entry of evsel @idx (-1: not known) but its file offset
 * (struct qent), or QENT_COPY when a word cannot hold the evsel or every
 * offset of the file: its records are then queued as copies.
 */
static uint64_t qent_word(const struct rep *r, int32_t idx)
{
	if (tk_perfdata_get_info(r->pd)->file_size > QENT_OFF_MASK + 1 || idx < -1 ||
	    (uint64_t)idx + 1 > QENT_EVSEL_MAX + 1)
		return QENT_COPY;
	return (uint64_t)(idx + 1) << QENT_OFF_BITS;
}

static int ensure_evsels(struct rep *r)
{
	size_t n = tk_perfdata_evsel_count(r->pd);

	if (n > r->nevs) {
		struct rep_evsel *e = realloc(r->evs, n * sizeof(*e));

		if (!e)
			return -ENOMEM;
		memset(e + r->nevs, 0, (n - r->nevs) * sizeof(*e));
		for (size_t i = r->nevs; i < n; i++)
			e[i].name_col_width = -1;
		for (size_t i = r->nevs; i < n; i++)
			e[i].qword = qent_word(r, (int32_t)i);
		r->evs = e;
		r->nevs = n;
		/* A new event may take an id the memo gave to no one. */
		for (size_t i = 0; i < IDCACHE_SIZE; i++)
			r->idcache[i].evsel = -1;
	}
	r->file_evsels = n;
	if (!n || !tk_perf_id_offset(TK_PERF_RECORD_SAMPLE,
				     tk_perfdata_evsel_get(r->pd, 0)->attr.sample_type,
				     SIZE_MAX / 2, &r->sample_id_off))
		r->sample_id_off = 0;
	return 0;
}

/*
 * What ppool_can_log() asks of the event itself, once per event rather
 * than per line: its fields are those of the line a worker prints, its
 * name column fits the current width, and its text needs no lock.
 */
static bool evsel_log_ok(const struct rep *r, const struct rep_evsel *e)
{
	return !(e->fields & (F_IP | F_PERIOD | F_PENDING)) &&
	       (e->fields & (F_COMM | F_TID | F_EVNAME)) == (F_COMM | F_TID | F_EVNAME) &&
	       e->name_col && e->name_col_width == r->name_width &&
	       (!e->ev || e->ev->kind == TK_EVENT_PROGRAM || e->ev->kind == TK_EVENT_SLOW);
}

/*
 * Whether print_direct() may print the event's lines, kept with the event
 * (as tests per line these were ~25 instructions): no filter or --fields,
 * the kallsyms decided and, while they wait to be read, an event that does
 * not need them; its line is the usual tracepoint line, its format is
 * parsed, and its name column fits the current width. Made again wherever
 * one of these changes: direct_update() (evsels_ready(), the kallsyms
 * decision and load), bind_event().
 */
static bool evsel_direct_ok(const struct rep *r, const struct rep_evsel *e)
{
	return r->name_width && !r->filtering && !r->opts->fields && r->ksyms_decided &&
	       !(r->ksyms_pending && e->ksyms) && e->ready &&
	       !(e->fields & (F_MEM | F_IP | F_PERIOD | F_PENDING)) &&
	       !(e->sample_type & TK_PERF_SAMPLE_READ) &&
	       (e->fields & (F_COMM | F_TID | F_EVNAME)) == (F_COMM | F_TID | F_EVNAME) &&
	       e->name_col && e->name_col_width == r->name_width;
}

/* Prepare every event, and size the name column (perf sizes it once, by all events). */
static int evsels_ready(struct rep *r)
{
	int ret;

	if (ensure_evsels(r))
		return -ENOMEM;
	for (size_t i = 0; i < r->nevs; i++) {
		int len;

		if (!r->evs[i].ready && (ret = evsel_prepare(r, i, &r->evs[i])))
			return ret;
		len = (int)strlen(r->evs[i].name);
		if (len > r->name_width)
			r->name_width = len;
	}
	/* Each name as it prints in the column (pipe mode may widen it later). */
	for (size_t i = 0; i < r->nevs; i++) {
		struct rep_evsel *e = &r->evs[i];
		size_t len = strlen(e->name), width = (size_t)r->name_width;
		int n;

		if (e->name_col_width == r->name_width)
			continue;
		free(e->name_col);
		e->name_col = NULL;
		e->name_col_width = r->name_width;
		/* Names from the file can be long: those print through put_padded(). */
		if (width + len + 3 > 4096)
			continue;
		/* Zeroed to whole NAME_CHUNKs, NAME_MIN at least: put_name_col() copies those. */
		e->name_col =
			calloc(1, width + len + 3 <= NAME_MIN ? NAME_MIN
							      : (width + len + 3 + NAME_CHUNK - 1) &
									~(size_t)(NAME_CHUNK - 1));
		if (!e->name_col)
			return -ENOMEM;
		n = snprintf(e->name_col, width + len + 3, "%*s: ", r->name_width, e->name);
		e->name_col_len = n > 0 ? (uint32_t)n : 0;
	}
	for (size_t i = 0; i < r->nevs; i++)
		r->evs[i].log_ok = evsel_log_ok(r, &r->evs[i]);
	direct_update(r);
	return 0;
}

static inline uint16_t ld16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return v;
}

static inline uint32_t ld32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * The evsel of @rec: the only one, or the one its id names, through the
 * id memo. Return: the index, or -1 when the record carries no id or names
 * no event (the full parser, run next, then reports or skips it).
 */
static int32_t rec_evsel(struct rep *r, const struct tk_perf_record *rec)
{
	const struct tk_perfdata_evsel *e0;
	struct idcache_ent *c;
	struct tk_perf_sample s;
	size_t off;
	uint64_t id;

	if (r->file_evsels == 1)
		return 0;
	if (!r->file_evsels)
		return -1;
	if (rec->type == TK_PERF_RECORD_SAMPLE && r->sample_id_off) {
		off = r->sample_id_off;
		if (off + 8 > rec->size)
			return -1;
	} else {
		e0 = tk_perfdata_evsel_get(r->pd, 0);
		if (!tk_perf_id_offset(rec->type, e0->attr.sample_type, rec->size, &off))
			return -1;
	}
	id = ld64((const uint8_t *)rec->data + off);
	c = &r->idcache[(id ^ id >> 7) & (IDCACHE_SIZE - 1)];
	if (c->evsel >= 0 && c->id == id)
		return c->evsel;
	if (tk_perfdata_parse_sample(r->pd, rec, &s) || s.attr_index < 0)
		return -1;
	c->id = id;
	c->evsel = s.attr_index;
	return s.attr_index;
}

/*
 * Whether @rec can be read at @e's fixed offsets: sample_fields()'s fast
 * path, which a worker repeats on the lines it is logged.
 */
static inline bool fast_sample(const struct rep_evsel *e, const struct tk_perf_record *rec)
{
	const struct fast_layout *f = &e->fast;

	return f->ok && rec->type == TK_PERF_RECORD_SAMPLE && rec->size >= f->min &&
	       (!f->raw ||
		ld32((const uint8_t *)rec->data + f->raw) <= (uint32_t)(rec->size - f->min));
}

/*
 * Decode what the printer needs from a SAMPLE of evsel @idx (-1: unknown).
 * Return: 0; -ENOENT to skip the record; -EBADMSG with the message set.
 */
static int sample_fields(struct rep *r, const struct tk_perf_record *rec, int32_t idx,
			 struct psample *ps)
{
	struct tk_perf_sample s;
	int ret;

	if (idx >= 0 && (size_t)idx < r->nevs && !(r->evs[idx].fields & F_MEM) &&
	    fast_sample(&r->evs[idx], rec)) {
		const struct fast_layout *f = &r->evs[idx].fast;
		const uint8_t *d = rec->data;

		ps->fields = r->evs[idx].sample_type;
		ps->ip = f->ip ? ld64(d + f->ip) : 0;
		ps->pid = f->tid ? ld32(d + f->tid) : 0;
		ps->tid = f->tid ? ld32(d + f->tid + 4) : 0;
		ps->time = f->time ? ld64(d + f->time) : 0;
		ps->cpu = f->cpu ? ld32(d + f->cpu) : 0;
		ps->period = f->period ? ld64(d + f->period) : 0;
		ps->raw_size = f->raw ? ld32(d + f->raw) : 0;
		ps->raw = f->raw ? d + f->raw + 4 : NULL;
		ps->callchain_nr = 0;
		ps->callchain = NULL;
		ps->read = NULL;
		ps->read_size = 0;
		ps->fixed = true;
		ps->regs = ps->stack = NULL;
		ps->regs_abi = ps->regs_nr = ps->stack_size = 0;
		return 0;
	}
	/* No fixed layout, or a record too short for it: the full decoder names the problem. */
	ret = tk_perfdata_parse_sample(r->pd, rec, &s);
	if (ret)
		return ret;
	ps->fields = s.fields;
	ps->ip = s.ip;
	ps->pid = s.pid;
	ps->tid = s.tid;
	ps->time = s.time;
	ps->cpu = s.cpu;
	ps->period = s.period;
	ps->raw_size = s.raw_size;
	ps->raw = s.raw;
	ps->callchain_nr = s.callchain_nr;
	ps->callchain = s.callchain;
	ps->read = s.read;
	ps->read_size = s.read_size;
	ps->fixed = false;
	ps->regs_abi = s.regs_user_abi;
	ps->regs_nr = s.regs_user_nr;
	ps->regs = s.regs_user;
	/* Only the dynamic size was written; a larger one would read past the copy. */
	ps->stack_size = s.stack_user_dyn_size < s.stack_user_size ? s.stack_user_dyn_size
								   : s.stack_user_size;
	ps->stack = s.stack_user;
	ps->addr = s.addr;
	ps->weight = s.weight;
	ps->data_src = s.data_src;
	ps->phys_addr = s.phys_addr;
	ps->data_page_size = s.data_page_size;
	ps->code_page_size = s.code_page_size;
	return s.attr_index;
}

/* ------------------------------------------------------------ threads */

/*
 * Lines printed on several threads, on the print pool the .dat report uses
 * too (print-pool.h): the merge thread reads, queues, orders and delivers
 * every record, keeps the thread names, applies the filters, and hands
 * tracepoint sample lines to workers as a log: per line where the record
 * is in the file, its line start (from the prefix store, which never
 * changes a text once written) and its event. A worker reads the record
 * where the reader mapped the file (else through a pread() window of its
 * own), so nothing the merge wrote crosses cores (why: bench/README.md),
 * and prints it with its own kallsyms memo. Such a line costs the merge
 * its thread lookup and the log entry (print_direct()). The
 * merge prints a job itself (inline) when every worker has PJOB_QUEUE
 * waiting, or when a line cannot be logged (a record from a COMPRESSED
 * one, a field the log does not carry); while a job is inline, r->out is
 * that job's text (pjob_begin()). Only files (all events known at the
 * start) whose events are all tracepoints without callchains use threads,
 * perf record's dummy event for side-band records aside: symbols and maps
 * stay in the merge thread; and only with -j N: by default one thread
 * prints (perf_threads()). Memory stays bounded: the
 * slots' logs and texts, and a window per worker.
 */
#define PJOB_LINES   2048
#define PJOB_TEXT    (256u << 10)
#define PJOB_QUEUE   2
#define PJOB_CHECK   256 /* lines: how often an inline job looks for idle workers */
#define PMAX_THREADS 16
#define PWINDOW	     (256u << 10)

/*
 * One line a worker prints: 24 bytes, three stores past the cache. Its
 * time, CPU and payload the worker reads from the record itself, at the
 * fixed offsets of its event's layout (only such samples are logged).
 */
struct pline {
	uint64_t rec_off;   /* file offset of the SAMPLE record */
	const char *prefix; /* PREFIX_BYTES from the prefix store */
	int32_t evsel;
	uint16_t rec_size;
	uint8_t prefix_len;
};

struct pjob {
	struct pline *lines;
	uint32_t nlines;
} __attribute__((aligned(128)));

/* A worker's own state (print-pool.c makes it on the worker's thread). */
struct pworker {
	const struct ppool *pool;
	struct tk_ksym_memo *memo; /* the pool's, for this worker */
	struct time_col tc;
	uint8_t *win; /* PWINDOW bytes of the file from win_start */
	uint64_t win_start, win_len;
} __attribute__((aligned(128)));

/* The merge's side of the print pool: the job logs and the job being filled. */
struct ppool {
	struct rep *r;
	struct tk_print_pool *pp;
	struct pjob *jobs; /* the logs, per slot of pp's ring */
	size_t njobs;
	struct pjob *cur;	/* being filled (merge thread only) */
	bool cur_inline;	/* printed by the merge, into r->out */
	struct tk_outbuf fdout; /* the report's output while r->out is a job's */
	int fd;			/* the file, which workers read records from */
} __attribute__((aligned(128)));

/* The event text through libtraceevent, on a thread that shares the set. */
static void print_slow_locked(const struct ppool *pool, const struct tk_event *ev,
			      const uint8_t *raw, uint32_t size, uint32_t cpu, struct tk_outbuf *o)
{
	pthread_mutex_lock(&pool->pp->slow_lock);
	tk_event_print_slow_shared(pool->r->set, ev, raw, size, (int)cpu, o);
	pthread_mutex_unlock(&pool->pp->slow_lock);
}

/*
 * The record at @off (@size bytes), from the worker's window of the file:
 * records come mostly in file order, so one pread() serves many. NULL
 * with the message set on a read error.
 */
static const uint8_t *pworker_record(struct pworker *w, uint64_t off, uint32_t size)
{
	uint64_t done = 0;

	/* Read in place where the reader maps the file (the merge read this record there). */
	if (w->pool->r->map) {
		if (off > w->pool->r->map_len || size > w->pool->r->map_len - off) {
			tk_fail(EBADMSG,
				"the record at 0x%" PRIx64 " ends past the end of the file", off);
			return NULL;
		}
		return w->pool->r->map + off;
	}

	if (off >= w->win_start && off - w->win_start + size <= w->win_len)
		return w->win + (off - w->win_start);
	w->win_len = 0;
	while (done < PWINDOW) {
		ssize_t n = pread(w->pool->fd, w->win + done, PWINDOW - done, (off_t)(off + done));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			tk_fail(errno, "cannot read the record at 0x%" PRIx64 ": %s", off,
				strerror(errno));
			return NULL;
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	if (done < size) {
		tk_fail(EBADMSG, "the record at 0x%" PRIx64 " ends past the end of the file", off);
		return NULL;
	}
	w->win_start = off;
	w->win_len = done;
	return w->win;
}

/* One logged line, as print_sample() prints it. */
static int pworker_line(struct pworker *w, struct tk_outbuf *o, const struct pline *l)
{
	const struct rep *r = w->pool->r;
	const struct rep_evsel *e = &r->evs[l->evsel];
	const struct fast_layout *f = &e->fast;
	const uint8_t *rec = pworker_record(w, l->rec_off, l->rec_size), *raw = NULL;
	uint32_t cpu, raw_size = 0;
	char *p;

	if (!rec)
		return -EIO;
	/* As sample_fields() read them in the merge (only such lines are logged). */
	cpu = f->cpu ? ld32(rec + f->cpu) : 0;
	if (f->raw) {
		raw_size = ld32(rec + f->raw);
		raw = rec + f->raw + 4;
		/* Read again from the file: it fits only if the file did not change meanwhile. */
		if (raw_size > (uint32_t)(l->rec_size - f->min))
			return tk_fail(EBADMSG,
				       "the record at 0x%" PRIx64 " changed while the "
				       "report read it",
				       l->rec_off);
	}
	p = room(o, PREFIX_BYTES + 8);

	copy40(p, l->prefix);
	o->len += l->prefix_len;
	if (e->fields & F_CPU)
		put_cpu(o, cpu);
	if (e->fields & F_TIME)
		put_time(&w->tc, o, r->nsec, f->time ? ld64(rec + f->time) : 0);
	put_name_col(o, e->name_col, e->name_col_len);
	if ((e->fields & F_TRACE) && raw && e->ev &&
	    (e->ev->kind == TK_EVENT_SLOW ||
	     tk_event_run_shared(r->set, e->ev, raw, raw_size, o, w->memo) == -ENOTSUP))
		print_slow_locked(w->pool, e->ev, raw, raw_size, cpu, o);
	put_char(o, '\n');
	return 0;
}

static void pworker_free(void *engine, void *state)
{
	struct pworker *w = state;

	(void)engine;
	free(w->win);
	free(w);
}

static void *pworker_new(void *engine, struct tk_print_worker *pw)
{
	struct pworker *w = tk_line_calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->pool = engine;
	w->memo = pw->memo;
	w->win = w->pool->r->map ? NULL : malloc(PWINDOW);
	if (!w->win && !w->pool->r->map) {
		pworker_free(engine, w);
		return NULL;
	}
	return w;
}

static int pworker_replay(void *engine, struct tk_print_worker *pw, size_t slot,
			  struct tk_outbuf *text)
{
	const struct ppool *pool = engine;
	const struct pjob *j = &pool->jobs[slot];
	int ret = 0;

	for (uint32_t i = 0; i < j->nlines && !ret; i++)
		ret = pworker_line(pw->state, text, &j->lines[i]);
	return ret;
}

/*
 * A job starts. The merge prints into r->out: the job's text when inline,
 * a scratch buffer otherwise (it prints nothing then).
 */
static void pjob_begin(void *engine, size_t slot, bool printed_inline, struct tk_outbuf *merge_out)
{
	struct ppool *pool = engine;

	pool->cur = &pool->jobs[slot];
	pool->cur->nlines = 0;
	pool->cur_inline = printed_inline;
	pool->r->out = *merge_out;
}

/* The job is complete: what the merge printed goes back where it came from. */
static bool pjob_end(void *engine, size_t slot, struct tk_outbuf *merge_out)
{
	struct ppool *pool = engine;

	*merge_out = pool->r->out;
	return pool->jobs[slot].nlines != 0;
}

static const struct tk_print_ops perf_pool_ops = {
	.job_begin = pjob_begin,
	.job_end = pjob_end,
	.worker_new = pworker_new,
	.replay = pworker_replay,
	.worker_free = pworker_free,
};

/* Hand the job being filled over and start the next, inline when @force. */
static void ppool_dispatch(struct ppool *pool, bool force)
{
	tk_print_pool_dispatch(pool->pp, force, false);
}

/* Print everything handed over, write it out, stop the workers; r->out is the report's again. */
static void ppool_finish(struct ppool *pool)
{
	tk_print_pool_finish(pool->pp);
	pool->r->out = pool->fdout;
	pool->fdout.buf = NULL;
}

static void ppool_free(struct ppool *pool)
{
	if (!pool)
		return;
	tk_print_pool_free(pool->pp);
	for (size_t i = 0; pool->jobs && i < pool->njobs; i++)
		free(pool->jobs[i].lines);
	free(pool->jobs);
	free(pool);
}

/*
 * Printers to run: -j N's when every event is a tracepoint without
 * callchains and the file is no pipe, else 1 (see the notes above). The
 * default is 1 at any size: one thread reading through the kept window
 * (tk_perfdata_read_kept()) took less CPU and less wall time than two on
 * the mapping on every family file of 128 MiB and more, where two were
 * the default (5 interleaved runs at load 8: syscalls 0.51 / 0.20 s wall /
 * CPU against 1.13 / 0.39, block 0.77 / 0.21 against 1.09 / 0.35).
 */
static unsigned int perf_threads(struct rep *r)
{
	const struct tk_perfdata_info *info = tk_perfdata_get_info(r->pd);
	size_t n = tk_perfdata_evsel_count(r->pd);
	unsigned int threads;

	if (info->pipe || !n || r->opts->threads < 2 || r->opts->fields || r->map_moves)
		return 1;
	for (size_t i = 0; i < n; i++) {
		const struct tk_perf_attr *a = &tk_perfdata_evsel_get(r->pd, i)->attr;

		/*
		 * perf record adds a dummy event for its side-band records
		 * (COMM, MMAP, FORK: the merge reads them); it never samples,
		 * and a sample of it would print in the merge (ppool_log()).
		 */
		if (a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_DUMMY)
			continue;
		if (a->type != 2 || (a->sample_type & TK_PERF_SAMPLE_CALLCHAIN))
			return 1;
	}
	threads = r->opts->threads;
	return threads > PMAX_THREADS ? PMAX_THREADS : threads;
}

/*
 * Workers for this run, or NULL: one thread prints (see perf_threads()).
 * Not marked cold: GCC predicts the code after an unconditional call of a
 * cold function never runs, and so moved the rest of
 * tk_perfdata_report_run(), its record loop, and every function only that
 * loop calls (the queue, the sample lines, the DWARF frames) into
 * .text.unlikely, compiled for size (a divide instruction per digit).
 */
static struct ppool *__attribute__((noinline)) ppool_new(struct rep *r)
{
	unsigned int threads = perf_threads(r);
	struct ppool *pool;
	bool ok;

	/* Every event prepared and the name column sized before anyone prints. */
	if (threads < 2 || evsels_ready(r))
		return NULL;
	pool = tk_line_calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->r = r;
	pool->fd = tk_perfdata_fd(r->pd);
	pool->pp = tk_print_pool_new(&perf_pool_ops, pool, threads - 1,
				     (PJOB_QUEUE + 2) * (threads - 1) + 2, PJOB_QUEUE, PJOB_TEXT,
				     &pool->fdout);
	ok = pool->pp != NULL;
	pool->njobs = ok ? pool->pp->q.n : 0;
	pool->jobs = ok ? tk_line_calloc(pool->njobs, sizeof(*pool->jobs)) : NULL;
	ok = ok && pool->jobs;
	for (size_t i = 0; ok && i < pool->njobs; i++) {
		pool->jobs[i].lines = tk_line_alloc(PJOB_LINES, sizeof(*pool->jobs[i].lines));
		ok = pool->jobs[i].lines != NULL;
	}
	if (!ok) {
		ppool_free(pool);
		return NULL;
	}
	/* The first job (started with the workers) takes r->out over. */
	pool->fdout = r->out;
	if (!tk_print_pool_start(pool->pp)) {
		ppool_free(pool);
		return NULL;
	}
	return pool;
}

/* Whether a worker can print the line of @rec (event @e, thread @t; @fixed: fixed layout). */
static inline bool ppool_can_log(const struct tk_perf_record *rec, const struct rep_evsel *e,
				 const struct thread *t, bool fixed)
{
	return e->log_ok && !rec->compressed && t && t->prefix_len && fixed;
}

/* Log that line in the job being filled (ppool_can_log() said yes). */
static inline void ppool_add(struct rep *r, const struct tk_perf_record *rec,
			     const struct thread *t, int32_t idx)
{
	struct ppool *pool = r->pool;
	struct pjob *j = pool->cur;
	struct pline v, *l;

	memset(&v, 0, sizeof(v));
	v.rec_off = rec->offset;
	v.rec_size = rec->size;
	v.prefix = t->prefix;
	v.prefix_len = t->prefix_len;
	v.evsel = idx;
	l = &j->lines[j->nlines++];
	tk_store_past_cache(l, &v, sizeof(v));
	if (j->nlines == PJOB_LINES)
		ppool_dispatch(pool, false);
}

/*
 * Log the line of sample @s (record @rec) of event @e (thread @t) for a
 * worker, when the job being filled is logged and a worker can print it.
 * Return: whether it was logged (else the merge prints it, inline).
 */
static bool ppool_log(struct rep *r, const struct tk_perf_record *rec, const struct rep_evsel *e,
		      const struct thread *t, const struct psample *s, int32_t idx)
{
	if (r->pool->cur_inline)
		return false;
	if (!ppool_can_log(rec, e, t, s->fixed)) {
		/* This line prints in the merge: from here on, in order, so does the job. */
		ppool_dispatch(r->pool, true);
		return false;
	}
	ppool_add(r, rec, t, idx);
	return true;
}

/* After the merge printed a line into the inline job: hand it over when full. */
static inline void ppool_printed(struct rep *r)
{
	struct ppool *pool = r->pool;

	if (pool->cur_inline &&
	    (++pool->cur->nlines == PJOB_LINES ||
	     (!(pool->cur->nlines % PJOB_CHECK) && tk_print_pool_starving(pool->pp))))
		ppool_dispatch(pool, false);
}

/* The event text of @s printed in the merge while workers print too. */
static void __attribute__((noinline)) print_shared(struct rep *r, const struct tk_event *ev,
						   const void *raw, uint32_t raw_size, uint32_t cpu)
{
	struct ppool *pool = r->pool;

	if (ev->kind == TK_EVENT_SCHED_SWITCH || ev->kind == TK_EVENT_SCHED_WAKEUP) {
		/* Names it learns go to libtraceevent too: under the lock. */
		pthread_mutex_lock(&pool->pp->slow_lock);
		tk_event_print_info(r->set, ev, raw, raw_size, (int)cpu, 0, &r->out);
		pthread_mutex_unlock(&pool->pp->slow_lock);
	} else if (ev->kind == TK_EVENT_SLOW ||
		   tk_event_run_shared(r->set, ev, raw, raw_size, &r->out, pool->pp->main_memo) ==
			   -ENOTSUP) {
		print_slow_locked(pool, ev, raw, raw_size, cpu, &r->out);
	}
}

static void put_mem_before_ip(struct rep *r, const struct rep_evsel *e, unsigned int fields,
			      const struct psample *s);
static void put_mem_after_ip(struct rep *r, unsigned int fields, const struct psample *s);

/* The memory fields of --fields, as the F_* bits the default lines use. */
static unsigned int mem_fields_of(unsigned int f)
{
	static const struct {
		unsigned int field, bit;
	} map[] = {
		{TK_PERFDATA_FIELD_ADDR, F_ADDR},
		{TK_PERFDATA_FIELD_DATA_SRC, F_DATA_SRC},
		{TK_PERFDATA_FIELD_WEIGHT, F_WEIGHT},
		{TK_PERFDATA_FIELD_INS_LAT, F_INS_LAT},
		{TK_PERFDATA_FIELD_PHYS_ADDR, F_PHYS_ADDR},
		{TK_PERFDATA_FIELD_DATA_PAGE_SIZE, F_DATA_PAGE_SIZE},
		{TK_PERFDATA_FIELD_CODE_PAGE_SIZE, F_CODE_PAGE_SIZE},
	};
	unsigned int bits = 0;

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (f & map[i].field)
			bits |= map[i].bit;
	return bits;
}

/*
 * perf's misc column: a letter per cpumode bit pattern the record's misc
 * holds, tested as perf tests them ((misc & M) == M, so a hypervisor
 * sample, 3, shows "KUH"), then spaces to six columns.
 */
static void put_misc(struct tk_outbuf *o, uint16_t misc)
{
	static const struct {
		uint16_t mode;
		char letter;
	} modes[] = {{1, 'K'}, {2, 'U'}, {3, 'H'}, {4, 'G'}, {5, 'g'}};
	size_t n = 0;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if ((misc & modes[i].mode) == modes[i].mode) {
			put_char(o, modes[i].letter);
			n++;
		}
	}
	for (; n < 6; n++)
		put_char(o, ' ');
}

/*
 * perf's tod: the CLOCK_DATA feature pairs a wall-clock time with the
 * sampling clock's reading at the same moment, and a sample's wall-clock
 * time is that plus its distance from the reading, printed in local time
 * with microseconds (nanoseconds with --ns), then a space.
 */
static void put_tod(struct rep *r, uint64_t time)
{
	const struct tk_perfdata_host *h = tk_perfdata_get_host(r->pd);
	char date[64], buf[96];
	uint64_t tod;
	struct tm tm;
	time_t sec;

	if (!h || !h->has_clock_data) {
		put_str(&r->out, "disabled ");
		return;
	}
	tod = time > h->clock_clockid_ns ? h->clock_tod_ns + (time - h->clock_clockid_ns)
					 : h->clock_tod_ns - (h->clock_clockid_ns - time);
	sec = (time_t)(tod / 1000000000u);
	if (!localtime_r(&sec, &tm)) {
		put_str(&r->out, "failed ");
		return;
	}
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S", &tm);
	if (r->nsec)
		snprintf(buf, sizeof(buf), "%s.%09" PRIu64 " ", date, tod % 1000000000u);
	else
		snprintf(buf, sizeof(buf), "%s.%06" PRIu64 " ", date, tod % 1000000000u / 1000u);
	put_str(&r->out, buf);
}

/*
 * --fields: a line as perf script -F prints the fields asked for, in
 * perf's order whatever the order given: comm ("%16s ", "%s " when ip
 * shows a callchain), pid/tid ("%5d/%-5d ", or either "%5d "), "[%03d] ",
 * misc, the time, "%10lu " period, the event name padded as by default,
 * flags, the tracepoint text, the memory fields before the ip (address,
 * data source, weight, latency), then the ip: " ip sym+off (dso)", or a
 * newline and one "\t..." line per callchain entry, then physical address
 * and page sizes. flags is perf's column for a sample without branch flags,
 * 24 spaces (no sample tracekit reads has flags: only AUX area
 * decoders synthesize them); callindent, which indents the branch target
 * of a call or return by call depth, prints nothing on such samples, as
 * perf's does. A list of flags alone prints nothing, as perf's.
 */
static int print_fields(struct rep *r, const struct tk_perf_record *rec, struct rep_evsel *e,
			const struct psample *s)
{
	unsigned int f = r->opts->fields, show = 0, mem;
	bool chain;
	char buf[48];

	/* perf drops trace from events that are no tracepoint, and prints none left with nothing.
	 */
	if (!(e->fields & F_TRACE))
		f &= ~(unsigned int)TK_PERFDATA_FIELD_TRACE;
	if (!(f & ~(unsigned int)TK_PERFDATA_FIELD_FLAGS))
		return 0;
	mem = mem_fields_of(f);
	chain = (f & TK_PERFDATA_FIELD_IP) && e->callchain && s->callchain_nr;

	if (f & TK_PERFDATA_FIELD_COMM) {
		const char *comm = thread_comm(r, (int32_t)s->tid, buf, sizeof(buf));

		put_padded(&r->out, comm, (f & TK_PERFDATA_FIELD_IP) && e->callchain ? 0 : 16, " ");
	}
	if ((f & TK_PERFDATA_FIELD_PID) && (f & TK_PERFDATA_FIELD_TID)) {
		snprintf(buf, sizeof(buf), "%5" PRId32 "/%-5" PRId32 " ", (int32_t)s->pid,
			 (int32_t)s->tid);
		put_str(&r->out, buf);
	} else if (f & (TK_PERFDATA_FIELD_PID | TK_PERFDATA_FIELD_TID)) {
		snprintf(buf, sizeof(buf), "%5" PRId32 " ",
			 (int32_t)((f & TK_PERFDATA_FIELD_PID) ? s->pid : s->tid));
		put_str(&r->out, buf);
	}
	if (f & TK_PERFDATA_FIELD_CPU) {
		snprintf(buf, sizeof(buf), "[%03" PRIu32 "] ", (uint32_t)s->cpu);
		put_str(&r->out, buf);
	}
	if (f & TK_PERFDATA_FIELD_MISC)
		put_misc(&r->out, rec->misc);
	if (f & TK_PERFDATA_FIELD_TOD)
		put_tod(r, s->time);
	if (f & TK_PERFDATA_FIELD_TIME)
		put_time(&r->tc, &r->out, r->nsec, s->time);
	if (f & TK_PERFDATA_FIELD_PERIOD) {
		put_u64(&r->out, (s->fields & TK_PERF_SAMPLE_PERIOD) ? s->period : e->attr_period,
			10, false);
		put_char(&r->out, ' ');
	}
	if (f & TK_PERFDATA_FIELD_EVENT)
		put_padded(&r->out, e->name, r->name_width, ": ");
	if (f & TK_PERFDATA_FIELD_FLAGS)
		put_str(&r->out, "                        "); /* "  %-21s " of "" */
	if ((f & TK_PERFDATA_FIELD_TRACE) && s->raw && e->ev)
		tk_event_print_info(r->set, e->ev, s->raw, s->raw_size, (int)s->cpu, 0, &r->out);
	if (mem)
		put_mem_before_ip(r, e, mem, s);
	if (f & TK_PERFDATA_FIELD_IP) {
		bool kernel = (rec->misc & MISC_CPUMODE_MASK) == MISC_KERNEL ||
			      (rec->misc & MISC_CPUMODE_MASK) == MISC_GUEST_KERNEL;

		show = SYM_IP | ((f & TK_PERFDATA_FIELD_SYM) ? SYM_NAME : 0) |
		       ((f & TK_PERFDATA_FIELD_SYMOFF) ? SYM_NAME | SYM_OFF : 0) |
		       ((f & TK_PERFDATA_FIELD_DSO) ? SYM_DSO : 0);
		if (chain) {
			put_char(&r->out, '\n');
			for (uint64_t i = 0; i < s->callchain_nr; i++) {
				uint64_t ip = tk_perf_load_u64(s->callchain, i);

				if (ip >= CONTEXT_MAX) {
					kernel = ip == CONTEXT_KERNEL;
					continue;
				}
				put_sym_parts(r, (int32_t)s->pid, ip, kernel, "\t", true, show);
				put_char(&r->out, '\n');
			}
		} else {
			put_sym_parts(r, (int32_t)s->pid, s->ip, kernel, " ", false, show);
		}
	}
	if (mem)
		put_mem_after_ip(r, mem, s);
	put_char(&r->out, '\n');
	r->printed++;
	return r->out.error;
}

/* Event types whose fields perf prints and tracekit does not (metric, synth). */
#define PERF_TYPE_HARDWARE 0
#define PERF_TYPE_HW_CACHE 3
#define PERF_TYPE_SYNTH	   0x80000000u

/*
 * perf refuses an -F field its samples cannot fill, naming the event; the
 * same words, as a usage error, in the order perf checks them. A field
 * tracekit does not print (see TK_PERFDATA_FIELD_IREGS) is refused where
 * the samples would give perf something to print.
 */
static int check_fields(struct rep *r)
{
	static const struct {
		unsigned int field;
		uint64_t bit;
		const char *attr, *name;
	} need[] = {
		{TK_PERFDATA_FIELD_IP, TK_PERF_SAMPLE_IP, "IP", "ip"},
		{TK_PERFDATA_FIELD_ADDR, TK_PERF_SAMPLE_ADDR, "ADDR", "addr"},
		{TK_PERFDATA_FIELD_DATA_SRC, TK_PERF_SAMPLE_DATA_SRC, "DATA_SRC", "data_src"},
		{TK_PERFDATA_FIELD_WEIGHT, TK_PERF_SAMPLE_WEIGHT | TK_PERF_SAMPLE_WEIGHT_STRUCT,
		 "WEIGHT", "weight"},
		{TK_PERFDATA_FIELD_SYM, 0, NULL, "sym"},
		{TK_PERFDATA_FIELD_DSO, 0, NULL, "dso"},
		{TK_PERFDATA_FIELD_TID, TK_PERF_SAMPLE_TID, "TID", "tid"},
		{TK_PERFDATA_FIELD_PID, TK_PERF_SAMPLE_TID, "TID", "pid"},
		{TK_PERFDATA_FIELD_TIME, TK_PERF_SAMPLE_TIME, "TIME", "time"},
		{TK_PERFDATA_FIELD_CPU, TK_PERF_SAMPLE_CPU, "CPU", "cpu"},
		{TK_PERFDATA_FIELD_IREGS, TK_PERF_SAMPLE_REGS_INTR, "IREGS", "iregs"},
		{TK_PERFDATA_FIELD_UREGS, TK_PERF_SAMPLE_REGS_USER, "UREGS", "uregs"},
		{TK_PERFDATA_FIELD_PHYS_ADDR, TK_PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR", "phys_addr"},
		{TK_PERFDATA_FIELD_DATA_PAGE_SIZE, TK_PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE",
		 "data_page_size"},
		{TK_PERFDATA_FIELD_CODE_PAGE_SIZE, TK_PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE",
		 "code_page_size"},
		{TK_PERFDATA_FIELD_INS_LAT, TK_PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT",
		 "ins_lat"},
	};
	unsigned int f = r->opts->fields;
	const struct tk_perfdata_host *h = tk_perfdata_get_host(r->pd);

	/* In pipe mode perf cannot know yet, and prints "disabled" on each line. */
	if ((f & TK_PERFDATA_FIELD_TOD) && !tk_perfdata_get_info(r->pd)->pipe &&
	    !(h && h->has_clock_data))
		return tk_fail(EINVAL, "Can't provide 'tod' time, missing clock data. Please "
				       "record with -k/--clockid option.");
	for (size_t i = 0; i < tk_perfdata_evsel_count(r->pd); i++) {
		const struct tk_perfdata_evsel *es = tk_perfdata_evsel_get(r->pd, i);
		const char *name = i < r->nevs && r->evs[i].name ? r->evs[i].name : "?";
		uint64_t st = es->attr.sample_type;
		uint32_t type = es->attr.type;
		char buf[128];

		/*
		 * In pipe mode perf checks an event when its attr arrives, before
		 * any EVENT_UPDATE names it: the name it gives comes from the attr.
		 */
		const char *base = tk_perfdata_attr_base_name(type, es->attr.config);

		if (tk_perfdata_get_info(r->pd)->pipe && base &&
		    (type == PERF_TYPE_SOFTWARE || type == PERF_TYPE_HARDWARE))
			name = tk_perfdata_add_modifiers(buf, sizeof(buf), base, es->attr.flags);

		for (size_t k = 0; k < sizeof(need) / sizeof(need[0]); k++) {
			if (!(f & need[k].field))
				continue;
			if (!need[k].attr) {
				/* sym and dso need an address to look up. */
				if (st & (TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_ADDR))
					continue;
				return tk_fail(
					EINVAL,
					need[k].field == TK_PERFDATA_FIELD_SYM
						? "Display of symbols requested but neither "
						  "sample IP nor sample address available. "
						  "Hence, no addresses to convert to symbols."
						: "Display of DSO requested but no address to "
						  "convert.");
			}
			if (!(st & need[k].bit))
				return tk_fail(
					EINVAL,
					"Samples for '%s' event do not have %s attribute set. "
					"Cannot print '%s' field.",
					name, need[k].attr, need[k].name);
		}
		/* What perf would print and tracekit cannot. */
		if ((f & (TK_PERFDATA_FIELD_IREGS | TK_PERFDATA_FIELD_UREGS)) &&
		    (st & (TK_PERF_SAMPLE_REGS_INTR | TK_PERF_SAMPLE_REGS_USER)))
			return tk_fail(EINVAL,
				       "--fields %s: the samples of '%s' hold registers, which "
				       "tracekit does not print (not supported)",
				       (f & TK_PERFDATA_FIELD_IREGS) ? "iregs" : "uregs", name);
		if ((f & TK_PERFDATA_FIELD_BRSTACK) && (st & TK_PERF_SAMPLE_BRANCH_STACK))
			return tk_fail(EINVAL,
				       "--fields brstack: the samples of '%s' hold a branch stack, "
				       "which tracekit does not print (not supported)",
				       name);
		if ((f & TK_PERFDATA_FIELD_SYNTH) && type == PERF_TYPE_SYNTH)
			return tk_fail(EINVAL,
				       "--fields synth: '%s' is a synthesized event, which "
				       "tracekit does not print (not supported)",
				       name);
		if ((f & TK_PERFDATA_FIELD_METRIC) &&
		    (type == PERF_TYPE_HARDWARE || type == PERF_TYPE_HW_CACHE ||
		     type == PERF_TYPE_RAW))
			return tk_fail(EINVAL,
				       "--fields metric: '%s' counts hardware, and tracekit "
				       "computes no metrics (not supported)",
				       name);
	}
	return 0;
}

/*
 * Cut a "sym+0xoff (dso)" that put_sym() wrote from @from on to "sym": the
 * last " (" starts the dso, and a "+0x" before it the offset ("[unknown]"
 * has none).
 */
static void trim_to_symbol(struct tk_outbuf *o, size_t from)
{
	size_t n = o->len;

	if (o->error || n <= from)
		return;
	for (size_t i = n - 1; i > from; i--) {
		if (o->buf[i] == '(' && o->buf[i - 1] == ' ') {
			n = i - 1;
			break;
		}
	}
	for (size_t i = n; i-- > from + 2;) {
		if (o->buf[i - 2] == '+' && o->buf[i - 1] == '0' && o->buf[i] == 'x') {
			n = i - 2;
			break;
		}
	}
	o->len = n;
}

/*
 * The callchain of @s, one "\t%16lx sym+0xoff (dso)\n" line per entry after
 * a newline, as perf 6.1's thread__resolve_callchain_sample() and
 * sample__fprintf_callchain() print it (@kernel: the sample's own mode):
 *   - PERF_CONTEXT_KERNEL/USER/HV markers switch the mode of the entries
 *     after them; hypervisor ips have no map ("[unknown] ([unknown])");
 *   - any other value from PERF_CONTEXT_MAX up (the guest markers, and ~0,
 *     which unwinders write for a frame they could not read) makes perf
 *     discard the whole chain as corrupt: the line then ends at the newline,
 *     as does a chain of no entries;
 *   - at most r->max_stack entries (markers not counted) print: perf cuts at
 *     --max-stack, which defaults to the reading machine's
 *     kernel.perf_event_max_stack, and looks at no marker after the cut;
 *   - @bare entries are "\t%16lx sym\n": perf script reading a pipe turns
 *     on only the ip and sym fields for a tracepoint's callchain
 *     (process_attr()), where a file gets symoff and dso too.
 */
static void put_callchain(struct rep *r, const struct psample *s, bool kernel, bool bare)
{
	uint64_t end = 0, kept = 0;
	bool hv = false;
	size_t start;

	put_char(&r->out, '\n');
	for (; end < s->callchain_nr && kept < r->max_stack; end++) {
		uint64_t ip = tk_perf_load_u64(s->callchain, end);

		if (ip < CONTEXT_MAX)
			kept++;
		else if (ip != CONTEXT_KERNEL && ip != CONTEXT_USER && ip != CONTEXT_HV)
			return;
	}
	for (uint64_t i = 0; i < end; i++) {
		uint64_t ip = tk_perf_load_u64(s->callchain, i);
		char buf[40];

		if (ip >= CONTEXT_MAX) {
			kernel = ip == CONTEXT_KERNEL;
			hv = ip == CONTEXT_HV;
			continue;
		}
		if (hv) {
			snprintf(buf, sizeof(buf), "\t%16" PRIx64 " ", ip);
			put_str(&r->out, buf);
			put_str(&r->out, bare ? "[unknown]\n" : "[unknown] ([unknown])\n");
			continue;
		}
		if (kernel && !bare) {
			put_kernel_frame(r, ip);
			continue;
		}
		/* Room first, so that no flush moves the line start while it is written. */
		if (bare)
			room(&r->out, 8192);
		start = r->out.len;
		put_sym(r, (int32_t)s->pid, ip, kernel, "\t", true);
		if (bare && r->out.len > start)
			trim_to_symbol(&r->out, start + 18);
		put_char(&r->out, '\n');
	}
}

/*
 * A memory sample's fields before the ip, as perf script prints them:
 * "%16lx" address, "%16lx %s" data source and its text, cut to 99
 * characters and padded to the longest such text so far (perf keeps one
 * width for the whole run), "%16lu" weight, "%16u" instruction latency.
 */
static void put_mem_before_ip(struct rep *r, const struct rep_evsel *e, unsigned int fields,
			      const struct psample *s)
{
	char text[160], buf[32];
	int n;

	if (fields & F_ADDR) {
		n = snprintf(buf, sizeof(buf), "%16" PRIx64, s->addr);
		tk_outbuf_write(&r->out, buf, (size_t)n);
	}
	if (fields & F_DATA_SRC) {
		size_t len;

		n = snprintf(text, sizeof(text), "%16" PRIx64 " ", s->data_src);
		tk_perf_mem_describe(s->data_src, text + n, sizeof(text) - (size_t)n);
		len = strlen(text);
		if (len > 99) /* perf's 100-byte buffer */
			len = 99;
		if (r->mem_width < len)
			r->mem_width = len;
		tk_outbuf_write(&r->out, text, len);
		for (; len < r->mem_width; len++)
			put_char(&r->out, ' ');
	}
	if (fields & F_WEIGHT) {
		/* WEIGHT_STRUCT: the weight is its low 32 bits, the latency the next 16. */
		uint64_t w = (e->sample_type & TK_PERF_SAMPLE_WEIGHT_STRUCT) ? (uint32_t)s->weight
									     : s->weight;

		n = snprintf(buf, sizeof(buf), "%16" PRIu64, w);
		tk_outbuf_write(&r->out, buf, (size_t)n);
	}
	if (fields & F_INS_LAT) {
		n = snprintf(buf, sizeof(buf), "%16u", (unsigned int)(uint16_t)(s->weight >> 32));
		tk_outbuf_write(&r->out, buf, (size_t)n);
	}
}

/* After the ip: "%16lx" physical address, then " 4K"-style page sizes. */
static void put_mem_after_ip(struct rep *r, unsigned int fields, const struct psample *s)
{
	char buf[32];
	int n;

	if (fields & F_PHYS_ADDR) {
		n = snprintf(buf, sizeof(buf), "%16" PRIx64, s->phys_addr);
		tk_outbuf_write(&r->out, buf, (size_t)n);
	}
	if (fields & F_DATA_PAGE_SIZE) {
		tk_perf_page_size_name(s->data_page_size, buf + 1);
		buf[0] = ' ';
		put_str(&r->out, buf);
	}
	if (fields & F_CODE_PAGE_SIZE) {
		tk_perf_page_size_name(s->code_page_size, buf + 1);
		buf[0] = ' ';
		put_str(&r->out, buf);
	}
}

/*
 * Parse the format of @e's first sample (load_tracing() left it for now).
 * Workers may be printing: libtraceevent's parser and the set's tables
 * change under the lock the slow printer takes; what a worker reads
 * without it (its own event's program, the set's layout) does not change.
 */
static int __attribute__((cold, noinline)) bind_event(struct rep *r, struct rep_evsel *e)
{
	int ret;

	e->ev_pending = false;
	e->fields &= ~(unsigned int)F_PENDING;
	if (r->pool)
		pthread_mutex_lock(&r->pool->pp->slow_lock);
	ret = parse_lazy(r, (uint64_t)e->ev_id);
	if (r->pool)
		pthread_mutex_unlock(&r->pool->pp->slow_lock);
	if (ret)
		return ret;
	e->ev = tk_event_find(r->set, e->ev_id);
	e->ksyms = e->ev && event_reads_kallsyms(e->ev);
	e->log_ok = evsel_log_ok(r, e);
	e->direct_ok = evsel_direct_ok(r, e);
	return 0;
}

/* The line of sample @s as event @idx (a known index): perf script's default fields. */
static int print_sample_line(struct rep *r, const struct tk_perf_record *rec, int32_t idx,
			     const struct psample *s)
{
	struct rep_evsel *e;
	struct thread *t;
	unsigned int fields;
	char cbuf[24];
	int ret;

	e = &r->evs[idx];
	if (!e->ready) {
		ret = evsels_ready(r);
		if (ret)
			return ret;
	}
	if (e->ev_pending && (ret = bind_event(r, e)))
		return ret;
	fields = e->fields;
	if (r->filtering && (!e->wanted || !sample_wanted(r, s)))
		return 0;
	if (__builtin_expect(r->opts->fields != 0, 0)) {
		if (!r->fields_checked) {
			ret = check_fields(r);
			if (ret)
				return ret;
			r->fields_checked = true;
		}
		return print_fields(r, rec, e, s);
	}
	/*
	 * The usual line start, comm and tid, comes whole from the thread
	 * (which is also what lets a worker print the line).
	 */
	t = NULL;
	if ((e->fields & (F_COMM | F_TID)) == (F_COMM | F_TID) &&
	    !((e->fields & F_IP) && e->callchain)) {
		t = thread_get(r, (int32_t)s->tid, true);
		if (t && !thread_prefix(r, t))
			t = NULL;
	}
	if (r->pool && ppool_log(r, rec, e, t, s, idx)) {
		r->printed++;
		return 0;
	}
	if (t) {
		char *o = room(&r->out, PREFIX_BYTES);

		copy40(o, t->prefix);
		r->out.len += t->prefix_len;
		fields &= ~(unsigned int)(F_COMM | F_TID);
	}
	if (fields & F_COMM) {
		const char *comm = thread_comm(r, (int32_t)s->tid, cbuf, sizeof(cbuf));

		if ((e->fields & F_IP) && e->callchain)
			put_padded(&r->out, comm, 0, " ");
		else
			put_padded(&r->out, comm, 16, " ");
	}
	if (fields & F_TID) {
		if ((int32_t)s->tid < 0) {
			snprintf(cbuf, sizeof(cbuf), "%" PRId32, (int32_t)s->tid);
			put_padded(&r->out, cbuf, 5, " ");
		} else {
			put_u64(&r->out, s->tid, 5, false);
			put_char(&r->out, ' ');
		}
	}
	if (e->fields & F_CPU)
		put_cpu(&r->out, s->cpu);
	if (e->fields & F_TIME)
		put_time(&r->tc, &r->out, r->nsec, s->time);
	if (e->fields & F_PERIOD) {
		put_u64(&r->out, (s->fields & TK_PERF_SAMPLE_PERIOD) ? s->period : e->attr_period,
			10, false);
		put_char(&r->out, ' ');
	}
	if ((e->fields & F_EVNAME) && e->name_col && e->name_col_width == r->name_width) {
		put_name_col(&r->out, e->name_col, e->name_col_len);
	} else if (e->fields & F_EVNAME) {
		put_padded(&r->out, e->name, r->name_width, ": ");
	}
	if ((e->fields & F_TRACE) && s->raw && e->ev && r->pool)
		print_shared(r, e->ev, s->raw, s->raw_size, s->cpu);
	else if ((e->fields & F_TRACE) && s->raw && e->ev)
		tk_event_print_info(r->set, e->ev, s->raw, s->raw_size, (int)s->cpu, 0, &r->out);
	if (e->fields & F_MEM)
		put_mem_before_ip(r, e, e->fields, s);
	if (e->fields & F_IP) {
		bool kernel = (rec->misc & MISC_CPUMODE_MASK) == MISC_KERNEL ||
			      (rec->misc & MISC_CPUMODE_MASK) == MISC_GUEST_KERNEL;
		bool dwarf = e->callchain && (e->sample_type & DWARF_FIELDS) == DWARF_FIELDS;

		if (e->callchain) {
			put_callchain(r, s, kernel, e->bare_chain);
			if (dwarf)
				put_unwound(r, s, idx);
		} else {
			put_sym(r, (int32_t)s->pid, s->ip, kernel, " ", false);
		}
	}
	if (e->fields & F_MEM)
		put_mem_after_ip(r, e->fields, s);
	put_char(&r->out, '\n');
	r->printed++;
	if (r->pool)
		ppool_printed(r);
	return r->out.error;
}

/*
 * The change of counter @id since its previous sample, which perf prints as
 * the period of a PERF_SAMPLE_READ sample (the first sample of an id counts
 * from 0). Return: false when out of memory.
 */
static bool read_delta(struct rep *r, uint64_t id, uint64_t value, uint64_t *delta)
{
	struct read_last *e;
	size_t mask;

	if (r->rlast_n * 2 >= r->rlast_cap) {
		size_t cap = r->rlast_cap ? r->rlast_cap * 2 : 64;
		struct read_last *t = calloc(cap, sizeof(*t));

		if (!t)
			return false;
		for (size_t i = 0; i < r->rlast_cap; i++) {
			size_t h;

			if (!r->rlast[i].used)
				continue;
			h = (size_t)(tk_id_hash((uint32_t)(r->rlast[i].id ^ r->rlast[i].id >> 32)));
			while (t[h & (cap - 1)].used)
				h++;
			t[h & (cap - 1)] = r->rlast[i];
		}
		free(r->rlast);
		r->rlast = t;
		r->rlast_cap = cap;
	}
	mask = r->rlast_cap - 1;
	for (size_t h = tk_id_hash((uint32_t)(id ^ id >> 32));; h++) {
		e = &r->rlast[h & mask];
		if (!e->used || e->id == id)
			break;
	}
	if (!e->used) {
		e->used = true;
		e->id = id;
		e->value = 0;
		r->rlast_n++;
	}
	*delta = value - e->value;
	e->value = value;
	return true;
}

/*
 * A sample that carries counter values (PERF_SAMPLE_READ) prints as perf
 * script 6.1 prints it: one line per value, each as the event its id
 * belongs to, with the value's change since that id's previous sample as
 * the period. A value of an unknown id, or one that did not change, prints
 * nothing; without PERF_FORMAT_ID no value has an id, and nothing prints.
 */
static int print_read_members(struct rep *r, const struct tk_perf_record *rec, int32_t idx,
			      const struct psample *ps)
{
	const struct tk_perf_attr *a = &tk_perfdata_evsel_get(r->pd, (size_t)idx)->attr;
	uint64_t rf = a->read_format, nwords = ps->read_size / 8, nr = 1, pos = 0, stride;
	bool group = rf & TK_PERF_READ_GROUP;
	struct psample s = *ps;
	int ret;

	if (!(rf & TK_PERF_READ_ID))
		return 0;
	stride = 2 + !!(rf & TK_PERF_READ_LOST);
	if (group) {
		if (!nwords)
			return 0;
		nr = tk_perf_load_u64(ps->read, 0);
		pos = 1 + !!(rf & TK_PERF_READ_TOTAL_TIME_ENABLED) +
		      !!(rf & TK_PERF_READ_TOTAL_TIME_RUNNING);
	}
	s.fields |= TK_PERF_SAMPLE_PERIOD;
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t value, id, at = pos + i * stride, idpos;
		int member;

		/* Alone: value, [enabled], [running], id, [lost]. */
		idpos = at + 1;
		if (!group)
			idpos += (uint64_t) !!(rf & TK_PERF_READ_TOTAL_TIME_ENABLED) +
				 (uint64_t) !!(rf & TK_PERF_READ_TOTAL_TIME_RUNNING);
		if (at >= nwords || idpos >= nwords)
			break;
		value = tk_perf_load_u64(ps->read, at);
		id = tk_perf_load_u64(ps->read, idpos);
		member = tk_perfdata_evsel_of_id(r->pd, id);
		if (member < 0 || (size_t)member >= r->nevs)
			continue;
		if (!read_delta(r, id, value, &s.period))
			return -ENOMEM;
		if (!s.period)
			continue;
		ret = print_sample_line(r, rec, member, &s);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * An event's text on the merge thread: what tk_event_print_info() prints,
 * with the compiled printer called here first rather than through it (its
 * call, flag tests and register saves were ~25 instructions a line); when
 * that printer declines (-ENOTSUP, nothing written), the slow printer.
 */
static inline __attribute__((always_inline)) void
print_text(struct rep *r, const struct tk_event *ev, const void *raw, uint32_t size, uint32_t cpu)
{
	if (ev->kind != TK_EVENT_SLOW && tk_event_run(r->set, ev, raw, size, &r->out) != -ENOTSUP)
		return;
	tk_event_print_info(r->set, ev, raw, size, (int)cpu, TK_EVENT_PRINT_SLOW, &r->out);
}

/*
 * The line of @rec (event @idx) straight from the record: what
 * print_sample_line() prints for the usual tracepoint line (thread prefix,
 * CPU, time, name column, event text) when no filter, --fields, ip or
 * period is involved and the sample has its event's fixed layout, without
 * decoding it into a struct psample first (~100 instructions a line). A
 * line a worker can print costs the merge its thread lookup and the log
 * entry. Return: 1 when done, 0 when print_sample() must do it, or an
 * output error.
 */
static inline __attribute__((always_inline)) int
print_direct(struct rep *r, const struct tk_perf_record *rec, int32_t idx)
{
	const struct rep_evsel *e = &r->evs[idx];
	const struct fast_layout *f = &e->fast;
	const uint8_t *d = rec->data;
	const void *raw = NULL;
	uint32_t cpu, raw_size = 0;
	struct thread *t;
	char *o;

	/* print_sample() tested e->direct_ok. */
	if (!fast_sample(e, rec))
		return 0;
	t = thread_get(r, f->tid ? (int32_t)ld32(d + f->tid + 4) : 0, true);
	if (!t || (!t->prefix_len && !thread_prefix(r, t)))
		return 0;
	if (r->pool && !r->pool->cur_inline) {
		/* Else print_sample_line()'s ppool_log() makes the job inline first. */
		if (!ppool_can_log(rec, e, t, true))
			return 0;
		ppool_add(r, rec, t, idx);
		r->printed++;
		return 1;
	}
	cpu = f->cpu ? ld32(d + f->cpu) : 0;
	if (f->raw) {
		raw_size = ld32(d + f->raw);
		raw = d + f->raw + 4;
	}
	/*
	 * Room for the line up to its text at once, so that the usual prefix,
	 * CPU, time and name column are stores without a test each; the
	 * rarer shapes (a CPU past 999, a new microsecond, a long name) take
	 * the checked writers with out->len brought up to date first.
	 */
	o = room(&r->out, PREFIX_BYTES + 8 + sizeof(r->tc.text) + NAME_MIN);
	copy40(o, t->prefix);
	o += t->prefix_len;
	if ((e->fields & F_CPU) && cpu < 1000) {
		memcpy(o, &cpu_cols[cpu], 8);
		o += 6;
	} else if (e->fields & F_CPU) {
		r->out.len = (size_t)(o - r->out.buf);
		put_cpu(&r->out, cpu);
		o = r->out.buf + r->out.len;
	}
	if (e->fields & F_TIME) {
		uint64_t tm = f->time ? ld64(d + f->time) : 0;

		if (tm - r->tc.lo < r->tc.span || time_col_ms(&r->tc, tm)) {
			copy40(o, r->tc.text);
			o += r->tc.len;
		} else {
			r->out.len = (size_t)(o - r->out.buf);
			put_time_miss(&r->tc, &r->out, r->nsec, tm);
			o = r->out.buf + r->out.len;
		}
	}
	if (e->name_col_len <= NAME_MIN - NAME_CHUNK) {
		copy64(o, e->name_col);
		r->out.len = (size_t)(o + e->name_col_len - r->out.buf);
	} else {
		r->out.len = (size_t)(o - r->out.buf);
		put_name_col(&r->out, e->name_col, e->name_col_len);
	}
	if ((e->fields & F_TRACE) && raw && e->ev && r->pool)
		print_shared(r, e->ev, raw, raw_size, cpu);
	else if ((e->fields & F_TRACE) && raw && e->ev)
		print_text(r, e->ev, raw, raw_size, cpu);
	put_char(&r->out, '\n');
	r->printed++;
	if (r->pool)
		ppool_printed(r);
	return r->out.error ? r->out.error : 1;
}

/* print_sample() past print_direct(): the decoded sample's line, or its event made ready. */
static int __attribute__((noinline))
print_sample_slow(struct rep *r, const struct tk_perf_record *rec, int32_t idx)
{
	struct psample s;
	int ret;

	if (!r->name_width || (idx >= 0 && (size_t)idx >= r->nevs)) {
		ret = evsels_ready(r);
		if (ret)
			return ret;
	}
	ret = sample_fields(r, rec, idx, &s);
	if (ret == -ENOENT)
		return 0;
	if (ret == -EBADMSG)
		return tk_perfdata_note_damage(r->pd, rec->offset, rec->size, 1, tk_errmsg());
	if (ret < 0)
		return ret;
	if (idx < 0)
		idx = ret;
	if ((size_t)idx >= r->nevs)
		return 0;
	if (!r->evs[idx].ready) {
		ret = evsels_ready(r);
		if (ret)
			return ret;
	}
	if (r->evs[idx].ev_pending && (ret = bind_event(r, &r->evs[idx])))
		return ret;
	if (!r->ksyms_decided && r->evs[idx].ev)
		decide_kernel_symbols(r);
	if (r->ksyms_pending && r->evs[idx].ksyms && (ret = load_kernel_symbols(r)))
		return ret;
	if (r->evs[idx].sample_type & TK_PERF_SAMPLE_READ)
		return print_read_members(r, rec, idx, &s);
	return print_sample_line(r, rec, idx, &s);
}

/*
 * A sample's line: print_direct() where it can (inline, also in the queue's
 * delivery loop, where most lines print: deliver()'s register saves and
 * switch cost ~25 instructions a line), else print_sample_slow().
 */
static inline __attribute__((always_inline)) int
print_sample(struct rep *r, const struct tk_perf_record *rec, int32_t idx)
{
	int ret;

	if (idx >= 0 && (size_t)idx < r->nevs && r->evs[idx].direct_ok) {
		ret = print_direct(r, rec, idx);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return print_sample_slow(r, rec, idx);
}

/* Side-band records: names and maps; samples are printed. */
static int deliver(struct rep *r, const struct tk_perf_record *rec, int32_t idx)
{
	const uint8_t *d = rec->data;
	uint32_t pid, tid, ppid, ptid;
	struct thread *t;

	switch (rec->type) {
	case TK_PERF_RECORD_SAMPLE:
		return print_sample(r, rec, idx);
	case TK_PERF_RECORD_COMM:
		if (rec->size < 16)
			return 0;
		memcpy(&tid, d + 12, 4);
		t = thread_get(r, (int32_t)tid, true);
		if (!t) /* a negative tid (damaged) names no thread */
			return (int32_t)tid < 0 ? 0 : -ENOMEM;
		thread_set_comm(t, (const char *)d + 16, rec->size - 16u);
		return 0;
	case TK_PERF_RECORD_FORK: {
		char comm[24];
		bool has = false;

		if (rec->size < 24)
			return 0;
		memcpy(&pid, d + 8, 4);
		memcpy(&ppid, d + 12, 4);
		memcpy(&tid, d + 16, 4);
		memcpy(&ptid, d + 20, 4);
		t = thread_get(r, (int32_t)ptid, false);
		if (t && t->comm_set) {
			memcpy(comm, t->comm, sizeof(comm));
			has = true;
		} else if (ptid == 0) {
			strcpy(comm, "swapper");
			has = true;
		}
		t = thread_get(r, (int32_t)tid, true);
		if (!t) /* a negative tid (damaged) names no thread */
			return (int32_t)tid < 0 ? 0 : -ENOMEM;
		t->comm_set = false;
		t->prefix_len = 0;
		if (has)
			thread_set_comm(t, comm, sizeof(comm));
		if (pid != ppid && r->user_maps)
			return proc_clone(r, (int32_t)ppid, (int32_t)pid);
		return 0;
	}
	case TK_PERF_RECORD_MMAP:
	case TK_PERF_RECORD_MMAP2: {
		uint64_t start, len, pgoff;
		size_t name_off = rec->type == TK_PERF_RECORD_MMAP ? 40 : 72;
		struct proc *p;
		bool identity;
		char *path;
		int ret;

		if (rec->size <= name_off)
			return 0;
		memcpy(&pid, d + 8, 4);
		memcpy(&start, d + 16, 8);
		memcpy(&len, d + 24, 8);
		memcpy(&pgoff, d + 32, 8);
		if ((int32_t)pid < 0) {
			/*
			 * The kernel's own map: without it (perf record
			 * could not read kallsyms, e.g. as a user with
			 * kptr_restrict) perf has no map for kernel ips.
			 */
			if (rec->size - name_off >= 17 &&
			    !strncmp((const char *)d + name_off, "[kernel.kallsyms]", 17)) {
				r->kernel_mapped = true;
				r->kernel_start = start;
				/* Where a --vmlinux's symbols move to (KASLR). */
				tk_symbolizer_set_kernel_text(r->sym, pgoff);
			}
			/* A module's: perf record writes one per loaded module. */
			return tk_perf_kmods_add(&r->kmods, r->pd, (const char *)d + name_off,
						 rec->size - name_off, start, len);
		}
		if (!r->user_maps)
			return 0;
		p = proc_get(r, (int32_t)pid, true);
		if (!p)
			return -ENOMEM;
		path = strndup((const char *)d + name_off, rec->size - name_off);
		if (!path)
			return -ENOMEM;
		ret = tk_perf_map_path(rec, (int32_t)pid, &path, &identity);
		if (ret) {
			free(path);
			return ret;
		}
		/* The map keeps this copy of the path: no second one. */
		return proc_add_map(p, start, len, pgoff, path, path, recorded_build_id(r, path),
				    identity);
	}
	default:
		return 0;
	}
}

/* ------------------------------------------------------------ ordering */

/*
 * Sort the queue by time, ties in arrival order, for a queue of more runs
 * than flush_queue() merges as it prints. A round holds one sorted
 * run per CPU buffer perf drained (often a single run), so this is a
 * natural merge sort: find the runs, merge neighbours until one is left;
 * O(n log runs), and O(n) for a queue that is already in order. qsort()
 * (glibc's mergesort with a comparison callback) took a tenth of the time
 * of a report before.
 */
static int sort_queue(struct rep *r)
{
	size_t n = r->qlen, nruns = 0;
	struct qent *a = r->q, *b;

	if (n < 2)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if (a[i].time < a[i - 1].time) {
			if (nruns + 2 > r->runs_cap) {
				size_t cap = r->runs_cap ? r->runs_cap * 2 : 64;
				size_t *nr = realloc(r->runs, cap * sizeof(*nr));

				if (!nr)
					return -ENOMEM;
				r->runs = nr;
				r->runs_cap = cap;
			}
			r->runs[nruns++] = i;
		}
	}
	if (!nruns)
		return 0;
	if (r->qtmp_cap < r->qcap) {
		struct qent *t = tk_big_alloc(r->qcap * sizeof(*t));

		if (!t)
			return -ENOMEM;
		tk_big_free(r->qtmp);
		r->qtmp = t;
		r->qtmp_cap = r->qcap;
	}
	/* runs[] now lists run ends: the starts after 0, then n. */
	r->runs[nruns++] = n;
	b = r->qtmp;
	while (nruns > 1) {
		size_t k = 0, lo = 0;

		for (size_t i = 0; i < nruns; i += 2) {
			size_t mid = r->runs[i], hi = i + 1 < nruns ? r->runs[i + 1] : mid;
			size_t x = lo, y = mid, o = lo;

			while (x < mid && y < hi)
				b[o++] = a[y].time < a[x].time ? a[y++] : a[x++];
			while (x < mid)
				b[o++] = a[x++];
			while (y < hi)
				b[o++] = a[y++];
			r->runs[k++] = hi;
			lo = hi;
		}
		nruns = k;
		b = a;
		a = a == r->q ? r->qtmp : r->q;
	}
	if (a != r->q) {
		/* The result sits in the spare array: swap the two. */
		struct qent *t = r->q;
		size_t c = r->qcap;

		r->q = r->qtmp;
		r->qcap = r->qtmp_cap;
		r->qtmp = t;
		r->qtmp_cap = c;
	}
	return 0;
}

/* deliver_queued() sets every field: a new one must be set there too. */
_Static_assert(sizeof(struct tk_perf_record) == 56, "deliver_queued() sets each field");

static int deliver_queued(struct rep *r, const struct qent *q)
{
	const uint8_t *d;
	struct tk_perf_record rec;
	int32_t evsel;

	if (!(q->w & QENT_COPY)) {
		rec.offset = q->w & QENT_OFF_MASK;
		rec.compressed = false;
		evsel = (int32_t)(q->w >> QENT_OFF_BITS) - 1;
		d = r->map + rec.offset;
	} else {
		struct arena *a = &r->arenas[ARENA_OF(q->w)];
		const struct qcopy *c = (const struct qcopy *)(a->buf + ARENA_OFF(q->w));

		rec.offset = c->file_offset;
		rec.compressed = c->compressed;
		evsel = c->evsel;
		d = (const uint8_t *)(c + 1);
		if (!--a->live)
			a->len = 0;
	}
	/*
	 * Field by field: a memset() or an initializer (zeroing with rep stos)
	 * of the whole record cost ~9% of a report's CPU time.
	 */
	rec.type = ld32(d);
	rec.misc = ld16(d + 4);
	rec.size = ld16(d + 6);
	rec.data = d;
	rec.extra = NULL;
	rec.extra_size = 0;
	rec.extra_offset = 0;
	if (rec.type == TK_PERF_RECORD_SAMPLE)
		return print_sample(r, &rec, evsel);
	return deliver(r, &rec, evsel);
}

/* The queue's entries moved to the start of its array. */
static void queue_to_front(struct rep *r)
{
	if (r->qhead)
		memmove(r->q, r->q + r->qhead, (r->qlen - r->qhead) * sizeof(*r->q));
	for (size_t i = 0; i < r->nqruns; i++)
		r->qruns[i] -= r->qhead;
	r->qlen -= r->qhead;
	r->qhead = 0;
}

/*
 * Deliver queued records up to @limit (all when @all), in time order, ties
 * in arrival order. The queue's sorted runs are merged as they print: the
 * next record is the earliest of the runs' heads, the first run's on a tie
 * (runs lie in arrival order), which is the order a stable sort gives,
 * without writing the sorted queue out first (a merge pass copied each
 * entry once per level). What stays is packed against the last run's
 * tail, which does not move, and the queue starts there (r->qhead): only
 * the other runs' tails move (each flush moved all that stayed).
 */
static int flush_queue(struct rep *r, uint64_t limit, bool all)
{
	size_t head[MERGE_RUNS], end[MERGE_RUNS], k = 0, n = r->qlen, to;
	uint64_t ht[MERGE_RUNS], low;
	int ret = 0;

	if (r->qhead == n) {
		r->qhead = r->qlen = r->nqruns = 0;
		r->qlast = 0;
		r->keep_low = UINT64_MAX;
		return 0;
	}
	if (r->qruns_over) {
		r->nqruns = 0;
		r->qruns_over = false;
		queue_to_front(r);
		ret = sort_queue(r);
		if (ret) {
			r->keep_low = 0;
			return ret;
		}
		n = r->qlen;
	}
	head[0] = r->qhead;
	for (size_t i = 0; i < r->nqruns; i++) {
		end[k++] = r->qruns[i];
		head[k] = r->qruns[i];
	}
	end[k++] = n;
	for (size_t j = 0; j < k; j++)
		ht[j] = r->q[head[j]].time;
	while (k) {
		size_t m = 0;
		uint64_t t = ht[0], before = UINT64_MAX, upto = all ? UINT64_MAX : limit;

		for (size_t j = 1; j < k; j++) {
			if (ht[j] < t) {
				t = ht[j];
				m = j;
			}
		}
		if (t > upto)
			break;
		/*
		 * Run m leads while its records are earlier than the heads of
		 * the runs before it and not later than those after it (ties go
		 * to the earlier run): those print without another search.
		 */
		for (size_t j = 0; j < k; j++) {
			if (j < m && ht[j] < before)
				before = ht[j];
			else if (j > m && ht[j] < upto)
				upto = ht[j];
		}
		do {
			ret = deliver_queued(r, &r->q[head[m]]);
			if (ret) {
				r->keep_low = 0;
				return ret;
			}
			if (++head[m] == end[m])
				break;
			t = r->q[head[m]].time;
		} while (t < before && t <= upto);
		if (head[m] < end[m]) {
			ht[m] = t;
			continue;
		}
		for (size_t j = m + 1; j < k; j++) {
			head[j - 1] = head[j];
			end[j - 1] = end[j];
			ht[j - 1] = ht[j];
		}
		k--;
	}
	if (!k) {
		r->qhead = r->qlen = r->nqruns = 0;
		r->qlast = 0;
		r->keep_low = UINT64_MAX;
		return 0;
	}
	/*
	 * deliver_queued() emptied arenas before anything else could move.
	 * The earlier runs' tails move up against the last one's, last first,
	 * so that arrival order holds among what stays.
	 */
	to = head[k - 1];
	r->nqruns = k - 1;
	for (size_t j = k - 1; j-- > 0;) {
		size_t len = end[j] - head[j];

		r->qruns[j] = to;
		to -= len;
		memmove(r->q + to, r->q + head[j], len * sizeof(*r->q));
	}
	r->qhead = to;
	r->qlen = end[k - 1]; /* a later run may have gone whole */
	r->qlast = r->q[r->qlen - 1].time;
	/*
	 * The lowest file offset still queued (keep_queued()): records enter
	 * the queue in file order, so within a run the first one of the
	 * mapping is the lowest; a hint to the reader only (a page it drops
	 * too early faults in again).
	 */
	low = UINT64_MAX;
	for (size_t j = 0, at = to; j < k; j++) {
		size_t stop = at + (end[j] - head[j]);

		for (size_t i = at; i < stop; i++) {
			if (!(r->q[i].w & QENT_COPY)) {
				if ((r->q[i].w & QENT_OFF_MASK) < low)
					low = r->q[i].w & QENT_OFF_MASK;
				break;
			}
		}
		at = stop;
	}
	r->keep_low = low;
	return 0;
}

/*
 * Room for more entries: the queue moved to the front of its array when
 * that frees half of it, else an array twice the size. The queue holds
 * two of perf's rounds, often 100 k records and more (a few MB): its
 * arrays come from tk_big_alloc(), whose huge pages fault in a few times
 * where 4 KiB pages faulted ~4000 times a run (a third of a report's
 * system time). The first array fills one huge page (with tk_big_alloc()'s
 * header): below 1 MiB tk_big_alloc() uses malloc(), and the 128, 256 and
 * 512 KiB arrays a queue grew through faulted in 4 KiB at a time, ~220
 * faults (2.5 ms here) before the first huge page.
 */
#define QUEUE_FIRST (((2u << 20) - 64u) / sizeof(struct qent))

/*
 * A file of fewer bytes than 32 a record for a huge page of entries (a
 * sample is 40 bytes or more), or a pipe's, starts at 4096 entries (a
 * 2 MiB page zeroed for a short report cost more than its faults).
 */
static size_t queue_first(const struct rep *r)
{
	const struct tk_perfdata_info *info = tk_perfdata_get_info(r->pd);

	return r->map && info->data_size / 32 >= QUEUE_FIRST ? QUEUE_FIRST : 4096;
}
static int __attribute__((noinline)) queue_grow(struct rep *r)
{
	size_t live = r->qlen - r->qhead, cap = r->qcap ? r->qcap * 2 : queue_first(r);
	struct qent *q;

	/* Flushes leave the queue's start behind (flush_queue()): room there first. */
	if (r->qhead && live <= r->qcap / 2) {
		queue_to_front(r);
		return 0;
	}
	/*
	 * A queue at the front of its array keeps its pages (tk_big_grow()):
	 * the copy was 1.5% of a report whose rounds grew it to 8 MB.
	 */
	if (r->q && !r->qhead) {
		q = tk_big_grow(r->q, live * sizeof(*q), cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		r->q = q;
		r->qcap = cap;
		return 0;
	}
	q = tk_big_alloc(cap * sizeof(*q));
	if (!q)
		return -ENOMEM;
	if (live)
		memcpy(q, r->q + r->qhead, live * sizeof(*q));
	for (size_t i = 0; i < r->nqruns; i++)
		r->qruns[i] -= r->qhead;
	tk_big_free(r->q);
	r->q = q;
	r->qcap = cap;
	r->qhead = 0;
	r->qlen = live;
	return 0;
}

/* A record of @time goes to the queue's end: a new run when it is earlier than the last. */
static inline __attribute__((always_inline)) void queue_note_run(struct rep *r, uint64_t time)
{
	if (__builtin_expect(time < r->qlast, 0)) {
		if (r->nqruns < MERGE_RUNS - 1)
			r->qruns[r->nqruns++] = r->qlen;
		else
			r->qruns_over = true;
	}
	r->qlast = time;
}

/* Queue a copy of a record the reader will reuse the memory of. */
static int __attribute__((noinline))
enqueue_copy(struct rep *r, const struct tk_perf_record *rec, uint64_t time, int32_t idx)
{
	uint64_t need = sizeof(struct qcopy) + (((uint64_t)rec->size + 7u) & ~7ull);
	struct arena *a = &r->arenas[r->cur];
	struct qcopy *c;
	struct qent *e;

	if (a->len + need > a->cap) {
		uint64_t cap = a->cap ? a->cap : 1 << 20;
		uint8_t *b;

		while (cap < a->len + need)
			cap *= 2;
		if (cap >= ARENA_BIT)
			return -ENOMEM;
		b = realloc(a->buf, cap);
		if (!b)
			return -ENOMEM;
		a->buf = b;
		a->cap = cap;
	}
	if (__builtin_expect(r->qlen == r->qcap, 0) && queue_grow(r))
		return -ENOMEM;
	c = (struct qcopy *)(a->buf + a->len);
	c->file_offset = rec->offset;
	c->evsel = idx;
	c->compressed = rec->compressed;
	memcpy(c + 1, rec->data, rec->size);
	queue_note_run(r, time);
	e = &r->q[r->qlen++];
	e->time = time;
	e->w = QENT_COPY | (r->cur ? ARENA_BIT : 0) | a->len;
	a->len += need;
	a->live++;
	if (time > r->max_ts)
		r->max_ts = time;
	return 0;
}

/* enqueue_at() for a record its entry's word cannot name in place: a copy. */
static int __attribute__((noinline))
enqueue_at_copy(struct rep *r, uint64_t offset, uint64_t time, int32_t idx)
{
	const uint8_t *d = r->map + offset;
	struct tk_perf_record rec;

	rec.type = ld32(d);
	rec.misc = ld16(d + 4);
	rec.size = ld16(d + 6);
	rec.offset = offset;
	rec.compressed = false;
	rec.data = d;
	rec.extra = NULL;
	rec.extra_size = 0;
	rec.extra_offset = 0;
	return enqueue_copy(r, &rec, time, idx);
}

/*
 * Queue the record at @offset of the mapping: the entry points at it there.
 * @word: its evsel's qword (qent_word()), whose QENT_COPY makes it a copy.
 */
static inline __attribute__((always_inline)) int
enqueue_at(struct rep *r, uint64_t offset, uint64_t time, int32_t idx, uint64_t word)
{
	struct qent *e;

	word |= offset;
	if (__builtin_expect(word & QENT_COPY, 0))
		return enqueue_at_copy(r, offset, time, idx);
	if (__builtin_expect(r->qlen == r->qcap, 0) && queue_grow(r))
		return -ENOMEM;
	queue_note_run(r, time);
	e = &r->q[r->qlen++];
	e->time = time;
	e->w = word;
	if (time > r->max_ts)
		r->max_ts = time;
	return 0;
}

static inline __attribute__((always_inline)) int
enqueue(struct rep *r, const struct tk_perf_record *rec, uint64_t time, int32_t idx)
{
	/* The reader's mapping keeps it until close: no copy (a copy's data lies elsewhere). */
	if (r->map && !rec->compressed && (const uint8_t *)rec->data == r->map + rec->offset &&
	    idx >= -1 && (idx < 0 || (size_t)idx < r->nevs))
		return enqueue_at(r, rec->offset, time, idx,
				  idx < 0 ? qent_word(r, idx) : r->evs[idx].qword);
	return enqueue_copy(r, rec, time, idx);
}

/*
 * Whether a sample of @e at @t, which decodes whole, is one the --time
 * window drops, and can go unqueued: once the event is ready and bound,
 * the name column sized and the kernel symbols settled, delivering it
 * would change nothing before sample_wanted() dropped it, but for its
 * counter values (PERF_SAMPLE_READ: each sample moves its ids' deltas).
 * Its time still counts for the flushes (r->max_ts), so the records that
 * are queued come out when they would have.
 */
static inline bool time_drops(struct rep *r, const struct rep_evsel *e, uint64_t t)
{
	const struct tk_perfdata_report_opts *o = r->opts;

	if (!((o->has_start && t < o->start_ns) || (o->has_end && t >= o->end_ns)))
		return false;
	if (!e->ready || e->ev_pending || !r->name_width ||
	    (e->sample_type & TK_PERF_SAMPLE_READ) || (!r->ksyms_decided && e->ev) ||
	    (r->ksyms_pending && e->ksyms))
		return false;
	if (t > r->max_ts)
		r->max_ts = t;
	return true;
}

/* A sample whose time the fixed layout does not give: decoded in full, then queued. */
static int __attribute__((noinline))
process_sample(struct rep *r, const struct tk_perf_record *rec, int32_t idx)
{
	struct psample ps = {0};
	int ret = sample_fields(r, rec, idx, &ps);

	if (ret == -ENOENT) {
		/* An id of no event: counted, and said at the end. */
		r->st.unknown_id++;
		return 0;
	}
	if (ret == -EBADMSG) /* one sample lost, the rest read on */
		return tk_perfdata_note_damage(r->pd, rec->offset, rec->size, 1, tk_errmsg());
	if (ret < 0)
		return ret;
	if (idx < 0)
		idx = ret;
	if ((ps.fields & TK_PERF_SAMPLE_TIME) && ps.time && ps.time != UINT64_MAX) {
		if (r->window && (size_t)idx < r->nevs && time_drops(r, &r->evs[idx], ps.time))
			return 0;
		return enqueue(r, rec, ps.time, idx);
	}
	return deliver(r, rec, idx);
}

/* Tell the reader which pages of its mapping the queue still reads. */
static void keep_queued(struct rep *r)
{
	tk_perfdata_keep_from(r->pd, r->keep_low);
}

/*
 * Whether side-band record @rec's trailer names an id no event has, in a
 * file of several events: tk_perfdata_parse_sample() fails on it and it is
 * delivered at once. Asked here first because that failure formats its
 * message (~3 000 instructions), and `perf record -a` files hold such
 * records by the thousand (irq-timer: 1 151, 0.6% of its report).
 */
static bool sideband_id_unknown(struct rep *r, const struct tk_perf_record *rec)
{
	const struct tk_perfdata_evsel *e0;
	size_t off;
	uint64_t id;

	if (tk_perfdata_evsel_count(r->pd) < 2 || !tk_perf_has_trailer(rec->type))
		return false;
	e0 = tk_perfdata_evsel_get(r->pd, 0);
	if (!(e0->attr.flags & TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL) ||
	    !tk_perf_id_offset(rec->type, e0->attr.sample_type, rec->size, &off))
		return false;
	memcpy(&id, (const uint8_t *)rec->data + off, 8);
	return tk_perfdata_evsel_of_id(r->pd, id) < 0;
}

static int process(struct rep *r, const struct tk_perf_record *rec)
{
	struct tk_perf_sample s;
	int32_t idx;
	int ret;

	if (rec->type == TK_PERF_RECORD_FINISHED_ROUND) {
		ret = flush_queue(r, r->next_flush, false);
		r->next_flush = r->max_ts;
		if (r->map)
			keep_queued(r);
		/* The next round goes where the round before this one was, if it is all out. */
		if (!r->arenas[!r->cur].live)
			r->cur = !r->cur;
		return ret;
	}
	if (rec->type >= 64)
		return 0;
	if (tk_perfdata_evsel_count(r->pd) != r->file_evsels && ensure_evsels(r))
		return -ENOMEM;
	if (rec->type == TK_PERF_RECORD_SAMPLE) {
		/* Samples: the time through the memo and the fixed layout when they can. */
		idx = rec_evsel(r, rec);
		if (idx >= 0 && !r->evs[idx].ready &&
		    (ret = evsel_prepare(r, (size_t)idx, &r->evs[idx])))
			return ret;
		/* Only the time is needed to queue it: one load with the fixed layout. */
		if (idx >= 0 && (size_t)idx < r->nevs) {
			const struct fast_layout *f = &r->evs[idx].fast;

			if (f->ok && f->time && rec->size >= f->min) {
				uint64_t t = ld64((const uint8_t *)rec->data + f->time);

				if (t && t != UINT64_MAX)
					return enqueue(r, rec, t, idx);
			} else if (r->evs[idx].time_at &&
				   tk_perfdata_whole_evsel(r->pd, rec) == idx) {
				/* As process_srefs(): the reader decoded it whole. */
				uint64_t t = ld64((const uint8_t *)rec->data + r->evs[idx].time_at);

				if (t && t != UINT64_MAX)
					return r->window && time_drops(r, &r->evs[idx], t)
						       ? 0
						       : enqueue(r, rec, t, idx);
			}
		}
		return process_sample(r, rec, idx);
	}
	if (sideband_id_unknown(r, rec))
		return deliver(r, rec, -1);
	ret = tk_perfdata_parse_sample(r->pd, rec, &s);
	if (ret == 0 && (s.fields & TK_PERF_SAMPLE_TIME) && s.time && s.time != UINT64_MAX)
		return enqueue(r, rec, s.time, s.attr_index);
	return deliver(r, rec, -1);
}

/*
 * process() for a run of samples of the mapping (tk_perfdata_next_samples()):
 * one whose event the reader named, prepared, with the fixed layout and a
 * time is queued from its offset, as process() would queue it; any other
 * goes through process(). The run holds samples only, so the evsels cannot
 * change inside it.
 */
static int process_srefs(struct rep *r, const struct tk_perf_sref *refs, size_t n)
{
	int ret;

	r->st.records += n;
	r->st.samples += n;
	if (tk_perfdata_evsel_count(r->pd) != r->file_evsels && ensure_evsels(r))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct tk_perf_sref *s = &refs[i];
		const uint8_t *d = r->map + s->offset;
		struct tk_perf_record rec;
		int32_t idx = s->evsel;

		/* A known evsel decodes whole (struct tk_perf_sref): its time is there. */
		if (__builtin_expect(idx >= 0 && (size_t)idx < r->nevs && r->evs[idx].ready, 1) &&
		    r->evs[idx].time_at) {
			uint64_t t = ld64(d + r->evs[idx].time_at);

			/* A time to queue by, inside the --time window if any: one compare. */
			if (__builtin_expect(t - r->qt_lo < r->qt_span, 1) ||
			    (t && t != UINT64_MAX && !time_drops(r, &r->evs[idx], t))) {
				if (enqueue_at(r, s->offset, t, idx, r->evs[idx].qword))
					return -ENOMEM;
				continue;
			}
			if (t && t != UINT64_MAX)
				continue; /* dropped */
		}
		rec.type = TK_PERF_RECORD_SAMPLE;
		rec.misc = ld16(d + 4);
		rec.size = (uint16_t)s->size;
		rec.offset = s->offset;
		rec.compressed = false;
		rec.data = d;
		rec.extra = NULL;
		rec.extra_size = 0;
		rec.extra_offset = 0;
		ret = process(r, &rec);
		if (ret)
			return ret;
	}
	return 0;
}

/* perf's default --max-stack: this machine's kernel.perf_event_max_stack. */
static uint64_t read_max_stack(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "re");
	unsigned long long v = MAX_STACK_DEFAULT;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = MAX_STACK_DEFAULT;
		fclose(f);
	}
	return v;
}

static void rep_release(struct rep *r)
{
	for (size_t i = 0; i < r->nevs; i++) {
		free(r->evs[i].name);
		free(r->evs[i].name_col);
	}
	free(r->evs);
	for (size_t i = 0; i < r->procs.cap; i++) {
		struct proc *p = tk_idtable_at(&r->procs, sizeof(*p), i);

		if (p->pid < 0)
			continue;
		for (size_t j = 0; j < p->nmaps; j++)
			free(p->maps[j].path);
		free(p->maps);
	}
	free(r->procs.slots);
	tk_perf_kmods_release(&r->kmods);
	free(r->threads.slots);
	for (size_t i = 0; i < r->npfx_chunks; i++)
		free(r->pfx_chunks[i]);
	free(r->pfx_chunks);
	free(r->arenas[0].buf);
	free(r->arenas[1].buf);
	tk_big_free(r->q);
	tk_big_free(r->qtmp);
	free(r->runs);
	free(r->rlast);
	tk_unwind_free(r->unwind);
	for (size_t i = 0; i < r->nframe_chunks; i++)
		tk_big_free(r->frame_chunks[i]);
	free(r->frame_chunks);
	tk_big_free(r->frame_memo);
	if (r->frame_text.buf)
		tk_outbuf_release(&r->frame_text);
	tk_symbolizer_free(r->sym);
	tk_cache_close(r->cache);
	free(r->bids);
	tk_event_set_free(r->set);
	free(r->lazy);
	free(r->fmt_bad);
	free(r->ksym_text); /* after the set, which borrowed it */
	tk_outbuf_release(&r->out);
}

/* Count what perf script counts for its warnings about lost events. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels refuse it: pages fault in */
#endif

/*
 * The output buffer's pages in one call: a report fills its 1 MiB before
 * the first write(), and its 256 page faults (~11 us each on the VM
 * bench/README.md measures on) were 2.9 ms of every report, a twentieth
 * of a short file's. A file of less data than that gets as many pages as
 * its bytes (a line is about as long as its sample), a pipe none.
 */
static void out_populate(struct tk_outbuf *out, uint64_t data_size)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t from = ((uintptr_t)out->buf + page - 1) & ~(page - 1);
	size_t len = data_size < out->cap ? (size_t)data_size : out->cap;
	uintptr_t to = ((uintptr_t)out->buf + len) & ~(page - 1);

	if (to > from)
		madvise((void *)from, to - from, MADV_POPULATE_WRITE);
}

static void count_record(struct rep *r, const struct tk_perf_record *rec)
{
	r->st.records++;
	if (rec->type == TK_PERF_RECORD_SAMPLE) {
		r->st.samples++;
	} else if (rec->type == TK_PERF_RECORD_LOST) {
		r->st.lost_records++;
		if (rec->size >= 24)
			r->st.lost_events += ld64((const uint8_t *)rec->data + 16);
	} else if (rec->type == TK_PERF_RECORD_LOST_SAMPLES && rec->size >= 16) {
		r->st.lost_samples += ld64((const uint8_t *)rec->data + 8);
	}
}

/*
 * Whether any line may name a user-space address (a callchain, a stack to
 * unwind, --fields, a sample that prints its ip): else the processes'
 * maps are not kept. A file of tracepoints recorded with -a holds a map
 * record for every map of every process and a copy of them per fork
 * (irq-timer.data: 2 606 and 482, ~420 of its ~800 page faults) that no
 * line reads. A pipe may announce its events after the first maps: kept.
 */
static bool user_maps_needed(struct tk_perfdata *pd, const struct tk_perfdata_report_opts *opts)
{
	const uint64_t plain = TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME |
			       TK_PERF_SAMPLE_CPU | TK_PERF_SAMPLE_PERIOD | TK_PERF_SAMPLE_RAW |
			       TK_PERF_SAMPLE_ID | TK_PERF_SAMPLE_STREAM_ID |
			       TK_PERF_SAMPLE_IDENTIFIER;
	size_t n = tk_perfdata_evsel_count(pd);

	if (opts->fields || !n || tk_perfdata_get_info(pd)->pipe)
		return true;
	for (size_t i = 0; i < n; i++) {
		const struct tk_perf_attr *a = &tk_perfdata_evsel_get(pd, i)->attr;

		/*
		 * Tracepoints (type 2) print their format's text, not their
		 * ip; perf record's dummy event (side-band records) counts
		 * nothing, so it has no samples.
		 */
		if (a->type == PERF_TYPE_SOFTWARE && a->config == PERF_COUNT_SW_DUMMY)
			continue;
		if (a->type != 2 || (a->sample_type & ~plain))
			return true;
	}
	return false;
}

TK_API int tk_perfdata_report_run(struct tk_perfdata *pd,
				  const struct tk_perfdata_report_opts *user_opts,
				  struct tk_perfdata_report_stats *stats)
{
	struct tk_perfdata_report_opts opts_copy;
	const struct tk_perfdata_report_opts *opts = &opts_copy;
	struct tk_perf_sref srefs[SREF_BATCH];
	struct tk_perf_record rec;
	struct rep r;
	int ret;

	if (!user_opts)
		return tk_fail(EINVAL, "no report options");
	ret = tk_opts_copy(&opts_copy, sizeof(opts_copy), user_opts, "tk_perfdata_report_opts");
	if (ret < 0)
		return ret;
	ret = check_event_specs(pd, opts);
	if (ret < 0)
		return ret;
	pthread_once(&cpu_cols_once, cpu_cols_init);
	memset(&r, 0, sizeof(r));
	r.pd = pd;
	for (size_t i = 0; i < IDCACHE_SIZE; i++)
		r.idcache[i].evsel = -1;
	r.opts = opts;
	r.max_stack = opts->max_stack ? opts->max_stack : read_max_stack();
	r.nsec = opts->flags & TK_PERFDATA_REPORT_NSEC;
	r.filtering = opts->cpu_mask || opts->nevents || opts->npids || opts->ncomms ||
		      opts->ntids || opts->has_start || opts->has_end;
	r.window = opts->has_start || opts->has_end;
	r.user_maps = user_maps_needed(pd, opts);
	/* Queued times are 1 .. UINT64_MAX - 1 (process()), narrowed by the window. */
	r.qt_lo = opts->has_start && opts->start_ns > 1 ? opts->start_ns : 1;
	r.qt_span = !opts->has_end	     ? UINT64_MAX - r.qt_lo
		    : opts->end_ns > r.qt_lo ? opts->end_ns - r.qt_lo
					     : 0;
	ret = tk_outbuf_init(&r.out, opts->fd, 0);
	if (ret)
		return ret;
	if (!tk_perfdata_get_info(pd)->pipe)
		out_populate(&r.out, tk_perfdata_get_info(pd)->data_size);
	/*
	 * Symbols through the build-id cache (perf's ~/.debug, shared) when it
	 * exists: a report does not create one. Without a symbolizer ips
	 * still print, as [unknown].
	 */
	r.cache = tk_cache_open_existing(opts->cache_dir);
	r.sym = tk_symbolizer_new(r.cache);
	if (r.sym && (tk_symbolizer_set_symfs(r.sym, opts->symfs) < 0 ||
		      tk_symbolizer_set_kallsyms(r.sym, opts->kallsyms) < 0 ||
		      tk_symbolizer_set_vmlinux(r.sym, opts->vmlinux) < 0)) {
		rep_release(&r);
		return -ENOMEM;
	}
	r.map = tk_perfdata_mapping(pd, &r.map_len);
	if (r.map && perf_threads(&r) < 2 && tk_perfdata_read_kept(pd)) {
		r.map_moves = true;
		r.map_len = 0;
		r.map = tk_perfdata_kept_base(pd);
	}
	if (r.map) /* queued records stay where the reader mapped them */
		tk_perfdata_keep_from(pd, 0);

	r.pool = ppool_new(&r);
	for (;;) {
		/* The run of samples the reader hands out at once, then what ends it. */
		size_t n = r.map ? tk_perfdata_next_samples(pd, srefs, SREF_BATCH) : 0;

		if (r.map_moves)
			r.map = tk_perfdata_kept_base(pd);
		if (n) {
			ret = process_srefs(&r, srefs, n);
			if (ret)
				break;
			continue;
		}
		ret = tk_perfdata_next(pd, &rec);
		if (r.map_moves)
			r.map = tk_perfdata_kept_base(pd);
		if (ret != 1)
			break;
		count_record(&r, &rec);
		ret = process(&r, &rec);
		if (ret)
			break;
	}
	if (ret == 0)
		ret = flush_queue(&r, 0, true);
	if (r.pool) {
		int werr;

		ppool_finish(r.pool);
		werr = r.out.error;
		ppool_free(r.pool);
		r.pool = NULL;
		if (!ret && werr)
			ret = werr;
	}
	if (ret == -ENOMEM)
		tk_fail(ENOMEM, "out of memory");
	tk_outbuf_flush(&r.out);
	if (!ret && r.out.error)
		ret = r.out.error;
	if (stats) {
		*stats = r.st;
		stats->printed = r.printed;
	}
	rep_release(&r);
	return ret < 0 ? ret : 0;
}
