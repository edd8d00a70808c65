// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Unit tests of tk_profile_run() and tk_flamegraph_run() on a perf.data
 * written here: cpu-clock samples with callchains in two threads, ips in
 * no map (so every frame is an address, and the text does not depend on
 * this machine's binaries or kernel). The expected texts are what perf
 * report 6.1 prints for the file (checked when the test was written);
 * the folded stacks are stackcollapse-perf's. Also: the errors, and that
 * samples written in bulk or spread over rounds give the same answers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/analyze.h>
#include <tracekit/perfdata.h>

#include "tk-tmpdir.h"

#define ST                                                                                         \
	(TK_PERF_SAMPLE_IP | TK_PERF_SAMPLE_TID | TK_PERF_SAMPLE_TIME | TK_PERF_SAMPLE_CALLCHAIN | \
	 TK_PERF_SAMPLE_PERIOD)
#define CONTEXT_USER ((uint64_t)-512)

/* A user-mode sample of @tid at @t: ip chain[0], callers chain[1..]. */
static void add_sample(struct tk_perfdata_writer *w, uint32_t tid, uint64_t t,
		       const uint64_t *chain, size_t n)
{
	uint8_t rec[256];
	uint32_t type = TK_PERF_RECORD_SAMPLE;
	uint16_t misc = 2, size = (uint16_t)(8 + 8 + 8 + 8 + 8 + 8 * (n + 1) + 8);
	uint64_t nr = n + 1, period = 1000, ctx = CONTEXT_USER;
	size_t o = 8;

	memcpy(rec, &type, 4);
	memcpy(rec + 4, &misc, 2);
	memcpy(rec + 6, &size, 2);
	memcpy(rec + o, &chain[0], 8);
	o += 8;
	memcpy(rec + o, &tid, 4);
	memcpy(rec + o + 4, &tid, 4);
	o += 8;
	memcpy(rec + o, &t, 8);
	o += 8;
	memcpy(rec + o, &period, 8);
	o += 8;
	memcpy(rec + o, &nr, 8);
	o += 8;
	memcpy(rec + o, &ctx, 8);
	o += 8;
	memcpy(rec + o, chain, 8 * n);
	o += 8 * n;
	assert_int_equal(o, size);
	assert_int_equal(tk_perfdata_writer_write(w, rec, size), 0);
}

/*
 * Thread 100 "app": 3 samples in f1 <- f2 <- f3 (0x1000 <- 0x2000 <-
 * 0x3000), 1 in 0x1100 <- 0x2000 <- 0x3000. Thread 200 "tool": 2 samples
 * in 0x5000 <- 0x3000. @rounds: a FINISHED_ROUND after each sample.
 */
static void write_file(const char *path, bool rounds)
{
	static const uint64_t a[] = {0x1000, 0x2000, 0x3000}, b[] = {0x1100, 0x2000, 0x3000},
			      c[] = {0x5000, 0x3000};
	struct tk_perfdata_writer *w = tk_perfdata_writer_open(path);
	struct tk_perf_attr at = {0};
	uint64_t t = 1000000;

	assert_non_null(w);
	at.type = 1;   /* software */
	at.config = 0; /* cpu-clock */
	at.size = 128;
	at.sample_period = 1000;
	at.sample_type = ST;
	assert_int_equal(tk_perfdata_writer_add_attr(w, &at, "cpu-clock"), 0);
	assert_true(tk_perfdata_writer_add_comm(w, 100, 100, "app", false, NULL) > 0);
	assert_true(tk_perfdata_writer_add_comm(w, 200, 200, "tool", false, NULL) > 0);
	for (int i = 0; i < 6; i++) {
		if (i < 3)
			add_sample(w, 100, t += 1000, a, 3);
		else if (i == 3)
			add_sample(w, 100, t += 1000, b, 3);
		else
			add_sample(w, 200, t += 1000, c, 2);
		if (rounds)
			assert_true(tk_perfdata_writer_add_round(w) >= 0);
	}
	assert_int_equal(tk_perfdata_writer_finish(w), 0);
	tk_perfdata_writer_close(w);
}

/* Run @fn's analysis of @path into a file and return its text (static buffer). */
static const char *profile_text(const char *path, const struct tk_profile_opts *in, int *ret)
{
	static char text[16384];
	char out[512];
	struct tk_profile_opts o = *in;
	ssize_t n;
	int fd;

	snprintf(out, sizeof(out), "%s/out.txt", tmpdir);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	o.fd = fd;
	*ret = tk_profile_run(path, &o);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	return text;
}

static const char *flame_text(const char *path, unsigned int flags, int *ret)
{
	static char text[65536];
	char out[512];
	struct tk_flamegraph_opts o = {.flags = flags};
	ssize_t n;
	int fd;

	snprintf(out, sizeof(out), "%s/fg.txt", tmpdir);
	fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	o.fd = fd;
	*ret = tk_flamegraph_run(path, &o);
	n = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[n > 0 ? n : 0] = 0;
	return text;
}

static const char head[] =
	"# To display the perf.data header info, please use --header/--header-only options.\n"
	"#\n#\n# Total Lost Samples: 0\n#\n"
	"# Samples: 6  of event 'cpu-clock'\n"
	"# Event count (approx.): 6000\n#\n";

static void test_flat(void **state)
{
	char path[512];
	struct tk_profile_opts o = {0};
	const char *t;
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s/p.data", tmpdir);
	write_file(path, false);
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(
		t, "# To display the perf.data header info, please use --header/--header-only "
		   "options.\n#\n#\n# Total Lost Samples: 0\n#\n"
		   "# Samples: 6  of event 'cpu-clock'\n"
		   "# Event count (approx.): 6000\n#\n"
		   "# Overhead  Command  Shared Object     Symbol                \n"
		   "# ........  .......  ................  ......................\n#\n"
		   "    50.00%  app      [unknown]         [.] 0x0000000000001000\n"
		   "    33.33%  tool     [unknown]         [.] 0x0000000000005000\n"
		   "    16.67%  app      [unknown]         [.] 0x0000000000001100\n\n\n");
	assert_non_null(strstr(t, head));
	o.sort = "comm";
	o.percent_limit = 40;
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "# Overhead  Command\n# ........  .......\n#\n"
				  "    66.67%  app    \n\n\n"));
	assert_null(strstr(t, "tool"));
	o.sort = "pid,dso";
	o.percent_limit = 0;
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "    66.67%      100:app      [unknown]    \n"
				  "    33.33%      200:tool     [unknown]    \n"));
	o.sort = "nope";
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, -EINVAL);
	assert_int_equal(tk_profile_run(path, NULL), -EINVAL);
	assert_int_equal(tk_profile_has_callchains(path), 1);
}

static void test_children_graph(void **state)
{
	char path[512];
	struct tk_profile_opts o = {.flags = TK_PROFILE_CHILDREN | TK_PROFILE_GRAPH};
	const char *t;
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s/p.data", tmpdir);
	write_file(path, false);
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, 0);
	/* 0x3000 is in each of app's samples: its children total, no self; callees below. */
	assert_non_null(strstr(t, "    66.67%     0.00%  app      [unknown]         [.] "
				  "0x0000000000003000\n"
				  "            |\n"
				  "            ---0x3000\n"
				  "               0x2000\n"
				  "               |          \n"
				  "               |--50.00%--0x1000\n"
				  "               |          \n"
				  "                --16.67%--0x1100\n\n"));
	assert_non_null(strstr(t, "# Children      Self  Command  Shared Object     Symbol"));
	/* Without children: the sampled function first, callers below. */
	o.flags = TK_PROFILE_GRAPH;
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "    50.00%  app      [unknown]         [.] 0x0000000000001000\n"
				  "            |\n"
				  "            ---0x1000\n"
				  "               0x2000\n"
				  "               0x3000\n\n"));
	/* JSON: no graphs, the children totals. */
	o.flags = TK_PROFILE_CHILDREN | TK_PROFILE_JSON;
	t = profile_text(path, &o, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "\"children\":true"));
	assert_non_null(strstr(t, "\"children_period\":4000"));
}

static void test_rounds_same(void **state)
{
	char one[512], two[512], first[16384];
	struct tk_profile_opts o = {.flags = TK_PROFILE_CHILDREN | TK_PROFILE_GRAPH};
	int ret;

	(void)state;
	snprintf(one, sizeof(one), "%s/one.data", tmpdir);
	snprintf(two, sizeof(two), "%s/two.data", tmpdir);
	write_file(one, false);
	write_file(two, true);
	snprintf(first, sizeof(first), "%s", profile_text(one, &o, &ret));
	assert_int_equal(ret, 0);
	assert_string_equal(profile_text(two, &o, &ret), first);
}

static void test_folded(void **state)
{
	char path[512];
	const char *t;
	int ret;

	(void)state;
	snprintf(path, sizeof(path), "%s/p.data", tmpdir);
	write_file(path, false);
	t = flame_text(path, TK_FLAMEGRAPH_FOLDED, &ret);
	assert_int_equal(ret, 0);
	/* No map: stackcollapse names each frame "unknown", so app's two stacks are one. */
	assert_string_equal(t, "app;unknown;unknown;unknown 4\ntool;unknown;unknown 2\n");
	t = flame_text(path, 0, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(t, "<svg "));
	assert_non_null(strstr(t, "data-n=\"app\" data-c=\"4\""));
	assert_non_null(strstr(t, "</svg>\n"));
	/* No sched_switch in it: nothing off the CPU to draw. */
	t = flame_text(path, TK_FLAMEGRAPH_OFF_CPU, &ret);
	assert_int_equal(ret, -ENOENT);
	assert_int_equal(tk_flamegraph_run(path, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat),
		cmocka_unit_test(test_children_graph),
		cmocka_unit_test(test_rounds_same),
		cmocka_unit_test(test_folded),
	};

	return cmocka_run_group_tests(tests, tk_tmpdir_setup, tk_tmpdir_teardown);
}
