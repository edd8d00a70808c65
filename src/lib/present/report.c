// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * report: the merge and line printer behind `tracekit report`.
 *
 * The text is trace-cmd report 3.1.6's, byte for byte:
 *
 *   cpus=N
 *   [CPU:C [N EVENTS DROPPED]]            first record of a page flagged with drops
 *   %16s-%-5d [%03d] %5llu.%06llu: %s: %*s INFO
 *
 * comm right-aligned in 16 columns (never cut), pid left-aligned in 5,
 * CPU zero-padded to 3, the time as seconds and microseconds rounded
 * (ns + 500) / 1000 for the clocks trace-cmd shows in microseconds (local,
 * global, uptime, perf, mono*, tai, or any clock with TSC2NSEC), as
 * seconds and nanoseconds with -t, and as raw counts right-aligned in 12
 * columns for other clocks (counter, x86-tsc without TSC2NSEC), with or
 * without -t: libtraceevent's "%12d" time format computes 10^12 in an int,
 * which overflows, and prints the count whole (trace-cmd 3.1.6 and 3.4 alike). The event name is
 * followed by ": " and padded to 20 columns. One final newline of the event text is dropped (print
 * events carry the marker's newline). With -l the comm is cut to 8 columns, the CPU printed as %3d
 * and libtraceevent's latency flags follow.
 *
 * With buffer instances, every line is prefixed with the instance name
 * right-aligned to the longest instance name and ": "; the top buffer's
 * lines get as many spaces and two more (trace-cmd tags only instances).
 * With --cpu, trace-cmd 3.1.6 prints no instance records at all (it knows
 * the CPU count of the top buffer only), and neither do we.
 *
 * Merge: the k-way merge of internal/merge-heap.h over per-CPU streams
 * keyed by (timestamp, stream order), the order being buffer index then
 * CPU index, so ties resolve as trace-cmd's linear scan with "<" resolves
 * them; each stream embeds its key first. Each stream holds one
 * page (borrowed from its tk_dat_cpu_reader) and that page's records,
 * decoded in one pass by tk_page_iter_fill() into a fixed array of 512
 * (a whole 4 KiB page; bigger pages take several passes) with their
 * timestamps already converted to the shown clock (or, for the file's own
 * clock with no time option, a sum that taking a record adds), so taking
 * the next record is an index increment and no call. Memory stays 12 KiB a stream
 * whatever the file size.
 *
 * Per record, the line costs a few loads and copies: the type and pid are
 * read directly when the common fields have their usual layout, the
 * event pointer is kept per id, the name lookup is skipped while the
 * name table keeps its generation (the "%16s-%-5d" text is cached per
 * pid, and a cache hit is the whole lookup), the whole time column is
 * reused while the time rounds to the same microsecond (bench-report's
 * records come a few hundred ns apart; the family files' mostly do not)
 * and otherwise its seconds text while the second is the same, the options that change the
 * line are tested behind one flag each, and the heap is not touched while
 * the top stream still precedes its children (with two streams left, a
 * reorder is one swap made by selects). The event pointer is one load
 * from a dense table indexed by the 16-bit type. A run with none of the
 * options that change a line or pick records (plain_run(): nearly every
 * report) takes its own copy of the merge loop and of the workers' replay,
 * with the tests for those options compiled out (merge_loop()'s @plain).
 * What each of these saved is in bench/README.md ("report.c: instructions
 * per record", "report per record (stop 19)").
 *
 * The run goes in steps, each a function: report_setup() (tables, event
 * formats), report_open() ("cpus=N", the streams, the loss header),
 * merge_records() (the loop above, on one thread or feeding the print
 * pool), report_stats() (--stat, the counts, the losses, a cut CPU's
 * error) and report_release().
 *
 * Losses. Each page flagged with missed events is counted per CPU as it
 * is reached, and the kernel's counters are read from the CPUSTAT options
 * (overrun, commit overrun, dropped events, and "entries" still in the
 * buffer, which means the file lacks them). The default text stays
 * trace-cmd's, so these go to the log; TK_REPORT_HEADER reads every page
 * header first (a second reader per CPU, no record decoded) so that
 * "# events lost" and "# file is incomplete" lines can follow "cpus=N".
 * A CPU whose data ends early (read error, corrupt chunk, bad page or
 * record) stops there while the others print to their end, as trace-cmd
 * does, and the run then fails naming how far that CPU was read: output
 * is never cut silently, and one bad chunk does not hide the other CPUs.
 * That is a strict reader's damage; a salvaging one (tk_dat_open_with())
 * hands out only pages that decode and keeps its damage in the file's
 * list, so the run goes on past it and the caller reports the list. The
 * streams' readers do not walk a page's records before handing it out
 * (tk_dat_cpu_reader_defer_trim()): the fill that decodes the page checks
 * each record as that walk did, and a page it stops short of the end of is
 * trimmed by the reader then (stream_trim()) and decoded again, so one
 * walk a page is all a whole page costs.
 *
 * Filters combine as trace-cmd's: -F specs and --pid (common_pid, or a
 * "pid" or "next_pid" field) each select, and a record any of them selects
 * is shown unless a -v -F spec (a second libtraceevent filter) matches it;
 * a filter parses only the formats its event list names. -I and -S hide
 * records whose common_flags has the hard or soft irq bit, before the rest.
 * -r and -n set libtraceevent's PRINTRAW and NOHANDLE flags on the events
 * they name as each is parsed, and make every event print slowly (rare
 * options: the loop stays as it is); trace-cmd's own function graph and
 * function printers then step aside for the events named, as its do. --ts-diff and
 * -O print in the merge thread (each line depends on the one before; the
 * plugin options act in libtraceevent's printers only).
 * tk_report_run_files() runs one report per file and merges their heaps'
 * tops by time, every printer writing into the first file's buffer.
 * A guest's file (TIME_SHIFT) has each batch's raw times mapped to the
 * host's by its CPU's samples (tk_dat_host_time(), guest_times()) before
 * the conversion above, as trace-cmd does, so it merges into host time.
 *
 * Function-tracer events print as trace-cmd's own handlers and
 * libtraceevent's function plugin print them (funcgraph.c), which depend
 * on more than their record: a funcgraph entry is a leaf when the next
 * record of its buffer is its return (taken with it, never printed), and
 * a function line's indentation depends on every function record before.
 * Both are decided by the merge, in record order (fgraph_take(): one
 * record of look-ahead over the buffer's streams; fn_take()), and reach
 * the print pool's workers through the job log. The three event ids lie
 * in one small range, so every other line pays one compare for them.
 *
 * The time window is found by seeking each CPU to the page holding the
 * start (tk_dat_cpu_reader_seek_time(), a binary search), then skipping
 * records before it; the run ends at the first merged record at or past
 * the end. The raw timestamp for the seek is found by bisecting
 * tk_dat_timestamp(), which is monotonic, so TSC2NSEC and offsets need no
 * inverse.
 */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <pthread.h>
#include <regex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tracekit/cache.h>
#include <tracekit/event.h>
#include <tracekit/report.h>

#include <traceevent/event-parse.h>

#include "dat-read-internal.h"
#include "event-internal.h"
#include "funcgraph.h"
#include "page-internal.h"
#include "internal/error.h"
#include "internal/fsutil.h"
#include "internal/opts.h"
#include "internal/handoff.h"
#include "internal/merge-heap.h"
#include "print-pool.h"

/*
 * A format not parsed yet. A kernel's trace holds ~2300 formats and a
 * typical trace uses a dozen: libtraceevent parses each in ~50 us, which
 * alone would cost more than printing a million events. Only the "ID:"
 * line is read up front; the format is parsed when its first record (or
 * a name filter) needs it.
 */
struct lazy_fmt {
	const char *system;
	const char *text;
	uint64_t len;
	int8_t state;		   /* 0: not parsed, 1: parsed, -1: failed */
	int8_t selected;	   /* -1: not decided yet */
	bool named;		   /* an -F without a filter names it: no record test */
	int8_t negsel;		   /* -v: -1 not decided, 1 a -v -F names it, 0 none does */
	bool pid_fields_known;	   /* --pid: the two fields below were looked up */
	const struct tk_event *ev; /* once found: the set never replaces an id's event */
	/* --pid: the "pid" and "next_pid" fields trace-cmd's pid filter also compares. */
	const struct tk_event_field *pid_field, *next_pid_field;
};

struct stream {
	/* First: the heap holds pointers to it (internal/merge-heap.h). ts: of rec, as shown. */
	struct tk_merge_key key;
	struct tk_dat_cpu_reader *rd;
	struct tk_page_iter it;
	struct tk_page_record *recs;	  /* the page's records, decoded in one pass */
	const struct tk_page_record *rec; /* the current one */
	/*
	 * Added to a record's timestamp for the time shown: r->ts_add for a
	 * file's own clock with no time option (the records keep their raw
	 * times), else 0 (stream_refill() converted them).
	 */
	uint64_t ts_add;
	uint32_t nrecs, irec;
	uint32_t data_offset;
	uint32_t cpu;
	bool defer; /* the reader hands out pages unchecked (stream_trim()) */
	const struct tk_dat_buffer *buf;
	size_t buffer;
	int64_t page_missed;
	int64_t missed; /* for rec: 0, -1 (unknown count) or the count */
	uint64_t page_off;
	uint64_t events, lost, marks;
	uint64_t pages_flagged; /* pages with the missed-events bit */
	/* The kernel's counts from this CPU's CPUSTAT option (has_cpustat). */
	bool has_cpustat;
	uint64_t overrun, commit_overrun, dropped, entries;
	bool live; /* in the merge's heap: rec is the next to take */
	/* Set when the CPU's data ends early: how far it was read, and why. */
	bool cut;
	uint64_t cut_at, size;
	uint64_t file_base; /* file offset of the data; UINT64_MAX when compressed */
	size_t cpu_index;   /* in buf->cpus[] */
	/* --header's first pass over the page headers. */
	uint64_t pre_lost, pre_flagged, pre_marks, pre_cut_at;
	bool pre_cut;
	char *pre_msg; /* malloc'ed; NULL when out of memory */
	/*
	 * " [%03u]": written at open, read by every printer thread, so on a
	 * line of its own, away from the fields the merge writes per record
	 * (sharing one cost -j 2 a fifth of its CPU on kmem's file).
	 */
	char cpu_text[16] __attribute__((aligned(TK_LINE)));
	uint8_t cpu_len;
} __attribute__((aligned(TK_LINE)));

#define PCACHE_SIZE 1024
/* printer.blk_us, blk4_us when no time text is kept: no microsecond lies within 10^4 above it. */
#define NO_BLOCK (UINT64_MAX - 20000)
/* printer.t_us when no time text is kept: above every microsecond a 64-bit time rounds to. */
#define NO_TEXT UINT64_MAX

/* The "%16s-%-5d" column of one pid, as last printed. */
struct prefix {
	const char *comm;
	int pid;
	uint8_t len;
	char text[48];
};

/* The name a lookup gave a pid, valid while the comm table keeps its generation. */
struct comm_memo {
	const char *comm;
	int pid;
	uint32_t gen;
};

struct report;

#define PROBE_MEMO 256
/* Funcgraph records bigger than this are never leaves (theirs are 24 to 72 bytes). */
#define FG_COPY 256
/* fgraph_take(): the record was taken and the heap is in order already. */
#define FG_HEAP_DONE 2

/* The text --sym printed for one (event, address). */
struct probe_memo {
	uint64_t ip;
	int id; /* -1: empty */
	uint16_t len;
	char text[302];
};

/*
 * Everything the line printer needs about one record, as the merge decided
 * it (the name looked up, the filters passed): printing needs nothing
 * else, so lines can be printed on other threads than the merge's.
 */
struct line {
	const struct stream *s;	   /* CPU text and buffer name */
	const struct tk_event *ev; /* NULL: an unknown event */
	const char *comm;
	const void *data;
	uint32_t size;
	int pid;
	uint64_t ts;	/* as shown */
	int64_t missed; /* 0, -1 (unknown count) or the count */
};

/* One line printer: the main thread's, or a worker's. Its caches are its own. */
struct printer {
	const struct report *r;
	struct tk_outbuf *o;
	struct prefix *pcache;	    /* PCACHE_SIZE, by pid */
	bool shared;		    /* other printers run at the same time */
	pthread_mutex_t *slow_lock; /* shared: held around libtraceevent */
	struct tk_ksym_memo *memo;  /* shared: this printer's symbol lookups */
	bool us_text;		    /* put_time(): microseconds shown (r->usecs, no -t) */
	uint64_t sec_us;	    /* put_time(): the seconds t_text holds, in microseconds */
	uint8_t sec_len;	    /* the length of its " %5llu" (0: none yet) */
	uint64_t blk_us;	    /* and the 100 us whose first four decimals it holds */
	uint64_t blk4_us;	    /* and the 10^4 us whose first two decimals it holds */
	/*
	 * put_time(): the whole " %5llu.%06llu: " text of the microsecond
	 * last printed, t_us (NO_TEXT: none kept).
	 */
	uint64_t t_us;
	char t_text[32];
	uint8_t t_len;
	uint64_t diff_last; /* --ts-diff: the previous line's time, in the unit of the diff */
	/* A leaf funcgraph entry being printed: its return (fg_exit, or NULL) and the copies. */
	const void *fg_exit;
	uint32_t fg_exit_size;
	uint32_t fn_slot; /* an ftrace:function line: its indent + 1 (0: the plugin prints it) */
	uint8_t fg_entry_copy[FG_COPY], fg_exit_copy[FG_COPY];
} __attribute__((aligned(128))); /* written per line: lines of its own (see struct job) */

struct report {
	struct tk_dat *dat;
	const struct tk_dat_info *info;
	const struct tk_report_opts *opts;
	struct tk_event_set *set;
	struct tk_outbuf out;
	struct tk_dat_prefetch *pf; /* compressed streams' chunks decoded ahead, or NULL */
	struct stream *streams;
	size_t nstreams;
	struct tk_merge_key **heap; /* the live streams' keys (internal/merge-heap.h) */
	size_t nheap;
	struct printer pr;	     /* the main thread's line printer */
	struct comm_memo *cmemo;     /* PCACHE_SIZE, by pid */
	struct lazy_fmt *lazy;	     /* per event id */
	const struct tk_event **evs; /* per id 0..65535, once found: one dense load a record */
	size_t nlazy;
	int *order; /* ids in file order, for --stat */
	size_t norder;
	uint64_t *counts; /* per event id (0..65535) */
	uint64_t known;	  /* their sum (summing 64 Ki slots faulted in 512 KiB) */
	bool usecs;
	uint64_t ts_add;  /* tk_dat_timestamp() without TSC2NSEC: a sum */
	bool fast_common; /* type: 2 bytes, pid: 4, host order */
	bool filtering;	  /* -F, --pid, --comm, -I or -S given */
	/* -F: libtraceevent's filter (what trace-cmd itself runs), and a padded copy of the record.
	 */
	struct tep_event_filter *filter;
	struct tep_event_filter *negfilter; /* -v -F: records it matches are not shown */
	uint8_t *fscratch;
	uint32_t fscratch_used; /* bytes of fscratch the last record wrote; the rest is zero */
	bool diff_us;		/* --ts-diff in microseconds (trace-cmd: a trace clock, no -t) */
	bool special;		/* --stat or --json: no text lines */
	size_t room;		/* bytes free before a line that need no flush */
	uint32_t type_off, pid_off, common_size; /* fast_common: where type and pid are */
	bool instances;
	bool nomem;
	int label_width;
	/* Several files (tk_report_run_files()): this file's name, right-aligned to file_width. */
	const char *file_label;
	int file_width;
	const char *path;
	bool any_cpustat; /* the file has CPUSTAT options at all */
	/*
	 * The kernel's symbol table built on a spare core (symbols_early()):
	 * allowed for this run, started (by event_get(), for the first event
	 * whose format may print a symbol), and the thread.
	 */
	bool sym_early, sym_started;
	pthread_t sym_thread;
	/* The CPUs this run may use (tk_cores_allowed()); 0: not read yet. */
	unsigned int cores;
	/* --sym: where probe events fired (uprobes through the build-id cache, kprobes kallsyms).
	 */
	struct tk_symbolizer *sym;
	struct tk_cache *cache;
	const struct tk_event_field **probe_ip; /* per id: its __probe_ip, or &no_field */
	struct probe_memo *probe_memo;
	char cut_msg[512];		/* the first "file is incomplete" message */
	const struct stream *cut_first; /* the stream it is about */
	/*
	 * ftrace:function, funcgraph_entry and _exit (funcgraph.c): their ids
	 * (-1: none) and, so that other lines pay one test (fg_event()), the
	 * range [fg_lo, fg_lo + fg_span] holding them; the exit's event once a
	 * look-ahead met one.
	 */
	int fg_entry_id, fg_exit_id, fg_fn_id;
	uint32_t fg_lo, fg_span;
	uint64_t fg_mask; /* bit id - fg_lo of each (all set when the span passes 63) */
	const struct tk_event *fg_exit_ev;
	unsigned int fg_flags; /* TK_FGRAPH_*: trace-cmd's -O fgraph:tailprint, fgraph:depth */
	struct tk_fn_indent *fn_indent; /* ftrace:function's indentation, kept by the merge */
	/* trace-cmd's time options: shown_ts() makes every time (ts_custom set). */
	bool ts_custom;
	double ts2secs;	   /* --ts2secs: ns per count; 0: the file's conversion */
	uint64_t ts_plus;  /* added after the conversion (wrapping) */
	uint64_t ts_check; /* --ts-check: the previous shown record's time */
}
__attribute__((aligned(128))); /* read per line by workers: no neighbour of its lines is written */

static size_t probe_place(struct report *r, const struct tk_event *ev, int id, const void *data,
			  uint32_t size, char *buf, size_t cap);

static const char spaces[] = "                                                                ";

/* ------------------------------------------------------------ streams */

/*
 * The output buffer. Its pages are fresh memory, and each first touch is a
 * fault (~11 us on the reference VM): 256 KiB holds ~2700 lines, enough
 * that write() calls cost nothing, where 1 MiB cost ~3 ms of faults.
 */
#define OUT_BYTES (256u << 10)

/* Records decoded per call of tk_page_iter_fill(): a whole 4 KiB page. */
#define BATCH 512

static const char *buffer_label(const struct stream *s)
{
	return s->buf->name[0] ? s->buf->name : "(top)";
}

/*
 * Bad bytes at @in_page of the current page: named by file offset when the
 * data is stored as it is, by offset in the CPU's data when compressed.
 */
static void page_error(struct report *r, const struct stream *s, uint64_t in_page, const char *what)
{
	if (s->file_base != UINT64_MAX)
		tk_fail_at(EBADMSG, r->path, s->file_base + s->page_off + in_page,
			   "buffer %s cpu %u: %s", buffer_label(s), s->cpu, what);
	else
		tk_fail(EBADMSG,
			"%s: buffer %s cpu %u: offset 0x%" PRIx64 " of the uncompressed data: %s",
			r->path, buffer_label(s), s->cpu, s->page_off + in_page, what);
}

/*
 * A CPU's data ends early (a truncated or corrupt chunk, a bad page or
 * record): that stream stops, the others go on, and the run ends with
 * "file is incomplete" naming how far this CPU was read. Only running out
 * of memory stops everything at once.
 */
static int stream_cut(struct report *r, struct stream *s, int err, uint64_t at)
{
	if (err == -ENOMEM)
		return err;
	s->cut = true;
	s->cut_at = at;
	if (!r->cut_msg[0]) {
		r->cut_first = s;
		snprintf(r->cut_msg, sizeof(r->cut_msg),
			 "file is incomplete: buffer %s cpu %u: read 0x%" PRIx64 " of 0x%" PRIx64
			 " bytes of its data: %s",
			 buffer_label(s), s->cpu, at, s->size, tk_errmsg());
	}
	return 0;
}

/*
 * A raw time as trace-cmd shows it with its time options: the counts as
 * they are (--raw-ts), or converted (--ts2secs's factor in double, as
 * trace-cmd multiplies, else the file's TSC2NSEC) and offset by ts_plus
 * (the DATE and OFFSET options, --ts-offset, --align-ts).
 */
static uint64_t shown_ts(const struct report *r, uint64_t raw)
{
	uint64_t ts;

	if (r->opts->flags & TK_REPORT_RAW_TS)
		return raw;
	if (r->ts2secs)
		ts = (uint64_t)((double)raw * r->ts2secs);
	else if (r->info->has_tsc2nsec)
		ts = tk_dat_timestamp(r->dat, raw) - r->ts_add;
	else
		ts = raw;
	return ts + r->ts_plus;
}

/*
 * A guest file (TIME_SHIFT): a batch's raw times mapped to the host's raw
 * times with the samples of the stream's CPU, before any other conversion,
 * as trace-cmd does (not with --raw-ts, and only in the top buffer:
 * trace-cmd's instance handles start without the samples).
 */
static void guest_times(const struct report *r, const struct stream *s, int n)
{
	if ((r->opts->flags & TK_REPORT_RAW_TS) || s->buf->name[0])
		return;
	for (int i = 0; i < n; i++)
		s->recs[i].timestamp = tk_dat_host_time(r->dat, s->cpu, s->recs[i].timestamp);
}

/*
 * The fill stopped at a bad record on the first pass over a page that the
 * reader handed out unchecked (s->defer): the reader trims the page as it
 * would have before handing it out, and the page is decoded again from its
 * start, so the records are those of a checked page. @hdr: the page's
 * header, as trimmed. Return: as tk_page_iter_fill(), or -ENOMEM.
 */
static int __attribute__((noinline, cold))
stream_trim(struct stream *s, const void *page, struct tk_page_header *hdr)
{
	int ret = tk_dat_cpu_reader_trim_page(s->rd, page);

	if (ret < 0)
		return ret == -ENOMEM ? ret : -EBADMSG;
	ret = tk_page_iter_init(&s->it, &s->buf->page_format, page, s->buf->page_format.page_size,
				hdr);
	return ret < 0 ? ret : tk_page_iter_fill(&s->it, s->recs, BATCH);
}

/* The next page's records (or the next batch of a big page): 1, 0 at the end, or an error. */
static int __attribute__((noinline)) stream_refill(struct report *r, struct stream *s)
{
	int ret = tk_page_iter_fill(&s->it, s->recs, BATCH);

	for (;;) {
		const void *page;
		struct tk_page_header hdr;

		if (ret > 0) {
			struct tk_page_record *rec = s->recs;

			if (__builtin_expect(r->info->time_shift != NULL, 0))
				guest_times(r, s, ret);
			/* The shown time, for the whole batch in one loop. */
			if (__builtin_expect(r->ts_custom, 0)) {
				for (int i = 0; i < ret; i++)
					rec[i].timestamp = shown_ts(r, rec[i].timestamp);
			} else if (r->info->has_tsc2nsec) {
				for (int i = 0; i < ret; i++)
					rec[i].timestamp =
						tk_dat_timestamp(r->dat, rec[i].timestamp);
			} else {
				/* A sum: stream_next() adds it as it takes each record. */
				s->ts_add = r->ts_add;
			}
			s->nrecs = (uint32_t)ret;
			s->irec = 1;
			s->rec = rec;
			s->key.ts = rec->timestamp + s->ts_add;
			/*
			 * Only a page's first record reports its drops, and it
			 * is always the first of its page's first batch.
			 */
			s->missed = rec->offset == s->data_offset ? s->page_missed : 0;
			return 1;
		}
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0) {
			page_error(r, s, s->recs[0].offset, "record runs past the page data");
			return stream_cut(r, s, -EBADMSG, s->page_off);
		}
		if (s->page_off != UINT64_MAX)
			s->cut_at = s->page_off + s->buf->page_format.page_size;
		ret = tk_dat_cpu_reader_next_page(s->rd, &page, &s->page_off);
		if (ret < 0)
			return stream_cut(r, s, ret, s->cut_at);
		if (!ret)
			return 0;
		ret = tk_page_iter_init(&s->it, &s->buf->page_format, page,
					s->buf->page_format.page_size, &hdr);
		if (ret < 0) {
			page_error(r, s, 0, "bad page header");
			return stream_cut(r, s, -EBADMSG, s->page_off);
		}
		ret = tk_page_iter_fill(&s->it, s->recs, BATCH);
		/*
		 * A deferring reader's page is whole when this first pass ends
		 * at its end: BATCH holds every record of the page (defer is
		 * set only then), so stopping short of it means a bad record.
		 */
		if (s->defer && (ret < 0 || (ret < BATCH && !tk_page_iter_at_end(&s->it))))
			ret = stream_trim(s, page, &hdr);
		s->page_missed = !hdr.missed_events  ? 0
				 : hdr.missed_stored ? (int64_t)hdr.missed_count
						     : -1;
		if (s->page_missed) {
			s->pages_flagged++;
			if (s->page_missed > 0)
				s->lost += (uint64_t)s->page_missed;
			else
				s->marks++;
		}
	}
}

static inline int stream_next(struct report *r, struct stream *s)
{
	if (__builtin_expect(s->irec < s->nrecs, 1)) {
		const struct tk_page_record *rec = &s->recs[s->irec++];

		s->rec = rec;
		s->key.ts = rec->timestamp + s->ts_add;
		s->missed = 0;
		return 1;
	}
	return stream_refill(r, s);
}

/* The largest raw time whose shown time is <= @ns (0 when none is). */
static uint64_t raw_for_time(struct tk_dat *dat, uint64_t ns)
{
	uint64_t lo = 0, hi = UINT64_MAX >> 1;

	if (tk_dat_timestamp(dat, 0) > ns)
		return 0;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;

		if (tk_dat_timestamp(dat, mid) <= ns)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static bool cpu_wanted(const struct tk_report_opts *o, uint32_t cpu)
{
	if (!o->cpu_mask)
		return true;
	return cpu < o->cpu_mask_bits && (o->cpu_mask[cpu / 8] >> (cpu % 8) & 1);
}

/*
 * The first record of @s to show: at --start (seeking by time, then
 * skipping what precedes it in the page found). Return: 1, 0 when the
 * stream has none, or an error.
 */
static int stream_start(struct report *r, struct stream *s)
{
	int ret;

	/*
	 * The seek inverts tk_dat_timestamp(); other shown times, and a guest's
	 * corrected per CPU, read from the start.
	 */
	if (r->opts->has_start && !r->ts_custom && !r->info->time_shift) {
		ret = tk_dat_cpu_reader_seek_time(s->rd, raw_for_time(r->dat, r->opts->start_ns));
		if (ret < 0)
			return ret;
	}
	do {
		ret = stream_next(r, s);
	} while (ret == 1 && r->opts->has_start && s->key.ts < r->opts->start_ns);
	return ret;
}

static int open_streams(struct report *r)
{
	size_t nbuf = tk_dat_buffer_count(r->dat), n = 0, nbuffers = 0;
	int ret;

	for (size_t b = 0; b < nbuf; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(r->dat, b);

		if (buf->latency_text)
			continue;
		nbuffers++;
		n += buf->cpu_count;
		if (buf->name[0])
			r->instances = true;
	}
	r->streams = tk_line_calloc(n ? n : 1, sizeof(*r->streams));
	r->heap = calloc(n ? n : 1, sizeof(*r->heap));
	if (!r->streams || !r->heap)
		return tk_fail(ENOMEM, "cannot allocate %zu CPU streams", n);
	for (size_t b = 0; b < nbuf; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(r->dat, b);
		int w;

		if (buf->latency_text)
			continue;
		w = buf->name[0] ? (int)strnlen(buf->name, 256) : 0;
		if (w > r->label_width)
			r->label_width = w;
		/*
		 * trace-cmd 3.1.6 learns the CPU count of the top buffer only,
		 * so with --cpu an instance's records never match.
		 */
		if (buf->name[0] && r->opts->cpu_mask)
			continue;
		for (uint32_t c = 0; c < buf->cpu_count; c++) {
			struct stream *s = &r->streams[r->nstreams];

			if (!cpu_wanted(r->opts, buf->cpus[c].cpu))
				continue;
			s->buf = buf;
			s->buffer = b;
			s->cpu = buf->cpus[c].cpu;
			s->key.order = (uint32_t)r->nstreams;
			s->cpu_len = (uint8_t)snprintf(s->cpu_text, sizeof(s->cpu_text), " [%03u]",
						       s->cpu);
			s->data_offset = buf->page_format.data_offset;
			s->page_off = UINT64_MAX;
			s->file_base = buf->compressed ? UINT64_MAX : buf->cpus[c].offset;
			s->cpu_index = c;
			s->recs = malloc(BATCH * sizeof(*s->recs));
			if (!s->recs)
				return tk_fail(ENOMEM, "cannot allocate a CPU stream");
			s->rd = tk_dat_cpu_reader_new(r->dat, b, c);
			if (!s->rd) {
				free(s->recs);
				s->recs = NULL;
				return -errno;
			}
			/*
			 * The fill checks every record it decodes, so a salvaging
			 * reader need not walk the pages first, as long as one
			 * fill covers a page (every record takes 8 bytes or more).
			 */
			if ((buf->page_format.page_size - s->data_offset) / 8 <= BATCH)
				s->defer = tk_dat_cpu_reader_defer_trim(s->rd);
			r->nstreams++;
			s->size = tk_dat_cpu_reader_size(s->rd);
			ret = stream_start(r, s);
			if (ret < 0)
				return ret;
			if (ret == 1) {
				s->live = true;
				r->heap[r->nheap++] = &s->key;
				tk_merge_heap_up(r->heap, r->nheap);
			}
		}
	}
	return 0;
}

/* ------------------------------------------------------------ losses */

/* The number after "@key: " on a line of @t (length @n), or 0. */
static uint64_t stat_value(const char *t, size_t n, const char *key)
{
	size_t k = strlen(key);

	for (size_t pos = 0; pos < n;) {
		size_t end = pos;

		while (end < n && t[end] != '\n' && t[end] != '\0')
			end++;
		if (end - pos > k + 1 && !memcmp(t + pos, key, k) && t[pos + k] == ':') {
			uint64_t v = 0;
			size_t i = pos + k + 1;

			while (i < end && t[i] == ' ')
				i++;
			for (; i < end && t[i] >= '0' && t[i] <= '9'; i++) {
				if (v > (UINT64_MAX - 9) / 10)
					return UINT64_MAX;
				v = v * 10 + (uint64_t)(t[i] - '0');
			}
			return v;
		}
		pos = end + 1;
	}
	return 0;
}

/*
 * The kernel's per-CPU counters, from the CPUSTAT options: "CPU: N\n" and
 * the text of per_cpu/cpuN/stats, top buffer first; an instance's are
 * preceded by one whose text is "\nBuffer: NAME\n\n". "overrun" counts
 * events overwritten before they were read, "commit overrun" events lost
 * to nested writers, "dropped events" events refused by a full buffer that
 * does not overwrite: all three are lost. "entries" counts events still in
 * the buffer when the recorder stopped: they are not in the file.
 */
static void load_cpustat(struct report *r)
{
	const char *buffer = "";
	size_t nbuf = 0;

	for (size_t i = 0; i < tk_dat_option_count(r->dat); i++) {
		const struct tk_dat_option *o = tk_dat_option_get(r->dat, i);
		const char *t = o->data;
		size_t n = o->size;
		unsigned long cpu = 0;
		size_t k;

		if (o->id != TK_DAT_OPTION_CPUSTAT || !t)
			continue;
		r->any_cpustat = true;
		if (n > 9 && !memcmp(t, "\nBuffer: ", 9)) {
			/* The name runs to the next newline (or the end). */
			buffer = t + 9;
			nbuf = 0;
			while (9 + nbuf < n && buffer[nbuf] != '\n' && buffer[nbuf] != '\0')
				nbuf++;
			continue;
		}
		if (n < 6 || memcmp(t, "CPU: ", 5))
			continue;
		for (k = 5; k < n && t[k] >= '0' && t[k] <= '9' && cpu < 1u << 30; k++)
			cpu = cpu * 10 + (unsigned long)(t[k] - '0');
		for (size_t j = 0; j < r->nstreams; j++) {
			struct stream *s = &r->streams[j];

			if (s->cpu != cpu || strlen(s->buf->name) != nbuf ||
			    memcmp(s->buf->name, buffer, nbuf))
				continue;
			s->has_cpustat = true;
			s->overrun = stat_value(t + k, n - k, "overrun");
			s->commit_overrun = stat_value(t + k, n - k, "commit overrun");
			s->dropped = stat_value(t + k, n - k, "dropped events");
			s->entries = stat_value(t + k, n - k, "entries");
		}
	}
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static uint64_t kernel_lost(const struct stream *s)
{
	return add_sat(add_sat(s->overrun, s->commit_overrun), s->dropped);
}

/*
 * --header: read every page header first (the records are not decoded),
 * so that the header can give the counts the pages carry and say whether
 * every CPU's data reads to its end. This reads the data twice (for
 * compressed files: decompresses it twice); the default run learns the
 * same facts as it goes and reports them on stderr at the end.
 */
static int prescan(struct report *r, struct stream *s)
{
	struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(r->dat, s->buffer, s->cpu_index);
	/*
	 * The stream already holds its first page: page_error() names the
	 * scanned one, and the first job's log must still find the stream's.
	 */
	uint64_t off = 0, good = 0, page_off = s->page_off;
	const void *page;
	int ret;

	if (!rd)
		return -errno;
	while ((ret = tk_dat_cpu_reader_next_page(rd, &page, &off)) > 0) {
		struct tk_page_header hdr;

		if (tk_page_read_header(&s->buf->page_format, page, s->buf->page_format.page_size,
					&hdr) < 0) {
			s->page_off = off;
			page_error(r, s, 0, "bad page header");
			ret = -EBADMSG;
			break;
		}
		good = off + s->buf->page_format.page_size;
		if (hdr.missed_events) {
			s->pre_flagged++;
			if (hdr.missed_stored)
				s->pre_lost = add_sat(s->pre_lost, hdr.missed_count);
			else
				s->pre_marks++;
		}
	}
	tk_dat_cpu_reader_free(rd);
	s->page_off = page_off;
	if (ret < 0) {
		s->pre_cut = true;
		s->pre_cut_at = good;
		if (ret == -ENOMEM)
			return ret;
		s->pre_msg = strdup(tk_errmsg());
	}
	return 0;
}

/* A header or stderr line on the losses of @s ("" when none), without a newline. */
static void loss_text(const struct stream *s, uint64_t lost, uint64_t flagged, uint64_t marks,
		      char *out, size_t cap)
{
	char where[300];
	uint64_t total = s->has_cpustat && kernel_lost(s) > lost ? kernel_lost(s) : lost;
	int n;

	out[0] = '\0';
	if (!total && !flagged && !(s->has_cpustat && kernel_lost(s)))
		return;
	snprintf(where, sizeof(where), "%s%s%scpu %u", s->buf->name[0] ? "buffer " : "",
		 s->buf->name, s->buf->name[0] ? " " : "", s->cpu);
	n = snprintf(out, cap, "events lost: %s: %" PRIu64 "%s (", where, total,
		     marks ? " or more" : "");
	if (n < 0 || (size_t)n >= cap)
		return;
	if (s->has_cpustat)
		n += snprintf(out + n, cap - (size_t)n,
			      "kernel: %" PRIu64 " overrun, %" PRIu64 " commit overrun, %" PRIu64
			      " dropped; ",
			      s->overrun, s->commit_overrun, s->dropped);
	else
		n += snprintf(out + n, cap - (size_t)n, "no kernel counts in the file; ");
	if (n > 0 && (size_t)n < cap)
		snprintf(out + n, cap - (size_t)n,
			 "pages: %" PRIu64 " flagged, %" PRIu64 " counted%s)", flagged, lost,
			 marks ? ", some without a count" : "");
}

/* The header lines of --header: "# events lost: ..." and "# file is incomplete: ...". */
static void print_loss_header(struct report *r)
{
	char line[1024];

	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];

		loss_text(s, s->pre_lost, s->pre_flagged, s->pre_marks, line, sizeof(line));
		if (line[0]) {
			tk_outbuf_write(&r->out, "# ", 2);
			tk_outbuf_write(&r->out, line, strlen(line));
			tk_outbuf_write(&r->out, "\n", 1);
		}
	}
	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];
		int n = 0;

		if (s->has_cpustat && s->entries)
			n = snprintf(line, sizeof(line),
				     "# file is incomplete: %s%s%scpu %u: %" PRIu64
				     " events were still in the kernel buffer and are not in"
				     " the file\n",
				     s->buf->name[0] ? "buffer " : "", s->buf->name,
				     s->buf->name[0] ? " " : "", s->cpu, s->entries);
		if (n > 0)
			tk_outbuf_write(&r->out, line,
					(size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		if (s->pre_cut) {
			n = snprintf(line, sizeof(line),
				     "# file is incomplete: buffer %s cpu %u: read 0x%" PRIx64
				     " of 0x%" PRIx64 " bytes of its data: %s\n",
				     buffer_label(s), s->cpu, s->pre_cut_at, s->size,
				     s->pre_msg ? s->pre_msg : "out of memory");
			tk_outbuf_write(&r->out, line,
					(size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		}
	}
}

/* What the CPUSTAT options say, on stderr before the events (the text stays trace-cmd's). */
static void warn_cpustat(struct report *r)
{
	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];

		if (!s->has_cpustat)
			continue;
		if (kernel_lost(s))
			tk_warn("%s: buffer %s cpu %u: the kernel counted %" PRIu64
				" lost events (%" PRIu64 " overrun, %" PRIu64
				" commit overrun, %" PRIu64 " dropped)",
				r->path, buffer_label(s), s->cpu, kernel_lost(s), s->overrun,
				s->commit_overrun, s->dropped);
		if (s->entries)
			tk_warn("%s: file is incomplete: buffer %s cpu %u: %" PRIu64
				" events were still in the kernel buffer and are not in the file",
				r->path, buffer_label(s), s->cpu, s->entries);
	}
}

/* ------------------------------------------------------------ metadata */

/* The "ID: N" of a format text, or -1. */
static long format_id(const char *t, uint64_t len)
{
	uint64_t pos = 0;

	while (pos + 4 <= len) {
		if (!memcmp(t + pos, "ID:", 3)) {
			long id = 0;
			bool digits = false;

			pos += 3;
			while (pos < len && (t[pos] == ' ' || t[pos] == '\t'))
				pos++;
			while (pos < len && t[pos] >= '0' && t[pos] <= '9' && id <= 0xffff) {
				id = id * 10 + (t[pos++] - '0');
				digits = true;
			}
			return digits && id <= 0xffff ? id : -1;
		}
		while (pos < len && t[pos] != '\n')
			pos++;
		pos++;
	}
	return -1;
}

static int add_lazy(struct report *r, const char *system, const struct tk_dat_text *t)
{
	long id = format_id(t->data, t->len);
	int ret;

	if (id < 0) {
		/* No id line: let the parser say what is wrong (it is skipped). */
		ret = tk_event_set_add_format(r->set, system, t->data, t->len);
		return ret == -ENOMEM ? ret : 0;
	}
	if (!r->lazy) {
		/*
		 * Every id (format_id() gives 0..65535) at once: glibc maps a
		 * block this size fresh, and only the pages holding the file's
		 * ids are ever touched. Grown to each higher id, the table was
		 * zeroed and copied up to the highest (~10 page faults for ids
		 * in the 500s).
		 */
		r->lazy = calloc(65536, sizeof(*r->lazy));
		if (!r->lazy)
			return tk_fail(ENOMEM, "cannot allocate the format table");
		r->nlazy = 65536;
	}
	/* The first format with an id wins, as when parsing them all. */
	if (r->lazy[id].text)
		return 0;
	r->lazy[id].system = system;
	r->lazy[id].text = t->data;
	r->lazy[id].len = t->len;
	r->lazy[id].selected = -1;
	r->lazy[id].negsel = -1;
	{
		int *o = realloc(r->order, (r->norder + 1) * sizeof(*o));

		if (!o)
			return tk_fail(ENOMEM, "cannot allocate the format table");
		r->order = o;
		r->order[r->norder++] = (int)id;
	}
	return 0;
}

/* Whether -r or -n pattern @pat matches @name or @system, as trace-cmd matches them. */
static bool event_pattern(const char *pat, const char *system, const char *name)
{
	char *re = NULL;
	regex_t reg;
	bool hit = false;

	if (asprintf(&re, "^%s$", pat) < 0)
		return false;
	if (!regcomp(&reg, re, REG_ICASE | REG_NOSUB)) {
		hit = !regexec(&reg, name, 0, NULL, 0) || !regexec(&reg, system, 0, NULL, 0);
		regfree(&reg);
	}
	free(re);
	return hit;
}

/* -r, -n: libtraceevent's flags on a newly parsed event (which they make print slowly). */
static void __attribute__((noinline)) event_flags(const struct report *r, const struct tk_event *ev)
{
	const struct tk_report_opts *opts = r->opts;

	for (size_t i = 0; i < opts->nraw_events; i++)
		if (event_pattern(opts->raw_events[i], ev->system, ev->name))
			ev->tev->flags |= TEP_EVENT_FL_PRINTRAW;
	for (size_t i = 0; i < opts->nnohandle_events; i++)
		if (event_pattern(opts->nohandle_events[i], ev->system, ev->name))
			ev->tev->flags |= TEP_EVENT_FL_NOHANDLE;
}

/*
 * Whether printing events of format @l may look a kernel symbol up: a
 * "%ps"-like conversion, or a field that libtraceevent's plugins and the
 * compiled printer print by name (call_site, function, ip, func). A guess
 * that errs towards yes: it only decides whether the table is built ahead
 * on a spare core (symbols_early()); a lookup builds it anyway.
 */
static bool format_wants_symbols(const struct lazy_fmt *l)
{
	static const char *const marks[] = {"%ps",	 "%pS",	     "%pf",  "%pF", "%pB",
					    "call_site", "function", " ip;", "func"};
	size_t len = (size_t)l->len;

	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		if (memmem(l->text, len, marks[i], strlen(marks[i])))
			return true;
	return !strcmp(l->system, "ftrace") || !strcmp(l->system, "kprobes");
}

static void symbols_start(struct report *r);

/* The event of type @id, parsing its format on first use; NULL if none. */
static const struct tk_event *event_get(struct report *r, int id)
{
	struct lazy_fmt *l;

	if (id < 0 || (size_t)id >= r->nlazy || !r->lazy[id].text)
		return tk_event_find(r->set, id);
	l = &r->lazy[id];
	if (l->ev)
		return l->ev;
	if (!l->state) {
		int ret;

		/* Parsing goes through libtraceevent, which printers may be inside. */
		if (r->pr.shared)
			pthread_mutex_lock(r->pr.slow_lock);
		ret = tk_event_set_add_format(r->set, l->system, l->text, l->len);
		if (r->pr.shared)
			pthread_mutex_unlock(r->pr.slow_lock);
		l->state = ret == id ? 1 : -1;
		if (ret == -ENOMEM)
			r->nomem = true;
	}
	l->ev = tk_event_find(r->set, id);
	if (l->ev)
		r->evs[id] = l->ev;
	if (__builtin_expect(r->sym_early && !r->sym_started, 0) && l->ev &&
	    format_wants_symbols(l))
		symbols_start(r);
	if (l->ev && (r->opts->nraw_events || r->opts->nnohandle_events))
		event_flags(r, l->ev);
	return l->ev;
}

/* Whether events of type @id pass -F (and count for --stat). */
static bool event_selected(struct report *r, int id, const struct tk_event *ev)
{
	struct lazy_fmt *l;

	if (!r->opts->nevents)
		return true;
	if (!ev || id < 0 || (size_t)id >= r->nlazy)
		return !ev;
	l = &r->lazy[id];
	if (l->selected < 0)
		l->selected = l->named || (r->filter && tep_event_filtered(r->filter, id));
	return l->selected;
}

/*
 * --kallsyms FILE: its text, then the file's, as one kallsyms text. That
 * is what trace-cmd's two reads give libtraceevent: at an address both
 * name, the later (the file's) is found first.
 */
static int add_user_kallsyms(struct report *r)
{
	struct tk_dat_text t = {NULL, 0};
	char *user = NULL, *all;
	size_t len = 0, at;
	int ret;

	ret = tk_read_file(r->opts->kallsyms, &user, &len);
	if (ret < 0)
		return ret; /* the message names the file */
	len = strnlen(user, len);
	if (tk_dat_kallsyms(r->dat, &t))
		t.len = 0;
	all = malloc(len + 1 + t.len + 1);
	if (!all) {
		free(user);
		return tk_fail(ENOMEM, "cannot join the kallsyms texts: out of memory");
	}
	memcpy(all, user, len);
	at = len;
	if (at && all[at - 1] != '\n')
		all[at++] = '\n';
	if (t.len)
		memcpy(all + at, t.data, t.len);
	at += t.len;
	all[at] = '\0';
	free(user);
	ret = tk_event_set_add_kallsyms(r->set, all, at);
	free(all);
	return ret == -ENOMEM ? ret : 0;
}

/* The event set's kallsyms source: the file's text, borrowed while the file is open. */
static int dat_kallsyms_text(void *dat, const char **text, size_t *len)
{
	struct tk_dat_text t;

	if (tk_dat_kallsyms(dat, &t) || !t.len)
		return -1;
	*text = t.data;
	*len = t.len;
	return 0;
}

/* The event set's saved cmdlines: the file's text, borrowed while the file is open. */
static int dat_cmdlines_text(void *dat, const char **text, size_t *len)
{
	struct tk_dat_text t;

	if (tk_dat_cmdlines(dat, &t) || !t.len)
		return -1;
	*text = t.data;
	*len = t.len;
	return 0;
}

static int load_events(struct report *r)
{
	struct tk_dat_text t;
	int ret;

	r->set = tk_event_set_new(r->info->long_size == 4 ? 4 : 8, r->info->big_endian,
				  r->info->page_format.page_size);
	if (!r->set)
		return -errno;
	if (!tk_dat_header_page(r->dat, &t) && t.len)
		tk_event_set_add_header_page(r->set, t.data, t.len);
	/*
	 * Handlers attach to formats parsed later, by name; the plugins load
	 * before the first format one of them may act on (all at once with
	 * -O, whose names are checked against theirs). -N: libtraceevent
	 * prints without.
	 */
	if (!(r->opts->flags & TK_REPORT_NO_PLUGINS)) {
		ret = r->opts->nplugin_options ? tk_event_set_load_plugins(r->set)
					       : tk_event_set_plugins_on_demand(r->set);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < tk_dat_ftrace_format_count(r->dat); i++) {
		if (!tk_dat_ftrace_format(r->dat, i, &t)) {
			ret = add_lazy(r, "ftrace", &t);
			if (ret)
				return ret;
		}
	}
	for (size_t s = 0; s < tk_dat_system_count(r->dat); s++) {
		const char *sys = tk_dat_system_name(r->dat, s);

		for (size_t i = 0; i < tk_dat_system_format_count(r->dat, s); i++) {
			if (!tk_dat_system_format(r->dat, s, i, &t)) {
				ret = add_lazy(r, sys, &t);
				if (ret)
					return ret;
			}
		}
	}
	/* The common fields (type, pid) come with the first format parsed. */
	for (size_t i = 0; i < r->norder && !r->set->have_common; i++)
		event_get(r, r->order[i]);
	if (r->nomem)
		return tk_fail(ENOMEM, "cannot parse an event format: out of memory");
	if (r->opts->kallsyms) {
		ret = add_user_kallsyms(r);
		if (ret)
			return ret;
	} else {
		/* The file's kallsyms are read (decoded) only if a symbol is looked up. */
		ret = tk_event_set_add_kallsyms_source(r->set, dat_kallsyms_text, (void *)r->dat);
		if (ret == -ENOMEM)
			return ret;
	}
	if (!tk_dat_printk(r->dat, &t) && t.len) {
		ret = tk_event_set_add_printk(r->set, t.data, t.len);
		if (ret == -ENOMEM)
			return ret;
	}
	/* Read (from the file, too) when a name is first needed. */
	return tk_event_set_add_cmdlines_source(r->set, dat_cmdlines_text, (void *)r->dat);
}

/*
 * -F as trace-cmd reads it: "EVENT[,EVENT]:FILTER" in libtraceevent's filter
 * language, the code trace-cmd itself runs, so that a filter selects the
 * same records and a bad one fails the same way. Names match only events
 * libtraceevent has parsed, so every format is parsed first (lazily parsed
 * formats are otherwise parsed when a record needs them). An event no -F
 * names is not shown, as in trace-cmd.
 */
#define FSCRATCH_BYTES (64u << 10)
#define FSCRATCH_PAD   4096u

/*
 * A field name of @spec's filter that no filtered event has (its name in
 * @name): libtraceevent takes such a comparison as false and the report
 * would be silently empty. COMM and CPU are libtraceevent's own names.
 */
static bool unknown_field(struct report *r, struct tep_event_filter *filter, const char *spec,
			  char *name, size_t cap)
{
	const char *p = strchr(spec, ':');

	for (p = p ? p + 1 : ""; *p;) {
		bool found = false;
		size_t n = 0;

		if (*p == '"' || *p == '\'') {
			char quote = *p++;

			while (*p && *p != quote)
				p += p[0] == '\\' && p[1] ? 2 : 1;
			p += *p != '\0';
			continue;
		}
		/* A number ("0x10", "1e3") names no field, whatever letters it holds. */
		if (*p >= '0' && *p <= '9') {
			while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
			       *p == '.' || (*p >= '0' && *p <= '9'))
				p++;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_')) {
			p++;
			continue;
		}
		while ((p[n] >= 'a' && p[n] <= 'z') || (p[n] >= 'A' && p[n] <= 'Z') ||
		       p[n] == '_' || (p[n] >= '0' && p[n] <= '9'))
			n++;
		snprintf(name, cap, "%.*s", (int)n, p);
		p += n;
		if (!strcmp(name, "COMM") || !strcmp(name, "CPU"))
			continue;
		for (size_t i = 0; i < r->norder && !found; i++) {
			const struct tk_event *ev = r->lazy[r->order[i]].ev;

			found = ev && tep_event_filtered(filter, r->order[i]) &&
				tk_event_field_find(ev, name);
		}
		if (!found)
			return true;
	}
	return false;
}

/*
 * The name of a lazily parsed format ("name: X" line), without parsing it:
 * an -F of names alone selects events without libtraceevent's filter.
 */
static bool format_name(const char *t, uint64_t len, char *out, size_t cap)
{
	size_t n = 0;

	if (len < 5 || memcmp(t, "name:", 5))
		return false;
	t += 5;
	len -= 5;
	while (len && (*t == ' ' || *t == '\t')) {
		t++;
		len--;
	}
	while (len && *t != '\n' && n + 1 < cap) {
		out[n++] = *t++;
		len--;
	}
	out[n] = '\0';
	return n > 0;
}

/* -r or -n names ftrace event @name: trace-cmd's own printer for it is then bypassed too. */
static bool fgraph_flagged(const struct report *r, const char *name)
{
	const struct tk_report_opts *opts = r->opts;

	for (size_t i = 0; i < opts->nraw_events; i++)
		if (event_pattern(opts->raw_events[i], "ftrace", name))
			return true;
	for (size_t i = 0; i < opts->nnohandle_events; i++)
		if (event_pattern(opts->nohandle_events[i], "ftrace", name))
			return true;
	return false;
}

/* The ids of ftrace's function and funcgraph events, when the file has their formats. */
static void fgraph_ids(struct report *r)
{
	int lo = INT32_MAX, hi = -1;

	for (size_t i = 0; i < r->norder; i++) {
		const struct lazy_fmt *f = &r->lazy[r->order[i]];
		int id = r->order[i];
		char name[32];

		if (strcmp(f->system, "ftrace") ||
		    !format_name(f->text, f->len, name, sizeof(name)) ||
		    (strcmp(name, "funcgraph_exit") && fgraph_flagged(r, name)))
			continue;
		if (!strcmp(name, "funcgraph_entry") && r->fg_entry_id < 0)
			r->fg_entry_id = id;
		else if (!strcmp(name, "funcgraph_exit") && r->fg_exit_id < 0)
			r->fg_exit_id = id;
		else if (!strcmp(name, "function") && r->fg_fn_id < 0)
			r->fg_fn_id = id;
		else
			continue;
		lo = id < lo ? id : lo;
		hi = id > hi ? id : hi;
	}
	if (hi >= 0) {
		r->fg_lo = (uint32_t)lo;
		r->fg_span = (uint32_t)(hi - lo);
		r->fg_mask = r->fg_span > 63 ? UINT64_MAX : 0;
		for (int i = 0; i < 3 && r->fg_span <= 63; i++) {
			int id = i == 0 ? r->fg_fn_id : i == 1 ? r->fg_entry_id : r->fg_exit_id;

			if (id >= 0)
				r->fg_mask |= 1ull << (id - lo);
		}
	}
}

/*
 * One name of an -F without a filter, matched as libtraceevent matches
 * event names in a filter: "SYSTEM/EVENT", or a name that is the event's or
 * its system's, each an anchored, case-blind regular expression.
 */
static int name_spec(struct report *r, const char *part)
{
	const char *slash = strchr(part, '/');
	char *ev_re = NULL, *sys_re = NULL;
	regex_t ev, sys;
	bool found = false;
	int ret = 0;

	if (asprintf(&ev_re, "^%s$", slash ? slash + 1 : part) < 0)
		ev_re = NULL;
	if (slash && asprintf(&sys_re, "^%.*s$", (int)(slash - part), part) < 0)
		sys_re = NULL;
	if (!ev_re || (slash && !sys_re)) {
		free(ev_re);
		free(sys_re);
		return tk_fail(ENOMEM, "out of memory");
	}
	if (regcomp(&ev, ev_re, REG_ICASE | REG_NOSUB)) {
		ret = tk_fail(EINVAL, "-F '%s': not a regular expression", part);
		goto out_free;
	}
	if (regcomp(&sys, slash ? sys_re : ev_re, REG_ICASE | REG_NOSUB)) {
		ret = tk_fail(EINVAL, "-F '%s': not a regular expression", part);
		goto out_ev;
	}
	for (size_t i = 0; i < r->norder; i++) {
		struct lazy_fmt *l = &r->lazy[r->order[i]];
		char name[256];
		bool ok;

		if (!format_name(l->text, l->len, name, sizeof(name)))
			continue;
		ok = slash ? !regexec(&sys, l->system, 0, NULL, 0) &&
				     !regexec(&ev, name, 0, NULL, 0)
			   : !regexec(&ev, name, 0, NULL, 0) ||
				     !regexec(&sys, l->system, 0, NULL, 0);
		if (ok)
			l->named = found = true;
	}
	if (!found)
		ret = tk_fail(EINVAL, "-F '%s': no event found", part);
	regfree(&sys);
out_ev:
	regfree(&ev);
out_free:
	free(ev_re);
	free(sys_re);
	return ret;
}

/* @s without the blanks around it, in place (libtraceevent trims event names so). */
static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/*
 * Parse the formats the event list of @spec (before its ':') can name, so
 * that libtraceevent's filter, which only sees parsed events, finds them:
 * each "SYSTEM/EVENT" or NAME (an event's or a system's) as libtraceevent
 * matches it, an anchored case-blind regular expression. Parsing every
 * format instead cost 0.3 to 1 s on a kernel's 2300 formats before the
 * first line, whatever the file's size. A part that is no regular
 * expression, or a format without a "name:" line, has everything parsed,
 * so libtraceevent still decides (and words the error).
 */
static void parse_spec_events(struct report *r, const char *spec)
{
	const char *colon = strchr(spec, ':');
	char *list = strndup(spec, colon ? (size_t)(colon - spec) : strlen(spec));
	char *save = NULL;

	if (!list) {
		r->nomem = true;
		return;
	}
	for (char *part = strtok_r(list, ",", &save); part; part = strtok_r(NULL, ",", &save)) {
		char *slash = strchr(part, '/'), *ev_re = NULL, *sys_re = NULL;
		const char *ev_name, *sys_name;
		regex_t ev, sys;
		bool all = false;

		if (slash)
			*slash = '\0';
		ev_name = trim(slash ? slash + 1 : part);
		sys_name = slash ? trim(part) : ev_name;
		if (asprintf(&ev_re, "^%s$", ev_name) < 0)
			ev_re = NULL;
		if (asprintf(&sys_re, "^%s$", sys_name) < 0)
			sys_re = NULL;
		if (!ev_re || !sys_re) {
			free(ev_re);
			free(sys_re);
			r->nomem = true;
			break;
		}
		if (regcomp(&ev, ev_re, REG_ICASE | REG_NOSUB)) {
			all = true;
		} else if (regcomp(&sys, sys_re, REG_ICASE | REG_NOSUB)) {
			regfree(&ev);
			all = true;
		}
		for (size_t i = 0; i < r->norder; i++) {
			struct lazy_fmt *l = &r->lazy[r->order[i]];
			char name[256];
			bool ok;

			if (l->state)
				continue;
			if (all || !format_name(l->text, l->len, name, sizeof(name)))
				ok = true;
			else if (slash)
				ok = !regexec(&sys, l->system, 0, NULL, 0) &&
				     !regexec(&ev, name, 0, NULL, 0);
			else
				ok = !regexec(&ev, name, 0, NULL, 0) ||
				     !regexec(&sys, l->system, 0, NULL, 0);
			if (ok)
				event_get(r, r->order[i]);
		}
		if (!all) {
			regfree(&ev);
			regfree(&sys);
		}
		free(ev_re);
		free(sys_re);
	}
	free(list);
}

static int load_filter(struct report *r)
{
	bool filters = false;

	if (!r->opts->nevents)
		return 0;
	/* Names alone: matched here, records of those events all shown. */
	for (size_t k = 0; k < r->opts->nevents; k++) {
		const char *spec = r->opts->events[k];
		char *copy, *save = NULL;
		int ret = 0;

		if (strchr(spec, ':')) {
			filters = true;
			continue;
		}
		copy = strdup(spec);
		if (!copy)
			return tk_fail(ENOMEM, "out of memory");
		for (char *part = strtok_r(copy, ",", &save); part && !ret;
		     part = strtok_r(NULL, ",", &save))
			ret = name_spec(r, part);
		free(copy);
		if (ret)
			return ret;
	}
	if (!filters)
		return 0;
	for (size_t k = 0; k < r->opts->nevents; k++)
		if (strchr(r->opts->events[k], ':'))
			parse_spec_events(r, r->opts->events[k]);
	if (r->nomem)
		return tk_fail(ENOMEM, "cannot parse an event format: out of memory");
	r->filter = tep_filter_alloc(r->set->tep);
	/* A filter on COMM asks libtraceevent's table. */
	tk_event_comm_tep(r->set);
	r->fscratch = calloc(FSCRATCH_BYTES + FSCRATCH_PAD, 1);
	if (!r->filter || !r->fscratch)
		return tk_fail(ENOMEM, "cannot allocate an event filter");
	for (size_t k = 0; k < r->opts->nevents; k++) {
		const char *spec = r->opts->events[k];
		enum tep_errno e;
		char why[256];

		if (!strchr(spec, ':'))
			continue;
		if (tk_event_filter_check(spec))
			return -EINVAL;
		e = tep_filter_add_filter_str(r->filter, spec);
		if (e == TEP_ERRNO__SUCCESS) {
			if (unknown_field(r, r->filter, spec, why, sizeof(why)))
				return tk_fail(EINVAL,
					       "-F '%s': no event it names has a field '%s'", spec,
					       why);
			continue;
		}
		if (tep_filter_strerror(r->filter, e, why, sizeof(why)) < 0)
			snprintf(why, sizeof(why), "not understood");
		/* libtraceevent's message can point at the error on a second line: one line. */
		for (char *c = why; *c; c++)
			if (*c == '\n')
				*c = ' ';
		return tk_fail(EINVAL, "-F '%s': %s", spec, why);
	}
	return 0;
}

/*
 * -v -F: trace-cmd hands each spec, names alone included, to
 * libtraceevent's filter and hides the records it matches; an event no
 * spec names is not touched. The same checks as -F's make a spec that
 * names nothing, or a field no named event has, a usage error.
 */
static int load_neg_filter(struct report *r)
{
	if (!r->opts->nneg_events)
		return 0;
	for (size_t k = 0; k < r->opts->nneg_events; k++)
		parse_spec_events(r, r->opts->neg_events[k]);
	if (r->nomem)
		return tk_fail(ENOMEM, "cannot parse an event format: out of memory");
	r->negfilter = tep_filter_alloc(r->set->tep);
	tk_event_comm_tep(r->set);
	if (!r->fscratch)
		r->fscratch = calloc(FSCRATCH_BYTES + FSCRATCH_PAD, 1);
	if (!r->negfilter || !r->fscratch)
		return tk_fail(ENOMEM, "cannot allocate an event filter");
	for (size_t k = 0; k < r->opts->nneg_events; k++) {
		const char *spec = r->opts->neg_events[k];
		enum tep_errno e;
		char why[256];

		if (strchr(spec, ':') && tk_event_filter_check(spec))
			return -EINVAL;
		e = tep_filter_add_filter_str(r->negfilter, spec);
		if (e == TEP_ERRNO__SUCCESS) {
			if (unknown_field(r, r->negfilter, spec, why, sizeof(why)))
				return tk_fail(EINVAL,
					       "-v -F '%s': no event it names has a field '%s'",
					       spec, why);
			continue;
		}
		if (tep_filter_strerror(r->negfilter, e, why, sizeof(why)) < 0)
			snprintf(why, sizeof(why), "not understood");
		for (char *c = why; *c; c++)
			if (*c == '\n')
				*c = ' ';
		return tk_fail(EINVAL, "-v -F '%s': %s", spec, why);
	}
	return 0;
}

/*
 * Whether the record passes its event's -F filter. libtraceevent reads
 * fields at their format offsets whatever the record's size: it gets a
 * copy followed by zeroes, as the slow printer does.
 */
static bool __attribute__((noinline))
filter_match(struct report *r, struct tep_event_filter *filter, const struct stream *s,
	     const void *data, uint32_t size)
{
	struct tep_record rec;

	if (size > FSCRATCH_BYTES)
		size = FSCRATCH_BYTES;
	/*
	 * The bytes past @size must read as zero: only those an earlier,
	 * longer record wrote are cleared (clearing the whole pad cost a
	 * quarter of the run when most records are filtered).
	 */
	memcpy(r->fscratch, data, size);
	if (r->fscratch_used > size)
		memset(r->fscratch + size, 0, r->fscratch_used - size);
	r->fscratch_used = size;
	memset(&rec, 0, sizeof(rec));
	rec.ts = s->key.ts;
	rec.cpu = (int)s->cpu;
	rec.data = r->fscratch;
	rec.size = (int)size;
	return tep_filter_match(filter, &rec) == TEP_ERRNO__FILTER_MATCH;
}

/* ------------------------------------------------------------ printing */

static inline void put(struct tk_outbuf *o, const char *s, size_t n)
{
	tk_copy(o->buf + o->len, s, n);
	o->len += n;
}

static inline void put_pad(struct tk_outbuf *o, size_t n)
{
	while (n) {
		size_t k = n < sizeof(spaces) - 1 ? n : sizeof(spaces) - 1;

		put(o, spaces, k);
		n -= k;
	}
}

static inline size_t fmt_u(char *tmp, uint64_t v)
{
	return (size_t)(tk_put_u64(tmp, v) - tmp);
}

static inline void put_u_width(struct tk_outbuf *o, uint64_t v, size_t width, char pad)
{
	char tmp[24];
	size_t n = fmt_u(tmp, v);

	for (; n < width; width--)
		o->buf[o->len++] = pad;
	put(o, tmp, n);
}

static const char digit_pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
				  "31323334353637383940414243444546474849505152535455565758596061"
				  "62636465666768697071727374757677787980818283848586878889909192"
				  "939495969798991";

/* The six decimals of @frac (below 10^6), as three digit pairs. */
static inline void put_frac6(char *d, uint32_t frac)
{
	memcpy(d, digit_pairs + 2 * (frac / 10000), 2);
	memcpy(d + 2, digit_pairs + 2 * (frac / 100 % 100), 2);
	memcpy(d + 4, digit_pairs + 2 * (frac % 100), 2);
}

/*
 * " %5llu.%06llu: " of microseconds, the clocks most files use. Records
 * that come a few hundred nanoseconds apart show the same microsecond
 * several in a row: its text is kept with that microsecond, and a hit is
 * the rounding (a multiply), one compare and one 32-byte copy (put_time()).
 * Misses are most lines of the bench files (85% on sched's, nearly all
 * of marker's and power's), so the microsecond is computed once for both. A
 * miss in the same second (nearly all of them) rewrites only the six
 * decimals inside that kept text, as three digit pairs, and copies it out
 * whole; the seconds are formatted only when they change.
 * Most misses fall in the same 100 microseconds as the kept text (records
 * microseconds apart): those rewrite the last pair alone; most others fall
 * in the same 10 ms (an idle CPU's records, power's file: 56% of its
 * lines) and rewrite the last two pairs.
 */
static void __attribute__((noinline)) put_time_us_block(struct printer *p, uint64_t us);

static void __attribute__((noinline)) put_time_us_miss(struct printer *p, uint64_t us)
{
	struct tk_outbuf *o = p->o;
	uint64_t d = us - p->blk_us;

	/* blk_us, blk4_us are NO_BLOCK (above every us that reaches here) when no text is kept. */
	if (__builtin_expect(d >= 100, 0)) {
		uint64_t d4 = us - p->blk4_us;
		uint32_t hi, lo;

		if (d4 >= 10000) {
			put_time_us_block(p, us);
			return;
		}
		hi = (uint32_t)d4 / 100;
		lo = (uint32_t)d4 % 100;
		memcpy(p->t_text + p->sec_len + 3, digit_pairs + 2 * hi, 2);
		memcpy(p->t_text + p->sec_len + 5, digit_pairs + 2 * lo, 2);
		p->blk_us = us - lo;
	} else {
		memcpy(p->t_text + p->sec_len + 5, digit_pairs + 2 * d, 2);
	}
	p->t_us = us;
	memcpy(o->buf + o->len, p->t_text, sizeof(p->t_text));
	o->len += p->t_len;
}

/* A miss outside the kept 10^4 microseconds: the second's text and all six decimals. */
static void __attribute__((noinline)) put_time_us_block(struct printer *p, uint64_t us)
{
	struct tk_outbuf *o = p->o;
	uint32_t frac;
	char *d;

	/* Near the top of the range the kept blocks would wrap: no text is kept there. */
	if (__builtin_expect(us >= UINT64_MAX / 1000 - 1, 0)) {
		p->t_us = NO_TEXT;
		p->sec_len = 0;
		p->blk_us = NO_BLOCK;
		p->blk4_us = NO_BLOCK;
		o->buf[o->len++] = ' ';
		put_u_width(o, us / 1000000, 5, ' ');
		d = o->buf + o->len;
		o->len += 9;
		d[0] = '.';
		put_frac6(d + 1, (uint32_t)(us % 1000000));
		d[7] = ':';
		d[8] = ' ';
		return;
	}
	/* A time in the kept second (most misses) needs no division by 10^6. */
	if (us - p->sec_us >= 1000000 || !p->sec_len) {
		uint64_t sec = us / 1000000;
		char tmp[24];
		size_t n = fmt_u(tmp, sec), w = n < 5 ? 5 : n;

		/* " %5llu" is at most 21 bytes: the whole text fits in t_text. */
		memset(p->t_text, ' ', sizeof(p->t_text));
		memcpy(p->t_text + 1 + w - n, tmp, n);
		p->sec_us = sec * 1000000;
		p->sec_len = (uint8_t)(1 + w);
		p->t_len = (uint8_t)(p->sec_len + 9);
		d = p->t_text + p->sec_len;
		d[0] = '.';
		d[7] = ':';
		d[8] = ' ';
	}
	frac = (uint32_t)(us - p->sec_us);
	p->blk_us = us - frac % 100;
	p->blk4_us = us - frac % 10000;
	p->t_us = us;
	put_frac6(p->t_text + p->sec_len + 1, frac);
	memcpy(o->buf + o->len, p->t_text, sizeof(p->t_text));
	o->len += p->t_len;
}

/* --raw-ts and clocks not in microseconds: libtraceevent's "%12d", whose int power of ten
 * overflows, so "%12llu". */
static void __attribute__((noinline)) put_time_raw(struct tk_outbuf *o, uint64_t ts)
{
	put_u_width(o, ts, 12, ' ');
	o->buf[o->len++] = ':';
	o->buf[o->len++] = ' ';
}

/* The time column and the blank after it. */
static void __attribute__((noinline)) put_time(struct printer *p, uint64_t ts)
{
	struct tk_outbuf *o = p->o;
	const struct report *r = p->r;
	uint64_t t, p10;
	size_t prec;

	if (__builtin_expect(p->us_text, 1)) {
		/* Below the top of the range (ts + 500) / 1000 rounds as the two-step form does. */
		uint64_t us = __builtin_expect(ts <= UINT64_MAX - 500, 1)
				      ? (ts + 500) / 1000
				      : ts / 1000 + (ts % 1000 >= 500);

		if (us == p->t_us) {
			memcpy(o->buf + o->len, p->t_text, sizeof(p->t_text));
			o->len += p->t_len;
			return;
		}
		put_time_us_miss(p, us);
		return;
	}

	if (!r->usecs) {
		put_time_raw(o, ts);
		return;
	}
	if (r->opts->flags & TK_REPORT_NSEC) {
		o->buf[o->len++] = ' ';
		prec = 9;
		p10 = 1000000000ull;
		t = ts;
	} else {
		o->buf[o->len++] = ' ';
		prec = 6;
		p10 = 1000000ull;
		t = (ts + 500) / 1000;
	}
	put_u_width(o, t / p10, 5, ' ');
	o->buf[o->len++] = '.';
	put_u_width(o, t % p10, prec, '0');
	o->buf[o->len++] = ':';
	o->buf[o->len++] = ' ';
}

/*
 * --ts-diff: trace-cmd's " %-8s" of "(+N)" after the time column (which
 * here already ends in a blank), N the time since the previous line in
 * microseconds when the file names its trace clock and -t is not given,
 * else in the shown unit; the first line, and any after a time of 0, has
 * none. Lines only: the merge prints them in one thread (POOL_NEVER).
 */
static void __attribute__((noinline)) put_ts_diff(struct printer *p, uint64_t ts)
{
	char buf[48], text[64];
	int n;

	if (p->r->diff_us)
		ts = (ts + 500) / 1000;
	buf[0] = '\0';
	if (p->diff_last)
		snprintf(buf, sizeof(buf), "(+%lld)", (long long)(ts - p->diff_last));
	p->diff_last = ts;
	n = snprintf(text, sizeof(text), "%-8s ", buf);
	put(p->o, text, (size_t)n);
}

static void put_signed(struct tk_outbuf *o, int v)
{
	if (v < 0) {
		o->buf[o->len++] = '-';
		put_u_width(o, (uint64_t)0 - (uint64_t)(int64_t)v, 0, ' ');
	} else {
		put_u_width(o, (uint64_t)v, 0, ' ');
	}
}

static void print_json(struct report *r, struct stream *s, const struct tk_event *ev, int pid,
		       const char *comm)
{
	struct tk_outbuf *o = &r->out;
	char buf[128];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "{\"ts\":%" PRIu64 ",\"cpu\":%u,\"pid\":%d,\"comm\":", s->key.ts, s->cpu, pid);
	tk_outbuf_write(o, buf, (size_t)n);
	tk_outbuf_json_str(o, comm, strlen(comm));
	if (s->buf->name[0]) {
		tk_outbuf_write(o, ",\"buffer\":", 10);
		tk_outbuf_json_str(o, s->buf->name, strlen(s->buf->name));
	}
	if (s->missed)
		tk_outbuf_write(
			o, buf,
			(size_t)snprintf(buf, sizeof(buf), ",\"lost\":%" PRId64, s->missed));
	tk_outbuf_write(o, ",\"system\":", 10);
	tk_outbuf_json_str(o, tk_event_system(ev), strlen(tk_event_system(ev)));
	tk_outbuf_write(o, ",\"event\":", 9);
	tk_outbuf_json_str(o, tk_event_name(ev), strlen(tk_event_name(ev)));
	tk_outbuf_write(o, ",\"fields\":{", 11);
	for (size_t i = 0, k = 0; i < tk_event_field_count(ev); i++) {
		const struct tk_event_field *f = tk_event_field_get(ev, i);
		const char *str;
		uint32_t len;
		uint64_t v;

		if (f->is_common)
			continue;
		if (k++)
			tk_outbuf_write(o, ",", 1);
		tk_outbuf_json_str(o, f->name, strlen(f->name));
		tk_outbuf_write(o, ":", 1);
		if (f->is_string || (f->is_array && strstr(f->type, "char"))) {
			if (tk_event_field_string(r->set, f, s->rec->data, s->rec->size, &str,
						  &len))
				tk_outbuf_write(o, "null", 4);
			else
				tk_outbuf_json_str(o, str, len);
		} else if (!f->is_array && !f->is_dynamic &&
			   !tk_event_field_read(r->set, f, s->rec->data, s->rec->size, &v)) {
			n = f->is_signed ? snprintf(buf, sizeof(buf), "%" PRId64, (int64_t)v)
					 : snprintf(buf, sizeof(buf), "%" PRIu64, v);
			tk_outbuf_write(o, buf, (size_t)n);
		} else if (!f->is_dynamic && (uint64_t)f->offset + f->size <= s->rec->size) {
			/* Other arrays: their bytes as hex text. */
			const uint8_t *d = (const uint8_t *)s->rec->data + f->offset;

			tk_outbuf_write(o, "\"", 1);
			for (uint32_t b = 0; b < f->size; b++) {
				snprintf(buf, sizeof(buf), "%02x", d[b]);
				tk_outbuf_write(o, buf, 2);
			}
			tk_outbuf_write(o, "\"", 1);
		} else {
			tk_outbuf_write(o, "null", 4);
		}
	}
	tk_outbuf_write(o, "}", 1);
	if (r->opts->flags & TK_REPORT_SYMBOLS) {
		char text[320];
		size_t len = probe_place(r, ev, tk_event_id(ev), s->rec->data, s->rec->size, text,
					 sizeof(text));

		if (len) {
			tk_outbuf_write(o, ",\"probe\":", 9);
			tk_outbuf_json_str(o, text, len);
		}
	}
	tk_outbuf_write(o, "}\n", 2);
}

static bool comm_wanted(const struct tk_report_opts *o, const char *comm)
{
	for (size_t i = 0; i < o->ncomms; i++) {
		if (!fnmatch(o->comms[i], comm, 0))
			return true;
	}
	return false;
}

static bool pid_wanted(const struct tk_report_opts *o, int pid)
{
	for (size_t i = 0; i < o->npids; i++) {
		if (o->pids[i] == pid)
			return true;
	}
	return false;
}

/* The "%16s-%-5d" column of @pid, built and kept in @pc. */
static void __attribute__((noinline))
put_comm_pid(struct printer *p, struct prefix *pc, const char *comm, int pid)
{
	struct tk_outbuf *o = p->o;
	size_t start = o->len, clen = strnlen(comm, 256), before, pad;

	put_pad(o, clen < 16 ? 16 - clen : 0);
	put(o, comm, clen);
	o->buf[o->len++] = '-';
	before = o->len;
	put_signed(o, pid);
	pad = o->len - before;
	put_pad(o, pad < 5 ? 5 - pad : 0);
	if (o->len - start <= sizeof(pc->text)) {
		pc->comm = comm;
		pc->pid = pid;
		pc->len = (uint8_t)(o->len - start);
		memcpy(pc->text, o->buf + start, pc->len);
	}
}

/* The "%8.8s-%-5d %3d" columns and latency flags of -l. */
static void put_latency_prefix(struct printer *p, const struct line *l)
{
	struct tk_outbuf *o = p->o;
	const struct stream *s = l->s;
	const char *comm = l->comm;
	int pid = l->pid;
	size_t clen = strnlen(comm, 256), n = clen > 8 ? 8 : clen, before, pad;

	put_pad(o, 8 - n);
	put(o, comm, n);
	o->buf[o->len++] = '-';
	before = o->len;
	put_signed(o, pid);
	pad = o->len - before;
	put_pad(o, pad < 5 ? 5 - pad : 0);
	o->buf[o->len++] = ' ';
	put_u_width(o, s->cpu, 3, ' ');
	tk_event_print_latency(p->r->set, l->data, l->size, (int)s->cpu, o);
	if (o->cap - o->len < 256)
		tk_outbuf_flush(o);
}

/* The "CPU:C [N EVENTS DROPPED]" line trace-cmd prints before a page's first record. */
static void put_dropped(struct tk_outbuf *o, uint32_t cpu, int64_t missed)
{
	char tmp[80];
	int n = missed > 0 ? snprintf(tmp, sizeof(tmp), "CPU:%u [%" PRId64 " EVENTS DROPPED]\n",
				      cpu, missed)
			   : snprintf(tmp, sizeof(tmp), "CPU:%u [EVENTS DROPPED]\n", cpu);

	put(o, tmp, (size_t)n);
}

/*
 * A name lookup. The first one sorts the table and tells libtraceevent
 * (event.c): while printers run on other threads, that happens under the
 * lock they take around libtraceevent.
 */
static const char *lookup_comm(struct report *r, int pid)
{
	const char *comm;

	if (__builtin_expect(!r->pr.shared || r->set->comms->sorted, 1))
		return tk_event_comm(r->set, pid);
	pthread_mutex_lock(r->pr.slow_lock);
	comm = tk_event_comm(r->set, pid);
	pthread_mutex_unlock(r->pr.slow_lock);
	return comm;
}

/* An event without __probe_ip: not a probe. */
static const struct tk_event_field no_field;

/*
 * "sym+0xoff (dso)" of the place probe event @ev fired at, into @buf.
 * Kernel addresses (kprobes) through kallsyms; user ones (uprobes) through
 * the probe's definition "PATH:OFFSET" from the cache's probe files or
 * the live uprobe_events, and that binary's symbols (by build id, so a
 * binary rebuilt since still resolves). Return: the length, 0 when @ev is
 * not a probe or the place is unknown.
 */
static size_t probe_place(struct report *r, const struct tk_event *ev, int id, const void *data,
			  uint32_t size, char *buf, size_t cap)
{
	const struct tk_event_field *f;
	struct tk_symbol_info info;
	const struct tk_ksym *k;
	struct probe_memo *m;
	uint64_t ip;
	int n = 0;

	if (id < 0 || id > 0xffff)
		return 0;
	f = r->probe_ip[id];
	if (!f) {
		f = tk_event_field_find(ev, "__probe_ip");
		if (!f)
			f = &no_field;
		r->probe_ip[id] = f;
	}
	if (f == &no_field || tk_event_field_read(r->set, f, data, size, &ip))
		return 0;
	m = &r->probe_memo[((ip ^ (ip >> 12)) * 31 + (uint64_t)id) % PROBE_MEMO];
	if (m->id == id && m->ip == ip) {
		memcpy(buf, m->text, m->len < cap ? m->len : cap);
		return m->len < cap ? m->len : 0;
	}
	if (r->info->long_size == 8 ? ip >= 0xffff800000000000ull : ip >= 0xc0000000ull) {
		k = tk_event_ksym_find(r->set, NULL, ip);
		if (k)
			n = snprintf(buf, cap, "%.*s+0x%" PRIx64 " ([kernel.kallsyms])",
				     (int)(k->name_len < 256 ? k->name_len : 256),
				     r->set->ksym_text + k->name_off, ip - k->addr);
	} else if (r->sym && tk_symbolizer_lookup_uprobe(r->sym, tk_event_system(ev),
							 tk_event_name(ev), ip, &info) == 0) {
		if (info.symbol)
			n = snprintf(buf, cap, "%.256s+0x%" PRIx64 " (%s)", info.symbol,
				     info.offset, info.dso ? info.dso : "[unknown]");
		else
			n = snprintf(buf, cap, "[unknown] (%s)", info.dso ? info.dso : "[unknown]");
	}
	if (n <= 0 || (size_t)n >= cap)
		n = 0;
	if ((size_t)n < sizeof(m->text)) {
		m->id = id;
		m->ip = ip;
		m->len = (uint16_t)n;
		memcpy(m->text, buf, (size_t)n);
	}
	return (size_t)n;
}

/* " <sym+0xoff (dso)>" after a probe event's text (--sym). */
static void __attribute__((noinline)) put_probe_place(struct printer *p, const struct line *l)
{
	struct report *r = (struct report *)p->r; /* --sym prints in the merge thread only */
	char text[320];
	size_t n = probe_place(r, l->ev, tk_event_id(l->ev), l->data, l->size, text, sizeof(text));

	if (!n)
		return;
	if (p->o->cap - p->o->len < n + 4)
		tk_outbuf_flush(p->o);
	put(p->o, " <", 2);
	put(p->o, text, n);
	put(p->o, ">", 1);
}

/*
 * --pid as trace-cmd builds it: "common_pid==P || pid==P || next_pid==P"
 * on every event, a field the event lacks comparing false. So a wakeup of
 * P and a switch to P show too.
 */
static bool pid_match(struct report *r, int id, const struct tk_event *ev, int pid,
		      const void *data, uint32_t size)
{
	struct lazy_fmt *l;
	uint64_t v;

	if (pid_wanted(r->opts, pid))
		return true;
	if (!ev || id < 0 || (size_t)id >= r->nlazy)
		return false;
	l = &r->lazy[id];
	if (!l->pid_fields_known) {
		l->pid_field = tk_event_field_find(ev, "pid");
		l->next_pid_field = tk_event_field_find(ev, "next_pid");
		l->pid_fields_known = true;
	}
	if (l->pid_field && !tk_event_field_read(r->set, l->pid_field, data, size, &v) &&
	    pid_wanted(r->opts, (int)v))
		return true;
	return l->next_pid_field &&
	       !tk_event_field_read(r->set, l->next_pid_field, data, size, &v) &&
	       pid_wanted(r->opts, (int)v);
}

/* Whether a -v -F spec names events of type @id (decided once per id). */
static bool neg_selected(struct report *r, int id)
{
	struct lazy_fmt *l;

	if (id < 0 || (size_t)id >= r->nlazy)
		return false;
	l = &r->lazy[id];
	if (l->negsel < 0)
		l->negsel = tep_event_filtered(r->negfilter, id) ? 1 : 0;
	return l->negsel;
}

/*
 * -F, --pid and -v -F as trace-cmd combines them: the record is shown when
 * no -F or --pid is given or one of them matches it (they add up, as
 * trace-cmd's filters do), and no -v -F matches it. --comm is tested
 * later, once the name is known.
 */
/*
 * TRACE_FLAG_HARDIRQ (0x08) and TRACE_FLAG_SOFTIRQ (0x10) of the record's
 * common_flags, one byte in every kernel's common fields.
 */
static bool irq_hidden(const struct report *r, const void *data, uint32_t size)
{
	const struct tk_event_set *set = r->set;
	uint8_t f;

	if (!set->flags_size || set->flags_off >= size)
		return false;
	f = ((const uint8_t *)data)[set->flags_off];
	return ((r->opts->flags & TK_REPORT_NO_HARDIRQ) && (f & 0x08)) ||
	       ((r->opts->flags & TK_REPORT_NO_SOFTIRQ) && (f & 0x10));
}

/* --ts-check: trace-cmd's warning when a shown record is older than the one before. */
static void __attribute__((noinline)) ts_check(struct report *r, const struct stream *s)
{
	uint64_t ts = s->key.ts;

	if (r->ts_check > ts)
		tk_warn("%s: record on cpu %u went backwards: %" PRIu64 " to %" PRIu64
			" delta: -%" PRIu64,
			r->path, s->cpu, r->ts_check, ts, r->ts_check - ts);
	r->ts_check = ts;
}

static inline bool record_wanted(struct report *r, const struct stream *s, int id,
				 const struct tk_event *ev, int pid)
{
	const struct tk_report_opts *opts = r->opts;
	const void *data = s->rec->data;
	uint32_t size = s->rec->size;

	/* -I, -S: trace-cmd hides records whose common_flags say hard or soft irq context. */
	if ((opts->flags & (TK_REPORT_NO_HARDIRQ | TK_REPORT_NO_SOFTIRQ)) &&
	    irq_hidden(r, data, size))
		return false;
	if (opts->nevents || opts->npids) {
		bool shown = opts->nevents && event_selected(r, id, ev) &&
			     !(r->filter && ev && !r->lazy[id].named &&
			       !filter_match(r, r->filter, s, data, size));

		if (!shown && !(opts->npids && pid_match(r, id, ev, pid, data, size)))
			return false;
	}
	if (r->negfilter && ev && neg_selected(r, id) &&
	    filter_match(r, r->negfilter, s, data, size))
		return false;
	if (opts->flags & TK_REPORT_TS_CHECK)
		ts_check(r, s);
	return true;
}

/* common_pid of a record (the workers read it again rather than from the log). */
static inline __attribute__((always_inline)) int record_pid(const struct report *r,
							    const void *data, uint32_t size)
{
	int32_t p;

	if (__builtin_expect(r->fast_common && size >= r->common_size, 1)) {
		memcpy(&p, (const uint8_t *)data + r->pid_off, 4);
		return p;
	}
	return tk_event_record_pid(r->set, data, size);
}

/*
 * The copies of the line path (a constant argument of the always-inlined
 * functions below): every option tested, none of the rare options (a
 * plain run, lines printed by several printers), or none and one printer.
 */
enum { PLAIN_NO, PLAIN_SHARED, PLAIN_SOLO };

/*
 * The merge's half of a record's line (one caller, the merge loop: inlined,
 * so the stream stays in registers): the type and pid, the event, the
 * filters, the command name, the counts. Return: false when the record
 * prints no line (filtered, an unknown event, --stat, --json).
 *
 * trace-cmd looks the name up for records of known events only, and the
 * first lookup changes how later names resolve (event.c). The name a
 * lookup gave stays the answer while the table keeps its generation
 * (event.c bumps it on every change of the sorted array), so a memo hit
 * needs no lookup at all.
 */
static inline __attribute__((always_inline)) bool select_record(struct report *r, struct stream *s,
								struct line *l, const int plain)
{
	const struct tk_report_opts *opts = r->opts;
	const void *data = s->rec->data;
	uint32_t size = s->rec->size;
	const struct tk_comm_table *ct = r->set->comms;
	const struct tk_event *ev;
	struct comm_memo *cm;
	const char *comm;
	int id, pid;

	if (__builtin_expect(r->fast_common && size >= r->common_size, 1)) {
		uint16_t t;

		memcpy(&t, (const uint8_t *)data + r->type_off, 2);
		id = t;
		ev = r->evs[t];
	} else {
		id = tk_event_record_type(r->set, data, size);
		ev = id >= 0 && id <= 0xffff ? r->evs[id] : NULL;
	}
	pid = record_pid(r, data, size);
	if (__builtin_expect(!ev, 0))
		ev = event_get(r, id);

	if (!plain && __builtin_expect(r->filtering, 0) && !record_wanted(r, s, id, ev, pid))
		return false;
	cm = &r->cmemo[(uint32_t)pid & (PCACHE_SIZE - 1)];
	/*
	 * No test of the table's phase: the generation is 0 only until the
	 * first lookup of a pid other than 0 sorts the table, so an entry of
	 * generation 0 is pid 0's "<idle>", true in either phase (an idle
	 * CPU's records, all of power's file, hit it before any sort).
	 */
	if (__builtin_expect(ev && cm->pid == pid && cm->comm && cm->gen == ct->gen, 1)) {
		comm = cm->comm;
	} else if (ev || opts->ncomms) {
		comm = lookup_comm(r, pid);
		if (ev) {
			cm->comm = comm;
			cm->pid = pid;
			cm->gen = ct->gen;
		}
	} else {
		comm = "";
	}
	if (!plain && __builtin_expect(r->filtering, 0) && opts->ncomms && !comm_wanted(opts, comm))
		return false;
	if (ev) {
		r->counts[id]++;
		r->known++;
	}
	if (!plain && __builtin_expect(r->special, 0)) {
		if ((opts->flags & TK_REPORT_JSON) && ev)
			print_json(r, s, ev, pid, comm);
		return false;
	}
	/* Printed elsewhere, the sched mirrors cannot register names in record order. */
	if (plain != PLAIN_SOLO && __builtin_expect(r->pr.shared, 0) && ev &&
	    (ev->kind == TK_EVENT_SCHED_SWITCH || ev->kind == TK_EVENT_SCHED_WAKEUP))
		tk_event_sched_learn_fast(r->set, ev, data, size, r->pr.slow_lock);
	l->s = s;
	l->ev = ev;
	l->comm = comm;
	l->data = data;
	l->size = size;
	l->pid = pid;
	l->ts = s->key.ts;
	l->missed = s->missed;
	return true;
}

/* Whether events of type @id are ftrace's function or funcgraph events (a few ALU ops). */
static inline __attribute__((always_inline)) bool fg_event(const struct report *r, int id)
{
	uint32_t u = (uint32_t)id - r->fg_lo;

	return u <= r->fg_span && ((r->fg_mask >> (u & 63)) & 1);
}

/* A funcgraph record as trace-cmd prints it (funcgraph.c). Return: 0, or -ENOTSUP. */
static int __attribute__((noinline)) put_fgraph(struct printer *p, const struct line *l)
{
	const struct report *r = p->r;

	if (l->ev->id == r->fg_fn_id)
		return tk_fn_put(r->set, p->memo, l->ev, l->data, l->size, (int)p->fn_slot - 1,
				 p->o);
	/* -r or -n on the exit alone: the entries still take their leaf's exit, as trace-cmd's. */
	if (l->ev->id == r->fg_exit_id &&
	    !(l->ev->tev->flags & (TEP_EVENT_FL_PRINTRAW | TEP_EVENT_FL_NOHANDLE)))
		return tk_fgraph_put_exit(r->set, p->memo, l->ev, l->data, l->size, r->fg_flags,
					  p->o);
	if (l->ev->id == r->fg_entry_id)
		return tk_fgraph_put_entry(r->set, p->memo, l->ev, l->data, l->size, r->fg_exit_ev,
					   p->fg_exit, p->fg_exit_size, r->fg_flags, p->o);
	return -ENOTSUP;
}

/* The event text, through the compiled printer when it can. */
static inline __attribute__((always_inline)) void
put_event_text(struct printer *p, const struct line *l, bool fg, const int plain)
{
	const struct report *r = p->r;
	const struct tk_event *ev = l->ev;
	unsigned int flags = r->opts->flags;

	if (fg && !(flags & TK_REPORT_RAW) && put_fgraph(p, l) == 0)
		return;
	if (plain != PLAIN_SOLO && __builtin_expect(p->shared, 0)) {
		if (ev->kind != TK_EVENT_SLOW &&
		    tk_event_run_shared(r->set, ev, l->data, l->size, p->o, p->memo) != -ENOTSUP)
			return;
		pthread_mutex_lock(p->slow_lock);
		tk_event_print_slow_shared(r->set, ev, l->data, l->size, (int)l->s->cpu, p->o);
		pthread_mutex_unlock(p->slow_lock);
		return;
	}
	/* The compiled printer first, without the call through the public entry. */
	if (__builtin_expect(ev->kind == TK_EVENT_SLOW ||
				     (!plain && (flags & (TK_REPORT_RAW | TK_REPORT_SLOW))),
			     0) ||
	    tk_event_run(r->set, ev, l->data, l->size, p->o) == -ENOTSUP)
		tk_event_print_info(r->set, ev, l->data, l->size, (int)l->s->cpu,
				    ((flags & TK_REPORT_RAW) ? TK_EVENT_PRINT_RAW : 0) |
					    TK_EVENT_PRINT_SLOW,
				    p->o);
}

/*
 * The printer's half: the whole line, from what select_record() decided.
 * The rare cases (instances, drops, -l, unknown events) each sit behind
 * one test, so the common line costs one cache probe for the comm column,
 * the time (usually a cached copy), the name column and the compiled
 * printer.
 */
static inline __attribute__((always_inline)) void emit_line(struct printer *p, const struct line *l,
							    bool fg, const int plain)
{
	const struct report *r = p->r;
	struct tk_outbuf *o = p->o;
	const struct tk_event *ev = l->ev;
	const struct stream *s = l->s;

	/* Room for everything but the event text, which ensures its own (names cut at 256). */
	if (__builtin_expect(o->cap - o->len < r->room, 0))
		tk_outbuf_flush(o);
	if (!plain && __builtin_expect(r->file_label != NULL, 0)) {
		size_t n = strnlen(r->file_label, 256);

		put_pad(o, (size_t)r->file_width > n ? (size_t)r->file_width - n : 0);
		put(o, r->file_label, n);
		put(o, ": ", 2);
	}
	if (!plain && __builtin_expect(r->instances, 0)) {
		size_t n = strnlen(s->buf->name, 256);

		put_pad(o, (size_t)r->label_width > n ? (size_t)r->label_width - n : 0);
		put(o, s->buf->name, n);
		put(o, n ? ": " : "  ", 2);
	}
	if (__builtin_expect(l->missed != 0, 0))
		put_dropped(o, s->cpu, l->missed);
	if (__builtin_expect(!ev, 0)) {
		static const char unk[] = "[UNKNOWN EVENT][UNKNOWN EVENT] (NULL):               "
					  "[UNKNOWN EVENT]\n";

		put(o, unk, sizeof(unk) - 1);
		return;
	}
	if (!plain && __builtin_expect(r->opts->flags & TK_REPORT_LATENCY, 0)) {
		put_latency_prefix(p, l);
	} else {
		/*
		 * "%16s-%-5d" depends on the pid and its name only: the text is
		 * kept per pid, checked by the name's address. Names are never
		 * freed or changed while the set lives, and each registration
		 * has its own copy, so when another duplicate of a pid starts
		 * winning (event.c) the address differs and the text is redone.
		 */
		struct prefix *pc = &p->pcache[(uint32_t)l->pid & (PCACHE_SIZE - 1)];

		if (__builtin_expect(pc->comm == l->comm && pc->pid == l->pid, 1)) {
			memcpy(o->buf + o->len, pc->text, sizeof(pc->text));
			o->len += pc->len;
		} else {
			put_comm_pid(p, pc, l->comm, l->pid);
		}
		memcpy(o->buf + o->len, s->cpu_text, sizeof(s->cpu_text));
		o->len += s->cpu_len;
	}
	put_time(p, l->ts);
	if (!plain && __builtin_expect(r->opts->flags & TK_REPORT_TS_DIFF, 0))
		put_ts_diff(p, l->ts);
	if (__builtin_expect(ev->col_len != 0, 1)) {
		memcpy(o->buf + o->len, ev->col, sizeof(ev->col));
		o->len += ev->col_len;
	} else {
		size_t nlen = ev->name_len > 256 ? 256 : ev->name_len;

		put(o, ev->name, nlen);
		put(o, ": ", 2);
		put_pad(o, nlen < 20 ? 20 - nlen : 0);
	}
	put_event_text(p, l, fg, plain);
	/*
	 * One final newline of the text is dropped (a flush may have emptied
	 * the buffer) and the line's own added: with nothing between them (a
	 * plain run), a text that ends in one is the line as it stands (every
	 * line of a marker file).
	 */
	if (o->len && o->buf[o->len - 1] == '\n') {
		if (plain)
			return;
		o->len--;
	}
	if (!plain && __builtin_expect(r->opts->flags & TK_REPORT_SYMBOLS, 0))
		put_probe_place(p, l);
	if (!plain && __builtin_expect(r->opts->line_hook != NULL, 0))
		r->opts->line_hook(r->opts->line_hook_ctx, r->set, ev, l->data, l->size, l->ts, o);
	if (__builtin_expect(o->len == o->cap, 0))
		tk_outbuf_flush(o);
	o->buf[o->len++] = '\n';
}

/* --stat's order: most records first, ties in the event set's order. */
struct stat_row {
	uint64_t count;
	size_t index;
};

static int stat_row_cmp(const void *a, const void *b)
{
	const struct stat_row *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/*
 * What trace-cmd report --stat prints after "cpus=N", byte for byte: its
 * note, every CPUSTAT option's text as the file holds it (its final NUL
 * printed as a newline, then one more newline), or " No stats in this
 * file", then where each CPU's data of the top buffer is. For compressed
 * data trace-cmd names the place in its decompressed copy: offsets from
 * one page in, each CPU's uncompressed size rounded up to a page.
 */
static void print_tc_stat(struct report *r)
{
	static const char note[] =
		"\nKernel buffer statistics:\n"
		"  Note: \"entries\" are the entries left in the kernel ring buffer and are not\n"
		"        recorded in the trace data. They should all be zero.\n\n";
	size_t nbuf = tk_dat_buffer_count(r->dat);
	uint64_t next = r->info->page_size;
	bool any = false;
	char line[160];
	int n;

	tk_outbuf_write(&r->out, note, sizeof(note) - 1);
	for (size_t i = 0; i < tk_dat_option_count(r->dat); i++) {
		const struct tk_dat_option *o = tk_dat_option_get(r->dat, i);

		if (o->id != TK_DAT_OPTION_CPUSTAT || !o->data || !o->size)
			continue;
		tk_outbuf_write(&r->out, o->data, o->size - 1);
		tk_outbuf_write(&r->out, "\n", 1);
		any = true;
	}
	if (any)
		tk_outbuf_write(&r->out, "\n", 1);
	else
		tk_outbuf_write(&r->out, " No stats in this file\n", 23);
	for (size_t b = 0; b < nbuf; b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(r->dat, b);

		if (buf->name[0] || buf->latency_text)
			continue;
		for (uint32_t c = 0; c < buf->cpu_count; c++) {
			uint64_t off = buf->cpus[c].offset, size = buf->cpus[c].size;

			if (buf->compressed) {
				struct tk_dat_cpu_reader *rd = tk_dat_cpu_reader_new(r->dat, b, c);

				size = rd ? tk_dat_cpu_reader_size(rd) : 0;
				tk_dat_cpu_reader_free(rd);
				off = next;
				next = (next + size + r->info->page_size - 1) &
				       ~((uint64_t)r->info->page_size - 1);
			}
			n = snprintf(line, sizeof(line),
				     "CPU%u data recorded at offset=0x%" PRIx64 "\n    %" PRIu64
				     " bytes in size\n",
				     c, off, size);
			tk_outbuf_write(&r->out, line, (size_t)n);
		}
		break;
	}
}

/*
 * A line of an ftrace function or funcgraph record (fg_event()): the only
 * caller of emit_line() with fg set, so that the other lines' printer has
 * no test for them.
 */
static void __attribute__((noinline)) emit_fg_line(struct printer *p, const struct line *l)
{
	emit_line(p, l, true, PLAIN_NO);
}

static void print_stat(struct report *r)
{
	size_t nev = tk_event_set_count(r->set), nrows = 0;
	struct stat_row *rows = calloc(nev ? nev : 1, sizeof(*rows));
	char line[512];
	int n;

	if (!rows) {
		r->nomem = true;
		return;
	}
	for (size_t i = 0; i < nev; i++) {
		int id = tk_event_id(tk_event_set_get(r->set, i));

		if (r->counts[id])
			rows[nrows++] = (struct stat_row){r->counts[id], i};
	}
	qsort(rows, nrows, sizeof(*rows), stat_row_cmp);
	for (size_t i = 0; i < nrows; i++) {
		const struct tk_event *ev = tk_event_set_get(r->set, rows[i].index);

		n = snprintf(line, sizeof(line), "%12" PRIu64 "  %s:%s\n", rows[i].count,
			     tk_event_system(ev), tk_event_name(ev));
		tk_outbuf_write(&r->out, line, (size_t)(n < (int)sizeof(line) ? n : 0));
	}
	free(rows);
	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];

		size_t len;

		n = snprintf(line, sizeof(line),
			     "%s%s%scpu %u: %" PRIu64 " events, %" PRIu64 " lost, %" PRIu64
			     " pages with drops of unknown count",
			     s->buf->name[0] ? "buffer " : "", s->buf->name,
			     s->buf->name[0] ? " " : "", s->cpu, s->events, s->lost, s->marks);
		len = n > 0 && n < (int)sizeof(line) ? (size_t)n : 0;
		if (s->has_cpustat)
			n = snprintf(line + len, sizeof(line) - len,
				     "; kernel: %" PRIu64 " overrun, %" PRIu64
				     " commit overrun, %" PRIu64 " dropped, %" PRIu64
				     " not recorded",
				     s->overrun, s->commit_overrun, s->dropped, s->entries);
		else
			n = snprintf(line + len, sizeof(line) - len,
				     "; kernel: no counts in the file");
		len += n > 0 && (size_t)n < sizeof(line) - len ? (size_t)n : 0;
		if (s->cut) {
			n = snprintf(line + len, sizeof(line) - len,
				     "; incomplete: read 0x%" PRIx64 " of 0x%" PRIx64 " bytes",
				     s->cut_at, s->size);
			len += n > 0 && (size_t)n < sizeof(line) - len ? (size_t)n : 0;
		}
		tk_outbuf_write(&r->out, line, len);
		tk_outbuf_write(&r->out, "\n", 1);
	}
	print_tc_stat(r);
}

/*
 * Which events went through libtraceevent, most records first: what to
 * compile next. Through the log, so standard output stays comparable.
 */
static void warn_fallbacks(struct report *r)
{
	size_t n = tk_event_set_count(r->set), shown = 0;
	uint64_t total = 0, last = UINT64_MAX;

	for (size_t i = 0; i < n; i++)
		total += tk_event_set_get(r->set, i)->fallbacks;
	tk_warn("%s: %" PRIu64 " records printed by libtraceevent", r->path, total);
	/* A selection by count, at most 64 lines: the set is small. */
	while (shown < 64) {
		uint64_t best = 0;

		for (size_t i = 0; i < n; i++) {
			uint64_t c = tk_event_set_get(r->set, i)->fallbacks;

			if (c < last && c > best)
				best = c;
		}
		if (!best)
			break;
		for (size_t i = 0; i < n && shown < 64; i++) {
			const struct tk_event *ev = tk_event_set_get(r->set, i);

			if (ev->fallbacks != best)
				continue;
			tk_warn("%12" PRIu64 "  %s:%s", best, ev->system, ev->name);
			shown++;
		}
		last = best;
	}
}

static bool clock_in_usecs(const struct tk_dat_info *info)
{
	static const char *const us[] = {"local", "global", "uptime",
					 "perf",  "tai",    "x86-tsc-nsec"};
	const char *c = info->clock;

	if (info->has_tsc2nsec || !c)
		return true;
	if (!strncmp(c, "mono", 4))
		return true;
	for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++) {
		if (!strcmp(c, us[i]))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------ threads */

/*
 * Lines printed on several threads. Printing is most of a report's work
 * (~60 ns of the ~80 a record costs), while the merge must stay in one
 * thread: the names records print depend on every sched record before
 * them (event.c). So the merge thread decides each line (select_record():
 * event, filters, name, names learnt) and cuts the run into jobs of
 * JOB_RECORDS records taken from the CPU streams.
 *
 * A job carries its lines to a worker: per line, the event and name the
 * merge chose, the time as shown, the drops noted and the record's bytes,
 * copied into the job (struct carried: 48 bytes, and ~70 for a sched
 * record). The worker prints from the job alone, into a text of its own,
 * and reads nothing from the file: on compressed data it decompresses no
 * chunk again, and on uncompressed data it neither reads nor decodes the
 * pages the merge read. The copy costs the merge what the decoding cost
 * the worker (callgrind, -j 2 on the sched file: 599.6 M instructions in
 * all, 602.6 M when workers replayed a log on readers of their own); the
 * lines go past the cache (handoff.h), the records by memcpy() (the same
 * CPU time, fewer instructions). A stream a carried line names is the
 * merge's, read for what never changes while the run goes (CPU, its text,
 * the buffer).
 *
 * The threads are the print pool (print-pool.h), which the perf.data
 * report shares: the merge prints a job itself (inline) when every worker
 * has JOB_QUEUE jobs waiting, so it never idles while the workers are
 * behind, nor lets them idle while it prints, and the texts go out in job
 * order. This file gives the pool its jobs (struct job, indexed by the
 * ring's slots) and a worker's printing of them (struct worker: a
 * printer). The text is the same as one thread's: every printer keeps its
 * own caches and its own kallsyms memo (struct printer's memo, handed to
 * tk_event_run_shared()), and libtraceevent (the slow path, format
 * parsing, name registration) is serialised by the pool's lock. A job done
 * early waits for the ones before it: the ring has JOB_SLOTS slots, room
 * for the queue, each worker's job and a few done ones. Memory stays
 * bounded: as many logs as slots (JOB_BYTES of records and a record more,
 * 96 KiB of lines each) and texts, but a carried job borrows the lowest
 * log free (job_begin()) and its printer gives it back, so a run touches
 * the two or three logs it keeps busy, not one per slot (400 page faults
 * fewer on the sched bench file). When the merge would wait for a job a
 * worker has not printed (the ring full, or the run's end), it takes the
 * oldest queued job back and prints it itself (merge_takes_back(); the
 * ring's take_back()): a worker that gets no CPU holds up only the job it
 * started.
 *
 * Compressed data has its chunks decoded ahead of the merge (decode_ahead():
 * the prefetch of dat-read.c, up to 8 decoded chunks per CPU ready, 16 MiB in
 * all). With print workers (-j N, N >= 3), the workers decode them between
 * their jobs (tk_dat_prefetch_pump(), at the start of each replay, one worker
 * at a time), so a compressed file prints on the threads an uncompressed one
 * gets and no more: decoding is a quarter of a one-thread run on zstd (sched
 * file: 227 M of 880 M instructions), and where the pool balances the
 * printing by itself (the merge prints inline when the workers have JOB_QUEUE
 * jobs waiting), a worker that also decodes just leaves the merge more lines
 * to print. A decoder thread of its own beside the workers made three threads
 * on two CPUs, which took turns and woke each other (sched zstd -j 2: ~1 150
 * context switches a run against ~800 pumped; 979 M instructions against 964
 * M). The merge decodes a chunk itself when it finds it not decoded yet. Two
 * threads, the default's or -j 2's, are a decoder thread
 * (tk_dat_prefetch_start()) and the merge alone, which prints every line
 * (printers()): a print worker beside the merge cost more than it saved on
 * two CPUs (bench-report's 3 M event file: 0.267 s wall and 0.461 s CPU
 * against 0.393 s and 0.577 s; sched zstd 0.112 s and 0.175 s against 0.134 s
 * and 0.187 s). A prefetch that does not help is stopped (the decoder
 * thread for a while: dat-read.c's notes), and the merge
 * decodes alone as with -j 1: when the merge found fewer than 1 chunk in 8
 * decoded ahead, or (the decoder thread) the two threads got less than 1.2
 * CPUs' worth of time for two periods of 16 chunk loads (~2-3 ms each: the
 * threads took turns on one CPU, or nearly, as
 * on a busy machine: dat-read.c's notes), so that the two threads never end
 * later than the merge alone would. The text and the damage found are the
 * same either way (dat-read.c's notes say why).
 *
 * The thread count: -j N, or by default tk_report_threads() (one per
 * online CPU up to 4, for 128 MiB of CPU data or more, decoded: shorter
 * runs do not pay a second thread's own costs back, handoff.h) but no
 * more than the CPUs this process may use (tk_cores_allowed(): affinity,
 * cgroup quota). Compressed data whose decoding weighs (report_threads():
 * 16 MiB decoded or more, one compressed byte for at most 12 decoded ones)
 * gets two threads from that size on, the decoder and the merge.
 * Whether the second thread then finds a CPU of its own is
 * judged as the run goes: a worker that only takes turns with the merge
 * costs 25-35% more CPU than -j 1 (the merge's cuts and copies, the
 * worker's cold caches), so when the process gets too little CPU time for
 * two periods of ~3 ms the pool retires its workers and the merge prints
 * the rest alone, as with -j 1 (print-pool.c's notes, merge_records()).
 */
#define JOB_RECORDS 2048
/* A carried job ends once its records' bytes pass this (2048 sched records: ~150 KiB). */
#define JOB_BYTES (256u << 10)
#define JOB_TEXT  (256u << 10)
#define JOB_QUEUE 2
/* An inline job looks this often (records) whether the workers ran out of jobs. */
#define JOB_CHECK	   256
#define JOB_SLOTS(workers) ((JOB_QUEUE + 4) * (workers) + 4)
/* Modes that print in the merge thread (see pool_new()). */
#define POOL_NEVER                                                                                 \
	(TK_REPORT_STAT | TK_REPORT_JSON | TK_REPORT_LATENCY | TK_REPORT_RAW | TK_REPORT_SLOW |    \
	 TK_REPORT_FALLBACKS | TK_REPORT_SYMBOLS | TK_REPORT_TS_DIFF)
#define MAX_THREADS 16
/* A carried line names its stream in 16 bits. */
#define MAX_CARRY_STREAMS 0xffffu

/*
 * A line of a job: what the merge chose for it (the event, the name: what
 * the record alone does not tell), its time as shown, the drops its CPU
 * noted before it, and the record's bytes at @off of the job's bytes; a
 * funcgraph leaf's exit record (exit_size > 0) follows them. 48 bytes,
 * written past the cache.
 */
struct carried {
	const struct tk_event *ev;
	const char *comm;
	uint64_t ts; /* as shown */
	int64_t missed;
	uint32_t off, size;
	uint16_t stream;
	uint16_t exit_size;
	uint32_t exit_off;
};

/*
 * The merge writes the job being filled per record while workers read the
 * jobs before it: each job has cache lines of its own.
 */
struct job {
	struct carried *carried; /* per line, in order */
	uint32_t *fn_slots;	 /* per line of an ftrace:function record: its indent + 1 */
	uint8_t *bytes;		 /* the lines' records */
	size_t nbytes, cap;
	uint32_t ntakes, npicks; /* records taken (printed or not), lines */
	bool lent;		 /* to a carried job not printed yet (atomic: see job_begin()) */
} __attribute__((aligned(128)));

struct worker {
	struct printer pr;
} __attribute__((aligned(128)));

/*
 * The merge's side of the print pool: the job logs, and the job being
 * filled. Written per record by the merge: lines of their own, apart from
 * struct report, which the workers read.
 */
struct pool {
	struct report *r;
	struct tk_print_pool *pp;
	struct job *jobs;   /* the logs, lent to carried jobs (job_begin()) */
	struct job **slots; /* per slot of pp's ring: the log of its carried job */
	struct job *cur;    /* the job being filled: a log, or @counts */
	struct job *lent;   /* the log lent to the job being filled, not handed over yet */
	struct job counts;  /* an inline job's counts: it carries nothing */
	size_t njobs;
	bool cur_inline; /* printed by the merge as it goes: nothing carried */
} __attribute__((aligned(128)));

/* Whether @rec is the return of line @l's funcgraph entry (tk_fgraph_is_leaf()). */
static bool fgraph_exit_of(const struct report *r, const struct line *l,
			   const struct tk_page_record *rec)
{
	int type;

	if (rec->size > FG_COPY || !r->fg_exit_ev)
		return false;
	if (r->fast_common && rec->size >= r->common_size) {
		uint16_t t;

		memcpy(&t, (const uint8_t *)rec->data + r->type_off, 2);
		type = t;
	} else {
		type = tk_event_record_type(r->set, rec->data, rec->size);
	}
	return type == r->fg_exit_id &&
	       tk_fgraph_is_leaf(l->ev, l->data, l->size, l->pid, r->fg_exit_ev, rec->data,
				 rec->size, record_pid(r, rec->data, rec->size));
}

/* A carried ftrace function or funcgraph line: its indentation, or its leaf's exit. */
static void __attribute__((noinline))
carried_fg_line(const struct report *r, struct printer *p, const struct job *j, uint32_t k,
		const struct line *l)
{
	const struct carried *c = &j->carried[k];

	if (l->ev->id == r->fg_fn_id)
		p->fn_slot = j->fn_slots[k];
	if (c->exit_size) {
		p->fg_exit = j->bytes + c->exit_off;
		p->fg_exit_size = c->exit_size;
	}
	emit_fg_line(p, l);
	p->fg_exit = NULL;
	p->fn_slot = 0;
}

/*
 * Print carried job @j into @o: every line from the job itself, no page
 * read or decoded; @plain as for merge_loop(). The stream a line names is
 * the merge's, read for what never changes (CPU, its text, the buffer).
 */
static inline __attribute__((always_inline)) void carried_loop(const struct report *r,
							       struct printer *p,
							       const struct job *j,
							       struct tk_outbuf *o, const int plain)
{
	p->o = o;
	for (uint32_t k = 0; k < j->npicks; k++) {
		const struct carried *c = &j->carried[k];
		struct line l;

		l.s = &r->streams[c->stream];
		l.ev = c->ev;
		l.comm = c->comm;
		l.data = j->bytes + c->off;
		l.size = c->size;
		l.pid = record_pid(r, l.data, l.size);
		l.ts = c->ts;
		l.missed = c->missed;
		if (__builtin_expect(l.ev && fg_event(r, l.ev->id), 0))
			carried_fg_line(r, p, j, k, &l);
		else
			emit_line(p, &l, false, plain);
	}
}

static bool plain_run(const struct report *r);

/*
 * A printer's prefix cache (64 KiB) as fresh zero pages of its own: a
 * file's few pids touch a few of them, where calloc() zeroed all 16 (a
 * page fault each, ~0.2 ms of a small report). Page-aligned, so each
 * thread's cache has its lines to itself.
 */
static struct prefix *pcache_new(void)
{
	void *m = mmap(NULL, PCACHE_SIZE * sizeof(struct prefix), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return m == MAP_FAILED ? NULL : m;
}

static void pcache_free(struct prefix *pc)
{
	if (pc)
		munmap(pc, PCACHE_SIZE * sizeof(*pc));
}

static int printer_init(struct printer *p, struct report *r, pthread_mutex_t *slow_lock);

static void worker_free(void *engine, void *state)
{
	struct worker *w = state;

	(void)engine;
	pcache_free(w->pr.pcache);
	free(w);
}

/*
 * A worker's own state, made on its thread (print-pool.c) while the merge
 * goes on printing. Reads only what the merge set before the pool started.
 */
static void *worker_new(void *engine, struct tk_print_worker *pw)
{
	struct pool *pool = engine;
	struct report *r = pool->r;
	struct worker *w = tk_line_calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	if (printer_init(&w->pr, r, &pool->pp->slow_lock)) {
		worker_free(pool, w);
		return NULL;
	}
	w->pr.memo = pw->memo;
	return w;
}

/* Print the carried job in @slot into @text with @p, and give its log back. */
static void print_carried(struct pool *pool, struct printer *p, size_t slot, struct tk_outbuf *text)
{
	if (plain_run(pool->r))
		carried_loop(pool->r, p, pool->slots[slot], text, PLAIN_SHARED);
	else
		carried_loop(pool->r, p, pool->slots[slot], text, PLAIN_NO);
	/* The text holds the job now: its log can take the merge's next one. */
	__atomic_store_n(&pool->slots[slot]->lent, false, __ATOMIC_RELEASE);
}

static int worker_replay(void *engine, struct tk_print_worker *pw, size_t slot,
			 struct tk_outbuf *text)
{
	struct pool *pool = engine;
	struct worker *w = pw->state;

	/*
	 * Compressed data: the workers decode ahead for the merge (there is
	 * no decoder thread beside them: decode_ahead()), first, since the
	 * merge waits for chunks and nobody waits for this text yet.
	 */
	if (pool->r->pf)
		tk_dat_prefetch_pump(pool->r->pf);
	print_carried(pool, &w->pr, slot, text);
	return 0;
}

/*
 * The merge, which would wait for a worker (tk_jobs take_back()), prints
 * the carried job in @slot itself with its own printer: it is between
 * jobs, so the printer holds no line of its own, and the next job_begin()
 * points it at that job's text again.
 */
static int merge_takes_back(void *engine, size_t slot, struct tk_outbuf *text)
{
	struct pool *pool = engine;

	print_carried(pool, &pool->r->pr, slot, text);
	return 0;
}

/* A job starts: printed inline when every worker has enough waiting, carried otherwise. */
static void job_begin(void *engine, size_t slot, bool printed_inline, struct tk_outbuf *merge_out)
{
	struct pool *pool = engine;
	struct report *r = pool->r;
	struct job *j = &pool->counts;

	/* The job before was empty and starts again (inline now): its log goes back. */
	if (pool->lent)
		__atomic_store_n(&pool->lent->lent, false, __ATOMIC_RELAXED);
	pool->lent = NULL;
	if (!printed_inline) {
		/*
		 * The lowest log no job holds: the few a run keeps busy stay warm
		 * in the cache, and the others are never touched (a fresh page
		 * costs a fault), where a log per ring slot went through them
		 * all. One is always free: no more jobs are carried at once than
		 * the ring has slots.
		 */
		size_t i = 0;

		while (i + 1 < pool->njobs &&
		       __atomic_load_n(&pool->jobs[i].lent, __ATOMIC_ACQUIRE))
			i++;
		j = &pool->jobs[i];
		__atomic_store_n(&j->lent, true, __ATOMIC_RELAXED);
		pool->lent = j;
	}
	pool->slots[slot] = j;
	j->ntakes = 0;
	j->npicks = 0;
	j->nbytes = 0;
	r->pr.o = merge_out;
	pool->cur = j;
	pool->cur_inline = printed_inline;
}

/* The job is complete: whether it took any record. */
static bool job_end(void *engine, size_t slot, struct tk_outbuf *merge_out)
{
	struct pool *pool = engine;
	struct job *j = pool->slots[slot];

	(void)merge_out;
	if (!j->ntakes)
		return false;
	pool->lent = NULL; /* handed over with the job: the worker gives it back */
	return true;
}

static const struct tk_print_ops report_pool_ops = {
	.job_begin = job_begin,
	.job_end = job_end,
	.worker_new = worker_new,
	.replay = worker_replay,
	.worker_free = worker_free,
};

/* Room for @need more bytes in carried job @j; false (and the run fails) out of memory. */
static bool __attribute__((noinline)) carry_grow(struct pool *pool, struct job *j, size_t need)
{
	size_t cap = j->cap * 2 > j->nbytes + need ? j->cap * 2 : j->nbytes + need;
	uint8_t *b = realloc(j->bytes, cap);

	if (!b) {
		pool->r->nomem = true;
		return false;
	}
	j->bytes = b;
	j->cap = cap;
	return true;
}

/* @n bytes of @src onto carried job @j's bytes, 8-aligned, past the cache. */
static inline __attribute__((always_inline)) void carry_bytes(struct job *j, const void *src,
							      uint32_t n)
{
	memcpy(j->bytes + j->nbytes, src, n);
	j->nbytes += ((size_t)n + 7) & ~(size_t)7;
}

/* Line @l, taken from @s, into carried job @j (see struct carried). */
static inline __attribute__((always_inline)) void
carry_line(struct pool *pool, struct job *j, const struct stream *s, const struct line *l, bool fg)
{
	const struct printer *p = &pool->r->pr;
	uint32_t exit_size = fg && p->fg_exit ? p->fg_exit_size : 0;
	size_t need = (((size_t)l->size + 7) & ~(size_t)7) + (((size_t)exit_size + 7) & ~(size_t)7);
	struct carried *c;

	if (__builtin_expect(j->nbytes + need > j->cap, 0) && !carry_grow(pool, j, need))
		return;
	/*
	 * Field by field into the job, never through a copy on the stack: a
	 * wide load of a struct written in words waits until every store
	 * before it is done, the record's copy into the job's bytes included
	 * (a cache miss), where these stores queue behind it and the merge
	 * goes on (bench/README.md, "Stop 21, .dat").
	 */
	c = &j->carried[j->npicks++];
	c->ev = l->ev;
	c->comm = l->comm;
	c->ts = l->ts;
	c->missed = l->missed;
	c->off = (uint32_t)j->nbytes;
	c->size = l->size;
	c->stream = (uint16_t)s->key.order;
	c->exit_size = 0;
	c->exit_off = 0;
	carry_bytes(j, l->data, l->size);
	if (__builtin_expect(exit_size, 0)) {
		c->exit_off = (uint32_t)j->nbytes;
		c->exit_size = (uint16_t)exit_size;
		carry_bytes(j, p->fg_exit, exit_size);
	}
}

/*
 * One record the merge took from @s, with its line @l (NULL: it prints
 * none). The merge loop hands a full job over once the stream has moved on.
 */
static inline __attribute__((always_inline)) void
pool_take(struct pool *pool, const struct stream *s, const struct line *l, bool fg, const int plain)
{
	struct job *j = pool->cur;

	if (pool->cur_inline) {
		if (l)
			emit_line(&pool->r->pr, l, fg, plain);
	} else if (l) {
		carry_line(pool, j, s, l, fg);
	}
	j->ntakes++;
}

/* Whether the job being filled is to be handed over now (the merge loop asks per record). */
static inline __attribute__((always_inline)) bool pool_job_full(const struct pool *pool)
{
	const struct job *j = pool->cur;

	return __builtin_expect(j->ntakes >= JOB_RECORDS || j->nbytes >= JOB_BYTES ||
					(pool->cur_inline && !(j->ntakes % JOB_CHECK) &&
					 tk_print_pool_starving(pool->pp)),
				0);
}

/* The merge's printer prints alone again: into the report's output, nothing shared. */
static void printer_unshare(struct printer *p, struct report *r)
{
	p->o = &r->out;
	p->shared = false;
	p->slow_lock = NULL;
	p->memo = NULL;
}

static void pool_free(struct pool *pool)
{
	if (!pool)
		return;
	tk_print_pool_free(pool->pp);
	for (size_t i = 0; pool->jobs && i < pool->njobs; i++) {
		free(pool->jobs[i].fn_slots);
		free(pool->jobs[i].carried);
		free(pool->jobs[i].bytes);
	}
	free(pool->jobs);
	free(pool->slots);
	free(pool);
}

/* Print everything handed over, write it out, stop the workers and free the pool. */
static void pool_finish(struct pool *pool)
{
	struct report *r = pool->r;

	tk_print_pool_finish(pool->pp);
	pool_free(pool);
	printer_unshare(&r->pr, r);
}

/* A printer's own state, for one more thread. */
static int printer_init(struct printer *p, struct report *r, pthread_mutex_t *slow_lock)
{
	memset(p, 0, sizeof(*p));
	p->r = r;
	p->o = &r->out;
	p->slow_lock = slow_lock;
	p->shared = slow_lock != NULL;
	p->blk_us = NO_BLOCK;
	p->blk4_us = NO_BLOCK;
	p->t_us = NO_TEXT;
	p->us_text = r->usecs && !(r->opts->flags & TK_REPORT_NSEC);
	p->pcache = pcache_new();
	return p->pcache ? 0 : -ENOMEM;
}

/*
 * @threads printers (the merge thread and threads - 1 workers), or NULL
 * when one thread prints (asked for, or a mode that prints in the merge:
 * --stat, --json, -l, -R, --slow, --fallbacks, --sym; or
 * out of memory or threads, which only costs speed).
 */
static struct pool *pool_new(struct report *r, unsigned int threads)
{
	struct pool *pool;
	bool ok;

	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	if (threads < 2 || (r->opts->flags & POOL_NEVER) || r->opts->line_hook ||
	    r->nstreams > MAX_CARRY_STREAMS)
		return NULL;
	pool = tk_line_calloc(1, sizeof(*pool));
	if (!pool)
		return NULL;
	pool->r = r;
	pool->pp = tk_print_pool_new(&report_pool_ops, pool, threads - 1, JOB_SLOTS(threads - 1),
				     JOB_QUEUE, JOB_TEXT, &r->out);
	ok = pool->pp != NULL;
	/* The default's workers step aside when they get no CPU (print-pool.c); -j N's stay. */
	if (ok)
		pool->pp->may_retire = !r->opts->threads;
	pool->njobs = ok ? pool->pp->q.n : 0;
	pool->jobs = ok ? tk_line_calloc(pool->njobs, sizeof(*pool->jobs)) : NULL;
	pool->slots = ok ? calloc(pool->njobs, sizeof(*pool->slots)) : NULL;
	ok = ok && pool->jobs && pool->slots;
	for (size_t i = 0; ok && i < pool->njobs; i++) {
		struct job *j = &pool->jobs[i];

		/* A job ends at JOB_RECORDS takes: a funcgraph leaf's exit takes no line. */
		j->carried = tk_line_alloc(JOB_RECORDS, sizeof(*j->carried));
		j->fn_slots = tk_line_alloc(JOB_RECORDS, sizeof(*j->fn_slots));
		j->cap = JOB_BYTES + (16u << 10);
		j->bytes = tk_line_alloc(j->cap, 1);
		ok = j->carried && j->fn_slots && j->bytes;
	}
	if (!ok) {
		pool_free(pool);
		return NULL;
	}
	r->pr.shared = true;
	r->pr.slow_lock = &pool->pp->slow_lock;
	r->pr.memo = pool->pp->main_memo;
	pool->pp->q.take_back = merge_takes_back;
	pool->pp->q.take_back_arg = pool;
	/* Logged jobs wait for the workers that did start: none, no pool. */
	if (!tk_print_pool_start(pool->pp)) {
		printer_unshare(&r->pr, r);
		pool_free(pool);
		return NULL;
	}
	return pool;
}

/*
 * The default thread count for @bytes of CPU data: tk_report_threads(),
 * then no more than the CPUs this process may use (tk_cores_allowed()),
 * read once a run.
 */
static unsigned int default_threads(struct report *r, uint64_t bytes)
{
	unsigned int n = tk_report_threads(r->opts->threads, bytes);

	if (r->opts->threads || n < 2)
		return n;
	if (!r->cores)
		r->cores = tk_cores_allowed(n);
	return n > r->cores ? r->cores : n;
}

/*
 * Compressed data decoded ahead by default below the 128 MiB of
 * tk_report_threads(): from DECODE_AHEAD_MIN_BYTES decoded on, where one
 * compressed byte holds at most DECODE_AHEAD_MAX_SQUEEZE decoded ones, the
 * default runs two threads, the decoder thread and the merge (see the notes
 * on threads). zstd's decoding is a third to a half of a one-thread run
 * where a compressed byte holds 3-5, a quarter to a third where it holds
 * 8-17 (the family files but raw_syscalls), and on two CPUs given to the
 * run the decoder layout ended 7-14% sooner than -j 1 on every such family
 * file (irq-timer 4, block 9, net 11, mixed 11, sched 14, marker 14,
 * syscalls 17), at 13-27% more CPU time; at 26 (raw_syscalls) it ended
 * even with -j 1 at 33% more: the handover costs what the little decoding
 * saves. Below 16 MiB the gain on free CPUs was at most 13% (11 ms on a
 * 10 MB file), while with the machine half busy (load ~3 on two CPUs) those
 * small files lost most, 3-13% against -j 1: the decoder thread's start and
 * the periods before its stop are not paid back. The decoder stops itself
 * on a busy machine (dat-read.c's notes).
 */
#define DECODE_AHEAD_MIN_BYTES	 (16u << 20)
#define DECODE_AHEAD_MAX_SQUEEZE 20u /* decoded bytes per compressed byte, at most */

/*
 * Threads to run for the CPU data of the streams shown (default_threads(),
 * or -j): compressed data counts its bytes decoded, as its printers do;
 * where decoding weighs (DECODE_AHEAD_*), two from a smaller size.
 */
static unsigned int report_threads(struct report *r)
{
	uint64_t bytes = 0, zbytes = 0, zdecoded = 0;
	unsigned int n;

	for (size_t i = 0; i < r->nstreams; i++) {
		const struct stream *s = &r->streams[i];

		bytes += s->size;
		if (s->buf->compressed) {
			zbytes += s->buf->cpus[s->cpu_index].size;
			zdecoded += s->size;
		}
	}
	n = default_threads(r, bytes);
	if (n > 1 || r->opts->threads || zdecoded < DECODE_AHEAD_MIN_BYTES ||
	    zbytes * DECODE_AHEAD_MAX_SQUEEZE < zdecoded)
		return n;
	if (!r->cores)
		r->cores = tk_cores_allowed(2);
	return r->cores < 2 ? 1 : 2;
}

/*
 * Compressed streams with a second thread to spare: their chunks are
 * decoded ahead on it (see the notes on threads). Anything that fails
 * here only costs speed: the readers then decode alone.
 */
static void decode_ahead(struct report *r, unsigned int threads)
{
	size_t lanes = 0;

	if (threads < 2)
		return;
	for (size_t i = 0; i < r->nstreams; i++)
		lanes += r->streams[i].buf->compressed;
	if (!lanes)
		return;
	r->pf = tk_dat_prefetch_new(r->dat, lanes);
	if (!r->pf)
		return;
	for (size_t i = 0; i < r->nstreams; i++) {
		if (r->streams[i].buf->compressed && r->streams[i].live)
			(void)tk_dat_prefetch_attach(r->pf, r->streams[i].rd);
	}
}

/*
 * Start what decode_ahead() made: chunks decoded between the jobs of the
 * print workers of @pool, or, with no pool, on a decoder thread of its own.
 */
static void decode_ahead_start(struct report *r, const struct pool *pool)
{
	if (!r->pf)
		return;
	/* A pumped prefetch that fails to start stays, unstarted: the merge decodes alone. */
	if (pool) {
		(void)tk_dat_prefetch_start_pumped(r->pf);
	} else if (tk_dat_prefetch_start(r->pf) < 0) {
		tk_dat_prefetch_free(r->pf);
		r->pf = NULL;
	}
}

/*
 * The printers beside a decoder (decode_ahead() made one) for @threads,
 * the default's or -j's: on two CPUs one printer, the merge, so that a
 * decoder thread has the second CPU to itself; else @threads, whose
 * workers decode between their jobs. On two CPUs a print worker that
 * also decodes took turns with the merge and brought its own costs (the
 * carried jobs' logs and texts faulted in, the records' cache lines
 * fetched from the other CPU), where the decoder thread shares nothing
 * but the decoded chunks: on every compressed family file, and on files
 * where decoding is a third of the work as where it is a tenth, the
 * decoder and the merge ran in less wall and less CPU than the merge and
 * a pumping worker (bench/README.md, stop 24).
 */
static unsigned int printers(const struct report *r, unsigned int threads)
{
	return r->pf && threads == 2 ? 1 : threads;
}

static void *symbols_main(void *set)
{
	tk_event_ksym_prepare(set);
	return NULL;
}

/*
 * A run that will print on several threads readies the kernel's symbols
 * (a kernel's kallsyms checked for a lazy table, ~9 M instructions for
 * 120 k lines, or the table built, ~21 M; a zstd file's kallsyms is
 * decoded first, ~48 M more, as the file's kallsyms are read only when
 * needed: load_events()) on a spare core while this one goes on: timer, irq and
 * function events print symbols from their first job. It starts with the
 * first event whose format may print one (format_wants_symbols(), from
 * event_get()), so that a run of sched or syscall events, which print
 * none, does not pay it. What the file's buffers say before the streams
 * exist decides whether the run will have threads, as report_threads()
 * does later.
 */
static void symbols_early(struct report *r)
{
	uint64_t bytes = 0;

	bool have = r->set->ksym_text || __atomic_load_n(&r->set->ksym_pending, __ATOMIC_ACQUIRE);

	if (!have || r->set->ksym_built || (r->opts->flags & POOL_NEVER))
		return;
	for (size_t b = 0; b < tk_dat_buffer_count(r->dat); b++) {
		const struct tk_dat_buffer *buf = tk_dat_buffer_get(r->dat, b);

		for (uint32_t c = 0; !buf->latency_text && c < buf->cpu_count; c++)
			bytes += buf->cpus[c].size;
	}
	r->sym_early = default_threads(r, bytes) > 1;
}

/* The thread of symbols_early(); without one the first lookup builds the table. */
static void symbols_start(struct report *r)
{
	r->sym_started = pthread_create(&r->sym_thread, NULL, symbols_main, r->set) == 0;
	/* Once is enough: a failed start is not tried again per event. */
	r->sym_early = false;
}

/* ------------------------------------------------------------ the run */

/*
 * The run's tables and the event formats: everything before the streams.
 * Return: 0 or an error (report_release() cleans up either way).
 */
/*
 * -O as trace-cmd passes it: "NAME[=VALUE]" to tep_plugin_add_option(),
 * which libtraceevent applies as each plugin loads (so this comes first).
 */
static int set_plugin_options(struct report *r, const struct tk_report_opts *opts)
{
	for (size_t i = 0; i < opts->nplugin_options; i++) {
		char *name, *eq;
		int ret;

		/* trace-cmd's own options (its function graph printer's), not a plugin's. */
		if (tk_fgraph_option(opts->plugin_options[i], &r->fg_flags))
			continue;
		name = strdup(opts->plugin_options[i]);
		if (!name)
			return tk_fail(ENOMEM, "out of memory");
		eq = strchr(name, '=');
		if (eq)
			*eq++ = '\0';
		ret = tep_plugin_add_option(name, eq);
		free(name);
		if (ret < 0)
			return tk_fail(ENOMEM, "-O '%s': out of memory", opts->plugin_options[i]);
	}
	return 0;
}

/*
 * Whether @opt ("[PLUGIN:]NAME[=VALUE]") names an option in @list, the
 * text of tep_plugin_print_options(): "  plugin:\tP" and "  option:\tO"
 * lines per option. (tep_plugin_list_options() of libtraceevent 1.7
 * sizes its array in bytes, not pointers, and corrupts the heap.)
 */
static bool plugin_option_known(const char *list, const char *opt)
{
	size_t n = strcspn(opt, "="), np = 0;
	const char *colon = memchr(opt, ':', n), *plugin = "";

	for (const char *l = list; *l;) {
		size_t len = strcspn(l, "\n");
		const char *v = memchr(l, '\t', len);

		if (v) {
			size_t vlen = len - (size_t)(v + 1 - l);

			v++;
			if (len > 9 && !memcmp(l, "  plugin:", 9)) {
				plugin = v;
				np = vlen;
			} else if (len > 9 && !memcmp(l, "  option:", 9)) {
				if (!colon && vlen == n && !memcmp(v, opt, n))
					return true;
				if (colon && (size_t)(colon - opt) == np &&
				    !memcmp(plugin, opt, np) && vlen == n - np - 1 &&
				    !memcmp(v, colon + 1, vlen))
					return true;
			}
		}
		l += len + (l[len] == '\n');
	}
	return false;
}

/*
 * trace-cmd takes any -O and silently ignores a name no plugin has; here
 * that is an error naming the options the loaded plugins do have.
 */
static int check_plugin_options(const struct tk_report_opts *opts)
{
	struct trace_seq seq;
	int ret = 0;

	if (!opts->nplugin_options)
		return 0;
	trace_seq_init(&seq);
	tep_plugin_print_options(&seq);
	trace_seq_terminate(&seq);
	if (!seq.buffer || seq.state != TRACE_SEQ__GOOD) {
		trace_seq_destroy(&seq);
		return tk_fail(ENOMEM, "cannot list the plugin options");
	}
	for (size_t i = 0; i < opts->nplugin_options && !ret; i++) {
		const char *opt = opts->plugin_options[i];
		char known[512];
		size_t len = 0;
		const char *plugin = "";
		int np = 0;
		unsigned int scratch = 0;

		if (plugin_option_known(seq.buffer, opt) || tk_fgraph_option(opt, &scratch))
			continue;
		known[0] = '\0';
		for (const char *l = seq.buffer; *l && len + 2 < sizeof(known);) {
			int w = (int)strcspn(l, "\n");

			if (w > 10 && !memcmp(l, "  plugin:\t", 10)) {
				plugin = l + 10;
				np = w - 10;
			} else if (w > 10 && !memcmp(l, "  option:\t", 10)) {
				int k = snprintf(known + len, sizeof(known) - len, "%s%.*s:%.*s",
						 len ? ", " : "", np, plugin, w - 10, l + 10);

				len += k > 0 ? (size_t)k : 0;
			}
			l += w + (l[w] == '\n');
		}
		snprintf(known + len, sizeof(known) - len, "%sfgraph:tailprint, fgraph:depth",
			 len ? ", " : "");
		ret = tk_fail(EINVAL, "-O '%.*s': no plugin has that option (the plugins have: %s)",
			      (int)strcspn(opt, "="), opt, known[0] ? known : "none");
	}
	trace_seq_destroy(&seq);
	return ret;
}

/* trace-cmd's time options, made into shown_ts()'s parameters. */
static void time_options(struct report *r)
{
	const struct tk_report_opts *opts = r->opts;

	r->ts_custom = opts->ts_offset || opts->ts2secs_hz ||
		       (opts->flags & (TK_REPORT_RAW_TS | TK_REPORT_NODATE | TK_REPORT_ALIGN_TS));
	if (!r->ts_custom)
		return;
	if (opts->ts2secs_hz)
		r->ts2secs = 1e9 / (double)opts->ts2secs_hz;
	r->ts_plus = r->ts_add + (uint64_t)opts->ts_offset;
	if ((opts->flags & TK_REPORT_NODATE) && r->info->has_date)
		r->ts_plus -= (uint64_t)r->info->date_offset_us * 1000u;
	/*
	 * --raw-ts: counts, shown as libtraceevent's "%12d" shows them, when
	 * the file names its clock (trace-cmd drops microseconds as it reads
	 * the clock's name; without one they stay).
	 */
	if (opts->flags & TK_REPORT_RAW_TS) {
		bool named = r->info->trace_clock != NULL;

		for (size_t b = 0; b < tk_dat_buffer_count(r->dat); b++) {
			const struct tk_dat_buffer *buf = tk_dat_buffer_get(r->dat, b);

			if (!buf->name[0] && buf->clock)
				named = true;
		}
		if (named)
			r->usecs = false;
	}
}

static int report_setup(struct report *r, struct tk_dat *dat, const struct tk_report_opts *opts)
{
	int ret;

	r->dat = dat;
	r->opts = opts;
	r->info = tk_dat_get_info(dat);
	r->path = r->info->path ? r->info->path : "trace.dat";
	r->fg_entry_id = -1;
	r->fg_exit_id = -1;
	r->fg_fn_id = -1;
	r->fg_lo = UINT32_MAX;
	r->usecs = clock_in_usecs(r->info);
	/* Unsigned sums wrap as tk_dat_timestamp()'s do, so one addend serves. */
	r->ts_add = (r->info->has_date ? (uint64_t)r->info->date_offset_us * 1000u : 0) +
		    (uint64_t)r->info->ts_offset;
	time_options(r);
	ret = tk_outbuf_init(&r->out, opts->fd, OUT_BYTES);
	if (ret)
		return ret;
	r->counts = calloc(65536, sizeof(*r->counts));
	r->cmemo = calloc(PCACHE_SIZE, sizeof(*r->cmemo));
	r->evs = calloc(65536, sizeof(*r->evs));
	if (opts->flags & TK_REPORT_SYMBOLS) {
		/* Without a cache, the live uprobe_events still name the places. */
		r->cache = tk_cache_open_existing(opts->cache_dir);
		r->sym = tk_symbolizer_new(r->cache);
		r->probe_ip = calloc(65536, sizeof(*r->probe_ip));
		r->probe_memo = malloc(PROBE_MEMO * sizeof(*r->probe_memo));
		for (size_t i = 0; r->probe_memo && i < PROBE_MEMO; i++)
			r->probe_memo[i].id = -1;
	}
	if (printer_init(&r->pr, r, NULL) || !r->counts || !r->cmemo || !r->evs ||
	    ((opts->flags & TK_REPORT_SYMBOLS) && (!r->sym || !r->probe_ip || !r->probe_memo)))
		return tk_fail(ENOMEM, "cannot allocate event counts");
	ret = set_plugin_options(r, opts);
	if (!ret)
		ret = load_events(r);
	if (!ret)
		ret = check_plugin_options(opts);
	if (ret)
		return ret;
	/* trace-cmd's own function graph printers come with the plugins (not with -N). */
	if (!(opts->flags & TK_REPORT_NO_PLUGINS))
		fgraph_ids(r);
	ret = load_filter(r);
	if (ret)
		return ret;
	return load_neg_filter(r);
}

/*
 * "cpus=N", the streams at their first record, the kernel's loss counters
 * and, with --header, the loss lines (a first pass over the page headers).
 */
/*
 * --align-ts: every time less the first one of the top buffer (trace-cmd's
 * tracecmd_get_first_ts(): the earliest CPU's first event; 0 when the top
 * buffer is empty). The streams hold their first batch already.
 */
static uint64_t first_time(const struct report *r)
{
	uint64_t first = 0;
	bool any = false;

	for (size_t i = 0; i < r->nstreams; i++) {
		const struct stream *s = &r->streams[i];

		if (!s->buf->name[0] && s->live && (!any || s->key.ts < first)) {
			first = s->key.ts;
			any = true;
		}
	}
	return first;
}

/* Every time of @r less @first, the records the streams hold already included. */
static void align_times(struct report *r, uint64_t first)
{
	if (!first)
		return;
	r->ts_plus -= first;
	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];

		if (!s->live)
			continue;
		for (uint32_t k = s->irec ? s->irec - 1 : 0; k < s->nrecs; k++)
			s->recs[k].timestamp -= first;
		s->key.ts -= first;
	}
	/* Times before @first wrap to the end, as trace-cmd's do: the heap's order changes. */
	for (size_t i = r->nheap / 2; i-- > 0;)
		tk_merge_heap_down(r->heap, r->nheap, i);
}

static int report_open(struct report *r)
{
	const struct tk_report_opts *opts = r->opts;
	int ret;

	if (!(opts->flags & TK_REPORT_JSON)) {
		char line[64];
		int n = snprintf(line, sizeof(line), "cpus=%u\n", r->info->cpu_count);

		if (r->file_label) {
			char label[300];
			int k = snprintf(label, sizeof(label), "%*.256s: ", r->file_width,
					 r->file_label);

			tk_outbuf_write(r->pr.o, label, k < (int)sizeof(label) ? (size_t)k : 0);
		}
		tk_outbuf_write(r->pr.o, line, (size_t)n);
	}
	r->fast_common = r->set->have_common && !r->set->swap && r->set->type_size == 2 &&
			 r->set->pid_size == 4;
	r->type_off = r->set->type_off;
	r->pid_off = r->set->pid_off;
	if (r->fast_common && (r->pid_off > UINT32_MAX - 4 || r->type_off > UINT32_MAX - 2))
		r->fast_common = false;
	else
		r->common_size =
			r->pid_off + 4 > r->type_off + 2 ? r->pid_off + 4 : r->type_off + 2;
	r->filtering =
		opts->nevents || opts->npids || opts->ncomms || opts->nneg_events ||
		(opts->flags & (TK_REPORT_NO_HARDIRQ | TK_REPORT_NO_SOFTIRQ | TK_REPORT_TS_CHECK));
	/* trace-cmd 3.1.6 rounds to microseconds only with a TRACECLOCK option (use_trace_clock).
	 */
	r->diff_us = r->info->trace_clock && !(opts->flags & TK_REPORT_NSEC) && !opts->ts2secs_hz;
	r->special = opts->flags & (TK_REPORT_STAT | TK_REPORT_JSON);
	ret = open_streams(r);
	/* Several files align on the earliest of them all (tk_report_run_files_filtered()). */
	if (!ret && (opts->flags & TK_REPORT_ALIGN_TS) && !r->file_label)
		align_times(r, first_time(r));
	r->room = 512 + 256 + (size_t)r->label_width * 2 + 128 + 32;
	if (ret)
		return ret;
	load_cpustat(r);
	/* JSON has no header: no first pass for it. */
	if ((opts->flags & TK_REPORT_HEADER) && !(opts->flags & TK_REPORT_JSON)) {
		for (size_t i = 0; i < r->nstreams; i++) {
			ret = prescan(r, &r->streams[i]);
			if (ret)
				return ret;
		}
		print_loss_header(r);
	}
	warn_cpustat(r);
	return 0;
}

/*
 * The usual take of a record fgraph_take() does not look ahead for; for an
 * ftrace:function line, with its indentation worked out here, in record
 * order (funcgraph.c). Return: as stream_next().
 */
static int fn_take(struct report *r, struct pool *pool, struct stream *s, struct line *l)
{
	struct printer *p = &r->pr;
	int idx = -1;

	if (l->ev->id == r->fg_fn_id && !(r->opts->flags & TK_REPORT_RAW)) {
		if (!r->fn_indent)
			r->fn_indent = tk_fn_indent_new();
		if (r->fn_indent)
			idx = tk_fn_indent_next(r->fn_indent, r->set, p->memo, l->ev, l->data,
						l->size, s->cpu);
		else
			r->nomem = true;
	}
	p->fn_slot = idx >= 0 ? (uint32_t)idx + 1 : 0;
	if (pool) {
		pool_take(pool, s, l, true, PLAIN_NO);
		if (!pool->cur_inline)
			pool->cur->fn_slots[pool->cur->npicks - 1] = p->fn_slot;
	} else {
		emit_fg_line(p, l);
	}
	p->fn_slot = 0;
	return stream_next(r, s);
}

/*
 * The merge's half of a funcgraph entry's line, in place of the usual
 * take (merge_records()): trace-cmd prints an entry as a leaf when the
 * next record of its buffer is its return, which it then takes without
 * printing it. That record is the earliest of the buffer's streams, @s
 * having moved past the entry (its record is copied first: the move may
 * replace the page). The entry is printed, or logged for the workers
 * followed by the exit's take, which fgraph_replay() recognises.
 * Return: as stream_next() for @s; or FG_HEAP_DONE when the exit came
 * from another stream and the heap has been restored here.
 */
static int __attribute__((noinline))
fgraph_take(struct report *r, struct pool *pool, struct stream *s, struct line *l)
{
	struct printer *p = &r->pr;
	struct stream *n = NULL;
	bool leaf = false, moved = l->size <= FG_COPY;
	int ret = 0, nret;

	/* -R prints the raw fields: trace-cmd calls no handler, so nothing is looked ahead. */
	if (l->ev->id == r->fg_fn_id || l->ev->id != r->fg_entry_id ||
	    (r->opts->flags & TK_REPORT_RAW))
		return fn_take(r, pool, s, l);
	if (!r->fg_exit_ev && r->fg_exit_id >= 0)
		r->fg_exit_ev = event_get(r, r->fg_exit_id);
	if (moved) {
		memcpy(p->fg_entry_copy, l->data, l->size);
		l->data = p->fg_entry_copy;
		ret = stream_next(r, s);
		for (size_t i = 0; ret >= 0 && i < r->nstreams; i++) {
			struct stream *t = &r->streams[i];

			if (t->buffer != s->buffer || (t == s ? ret != 1 : !t->live))
				continue;
			if (!n || tk_merge_before(&t->key, &n->key))
				n = t;
		}
		leaf = n && fgraph_exit_of(r, l, n->rec);
		if (leaf) {
			memcpy(p->fg_exit_copy, n->rec->data, n->rec->size);
			p->fg_exit = p->fg_exit_copy;
			p->fg_exit_size = n->rec->size;
		}
	}
	if (pool) {
		pool_take(pool, s, l, true, PLAIN_NO);
		if (leaf)
			pool_take(pool, n, NULL, false, PLAIN_NO);
	} else {
		emit_fg_line(p, l);
	}
	p->fg_exit = NULL;
	if (!moved)
		return stream_next(r, s);
	if (!leaf || ret < 0)
		return ret;
	n->events++;
	if (n == s)
		return stream_next(r, s);
	/* The exit came from another CPU: restore the heap for @s, then for @n (rare). */
	nret = stream_next(r, n);
	if (ret == 1) {
		tk_merge_heap_fix_top(r->heap, r->nheap);
	} else {
		s->live = false;
		r->nheap = tk_merge_heap_pop(r->heap, r->nheap);
	}
	if (nret == 0) {
		n->live = false;
		for (size_t i = 0; i < r->nheap; i++) {
			if (r->heap[i] == &n->key) {
				r->heap[i] = r->heap[--r->nheap];
				break;
			}
		}
	}
	for (size_t i = r->nheap / 2; i-- > 0;)
		tk_merge_heap_down(r->heap, r->nheap, i);
	return nret < 0 ? nret : FG_HEAP_DONE;
}

/*
 * The merge: every record in time order, to the end of the window, each
 * line printed here or logged for the pool's workers (@pool, or NULL).
 * @plain (a constant at each call) is PLAIN_SHARED or PLAIN_SOLO for a
 * run with none of the options that change a line or pick records
 * (plain_run()): its copy of the loop, and the workers' (replay_job()),
 * have the tests for them compiled out; PLAIN_SOLO (no pool: no printer
 * shares libtraceevent) drops the tests for sharing too. With -j 1 that is
 * 40-55 M instructions fewer a million records (bench/README.md).
 * Return: 0 or an error; a cut CPU stream is no error here (stream_cut()).
 */
static inline __attribute__((always_inline)) int merge_loop(struct report *r, struct pool *pool,
							    const int plain)
{
	const struct tk_report_opts *opts = r->opts;
	uint64_t end_ns = opts->has_end ? opts->end_ns : UINT64_MAX;
	int ret = 0;

	while (!ret && r->nheap && !r->out.error && !r->nomem) {
		/* The key is the stream's first member. */
		struct stream *s = (struct stream *)r->heap[0];
		struct line l;
		bool shown;

		if (!plain && __builtin_expect(s->key.ts >= end_ns, 0) && opts->has_end)
			break;
		s->events++;
		shown = select_record(r, s, &l, plain);
		if (__builtin_expect(shown && l.ev && fg_event(r, l.ev->id), 0)) {
			/* A copy: @l's address taken here would keep it in memory on every line. */
			struct line fl = l;

			ret = fgraph_take(r, pool, s, &fl);
		} else {
			if (pool)
				pool_take(pool, s, shown ? &l : NULL, false, plain);
			else if (shown)
				emit_line(&r->pr, &l, false, plain);
			ret = stream_next(r, s);
		}
		if (__builtin_expect(ret == 1, 1)) {
			ret = 0;
			tk_merge_heap_fix_top(r->heap, r->nheap);
		} else if (ret == 0) {
			s->live = false;
			r->nheap = tk_merge_heap_pop(r->heap, r->nheap);
		} else if (ret == FG_HEAP_DONE) {
			ret = 0;
		}
		/* Here, where every live stream holds its next record: where the next job starts.
		 */
		if (pool && pool_job_full(pool)) {
			tk_print_pool_dispatch(pool->pp, false, false);
			/* The workers did not pay: merge_records() goes on without them. */
			if (__builtin_expect(pool->pp->retired, 0))
				break;
		}
	}
	return ret;
}

/* Whether no option changes a line or picks records (read by the workers too). */
static bool plain_run(const struct report *r)
{
	const struct tk_report_opts *o = r->opts;

	return !o->has_end && !r->filtering && !r->special && !r->file_label && !r->instances &&
	       !o->line_hook &&
	       !(o->flags & (TK_REPORT_LATENCY | TK_REPORT_TS_DIFF | TK_REPORT_SYMBOLS |
			     TK_REPORT_RAW | TK_REPORT_SLOW));
}

/*
 * The merge, with the pool *@pool or none. When the pool retires its
 * workers (print-pool.c's trial), the pool is finished here, its texts
 * written out in order, and the rest prints as with -j 1 (*@pool NULL).
 */
static int merge_records(struct report *r, struct pool **pool)
{
	bool plain = plain_run(r);
	int ret;

	if (!*pool)
		return plain ? merge_loop(r, NULL, PLAIN_SOLO) : merge_loop(r, NULL, PLAIN_NO);
	ret = plain ? merge_loop(r, *pool, PLAIN_SHARED) : merge_loop(r, *pool, PLAIN_NO);
	if (ret || !(*pool)->pp->retired)
		return ret;
	pool_finish(*pool);
	*pool = NULL;
	return plain ? merge_loop(r, NULL, PLAIN_SOLO) : merge_loop(r, NULL, PLAIN_NO);
}

/*
 * After the merge: --stat and --fallbacks, the statistics, the losses on
 * stderr, and the error of a CPU whose data ended early. Return: @ret, or
 * the error the run ends with.
 */
static int report_stats(struct report *r, int ret, struct tk_report_stats *st)
{
	if (!ret && r->nomem)
		ret = tk_fail(ENOMEM, "cannot parse an event format: out of memory");
	if (!ret && (r->opts->flags & TK_REPORT_STAT)) {
		print_stat(r);
		if (r->nomem)
			ret = tk_fail(ENOMEM, "cannot sort the event counts: out of memory");
	}
	if (!ret && (r->opts->flags & TK_REPORT_FALLBACKS))
		warn_fallbacks(r);
	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];

		st->events += s->events;
		st->lost_events += s->lost;
		st->drop_marks += s->marks;
		if (s->has_cpustat) {
			st->kernel_lost = add_sat(st->kernel_lost, kernel_lost(s));
			st->unrecorded = add_sat(st->unrecorded, s->entries);
		}
		if (s->cut)
			st->incomplete++;
		/* The page counts at the end, unless the kernel's counts said the same up front. */
		if (!ret && (s->lost || s->marks) &&
		    !(s->has_cpustat && kernel_lost(s) == s->lost && !s->marks))
			tk_warn("%s: buffer %s cpu %u: %" PRIu64 " events lost%s", r->path,
				buffer_label(s), s->cpu, s->lost,
				s->marks ? " (and more: some pages do not count their drops)" : "");
	}
	/* A CPU whose data ended early makes the whole run fail, after the rest is printed. */
	if (!ret && r->cut_msg[0]) {
		/* The first cut is the error message; any other gets a warning. */
		for (size_t i = 0; i < r->nstreams; i++) {
			struct stream *s = &r->streams[i];

			if (s->cut && s != r->cut_first)
				tk_warn("%s: file is incomplete: buffer %s cpu %u: read 0x%" PRIx64
					" of 0x%" PRIx64 " bytes of its data",
					r->path, buffer_label(s), s->cpu, s->cut_at, s->size);
		}
		ret = tk_fail(EBADMSG, "%s", r->cut_msg);
	}
	st->printed = r->known;
	return ret;
}

/* A time as trace-cmd's --first-event prints it: the time column without its blanks and colon. */
static int time_text(const struct report *r, uint64_t ts, char *out, size_t cap)
{
	if (!r->usecs)
		return snprintf(out, cap, "%12" PRIu64, ts);
	if (r->opts->flags & TK_REPORT_NSEC)
		return snprintf(out, cap, "%5" PRIu64 ".%09" PRIu64, ts / (uint64_t)1000000000,
				ts % (uint64_t)1000000000);
	ts = (ts + 500) / 1000;
	return snprintf(out, cap, "%5" PRIu64 ".%06" PRIu64, ts / (uint64_t)1000000,
			ts % (uint64_t)1000000);
}

/*
 * --first-event / --last-event, as trace-cmd prints them: the CPUs of the
 * top buffer that hold records, each with the time of its first and/or
 * last one. The last is found by reading the CPU to its end.
 */
static int report_cpu_times(struct report *r)
{
	unsigned int flags = r->opts->flags;
	char line[256];
	int n, ret;

	n = snprintf(line, sizeof(line), "List of CPUs in %s with data:\n", r->path);
	tk_outbuf_write(&r->out, line, n < (int)sizeof(line) ? (size_t)n : sizeof(line) - 1);
	ret = open_streams(r);
	if (ret)
		return ret;
	for (size_t i = 0; i < r->nstreams; i++) {
		struct stream *s = &r->streams[i];
		uint64_t last;

		if (s->buf->name[0] || !s->live)
			continue;
		n = snprintf(line, sizeof(line), "  %u", s->cpu);
		if (flags & TK_REPORT_FIRST_EVENT) {
			n += snprintf(line + n, sizeof(line) - (size_t)n, "\tFirst event:");
			n += time_text(r, s->key.ts, line + n, sizeof(line) - (size_t)n);
		}
		if (flags & TK_REPORT_LAST_EVENT) {
			do
				last = s->key.ts;
			while ((ret = stream_next(r, s)) == 1);
			if (ret < 0)
				return ret;
			if (s->cut)
				return tk_fail(EBADMSG, "%s", r->cut_msg);
			n += snprintf(line + n, sizeof(line) - (size_t)n, "\tLast event:");
			n += time_text(r, last, line + n, sizeof(line) - (size_t)n);
		}
		line[n++] = '\n';
		tk_outbuf_write(&r->out, line, (size_t)n);
	}
	return 0;
}

static void report_release(struct report *r)
{
	for (size_t i = 0; i < r->nstreams; i++) {
		tk_dat_cpu_reader_free(r->streams[i].rd);
		free(r->streams[i].recs);
		free(r->streams[i].pre_msg);
	}
	/* After the readers, which hold its slots. */
	tk_dat_prefetch_free(r->pf);
	free(r->streams);
	free(r->heap);
	if (r->filter)
		tep_filter_free(r->filter);
	if (r->negfilter)
		tep_filter_free(r->negfilter);
	free(r->fscratch);
	free(r->counts);
	free(r->lazy);
	free(r->order);
	free(r->cmemo);
	pcache_free(r->pr.pcache);
	free(r->evs);
	free(r->probe_ip);
	free(r->probe_memo);
	tk_symbolizer_free(r->sym);
	tk_cache_close(r->cache);
	tk_fn_indent_free(r->fn_indent);
}

int tk_report_run(struct tk_dat *dat, const struct tk_report_opts *user_opts,
		  struct tk_report_stats *stats)
{
	struct tk_report_opts opts_copy;
	const struct tk_report_opts *opts = &opts_copy;
	struct report r;
	struct tk_report_stats st;
	struct pool *pool = NULL;
	int ret, fret;

	if (!user_opts)
		return tk_fail(EINVAL, "no report options");
	ret = tk_opts_copy(&opts_copy, sizeof(opts_copy), user_opts, "tk_report_opts");
	if (ret < 0)
		return ret;
	/* Plugin options act in libtraceevent's printers, not in the compiled ones. */
	if (opts_copy.nplugin_options || (opts_copy.flags & TK_REPORT_NO_PLUGINS) ||
	    opts_copy.nraw_events || opts_copy.nnohandle_events)
		opts_copy.flags |= TK_REPORT_SLOW;
	memset(&r, 0, sizeof(r));
	memset(&st, 0, sizeof(st));
	ret = report_setup(&r, dat, opts);
	if (ret && !r.out.buf)
		return ret;
	if (!ret &&
	    (opts->flags & (TK_REPORT_FIRST_EVENT | TK_REPORT_LAST_EVENT | TK_REPORT_CPUS))) {
		if (stats)
			*stats = st;
		ret = report_cpu_times(&r);
		fret = tk_outbuf_flush(&r.out);
		report_release(&r);
		tk_event_set_free(r.set);
		tk_outbuf_release(&r.out);
		return ret ? ret : fret;
	}
	if (!ret)
		symbols_early(&r);
	if (!ret)
		ret = report_open(&r);
	if (!ret && r.nheap) {
		unsigned int threads = report_threads(&r);

		/*
		 * Compressed data: the print workers decode ahead between their
		 * jobs, or, with none, a decoder thread beside the merge; a
		 * worker prints the records the merge carries to it, so it
		 * decodes no chunk again (see the notes on threads).
		 */
		decode_ahead(&r, threads);
		pool = pool_new(&r, printers(&r, threads));
		decode_ahead_start(&r, pool);
	}
	if (!ret)
		ret = merge_records(&r, &pool);
	if (pool)
		pool_finish(pool);
	ret = report_stats(&r, ret, &st);
	fret = tk_outbuf_flush(&r.out);
	if (!ret)
		ret = fret;
	if (stats)
		*stats = st;
	report_release(&r);
	if (r.sym_started)
		pthread_join(r.sym_thread, NULL);
	if (!(opts->flags & TK_REPORT_EXITING))
		tk_event_set_free(r.set);
	tk_outbuf_release(&r.out);
	return ret;
}

/*
 * Several files, as trace-cmd report -i A -i B prints them: each file's
 * "NAME: cpus=N" first, then every record of all files in one time order
 * (ties to the earlier file, then as within a file), each line after its
 * file's base name right-aligned to the longest. Each file keeps its own
 * report (event formats, names, filters); all print into the first
 * one's output buffer, in one thread.
 */
int tk_report_run_files(struct tk_dat *const *dats, const char *const *names, size_t n,
			const struct tk_report_opts *user_opts, struct tk_report_stats *stats)
{
	return tk_report_run_files_filtered(dats, names, n, user_opts, NULL, stats);
}

int tk_report_run_files_filtered(struct tk_dat *const *dats, const char *const *names, size_t n,
				 const struct tk_report_opts *user_opts,
				 const struct tk_report_file_filter *filters,
				 struct tk_report_stats *stats)
{
	const unsigned int alone = TK_REPORT_STAT | TK_REPORT_JSON | TK_REPORT_HEADER |
				   TK_REPORT_FIRST_EVENT | TK_REPORT_LAST_EVENT |
				   TK_REPORT_SYMBOLS | TK_REPORT_FALLBACKS;
	struct tk_report_opts opts, *fopts;
	struct tk_report_stats st;
	struct report *rs;
	int ret, width = 0;
	size_t ready = 0;

	if (!user_opts || !dats || !names || !n)
		return tk_fail(EINVAL, "no files or no report options");
	ret = tk_opts_copy(&opts, sizeof(opts), user_opts, "tk_report_opts");
	if (ret < 0)
		return ret;
	if (opts.flags & alone)
		return tk_fail(EINVAL, "--stat, --json, --header, --first-event, --last-event, "
				       "--sym and --fallbacks read one file");
	if (opts.nplugin_options || (opts.flags & TK_REPORT_NO_PLUGINS) || opts.nraw_events ||
	    opts.nnohandle_events)
		opts.flags |= TK_REPORT_SLOW;
	opts.threads = 1;
	rs = calloc(n, sizeof(*rs));
	/* Each file's options: the shared ones with its own -F lists. */
	fopts = calloc(n, sizeof(*fopts));
	if (!rs || !fopts) {
		free(rs);
		free(fopts);
		return tk_fail(ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		fopts[i] = opts;
		if (filters) {
			fopts[i].events = filters[i].events;
			fopts[i].nevents = filters[i].nevents;
			fopts[i].neg_events = filters[i].neg_events;
			fopts[i].nneg_events = filters[i].nneg_events;
			fopts[i].ts_offset += filters[i].ts_offset;
			if (filters[i].ts2secs_hz)
				fopts[i].ts2secs_hz = filters[i].ts2secs_hz;
		}
	}
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < n; i++) {
		const char *base = strrchr(names[i], '/');
		int w;

		base = base ? base + 1 : names[i];
		w = (int)strnlen(base, 256);
		if (w > width)
			width = w;
	}
	for (size_t i = 0; i < n && !ret; i++) {
		struct report *r = &rs[i];
		const char *base = strrchr(names[i], '/');

		ret = report_setup(r, dats[i], &fopts[i]);
		ready = i + 1;
		if (ret)
			break;
		/* Refused before anything prints: trace-cmd's labels for those are its own mix. */
		for (size_t b = 0; b < tk_dat_buffer_count(dats[i]) && !ret; b++)
			if (tk_dat_buffer_get(dats[i], b)->name[0])
				ret = tk_fail(EINVAL, "%s: has buffer instances: read it alone",
					      r->path);
		if (ret)
			break;
		r->file_label = base ? base + 1 : names[i];
		r->file_width = width;
		/* trace-cmd 3.1.6 applies no -O fgraph:* option when it reads several files. */
		r->fg_flags = 0;
		r->pr.o = &rs[0].out;
	}
	for (size_t i = 0; i < n && !ret; i++)
		ret = report_open(&rs[i]);
	if (!ret && (opts.flags & TK_REPORT_ALIGN_TS)) {
		uint64_t first = first_time(&rs[0]);

		for (size_t i = 1; i < n; i++)
			first = first_time(&rs[i]) < first ? first_time(&rs[i]) : first;
		for (size_t i = 0; i < n; i++)
			align_times(&rs[i], first);
	}
	while (!ret) {
		struct report *r = NULL;
		struct stream *s;
		struct line l;
		bool shown;

		for (size_t i = 0; i < n; i++) {
			const struct tk_merge_key *k;

			if (!rs[i].nheap || rs[i].nomem)
				continue;
			k = rs[i].heap[0];
			if (!r || k->ts < r->heap[0]->ts)
				r = &rs[i];
		}
		if (!r || rs[0].out.error)
			break;
		s = (struct stream *)r->heap[0];
		if (opts.has_end && s->key.ts >= opts.end_ns)
			break;
		s->events++;
		shown = select_record(r, s, &l, PLAIN_NO);
		if (shown && l.ev && fg_event(r, l.ev->id)) {
			/* Function graph leaves look ahead in their own file, as trace-cmd's peek
			 * does. */
			ret = fgraph_take(r, NULL, s, &l);
		} else {
			if (shown)
				emit_line(&r->pr, &l, false, PLAIN_NO);
			ret = stream_next(r, s);
		}
		/* --ts-diff counts from the line before, whichever file printed it. */
		if (shown)
			for (size_t i = 0; i < n; i++)
				rs[i].pr.diff_last = r->pr.diff_last;
		if (ret == 1) {
			ret = 0;
			tk_merge_heap_fix_top(r->heap, r->nheap);
		} else if (ret == 0) {
			s->live = false;
			r->nheap = tk_merge_heap_pop(r->heap, r->nheap);
		} else if (ret == FG_HEAP_DONE) {
			ret = 0;
		}
	}
	for (size_t i = 0; i < ready; i++) {
		struct tk_report_stats one;
		int r2;

		memset(&one, 0, sizeof(one));
		r2 = report_stats(&rs[i], ret, &one);
		if (!ret)
			ret = r2;
		st.events += one.events;
		st.printed += one.printed;
		st.lost_events += one.lost_events;
		st.drop_marks += one.drop_marks;
		st.kernel_lost = add_sat(st.kernel_lost, one.kernel_lost);
		st.unrecorded = add_sat(st.unrecorded, one.unrecorded);
		st.incomplete += one.incomplete;
	}
	if (rs[0].out.buf) {
		int fret = tk_outbuf_flush(&rs[0].out);

		if (!ret)
			ret = fret;
	}
	if (stats)
		*stats = st;
	for (size_t i = 0; i < ready; i++) {
		report_release(&rs[i]);
		tk_event_set_free(rs[i].set);
		tk_outbuf_release(&rs[i].out);
	}
	free(rs);
	free(fopts);
	return ret;
}
