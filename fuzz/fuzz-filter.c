// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target for report's filters, the text a user types after -F, -v -F,
 * --pid and --comm: each line of the input is one spec ("-v " before it
 * makes it a hiding one, "P" a pid list, "C" a command-name glob), and
 * tk_report_run() prints tests/data/tc34/v6.dat through them into
 * /dev/null. That reaches event-check.c's shape check in front of
 * libtraceevent's filter parser (which crashes on some texts the check
 * exists to refuse), the name and glob matching, the unknown-field
 * check and the filter's evaluation on every record. A refused spec is
 * expected; the target only needs to not crash, hang or leak.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/tracekit.h>

#include "fuzz.h"

#ifndef TK_FUZZ_FILTER_DAT
#error "meson passes the path of the .dat the filters run on"
#endif

#define MAX_SPECS 6

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libtraceevent 1.7.1 leaks parts of some filters it parses ("EVENT:0", "!(...)"): not ours. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

/*
 * The "!" token's leak is allocated by vasprintf() from libtraceevent code
 * without frame pointers: only the slow unwinder sees libtraceevent in that
 * stack, so the suppression above can match it.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tk_dat *dat; /* opened once: its formats take longer to parse than a run */
	static int null_fd = -1;
	const char *events[MAX_SPECS], *neg[MAX_SPECS], *comms[MAX_SPECS];
	int pids[MAX_SPECS];
	size_t nevents = 0, nneg = 0, ncomms = 0, npids = 0;
	char *text, *save = NULL;

	if (size > 4096)
		return 0;
	tk_log_set_handler(quiet, NULL, TK_LOG_WARN);
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "-v ", 3) && nneg < MAX_SPECS)
			neg[nneg++] = line + 3;
		else if (line[0] == 'P' && npids < MAX_SPECS)
			pids[npids++] = atoi(line + 1);
		else if (line[0] == 'C' && ncomms < MAX_SPECS)
			comms[ncomms++] = line + 1;
		else if (nevents < MAX_SPECS)
			events[nevents++] = line;
	}
	if (!dat)
		dat = tk_dat_open(TK_FUZZ_FILTER_DAT);
	if (dat) {
		TK_OPTS(tk_report_opts, o, .fd = null_fd, .threads = 1);

		o.events = nevents ? events : NULL;
		o.nevents = nevents;
		o.neg_events = nneg ? neg : NULL;
		o.nneg_events = nneg;
		o.pids = npids ? pids : NULL;
		o.npids = npids;
		o.comms = ncomms ? comms : NULL;
		o.ncomms = ncomms;
		sink += (uint64_t)tk_report_run(dat, &o, NULL);
	}
	free(text);
	return 0;
}
