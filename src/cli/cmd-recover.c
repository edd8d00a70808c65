// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit recover: turn what a killed "tracekit record" left on disk into
 * a complete .dat file.
 *
 * The work is the library's (tk_record_recover(): it reads FILE.tkmeta,
 * which the recorder wrote before capturing, and the whole pages of each
 * FILE.cpuN spool). This file parses the command line and prints what was
 * recovered, per CPU, in the same words the recorder's summary uses.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/record.h>

#include "cli.h"

const char cmd_recover_usage[] =
	"usage: tracekit recover [options] FILE\n"
	"\n"
	"Write FILE from what a killed 'tracekit record -o FILE' left beside it:\n"
	"FILE.tkmeta (metadata, written before the capture) and the spool files\n"
	"FILE.cpuN (every whole page that reached the disk). The file is written\n"
	"under a temporary name and renamed when complete; then the side files are\n"
	"removed. Remove the recorder's tracefs instance with 'tracekit reset'.\n"
	"\n"
	"options:\n"
	"      --compression zstd|zlib|none\n"
	"                          codec (default zstd; v6 is never compressed)\n"
	"      --file-version 6|7  .dat version (default 7)\n"
	"  -q, --quiet             print nothing on success\n"
	"  -h, --help              show this help\n";

int cmd_recover(int argc, char **argv)
{
	enum { OPT_COMPRESSION = 256, OPT_FILE_VERSION };
	static const struct option longopts[] = {
		{"compression", required_argument, NULL, OPT_COMPRESSION},
		{"file-version", required_argument, NULL, OPT_FILE_VERSION},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct tk_record_recover_opts opts = {.sz = sizeof(struct tk_record_recover_opts),
					      .file_version = 7};
	struct tk_record_cpu_stats *st;
	uint64_t pages = 0, events = 0, missed = 0;
	const char *codec = NULL, *file;
	bool quiet = false;
	uint32_t n;
	int c, r;

	while ((c = getopt_long(argc, argv, ":qh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_COMPRESSION:
			codec = optarg;
			break;
		case OPT_FILE_VERSION:
			if (cli_parse_file_version(optarg, &opts.file_version))
				return CLI_USAGE;
			break;
		case 'q':
			quiet = true;
			break;
		default: /* -h, or an option getopt rejected */
			return cli_help_or_bad_option(c, argv, cmd_recover_usage);
		}
	}
	if (optind + 1 != argc)
		return cli_usage_error(optind == argc ? "a FILE to recover is required"
						      : "only one FILE at a time");
	file = argv[optind];
	if (!codec) {
		opts.compression = opts.file_version == 6 ? TK_COMPRESS_NONE : TK_COMPRESS_ZSTD;
	} else if (tk_codec_from_name(codec, &opts.compression) < 0) {
		return cli_usage_error("unknown compression '%s' (zstd, zlib or none)", codec);
	}
	if (opts.file_version == 6 && opts.compression != TK_COMPRESS_NONE)
		return cli_usage_error(
			"file version 6 cannot be compressed (use --compression none "
			"or --file-version 7)");

	r = tk_record_recover(file, &opts, &st, &n);
	if (r < 0)
		return cli_lib_error(file);
	if (r == 1) {
		if (!quiet)
			printf("%s was already complete; its leftover side files were removed\n",
			       file);
		return cli_finish_stdout(CLI_OK);
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!quiet)
			printf("CPU %u: %" PRIu64 " events, %" PRIu64
			       " pages, pages after a loss %" PRIu64 " (%" PRIu64
			       " events counted there)\n",
			       st[i].cpu, st[i].events, st[i].pages, st[i].missed_pages,
			       st[i].missed_events);
		pages += st[i].pages;
		events += st[i].events;
		missed += st[i].missed_events;
	}
	free(st);
	if (!quiet)
		printf("recovered %s (v%d, %s): %" PRIu64 " events in %" PRIu64 " pages, %" PRIu64
		       " events known lost\n",
		       file, opts.file_version, tk_codec_name(opts.compression), events, pages,
		       missed);
	return cli_finish_stdout(CLI_OK);
}
