// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * make-funcgraph [--big N | --migrate] OUT.dat: write a small .dat of function-tracer events
 * (ftrace:function, funcgraph_entry, funcgraph_exit) with tracekit's own
 * writer, for the public-files test (tests/data/public/README.md).
 *
 * Recordings cannot be made where the function_graph tracer is missing,
 * so the records are made up, in the kernel's own formats (copied from a
 * 6.x x86_64 tracefs). Two CPUs; what each part covers is said where it
 * is written. trace-cmd 3.1.6's report of the output is the expected
 * text: it decides leaf against nested by the next record of the whole
 * buffer (all CPUs merged by time, the lower CPU first on equal times),
 * so the interleavings below test that rule.
 *
 * --big N writes N pseudo-random call trees' worth of records over four
 * CPUs instead (the same N, the same file), enough for the print pool's
 * jobs to cut between entries and their exits; pids differ per CPU, so
 * trace-cmd's report of it is exact. --migrate adds exits taken on
 * another CPU than their entry's (a task moved while in a call), which
 * trace-cmd 3.1.6 mishandles (it frees a record it still compares), so
 * only tracekit's own runs are compared on it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/tracekit.h>

#define PAGE	 4096u
#define MAX_CPUS 4

static unsigned ncpus = 2;

#define COMMON                                                                                     \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"             \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"

static const char fmt_function[] =
	"name: function\nID: 1\nformat:\n" COMMON
	"\tfield:unsigned long ip;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long parent_ip;\toffset:16;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;\n\n"
	"print fmt: \" %ps <-- %ps\", (void *)REC->ip, (void *)REC->parent_ip\n";
static const char fmt_exit[] =
	"name: funcgraph_exit\nID: 10\nformat:\n" COMMON
	"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned int overrun;\toffset:20;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long long calltime;\toffset:24;\tsize:8;\tsigned:0;\n"
	"\tfield:unsigned long long rettime;\toffset:32;\tsize:8;\tsigned:0;\n\n"
	"print fmt: \"<-- %ps (%u) (start: %llx  end: %llx) over: %u\", (void *)REC->func, "
	"REC->depth, REC->calltime, REC->rettime, REC->depth\n";
static const char fmt_entry[] = "name: funcgraph_entry\nID: 11\nformat:\n" COMMON
				"\tfield:unsigned long func;\toffset:8;\tsize:8;\tsigned:0;\n"
				"\tfield:unsigned int depth;\toffset:16;\tsize:4;\tsigned:0;\n"
				"\tfield:unsigned long args[];\toffset:24;\tsize:0;\tsigned:0;\n\n"
				"print fmt: \"--> %ps (%u)\", (void *)REC->func, REC->depth\n";
static const char header_event[] = "# compressed entry header\n"
				   "\ttype_len    :    5 bits\n"
				   "\ttime_delta  :   27 bits\n"
				   "\tarray       :   32 bits\n\n"
				   "\tpadding     : type == 29\n"
				   "\ttime_extend : type == 30\n"
				   "\ttime_stamp : type == 31\n"
				   "\tdata max type_len  == 28\n";
static const char kallsyms[] = "ffffffff81000000 T _stext\n"
			       "ffffffff81001000 T do_IRQ\n"
			       "ffffffff81002000 T handle_irq\n"
			       "ffffffff81003000 T irq_exit\n"
			       "ffffffff81004000 T tick_sched\n"
			       "ffffffff81005000 T schedule\n"
			       "ffffffff81006000 T ksys_read\n"
			       "ffffffff81007000 T vfs_read\n"
			       "ffffffff81008000 T rw_verify_area\n"
			       "ffffffff81009000 T __fdget_pos\n"
			       "ffffffff8100a000 T _etext\n";
static const char cmdlines[] = "100 bash\n200 sleep\n300 kworker/0:1\n";

#define SYM(n) (0xffffffff81000000ull + 0x1000ull * (n))
enum { DO_IRQ = 1, HANDLE_IRQ, IRQ_EXIT, TICK, SCHEDULE, KSYS_READ, VFS_READ, RW_VERIFY, FDGET };

struct cpu_data {
	uint8_t *pages;
	size_t npages;
	struct tk_page_writer pw;
	struct tk_page_format fmt;
	uint64_t now; /* the last record's time */
};

static struct cpu_data cpus[MAX_CPUS];

static void put_common(uint8_t *p, uint16_t type, int32_t pid)
{
	memset(p, 0, 8);
	memcpy(p, &type, 2);
	p[2] = 1; /* irqs off, as the function tracer's records often are */
	memcpy(p + 4, &pid, 4);
}

static void add(unsigned cpu, uint64_t ts, const void *payload, uint32_t size)
{
	struct cpu_data *c = &cpus[cpu];

	if (ts < c->now) {
		fprintf(stderr, "make-funcgraph: cpu %u: time goes backwards at %llu\n", cpu,
			(unsigned long long)ts);
		exit(1);
	}
	if (c->npages && tk_page_writer_add(&c->pw, ts, payload, size) == 0) {
		c->now = ts;
		return;
	}
	if (c->npages)
		tk_page_writer_finish(&c->pw);
	c->pages = realloc(c->pages, (c->npages + 1) * PAGE);
	if (!c->pages)
		exit(1);
	tk_page_writer_init(&c->pw, &c->fmt, c->pages + c->npages * PAGE, ts);
	c->npages++;
	if (tk_page_writer_add(&c->pw, ts, payload, size)) {
		fprintf(stderr, "make-funcgraph: record does not fit a page\n");
		exit(1);
	}
	c->now = ts;
}

static void function(unsigned cpu, uint64_t ts, int32_t pid, uint64_t ip, uint64_t parent)
{
	uint8_t p[24];

	put_common(p, 1, pid);
	memcpy(p + 8, &ip, 8);
	memcpy(p + 16, &parent, 8);
	add(cpu, ts, p, sizeof(p));
}

static void entry(unsigned cpu, uint64_t ts, int32_t pid, uint64_t func, uint32_t depth)
{
	uint8_t p[24];

	put_common(p, 11, pid);
	memset(p + 8, 0, 16);
	memcpy(p + 8, &func, 8);
	memcpy(p + 16, &depth, 4);
	add(cpu, ts, p, sizeof(p));
}

/* The exit's calltime is @ts - @dur: the duration is what the kernel stores, not the gap. */
static void exit_(unsigned cpu, uint64_t ts, int32_t pid, uint64_t func, uint32_t depth,
		  uint64_t dur)
{
	uint8_t p[40];
	uint64_t call = ts - dur, ret = ts;
	uint32_t overrun = 0;

	put_common(p, 10, pid);
	memcpy(p + 8, &func, 8);
	memcpy(p + 16, &depth, 4);
	memcpy(p + 20, &overrun, 4);
	memcpy(p + 24, &call, 8);
	memcpy(p + 32, &ret, 8);
	add(cpu, ts, p, sizeof(p));
}

/* A leaf call: its entry, then its exit @dur later as the stored duration. */
static uint64_t leaf(unsigned cpu, uint64_t ts, int32_t pid, uint64_t func, uint32_t depth,
		     uint64_t dur)
{
	entry(cpu, ts, pid, func, depth);
	exit_(cpu, ts + 100, pid, func, depth, dur);
	return ts + 1000;
}

static void make_records(void)
{
	const uint64_t s = 1000000000ull; /* the trace starts at 1 s */
	/* Every duration marker and its boundaries: 10 us is not over 10 us. */
	static const uint64_t durs[] = {
		999,	       10000,	      10001,	      100000,	 100001,
		1000000,       1000001,	      10000001,	      100000001, 1000000000ull,
		1000000001ull, 9999999000ull, 12345678901ull,
	};
	uint64_t t = s;

	/* CPU 0, pid 100: an interrupt with nested calls, then a leaf per marker. */
	entry(0, t, 100, SYM(DO_IRQ), 0);
	entry(0, t + 200, 100, SYM(HANDLE_IRQ), 1);
	t = leaf(0, t + 400, 100, SYM(TICK), 2, 50);
	exit_(0, t, 100, SYM(HANDLE_IRQ), 1, 3000);
	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++)
		t = leaf(0, t + 1000, 100, SYM(IRQ_EXIT), 1, durs[i]);
	exit_(0, t + 1000, 100, SYM(DO_IRQ), 0, 25000);

	/* A deep nest (indentation), and a call returning before it began (a huge duration). */
	t = s + 100000;
	for (uint32_t d = 0; d < 6; d++)
		entry(0, t + d * 10, 100, SYM(KSYS_READ + (d % 3)), d);
	t = leaf(0, t + 100, 100, SYM(FDGET), 6, 0);
	exit_(0, t, 100, SYM(RW_VERIFY), 5, (uint64_t)-5);
	for (uint32_t d = 5; d-- > 0;)
		exit_(0, t + 10 * (5 - d), 100, SYM(KSYS_READ + (d % 3)), d, 700 * (d + 1));

	/*
	 * Interleaved CPUs. CPU 1's entry at +10 us is followed on its own CPU
	 * by its exit, but CPU 0 has a record between: trace-cmd prints it
	 * nested. CPU 0's entry at +20 us and CPU 1's record share the exit's
	 * time; the lower CPU comes first, so it stays a leaf.
	 */
	t = s + 200000;
	entry(1, t + 10000, 200, SYM(SCHEDULE), 0);
	function(0, t + 10500, 100, SYM(VFS_READ) + 0x10, SYM(KSYS_READ) + 0x20);
	exit_(1, t + 11000, 200, SYM(SCHEDULE), 0, 1000);
	entry(0, t + 20000, 100, SYM(VFS_READ), 0);
	exit_(0, t + 20400, 100, SYM(VFS_READ), 0, 400);
	function(1, t + 20400, 200, SYM(SCHEDULE) + 4, SYM(DO_IRQ) + 8);
	/* The next record is an exit of another pid, then of another function: both nested. */
	entry(1, t + 30000, 200, SYM(FDGET), 0);
	exit_(1, t + 30100, 300, SYM(FDGET), 0, 100);
	entry(1, t + 31000, 200, SYM(FDGET), 0);
	exit_(1, t + 31100, 200, SYM(RW_VERIFY), 0, 100);

	/* Function events: known, unknown (above the last symbol and below the first). */
	t = s + 300000;
	function(0, t, 100, SYM(VFS_READ) + 0x44, SYM(KSYS_READ) + 0x1a);
	function(0, t + 10, 100, 0x1234, SYM(KSYS_READ));
	function(0, t + 20, 100, SYM(VFS_READ), 0xffffffffa0000000ull);
	function(0, t + 30, 100, 0x10, 0x20);

	/* Unknown functions in funcgraph events. */
	entry(0, t + 100, 100, 0x1000, 0);
	t = leaf(0, t + 200, 100, 0xffffffffc0001000ull, 1, 12);
	exit_(0, t, 100, 0x1000, 0, 900);

	/* Many leaf calls, so that entries and their exits straddle page boundaries. */
	t = s + 400000;
	for (int i = 0; i < 150; i++) {
		t = leaf(0, t, 100, SYM(RW_VERIFY), 0, 100 + i);
		if (i % 3 == 0)
			function(0, t - 500, 100, SYM(FDGET), SYM(VFS_READ));
	}

	/* A missing exit: each CPU's last record is an entry. */
	entry(0, s + 900000, 100, SYM(SCHEDULE), 0);
	entry(1, s + 900100, 200, SYM(SCHEDULE), 0);
}

static uint64_t rnd_state = 88172645463325252ull;

static uint32_t rnd(uint32_t n)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state % n);
}

/*
 * @n steps of four CPUs' call stacks, one random CPU a step; the clock
 * moves 0 to 300 ns a step, so CPUs often share a time. With @migrate,
 * CPUs 2 and 3 run the same pid and a call begun on one may return on
 * the other.
 */
static void make_big(unsigned n, bool migrate)
{
	struct {
		uint64_t func[16], start[16];
		unsigned depth;
	} st[MAX_CPUS];
	uint64_t now = 2000000000ull;

	memset(st, 0, sizeof(st));
	for (unsigned i = 0; i < n; i++) {
		unsigned c = rnd(4), k = rnd(10);
		int32_t pid = migrate && c >= 2 ? 500 : 1000 + (int32_t)c;
		uint64_t f = SYM(1 + rnd(9)) + (rnd(8) ? 0 : 0x10);

		now += rnd(4) * 100;
		if (migrate && c >= 2 && st[5 - c].depth && !rnd(4))
			c = 5 - c; /* the other CPU's stack: a return after moving */
		if (k < 4 && st[c].depth < 16) {
			st[c].func[st[c].depth] = f;
			st[c].start[st[c].depth++] = now;
			entry(c, now, pid, f, st[c].depth - 1);
		} else if (k < 7 && st[c].depth) {
			unsigned d = --st[c].depth;
			uint64_t dur = (now - st[c].start[d]) << rnd(24);

			exit_(c, now, pid, st[c].func[d], d, dur);
		} else if (k < 9) {
			entry(c, now, pid, f, st[c].depth);
			exit_(c, now + rnd(3) * 50, pid, f, st[c].depth, rnd(3000000));
			now += 100;
		} else {
			function(c, now, pid, f + 4, SYM(1 + rnd(9)));
		}
	}
}

int main(int argc, char **argv)
{
	unsigned big = 0;
	bool migrate = false;
	TK_OPTS(tk_dat_writer_opts, o, .version = 6, .compression = TK_COMPRESS_NONE,
		.page_size = PAGE);
	struct tk_tracedata *td;
	struct tk_dat_writer *w;
	char hp[1024];
	size_t hp_len;

	if (argc == 4 && !strcmp(argv[1], "--big")) {
		big = (unsigned)strtoul(argv[2], NULL, 10);
		argv += 2;
		argc -= 2;
	} else if (argc == 3 && !strcmp(argv[1], "--migrate")) {
		big = 20000;
		migrate = true;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: make-funcgraph [--big N | --migrate] OUT.dat\n");
		return 2;
	}
	if (big)
		ncpus = 4;
	for (unsigned c = 0; c < ncpus; c++) {
		if (tk_page_format_init(&cpus[c].fmt, PAGE, 8, false))
			return 1;
	}
	if (big)
		make_big(big, migrate);
	else
		make_records();
	for (unsigned c = 0; c < ncpus; c++) {
		if (cpus[c].npages)
			tk_page_writer_finish(&cpus[c].pw);
	}
	hp_len = tk_page_format_header_text(&cpus[0].fmt, hp, sizeof(hp));
	td = tk_tracedata_new();
	if (!td || tk_tracedata_set_layout(td, false, 8, PAGE) ||
	    tk_tracedata_set_header_page(td, hp, hp_len) ||
	    tk_tracedata_set_header_event(td, header_event, strlen(header_event)) ||
	    tk_tracedata_add_ftrace_format(td, fmt_function, strlen(fmt_function)) ||
	    tk_tracedata_add_ftrace_format(td, fmt_exit, strlen(fmt_exit)) ||
	    tk_tracedata_add_ftrace_format(td, fmt_entry, strlen(fmt_entry)) ||
	    tk_tracedata_set_kallsyms(td, kallsyms, strlen(kallsyms)) ||
	    tk_tracedata_set_cmdlines(td, cmdlines, strlen(cmdlines)))
		return 1;
	w = tk_dat_writer_open(argv[1], &o);
	if (!w || tk_dat_writer_add_tracedata(w, td) ||
	    tk_dat_writer_begin_buffer(w, "", "local", PAGE, ncpus))
		goto fail;
	for (unsigned c = 0; c < ncpus; c++) {
		if (tk_dat_writer_begin_cpu(w, c) ||
		    tk_dat_writer_write_pages(w, cpus[c].pages, cpus[c].npages * PAGE) ||
		    tk_dat_writer_end_cpu(w))
			goto fail;
		free(cpus[c].pages);
	}
	if (tk_dat_writer_end_buffer(w) || tk_dat_writer_finish(w))
		goto fail;
	tk_dat_writer_close(w);
	tk_tracedata_free(td);
	return 0;
fail:
	fprintf(stderr, "make-funcgraph: %s: %s\n", argv[1], tk_errmsg());
	return 1;
}
