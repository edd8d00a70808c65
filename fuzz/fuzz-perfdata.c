// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for the perf.data reader: the input is written to a memfd
 * (a regular file, so file mode and pipe mode are both reachable), opened,
 * every feature getter is called, and every record is read and decoded
 * with tk_perfdata_parse_sample() and the COMM, FORK/EXIT and STAT_CONFIG
 * parsers. Then the file is opened again and printed by
 * tk_perfdata_report_run() into /dev/null, which reaches the report's own
 * fixed-layout sample decoding, id memo and queue sorting, and once more
 * converted to a .dat (tk_convert_perf_to_dat) into a memfd.
 * The first pass reads strictly (the first damage is an error); the
 * report, the conversion and tk_perfdata_check() salvage (issue 21), which
 * reaches the resync scan, the damage list and zstd recovery; the damage
 * list is walked.
 * The target only needs to not crash, hang or leak; errors are expected.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tracekit/convert.h>
#include <tracekit/perfdata.h>
#include <tracekit/pftrace.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The report path parses TRACING_DATA's event formats with libtraceevent
 * 1.7.1, which leaks what it allocated for a format it then refuses (as
 * fuzz-event found and suppresses): not ours to fix, and not a finding.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

static const char *fuzz_kallsyms(void)
{
	static char path[64];
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000000 T _text\n"
				   "ffffffff81001000 t do_one\n"
				   "ffffffff81002000 T schedule\n"
				   "ffffffffc0000000 t usb_probe\t[usbnet]\n";

	if (!path[0]) {
		int fd = memfd_create("fuzz-kallsyms", MFD_CLOEXEC);

		if (fd < 0 || write(fd, text, sizeof(text) - 1) != (ssize_t)(sizeof(text) - 1))
			return NULL;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_perfdata *pd;
	struct tk_perf_record rec;
	struct tk_perfdata_tracing t;
	struct tk_perfdata_text text;
	struct tk_perfdata_check_result res = {.sz = sizeof(res)};
	const char *sys;
	char path[64];
	int fd;

	fd = fuzz_input("fuzz-perfdata", data, size);
	if (fd < 0)
		return 0;
	/* The salvaging opens go by name: a new open file of the same memfd. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	pd = tk_perfdata_open_fd(fd, "fuzz.data");
	if (pd) {
		for (size_t i = 0; i < tk_perfdata_evsel_count(pd); i++)
			sink += tk_perfdata_evsel_get(pd, i)->nr_ids;
		for (size_t i = 0; i < tk_perfdata_feature_count(pd); i++)
			sink += tk_perfdata_feature_get(pd, i)->size;
		for (size_t i = 0; i < tk_perfdata_build_id_count(pd); i++)
			sink += tk_perfdata_build_id_get(pd, i)->size;
		if (tk_perfdata_tracing(pd, &t, NULL, NULL) == 0)
			for (uint32_t i = 0; tk_perfdata_tracing_format(pd, i, &sys, &text) == 0;
			     i++)
				sink += text.len + (uint8_t)sys[0];
		for (int n = 0; n < 100000 && tk_perfdata_next(pd, &rec) == 1; n++) {
			struct tk_perf_sample s;

			struct tk_perf_stat_config sc;
			struct tk_perf_comm comm;
			struct tk_perf_task task;

			if (tk_perfdata_parse_sample(pd, &rec, &s) == 0)
				sink += s.time + s.callchain_nr + s.raw_size;
			if (tk_perfdata_parse_comm(&rec, &comm) == 0)
				sink += comm.len + comm.tid;
			if (tk_perfdata_parse_task(&rec, &task) == 0)
				sink += task.time;
			if (tk_perfdata_parse_stat_config(&rec, &sc) == 0 && sc.nr)
				sink += tk_perf_load_u64(sc.terms, 2 * sc.nr - 1);
		}
		tk_perfdata_close(pd);
	}
	pd = tk_perfdata_open_opts(path, NULL);
	if (pd) {
		static int null_fd = -1;
		struct tk_perfdata_report_opts opts = {
			.sz = sizeof(struct tk_perfdata_report_opts)};
		struct tk_perfdata_report_stats rst = {0};

		if (null_fd < 0)
			null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		opts.fd = null_fd;
		/*
		 * A few kernel symbols of our own: this machine's /proc/kallsyms
		 * (~200 k lines) takes seconds to load under the sanitizers and
		 * turned inputs with kernel ips into timeouts.
		 */
		opts.kallsyms = fuzz_kallsyms();
		if (null_fd >= 0 && tk_perfdata_report_run(pd, &opts, &rst) == 0)
			sink += rst.printed;
		for (size_t i = 0; i < tk_perfdata_damage_count(pd); i++)
			sink += tk_perfdata_damage_get(pd, i)->skipped +
				(uint8_t)tk_perfdata_damage_get(pd, i)->what[0];
		tk_perfdata_close(pd);
	}
	/* Convert to .dat, into a memfd that is thrown away. */
	pd = tk_perfdata_open_opts(path, NULL);
	if (pd) {
		int out = memfd_create("fuzz-perfdata-out", MFD_CLOEXEC);

		if (out >= 0 && tk_convert_perf_to_dat(pd, out, "fuzz-out.dat", NULL, NULL) == 0)
			sink += (uint64_t)lseek(out, 0, SEEK_END);
		if (out >= 0)
			close(out);
		tk_perfdata_close(pd);
	}
	/* And to Perfetto: samples, callchains, mappings, tracepoints. */
	pd = tk_perfdata_open_opts(path, NULL);
	if (pd) {
		int out = memfd_create("fuzz-perfdata-pftrace", MFD_CLOEXEC);

		if (out >= 0 && tk_pftrace_write_perf(pd, out, "fuzz.pftrace", NULL, NULL) == 0)
			sink += (uint64_t)lseek(out, 0, SEEK_END);
		if (out >= 0)
			close(out);
		tk_perfdata_close(pd);
	}
	if (tk_perfdata_check(path, NULL, &res) >= 0) {
		sink += res.samples + res.nr_damage;
		free(res.damage);
	}
	close(fd);
	return 0;
}
