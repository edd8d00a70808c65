// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit dump: show the structure of a .dat file and check every page.
 *
 * The output answers "what is in this file and is all of it readable?":
 *
 *   header facts     version, byte order, page size, codec, clock, uname ...
 *   metadata:        one line per metadata part with its size or count
 *   sections:        offset, id, name, flags, description, size in the file,
 *                    uncompressed size, and crc32 of the uncompressed body
 *                    of metadata sections 16..21
 *   options:         offset, id, name, size and the decoded value
 *   buffers:         per buffer its clock and page size, then per CPU the
 *                    pages, events, missed pages, lost events, first and
 *                    last raw timestamp and crc32 of the uncompressed pages
 *   totals:          events, pages, lost events
 *
 * Every page of every CPU is decoded record by record, so a dump that exits
 * 0 means every byte of CPU data was readable; the CRCs let two files be
 * compared (a convert must keep them equal whatever the codec). Lines use
 * "key=value" fields so that scripts can pick them apart with awk.
 *
 * Option payloads are decoded by the dat module (tk_dat_option_describe),
 * which shows a payload too short for its id as "(malformed)". Strings from
 * the file are printed quoted, with control and non-ASCII bytes escaped.
 *
 * A damaged file is read in salvage mode: what is intact is shown, each
 * damaged region is one stderr line and the exit status is 1 (--strict:
 * the first damage is the error, with no further output).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <zlib.h>

#include <tracekit/perfdata.h>

#include "cli.h"

const char cmd_dump_usage[] =
	"usage: tracekit dump [options] [FILE]\n"
	"\n"
	"Show the structure of a trace-cmd .dat file (v6 or v7): header facts,\n"
	"sections, options and buffers, decoding every page of every CPU.\n"
	"A perf.data file (file or pipe format) shows its header, attrs with\n"
	"ids, features with offset, size and value (topology, groups, PMU caps,\n"
	"BPF programs... as perf report --header-only -I words them), and\n"
	"record counts by type.\n"
	"FILE defaults to trace.dat.\n"
	"\n"
	"options:\n"
	"  -i, --input FILE      file to read (same as the FILE argument)\n"
	"      --summary         header facts and counts only: no section, option\n"
	"                        or per-CPU lines\n"
	"      --section NAME|ID write the uncompressed body of metadata section\n"
	"                        NAME to standard output: headers (16),\n"
	"                        ftrace-events (17), events (18), kallsyms (19),\n"
	"                        printk (20), cmdlines (21); kallsyms, printk and\n"
	"                        cmdlines as their text alone (no length field)\n"
	"      --strict          stop at the first damage in the file (exit 1); by\n"
	"                        default damaged parts are skipped with one warning\n"
	"                        line each, and the exit status is 1\n"
	"  -h, --help            show this help\n";

/* ------------------------------------------------------------ byte helpers */

/*
 * Print @s (at most @len bytes, stopping at a NUL) in double quotes with
 * control and non-ASCII bytes escaped, so that a hostile file cannot move
 * the terminal's cursor or forge output lines. Long strings are cut at
 * @max bytes and marked with "...".
 */
static void print_quoted(const char *s, size_t len, size_t max)
{
	size_t i;

	putchar('"');
	for (i = 0; i < len && s[i]; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (i == max) {
			fputs("...", stdout);
			break;
		}
		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (ch == '\t')
			fputs("\\t", stdout);
		else if (ch < 0x20 || ch >= 0x7f)
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

/* zlib's crc32() takes a uInt length: feed it in pieces. */
static uint32_t crc_update(uint32_t crc, const void *data, uint64_t len)
{
	const Bytef *p = data;

	while (len > 0) {
		uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;

		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

/* ---------------------------------------------------------- --section NAME */

static const struct {
	uint16_t id;
	const char *word; /* trace-cmd's word for the part */
} section_words[] = {
	/* clang-format off */
	{TK_DAT_SECTION_HEADER_INFO, "headers"},
	{TK_DAT_SECTION_FTRACE_EVENTS, "ftrace-events"},
	{TK_DAT_SECTION_EVENT_FORMATS, "events"},
	{TK_DAT_SECTION_KALLSYMS, "kallsyms"},
	{TK_DAT_SECTION_PRINTK, "printk"},
	{TK_DAT_SECTION_CMDLINES, "cmdlines"},
	/* clang-format on */
};

static bool is_metadata_id(unsigned long id)
{
	return id >= TK_DAT_SECTION_HEADER_INFO && id <= TK_DAT_SECTION_CMDLINES;
}

static int parse_section_arg(const char *arg, uint16_t *id)
{
	char *end;
	unsigned long n;

	if (arg[0] >= '0' && arg[0] <= '9') {
		n = strtoul(arg, &end, 0);
		if (*end || !is_metadata_id(n))
			return -1;
		*id = (uint16_t)n;
		return 0;
	}
	for (size_t i = 0; i < sizeof(section_words) / sizeof(section_words[0]); i++) {
		if (!strcasecmp(arg, section_words[i].word) ||
		    !strcasecmp(arg, tk_dat_section_name(section_words[i].id))) {
			*id = section_words[i].id;
			return 0;
		}
	}
	return -1;
}

static int write_section(const struct tk_dat *dat, const char *path, uint16_t id)
{
	const void *body;
	uint64_t len;
	int r;

	r = tk_dat_metadata(dat, id, &body, &len);
	if (r == -ENOENT)
		return cli_error("%s: no %s section (id %u) in the file", path,
				 tk_dat_section_name(id), id);
	if (r < 0)
		return cli_lib_error(path);
	/*
	 * kallsyms, printk and cmdlines are one text after a binary length:
	 * the text alone is what a user pipes into grep or diff. The other
	 * three are lists of named parts, which only their layout delimits.
	 */
	if (id == TK_DAT_SECTION_KALLSYMS || id == TK_DAT_SECTION_PRINTK ||
	    id == TK_DAT_SECTION_CMDLINES) {
		struct tk_dat_text t;

		r = id == TK_DAT_SECTION_KALLSYMS ? tk_dat_kallsyms(dat, &t)
		    : id == TK_DAT_SECTION_PRINTK ? tk_dat_printk(dat, &t)
						  : tk_dat_cmdlines(dat, &t);
		if (r < 0)
			return cli_lib_error(path);
		body = t.data;
		len = t.len;
	}
	if (len > 0 && fwrite(body, 1, len, stdout) != len)
		return cli_error("cannot write standard output: %m");
	return cli_finish_stdout(CLI_OK);
}

/* ------------------------------------------------------------ header facts */

/*
 * A guest/host session's facts: a guest file's TIME_SHIFT samples, sorted
 * per CPU as the reader uses them, and a host file's guests.
 */
static void dump_guest_host(const struct tk_dat_info *info)
{
	const struct tk_dat_time_shift *ts = info->time_shift;

	if (ts) {
		printf("  time shift: host trace id 0x%016" PRIx64 ", flags 0x%x%s, %u cpus\n",
		       ts->peer_trace_id, ts->flags,
		       ts->flags & TK_DAT_TSYNC_INTERPOLATE ? " (interpolate)" : "", ts->cpu_count);
		for (uint32_t i = 0; i < ts->cpu_count; i++) {
			const struct tk_dat_time_shift_cpu *c = &ts->cpus[i];

			printf("    cpu %u: %u samples\n", i, c->count);
			for (uint32_t k = 0; k < c->count; k++)
				printf("      time=%" PRId64 " offset=%" PRId64 " scaling=%" PRId64
				       " fraction=%" PRId64 "\n",
				       c->samples[k].time, c->samples[k].offset,
				       c->samples[k].scaling, c->samples[k].fraction);
		}
	}
	for (size_t i = 0; i < info->nguests; i++) {
		const struct tk_dat_guest *g = &info->guests[i];

		printf("  guest: ");
		print_quoted(g->name, SIZE_MAX, 128);
		printf(" trace id 0x%016" PRIx64 ", %u vcpus\n", g->trace_id, g->vcpu_count);
		for (uint32_t k = 0; k < g->vcpu_count; k++)
			printf("    vcpu %u: host pid %d\n", k, g->vcpu_pids[k]);
	}
}

static void print_header(const struct tk_dat *dat, const struct tk_dat_info *info)
{
	struct tk_dat_text t;
	size_t nsys, nfmt = 0;

	printf("file: %s\n", info->path);
	printf("  size: %" PRIu64 " bytes\n", info->file_size);
	printf("  version: %d\n", info->version);
	printf("  byte order: %s endian\n", info->big_endian ? "big" : "little");
	printf("  long size: %u\n", info->long_size);
	printf("  page size: %u\n", info->page_size);
	printf("  page header: %u bytes (commit word %u bytes)\n", info->page_format.data_offset,
	       info->page_format.long_size);
	printf("  compression: %s", tk_codec_name(info->compression));
	if (info->compression_version && info->compression_version[0]) {
		const char *v = info->compression_version;

		/* A plain version number reads better unquoted; anything else is escaped. */
		putchar(' ');
		if (strlen(v) < 32 &&
		    strspn(v, "0123456789.-+_abcdefghijklmnopqrstuvwxyz") == strlen(v))
			fputs(v, stdout);
		else
			print_quoted(v, SIZE_MAX, 64);
	}
	putchar('\n');
	printf("  cpus: %u\n", info->cpu_count);
	printf("  clock: ");
	print_quoted(info->clock ? info->clock : "local", SIZE_MAX, 64);
	putchar('\n');
	if (info->uname) {
		printf("  uname: ");
		print_quoted(info->uname, SIZE_MAX, 256);
		putchar('\n');
	}
	if (info->tracer_version) {
		printf("  tracer version: ");
		print_quoted(info->tracer_version, SIZE_MAX, 256);
		putchar('\n');
	}
	if (info->has_trace_id)
		printf("  trace id: 0x%016" PRIx64 "\n", info->trace_id);
	if (info->has_date)
		printf("  date offset: %" PRId64 " us\n", info->date_offset_us);
	if (info->ts_offset)
		printf("  timestamp offset: %" PRId64 " ns\n", info->ts_offset);
	if (info->has_tsc2nsec)
		printf("  tsc2nsec: mult=%u shift=%u offset=%" PRIu64 "\n", info->tsc2nsec_mult,
		       info->tsc2nsec_shift, info->tsc2nsec_offset);
	dump_guest_host(info);

	printf("metadata:\n");
	if (tk_dat_header_page(dat, &t) == 0)
		printf("  header_page: %" PRIu64 " bytes\n", t.len);
	if (tk_dat_header_event(dat, &t) == 0)
		printf("  header_event: %" PRIu64 " bytes\n", t.len);
	printf("  ftrace formats: %zu\n", tk_dat_ftrace_format_count(dat));
	nsys = tk_dat_system_count(dat);
	for (size_t i = 0; i < nsys; i++)
		nfmt += tk_dat_system_format_count(dat, i);
	printf("  event systems: %zu (%zu formats)\n", nsys, nfmt);
	if (tk_dat_kallsyms(dat, &t) == 0)
		printf("  kallsyms: %" PRIu64 " bytes\n", t.len);
	if (tk_dat_printk(dat, &t) == 0)
		printf("  printk: %" PRIu64 " bytes\n", t.len);
	if (tk_dat_cmdlines(dat, &t) == 0)
		printf("  cmdlines: %" PRIu64 " bytes\n", t.len);
}

/* ---------------------------------------------------------------- sections */

static void print_sections(const struct tk_dat *dat, bool summary)
{
	size_t n = tk_dat_section_count(dat);

	printf("sections: %zu\n", n);
	if (summary)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct tk_dat_section *s = tk_dat_section_get(dat, i);
		const void *body;
		uint64_t len;

		printf("  0x%08" PRIx64 " %2u %-16s %s ", s->offset, s->id,
		       tk_dat_section_name(s->id), (s->flags & 1) ? "compressed" : "plain");
		if (s->description)
			print_quoted(s->description, SIZE_MAX, 128);
		else
			fputs("-", stdout);
		printf(" size=%" PRIu64 " body=%" PRIu64, s->size, s->body_size);
		if (is_metadata_id(s->id) && tk_dat_metadata(dat, s->id, &body, &len) == 0)
			printf(" crc32=%08x", crc_update((uint32_t)crc32(0, NULL, 0), body, len));
		putchar('\n');
	}
}

/* ----------------------------------------------------------------- options */

static void print_options(const struct tk_dat *dat, bool summary)
{
	size_t n = tk_dat_option_count(dat);
	char value[4096];

	printf("options: %zu\n", n);
	if (summary)
		return;
	for (size_t i = 0; i < n; i++) {
		const struct tk_dat_option *o = tk_dat_option_get(dat, i);

		printf("  0x%08" PRIx64 " %2u %-14s size=%u", o->offset, o->id,
		       tk_dat_option_name(o->id), o->size);
		tk_dat_option_describe(dat, o, value, sizeof(value));
		printf("%s\n", value);
	}
}

/* ----------------------------------------------------------------- buffers */

struct cpu_stats {
	uint64_t pages;
	uint64_t events;
	uint64_t missed_pages;
	uint64_t lost;	   /* sum of the stored counts */
	bool lost_unknown; /* a page flagged missed events without a count */
	bool have_ts;
	uint64_t first_ts, last_ts;
	uint32_t crc;
};

struct totals {
	uint64_t events, pages, lost;
	bool lost_unknown;
};

/*
 * A page can flag missed events without storing how many: the sum is then
 * a lower bound, shown as "N+unknown" ("unknown" when nothing was stored).
 */
static void print_lost(uint64_t lost, bool unknown)
{
	if (unknown && lost == 0)
		fputs(" lost=unknown", stdout);
	else
		printf(" lost=%" PRIu64 "%s", lost, unknown ? "+unknown" : "");
}

/*
 * Name a page in an error: uncompressed pages have a file offset; pages of
 * compressed data only have an offset in the CPU's decompressed stream,
 * so the message gives that and where the compressed data starts.
 */
static int page_error(const char *path, const struct tk_dat_buffer *buf,
		      const struct tk_dat_cpu_data *cpu, uint64_t stream_off, const char *what)
{
	char label[80];

	cli_buffer_label(buf->name, label, sizeof(label));
	if (buf->compressed)
		return cli_error("%s: buffer %s cpu %u: page at offset 0x%" PRIx64
				 " of the data decompressed from offset 0x%" PRIx64 ": %s",
				 path, label, cpu->cpu, stream_off, cpu->offset, what);
	return cli_error("%s: offset 0x%" PRIx64 ": buffer %s cpu %u page: %s", path,
			 cpu->offset + stream_off, label, cpu->cpu, what);
}

static int scan_cpu(struct tk_dat *dat, const char *path, size_t b, size_t ci,
		    const struct tk_dat_buffer *buf, struct cpu_stats *st)
{
	const struct tk_dat_cpu_data *cpu = &buf->cpus[ci];
	uint32_t page_size = buf->page_format.page_size;
	struct tk_dat_cpu_reader *reader;
	const void *page;
	uint64_t off = 0;
	int r;

	memset(st, 0, sizeof(*st));
	st->crc = (uint32_t)crc32(0, NULL, 0);
	reader = tk_dat_cpu_reader_new(dat, b, ci);
	if (!reader)
		return cli_cpu_error(path, buf->name, cpu->cpu);

	while ((r = tk_dat_cpu_reader_next_page(reader, &page, &off)) > 0) {
		struct tk_page_header hdr;
		struct tk_page_record rec;
		struct tk_page_iter it;
		char what[160];

		st->pages++;
		st->crc = crc_update(st->crc, page, page_size);
		if (tk_page_iter_init(&it, &buf->page_format, page, page_size, &hdr) < 0) {
			r = page_error(path, buf, cpu, off, tk_errmsg());
			goto out;
		}
		if (hdr.missed_events) {
			st->missed_pages++;
			if (hdr.missed_stored)
				st->lost += hdr.missed_count;
			else
				st->lost_unknown = true;
		}
		while ((r = tk_page_iter_next(&it, &rec)) > 0) {
			if (!st->have_ts) {
				st->first_ts = rec.timestamp;
				st->have_ts = true;
			}
			st->last_ts = rec.timestamp;
			st->events++;
		}
		if (r < 0) {
			snprintf(what, sizeof(what),
				 "record at page offset 0x%x runs past the page's %u data bytes",
				 rec.offset, hdr.data_size);
			r = page_error(path, buf, cpu, off, what);
			goto out;
		}
	}
	if (r < 0) {
		r = cli_cpu_error(path, buf->name, cpu->cpu);
		goto out;
	}
	r = CLI_OK;
out:
	tk_dat_cpu_reader_free(reader);
	return r;
}

static void print_buffer_name(const struct tk_dat_buffer *buf)
{
	fputs("  buffer ", stdout);
	if (buf->name[0])
		print_quoted(buf->name, SIZE_MAX, 128);
	else
		fputs("(top)", stdout);
	fputs(": clock=", stdout);
	print_quoted(buf->clock ? buf->clock : "-", SIZE_MAX, 64);
}

static int dump_text_buffer(struct tk_dat *dat, const char *path, size_t b,
			    const struct tk_dat_buffer *buf)
{
	struct tk_dat_text text;

	if (tk_dat_latency_text(dat, b, &text) < 0)
		return cli_lib_error(path);
	print_buffer_name(buf);
	printf(" latency_text=%" PRIu64 " bytes crc32=%08x\n", text.len,
	       crc_update((uint32_t)crc32(0, NULL, 0), text.data, text.len));
	free((void *)text.data);
	return CLI_OK;
}

static int dump_buffer(struct tk_dat *dat, const char *path, size_t b, bool summary,
		       struct totals *tot)
{
	const struct tk_dat_buffer *buf = tk_dat_buffer_get(dat, b);
	struct cpu_stats *stats, sum = {0};
	int r = CLI_OK;

	if (buf->latency_text)
		return dump_text_buffer(dat, path, b, buf);

	/* Scan first: the buffer line carries the sums of its CPUs. */
	stats = calloc(buf->cpu_count ? buf->cpu_count : 1, sizeof(*stats));
	if (!stats)
		return cli_error("out of memory");
	for (uint32_t i = 0; i < buf->cpu_count; i++) {
		r = scan_cpu(dat, path, b, i, buf, &stats[i]);
		if (r != CLI_OK)
			goto out;
		sum.pages += stats[i].pages;
		sum.events += stats[i].events;
		sum.lost += stats[i].lost;
		sum.lost_unknown |= stats[i].lost_unknown;
	}

	print_buffer_name(buf);
	printf(" page_size=%u compressed=%s cpus=%u pages=%" PRIu64 " events=%" PRIu64,
	       buf->page_format.page_size, buf->compressed ? "yes" : "no", buf->cpu_count,
	       sum.pages, sum.events);
	print_lost(sum.lost, sum.lost_unknown);
	putchar('\n');
	for (uint32_t i = 0; i < buf->cpu_count && !summary; i++) {
		const struct tk_dat_cpu_data *cpu = &buf->cpus[i];
		const struct cpu_stats *st = &stats[i];

		printf("    cpu %u: offset=0x%" PRIx64 " size=%" PRIu64 " pages=%" PRIu64
		       " events=%" PRIu64 " missed_pages=%" PRIu64,
		       cpu->cpu, cpu->offset, cpu->size, st->pages, st->events, st->missed_pages);
		print_lost(st->lost, st->lost_unknown);
		if (st->have_ts)
			printf(" first_ts=%" PRIu64 " last_ts=%" PRIu64, st->first_ts, st->last_ts);
		else
			fputs(" first_ts=- last_ts=-", stdout);
		printf(" crc32=%08x\n", st->crc);
	}
	tot->events += sum.events;
	tot->pages += sum.pages;
	tot->lost += sum.lost;
	tot->lost_unknown |= sum.lost_unknown;
out:
	free(stats);
	return r;
}

/* ----------------------------------------------------------------- perf.data */

/* A string from the file, shown with control and non-ASCII bytes as '?'. */
static void print_safe(const char *s)
{
	for (; s && *s; s++)
		putchar((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e ? '?' : *s);
}

/* Lines under a feature are indented by four spaces, and worded as perf report -I words them. */
#define FEAT_INDENT "    "

static void print_cpu_topology(const struct tk_perfdata_cpu_topology *t)
{
	for (uint32_t i = 0; i < t->nr_sockets; i++) {
		fputs(FEAT_INDENT "sibling sockets : ", stdout);
		print_safe(t->sockets[i]);
		putchar('\n');
	}
	for (uint32_t i = 0; i < t->nr_dies; i++) {
		fputs(FEAT_INDENT "sibling dies    : ", stdout);
		print_safe(t->dies[i]);
		putchar('\n');
	}
	for (uint32_t i = 0; i < t->nr_threads; i++) {
		fputs(FEAT_INDENT "sibling threads : ", stdout);
		print_safe(t->threads[i]);
		putchar('\n');
	}
	/* perf shows the die ids only when there are die lists; ids print signed (-1: unknown). */
	if (!t->cpus)
		puts(FEAT_INDENT "Core ID and Socket ID information is not available");
	for (uint32_t i = 0; i < t->nr_cpus; i++) {
		printf(FEAT_INDENT "CPU %" PRIu32 ": Core ID %" PRId32, i,
		       (int32_t)t->cpus[i].core_id);
		if (t->nr_dies)
			printf(", Die ID %" PRId32, (int32_t)t->cpus[i].die_id);
		printf(", Socket ID %" PRId32 "\n", (int32_t)t->cpus[i].socket_id);
	}
}

static void print_pmu_caps(const struct tk_perfdata_pmu_caps *pc)
{
	fputs(FEAT_INDENT, stdout);
	print_safe(pc->pmu);
	fputs(" pmu capabilities: ", stdout);
	if (pc->nr_caps == 0)
		fputs("not available", stdout);
	for (uint32_t i = 0; i < pc->nr_caps; i++) {
		fputs(i ? ", " : "", stdout);
		print_safe(pc->caps[i].name);
		putchar('=');
		print_safe(pc->caps[i].value);
	}
	putchar('\n');
}

/* "{a,b}" as perf prints a group, members named from EVENT_DESC by attr index. */
static void print_groups(const struct tk_perfdata *pd, const struct tk_perfdata_host *h)
{
	for (uint32_t i = 0; i < h->nr_groups; i++) {
		const struct tk_perfdata_group *g = &h->groups[i];

		fputs(FEAT_INDENT "group: ", stdout);
		if (strcmp(g->name, "{anon_group}") != 0)
			print_safe(g->name);
		putchar('{');
		for (uint64_t k = 0; k < g->nr_members; k++) {
			uint64_t idx = (uint64_t)g->leader_idx + k;
			const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, (size_t)idx);

			fputs(k ? "," : "", stdout);
			if (e && e->name)
				print_safe(e->name);
			else
				printf("attr%" PRIu64 "%s", idx, e ? "" : "?");
			if (k == 1000 && g->nr_members > 1001) {
				printf(",... (%" PRIu32 " members)", g->nr_members);
				break;
			}
		}
		puts("}");
	}
}

/*
 * A BPF program as perf names its functions: bpf_prog_<tag>_<name>, the
 * name from BTF when the file has it, else the kernel's short name for a
 * single function, else "F".
 */
static void print_bpf_func_name(const struct tk_perfdata_bpf_prog *bp, uint32_t k)
{
	const struct tk_perfdata_bpf_func *fn = &bp->funcs[k];

	fputs("bpf_prog_", stdout);
	for (int i = 0; i < 8; i++)
		printf("%02x", fn->tag[i]);
	if (fn->btf_name) {
		putchar('_');
		print_safe(fn->btf_name);
	} else if (bp->nr_funcs == 1) {
		if (bp->name[0]) {
			putchar('_');
			print_safe(bp->name);
		}
	} else {
		fputs("_F", stdout);
	}
}

static void print_bpf_progs(const struct tk_perfdata_host *h)
{
	for (uint32_t i = 0; i < h->nr_bpf_progs; i++) {
		const struct tk_perfdata_bpf_prog *bp = &h->bpf_progs[i];

		printf(FEAT_INDENT "bpf_prog_info %" PRIu32 ":", bp->id);
		if (bp->nr_funcs == 1) {
			putchar(' ');
			print_bpf_func_name(bp, 0);
			printf(" addr 0x%" PRIx64 " size %" PRIu32 "\n", bp->funcs[0].addr,
			       bp->funcs[0].len);
			continue;
		}
		if (bp->nr_funcs == 0) {
			fputs(" name=\"", stdout);
			print_safe(bp->name);
			printf("\" type=%" PRIu32 " jited=%" PRIu32 " xlated=%" PRIu32
			       " (no jited functions recorded)",
			       bp->type, bp->jited_prog_len, bp->xlated_prog_len);
		}
		putchar('\n');
		for (uint32_t k = 0; k < bp->nr_funcs; k++) {
			printf(FEAT_INDENT "  sub_prog %" PRIu32 ": ", k);
			print_bpf_func_name(bp, k);
			printf(" addr 0x%" PRIx64 " size %" PRIu32 "\n", bp->funcs[k].addr,
			       bp->funcs[k].len);
		}
	}
}

/* The block of lines under a feature's line, for the features that have one. */
static void print_perf_feature_block(const struct tk_perfdata *pd,
				     const struct tk_perfdata_feature *f)
{
	const struct tk_perfdata_host *h = tk_perfdata_get_host(pd);

	switch (f->id) {
	case TK_PERF_FEAT_CPU_TOPOLOGY:
		if (h->cpu_topology)
			print_cpu_topology(h->cpu_topology);
		break;
	case TK_PERF_FEAT_NUMA_TOPOLOGY:
		for (uint32_t i = 0; i < h->nr_numa_nodes; i++) {
			const struct tk_perfdata_numa_node *n = &h->numa_nodes[i];

			printf(FEAT_INDENT "node%" PRIu32 " meminfo  : total = %" PRIu64
					   " kB, free = %" PRIu64 " kB\n",
			       n->node, n->mem_total_kb, n->mem_free_kb);
			printf(FEAT_INDENT "node%" PRIu32 " cpu list : ", n->node);
			print_safe(n->cpus);
			putchar('\n');
		}
		break;
	case TK_PERF_FEAT_BRANCH_STACK:
		puts(FEAT_INDENT "contains samples with branch stack");
		break;
	case TK_PERF_FEAT_STAT:
		puts(FEAT_INDENT "contains stat data");
		break;
	case TK_PERF_FEAT_AUXTRACE:
		puts(FEAT_INDENT "contains AUX area data (e.g. instruction trace)");
		for (uint64_t i = 0; i < h->nr_auxtrace; i++)
			printf(FEAT_INDENT "AUX data %" PRIu64 ": offset=0x%" PRIx64
					   " size=%" PRIu64 "\n",
			       i, h->auxtrace[i].file_offset, h->auxtrace[i].size);
		break;
	case TK_PERF_FEAT_GROUP_DESC:
		print_groups(pd, h);
		break;
	case TK_PERF_FEAT_CPU_PMU_CAPS:
		if (h->cpu_pmu_caps)
			print_pmu_caps(h->cpu_pmu_caps);
		break;
	case TK_PERF_FEAT_PMU_CAPS:
		for (uint32_t i = 0; i < h->nr_pmu_caps; i++)
			print_pmu_caps(&h->pmu_caps[i]);
		break;
	case TK_PERF_FEAT_HYBRID_TOPOLOGY:
		puts(FEAT_INDENT "hybrid cpu system:");
		for (uint32_t i = 0; i < h->nr_hybrid_nodes; i++) {
			fputs(FEAT_INDENT, stdout);
			print_safe(h->hybrid_nodes[i].pmu);
			fputs(" cpu list : ", stdout);
			print_safe(h->hybrid_nodes[i].cpus);
			putchar('\n');
		}
		break;
	case TK_PERF_FEAT_BPF_PROG_INFO:
		print_bpf_progs(h);
		break;
	case TK_PERF_FEAT_BPF_BTF:
		for (uint32_t i = 0; i < h->nr_bpf_btfs; i++)
			printf(FEAT_INDENT "btf info of id %" PRIu32 "\n", h->bpf_btfs[i].id);
		break;
	default:
		break;
	}
}

static void print_perf_feature(const struct tk_perfdata *pd, const struct tk_perfdata_feature *f)
{
	const struct tk_perfdata_host *h = tk_perfdata_get_host(pd);
	struct tk_perfdata_tracing t;
	const char *s = NULL;

	printf("  feature %u %s: offset=0x%" PRIx64 " size=%" PRIu64 "%s", f->id,
	       tk_perfdata_feature_name(f->id), f->offset, f->size, f->valid ? "" : " (malformed)");
	if (!f->valid) {
		putchar('\n');
		return;
	}
	switch (f->id) {
	case TK_PERF_FEAT_HOSTNAME:
		s = h->hostname;
		break;
	case TK_PERF_FEAT_OSRELEASE:
		s = h->osrelease;
		break;
	case TK_PERF_FEAT_VERSION:
		s = h->version;
		break;
	case TK_PERF_FEAT_ARCH:
		s = h->arch;
		break;
	case TK_PERF_FEAT_CPUDESC:
		s = h->cpudesc;
		break;
	case TK_PERF_FEAT_CPUID:
		s = h->cpuid;
		break;
	case TK_PERF_FEAT_NRCPUS:
		printf(" avail=%u online=%u", h->nr_cpus_avail, h->nr_cpus_online);
		break;
	case TK_PERF_FEAT_TOTAL_MEM:
		printf(" kb=%" PRIu64, h->total_mem_kb);
		break;
	case TK_PERF_FEAT_CMDLINE:
		fputs(" value=\"", stdout);
		for (uint32_t i = 0; i < h->cmdline_argc; i++) {
			if (i)
				putchar(' ');
			print_safe(h->cmdline_argv[i]);
		}
		putchar('"');
		break;
	case TK_PERF_FEAT_SAMPLE_TIME:
		printf(" first=%" PRIu64 " last=%" PRIu64, h->sample_time_first,
		       h->sample_time_last);
		break;
	case TK_PERF_FEAT_CLOCKID:
		printf(" res_ns=%" PRIu64, h->clockid_res_ns);
		break;
	case TK_PERF_FEAT_CLOCK_DATA:
		printf(" clockid=%u tod_ns=%" PRIu64 " clockid_ns=%" PRIu64, h->clock_data_clockid,
		       h->clock_tod_ns, h->clock_clockid_ns);
		break;
	case TK_PERF_FEAT_COMPRESSED:
		printf(" type=%u level=%u ratio=%u mmap_len=%u", h->comp_type, h->comp_level,
		       h->comp_ratio, h->comp_mmap_len);
		break;
	case TK_PERF_FEAT_BUILD_ID:
		printf(" entries=%zu", tk_perfdata_build_id_count(pd));
		break;
	case TK_PERF_FEAT_TRACING_DATA:
		if (tk_perfdata_tracing(pd, &t, NULL, NULL) == 0) {
			fputs(" version=", stdout);
			print_safe(t.version);
			printf(" ftrace_formats=%u formats=%u printk=%" PRIu64 " cmdlines=%" PRIu64,
			       t.nr_ftrace, t.nr_formats, t.printk.len, t.cmdlines.len);
		}
		break;
	case TK_PERF_FEAT_PMU_MAPPINGS:
		printf(" pmus=%u", h->nr_pmu_mappings);
		break;
	case TK_PERF_FEAT_NUMA_TOPOLOGY:
		printf(" nodes=%u", h->nr_numa_nodes);
		break;
	case TK_PERF_FEAT_CACHE:
		printf(" levels=%u", h->nr_cache_levels);
		break;
	case TK_PERF_FEAT_CPU_TOPOLOGY:
		if (h->cpu_topology)
			printf(" sockets=%u dies=%u threads=%u cpus=%u",
			       h->cpu_topology->nr_sockets, h->cpu_topology->nr_dies,
			       h->cpu_topology->nr_threads, h->cpu_topology->nr_cpus);
		break;
	case TK_PERF_FEAT_GROUP_DESC:
		printf(" groups=%u", h->nr_groups);
		break;
	case TK_PERF_FEAT_AUXTRACE:
		printf(" entries=%" PRIu64, h->nr_auxtrace);
		break;
	case TK_PERF_FEAT_CPU_PMU_CAPS:
		if (h->cpu_pmu_caps)
			printf(" caps=%u", h->cpu_pmu_caps->nr_caps);
		break;
	case TK_PERF_FEAT_PMU_CAPS:
		printf(" pmus=%u", h->nr_pmu_caps);
		break;
	case TK_PERF_FEAT_HYBRID_TOPOLOGY:
		printf(" nodes=%u", h->nr_hybrid_nodes);
		break;
	case TK_PERF_FEAT_BPF_PROG_INFO:
		printf(" progs=%u", h->nr_bpf_progs);
		break;
	case TK_PERF_FEAT_BPF_BTF: {
		uint64_t bytes = 0;

		for (uint32_t i = 0; i < h->nr_bpf_btfs; i++)
			bytes += h->bpf_btfs[i].size;
		printf(" btfs=%u bytes=%" PRIu64, h->nr_bpf_btfs, bytes);
		break;
	}
	default:
		break;
	}
	if (s) {
		fputs(" value=\"", stdout);
		print_safe(s);
		putchar('"');
	}
	putchar('\n');
	print_perf_feature_block(pd, f);
}

/*
 * The STAT_CONFIG record of a perf stat record file, printed after the
 * records as "stat config: aggr_mode=1 interval=0 scale=1", unknown tags
 * as tagN=V.
 */
static void print_stat_config(const struct tk_perf_record *rec)
{
	static const char *const names[] = {"aggr_mode", "interval", "scale"};
	struct tk_perf_stat_config sc;

	fputs("stat config:", stdout);
	if (tk_perfdata_parse_stat_config(rec, &sc) < 0) {
		printf(" (malformed: record of %u bytes at 0x%" PRIx64 ")\n", rec->size,
		       rec->offset);
		return;
	}
	for (uint64_t i = 0; i < sc.nr; i++) {
		uint64_t tag = tk_perf_load_u64(sc.terms, 2 * i);
		uint64_t val = tk_perf_load_u64(sc.terms, 2 * i + 1);

		if (tag < sizeof(names) / sizeof(names[0]))
			printf(" %s=%" PRIu64, names[tag], val);
		else
			printf(" tag%" PRIu64 "=%" PRIu64, tag, val);
	}
	putchar('\n');
}

/*
 * dump_perfdata() - "tracekit dump" of a perf.data (file or pipe format):
 * header, attrs with their ids, features with offset, size and decoded
 * value (and a block of perf-worded lines for those that have one), build
 * ids, the records counted by type (every record is read, so exit 0 means
 * the whole data section was readable) and a stat file's STAT_CONFIG.
 */
static int dump_perfdata(const char *path, bool summary, bool strict)
{
	TK_OPTS(tk_perfdata_open_opts, oopts, .strict = strict);
	struct tk_perfdata *pd = tk_perfdata_open_opts(path, &oopts);
	const struct tk_perfdata_info *in;
	struct tk_perf_record rec;
	uint64_t counts[128] = {0}, total = 0, samples_bad = 0;
	struct tk_perf_record stat_config = {0};
	uint8_t *stat_copy = NULL;
	int r;

	if (!pd)
		return cli_lib_error(path);
	in = tk_perfdata_get_info(pd);
	printf("perf.data: mode=%s header_size=%" PRIu64, in->pipe ? "pipe" : "file",
	       in->header_size);
	if (!in->pipe)
		printf(" attr_size=%" PRIu64 " attrs=0x%" PRIx64 "+%" PRIu64 " data=0x%" PRIx64
		       "+%" PRIu64 " file_size=%" PRIu64 " features=%016" PRIx64 "%s",
		       in->attr_size, in->attrs_offset, in->attrs_size, in->data_offset,
		       in->data_size, in->file_size, in->features[0],
		       in->data_size_repaired ? " data_size_repaired=yes" : "");
	putchar('\n');
	printf("attrs: %zu\n", tk_perfdata_evsel_count(pd));
	for (size_t i = 0; i < tk_perfdata_evsel_count(pd); i++) {
		const struct tk_perfdata_evsel *e = tk_perfdata_evsel_get(pd, i);

		printf("  attr %zu: offset=0x%" PRIx64 " type=%u config=0x%" PRIx64
		       " sample_type=0x%" PRIx64 " read_format=0x%" PRIx64 " flags=0x%" PRIx64
		       " period=%" PRIu64 " name=\"",
		       i, e->attr_offset, e->attr.type, e->attr.config, e->attr.sample_type,
		       e->attr.read_format, e->attr.flags, e->attr.sample_period);
		print_safe(e->name ? e->name : "");
		printf("\" ids=");
		for (uint64_t j = 0; j < e->nr_ids; j++)
			printf("%s%" PRIu64, j ? "," : "", e->ids[j]);
		putchar('\n');
	}
	printf("features: %zu\n", tk_perfdata_feature_count(pd));
	for (size_t i = 0; i < tk_perfdata_feature_count(pd) && !summary; i++)
		print_perf_feature(pd, tk_perfdata_feature_get(pd, i));
	for (size_t i = 0; i < tk_perfdata_build_id_count(pd) && !summary; i++) {
		const struct tk_perfdata_build_id *b = tk_perfdata_build_id_get(pd, i);

		printf("  build_id: pid=%d misc=0x%x id=", b->pid, b->misc);
		for (int k = 0; k < b->size && k < 20; k++)
			printf("%02x", b->id[k]);
		fputs(" file=\"", stdout);
		print_safe(b->filename);
		puts("\"");
	}
	while ((r = tk_perfdata_next(pd, &rec)) > 0) {
		struct tk_perf_sample s;

		counts[rec.type < 128 ? rec.type : 127]++;
		total++;
		if (rec.type == TK_PERF_RECORD_SAMPLE && tk_perfdata_parse_sample(pd, &rec, &s) < 0)
			samples_bad++;
		/* The record lives until the next call: keep a copy of the last one. */
		if (rec.type == TK_PERF_RECORD_STAT_CONFIG && !summary) {
			uint8_t *copy = realloc(stat_copy, rec.size);

			if (!copy) {
				r = cli_error("%s: out of memory", path);
				goto out;
			}
			memcpy(copy, rec.data, rec.size);
			stat_copy = copy;
			stat_config = rec;
			stat_config.data = copy;
		}
	}
	if (r < 0) {
		cli_perf_damage(path, pd);
		r = cli_lib_error(path);
		goto out;
	}
	printf("records: %" PRIu64 "\n", total);
	for (uint32_t t = 0; t < 128; t++)
		if (counts[t])
			printf("  %s%s: %" PRIu64 "\n", t == 127 ? ">=" : "",
			       tk_perfdata_record_name(t), counts[t]);
	if (in->nr_compressed)
		printf("compressed: records=%" PRIu64 " bytes=%" PRIu64 " decompressed=%" PRIu64
		       "\n",
		       in->nr_compressed, in->compressed_bytes, in->decompressed_bytes);
	if (stat_copy)
		print_stat_config(&stat_config);
	r = cli_finish_stdout(CLI_OK);
	if (cli_perf_damage(path, pd) != CLI_OK && r == CLI_OK)
		r = CLI_FAIL;
	if (samples_bad)
		r = cli_error("%s: %" PRIu64 " samples could not be decoded", path, samples_bad);
out:
	free(stat_copy);
	tk_perfdata_close(pd);
	return r;
}

/* -------------------------------------------------------------------- main */

int cmd_dump(int argc, char **argv)
{
	enum { OPT_SUMMARY = 256, OPT_SECTION, OPT_STRICT };
	static const struct option longopts[] = {
		{"input", required_argument, NULL, 'i'},
		{"summary", no_argument, NULL, OPT_SUMMARY},
		{"section", required_argument, NULL, OPT_SECTION},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *path = NULL, *section = NULL;
	enum tk_filekind kind;
	const struct tk_dat_info *info;
	struct totals tot = {0};
	bool summary = false, strict = false;
	struct tk_dat *dat;
	uint16_t section_id = 0;
	int c, r = CLI_OK;

	while ((c = getopt_long(argc, argv, ":i:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (path)
				return cli_usage_error("more than one input file");
			path = optarg;
			break;
		case OPT_SUMMARY:
			summary = true;
			break;
		case OPT_STRICT:
			strict = true;
			break;
		case OPT_SECTION:
			section = optarg;
			if (parse_section_arg(section, &section_id) < 0)
				return cli_usage_error("unknown section '%s' (try headers, "
						       "ftrace-events, events, kallsyms, printk, "
						       "cmdlines or 16..21)",
						       section);
			break;
		default: /* -h, or an option getopt rejected */
			return cli_help_or_bad_option(c, argv, cmd_dump_usage);
		}
	}
	if (optind < argc) {
		if (path || argc - optind > 1)
			return cli_usage_error("more than one input file");
		path = argv[optind];
	}
	if (!path)
		path = "trace.dat";
	if (section && summary)
		return cli_usage_error("--section and --summary cannot be combined");

	kind = tk_filekind_of(path);
	if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE) {
		if (section)
			return cli_usage_error("--section applies to .dat files only");
		return dump_perfdata(path, summary, strict);
	}
	TK_OPTS(tk_dat_open_opts, dopts, .strict = strict);
	dat = tk_dat_open_with(path, &dopts);
	if (!dat)
		return cli_lib_error(path);

	if (section) {
		r = write_section(dat, path, section_id);
		goto out;
	}

	info = tk_dat_get_info(dat);
	print_header(dat, info);
	print_sections(dat, summary);
	print_options(dat, summary);
	printf("buffers: %zu\n", tk_dat_buffer_count(dat));
	for (size_t b = 0; b < tk_dat_buffer_count(dat) && r == CLI_OK; b++)
		r = dump_buffer(dat, path, b, summary, &tot);
	if (r == CLI_OK) {
		printf("totals: events=%" PRIu64 " pages=%" PRIu64, tot.events, tot.pages);
		print_lost(tot.lost, tot.lost_unknown);
		putchar('\n');
	}
	r = cli_finish_stdout(r);
out:
	r = cli_dat_damage(dat, path, r);
	tk_dat_close(dat);
	return r;
}
