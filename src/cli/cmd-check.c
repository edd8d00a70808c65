// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit check: is every part of a trace file readable?
 *
 * For each FILE the command calls the library's check for its kind and
 * prints the verdict: "FILE: ok (N events)" on standard output, or one
 * stderr line per damaged region ("tracekit check: FILE: offset 0xOFF:
 * WHAT (skipped N bytes, M events lost)") and "FILE: damaged (K regions,
 * N events read)". A .dat is opened in salvage mode and read whole by
 * tk_dat_check() (every section at open, then every page and record), so
 * all damage is listed, not only the first. A perf.data (file or pipe
 * format) is read whole by tk_perfdata_check(): every record, every sample
 * decoded by its attr; samples of no event count as damage too.
 *
 * Exit status: 0 when every file is intact, 1 when one is damaged or
 * cannot be read at all, 2 for usage errors and unsupported kinds.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <tracekit/filekind.h>
#include <tracekit/perfdata.h>

#include "cli.h"

const char cmd_check_usage[] =
	"usage: tracekit check [options] FILE...\n"
	"\n"
	"Verify trace-cmd .dat files (v6 or v7) completely: the header, every\n"
	"section and option, every page of every CPU and every record on it;\n"
	"and perf.data files: every record, every sample decoded by its event.\n"
	"Prints \"FILE: ok (N events)\" for an intact file; for a damaged one,\n"
	"one line per damaged region on stderr (offset, what is wrong, bytes\n"
	"skipped, events lost) and \"FILE: damaged (K regions, N events read)\".\n"
	"Exit status 0 when all files are intact, 1 when any is damaged.\n"
	"\n"
	"options:\n"
	"  -h, --help            show this help\n";

static int check_dat(const char *path)
{
	TK_OPTS(tk_dat_open_opts, opts, .strict = false);
	struct tk_dat *dat = tk_dat_open_with(path, &opts);
	uint64_t events = 0;
	size_t regions;
	int r;

	if (!dat)
		return cli_lib_error(path);
	r = tk_dat_check(dat, &events) < 0 ? cli_lib_error(path) : CLI_OK;
	regions = tk_dat_damage_count(dat);
	r = cli_dat_damage(dat, path, r);
	if (regions)
		printf("%s: damaged (%zu region%s, %" PRIu64 " events read)\n", path, regions,
		       regions == 1 ? "" : "s", events);
	else if (r == CLI_OK)
		printf("%s: ok (%" PRIu64 " events)\n", path, events);
	tk_dat_close(dat);
	return r;
}

static int check_perfdata(const char *path)
{
	TK_OPTS(tk_perfdata_check_result, res);
	uint64_t events;
	int r = tk_perfdata_check(path, NULL, &res);

	if (r < 0)
		return cli_lib_error(path);
	for (size_t i = 0; i < res.nr_damage; i++) {
		const struct tk_perfdata_damage *d = &res.damage[i];

		fprintf(stderr,
			"tracekit %s: %s: offset 0x%" PRIx64 ": %s (skipped %" PRIu64 " bytes, ",
			cli_cmd_name, path, d->offset, d->what, d->skipped);
		if (d->lost_known)
			fprintf(stderr, "%" PRIu64 " events lost)\n", d->lost);
		else
			fputs("events lost unknown)\n", stderr);
	}
	events = res.samples - res.samples_bad;
	if (r > 0)
		printf("%s: damaged (%d region%s, %" PRIu64 " events read)\n", path, r,
		       r == 1 ? "" : "s", events);
	else
		printf("%s: ok (%" PRIu64 " events)\n", path, events);
	free(res.damage);
	return r > 0 ? CLI_FAIL : CLI_OK;
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int c, status = CLI_OK;

	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1)
		return cli_help_or_bad_option(c, argv, cmd_check_usage);
	if (optind >= argc)
		return cli_usage_error("no file to check");
	for (int i = optind; i < argc; i++) {
		enum tk_filekind kind = tk_filekind_of(argv[i]);
		int r;

		if (kind == TK_FILE_PERFDATA || kind == TK_FILE_PERFDATA_PIPE) {
			r = check_perfdata(argv[i]);
		} else {
			r = check_dat(argv[i]);
		}
		if (r > status)
			status = r;
	}
	return cli_finish_stdout(status);
}
