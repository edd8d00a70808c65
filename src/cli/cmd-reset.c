// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit reset: remove the tracefs instances and dynamic probes that dead
 * recorders left.
 *
 * "tracekit record" names its instance tracekit-<pid> and removes it on
 * every exit it controls; a SIGKILL or a crash leaves it behind, holding
 * its ring buffers' memory. An instance is removed only when no process
 * with that pid exists, so a reset never breaks a recording in progress.
 * (A recycled pid keeps the instance until the next reset after that
 * process ends: the safe side.) Probes (--probe, cached SDT and user
 * probes) carry the names users gave them, so the recorder notes the ones
 * it created in a ledger (tracefs.h); the probes of a dead recorder's
 * ledger go after the instances, since the kernel keeps a probe that an
 * instance still has enabled. The library does both (tracefs.h:
 * tk_tracefs_instances_reap(), tk_tracefs_ledger_reap()); this prints.
 */
#include <getopt.h>
#include <stdlib.h>

#include <tracekit/tracefs.h>

#include "cli.h"

const char cmd_reset_usage[] =
	"usage: tracekit reset [options]\n"
	"\n"
	"Remove the tracefs instances (tracekit-<pid>) and the dynamic probes\n"
	"(uprobes, kprobes) left behind by tracekit recorders that died (SIGKILL,\n"
	"a crash); those of live recorders are kept.\n"
	"\n"
	"options:\n"
	"  -n, --dry-run    only say what would be removed\n"
	"  -q, --quiet      print nothing on success\n"
	"  -h, --help       show this help\n";

struct reap_ctx {
	bool quiet, dry;
	const char *dir; /* the instances directory, for messages */
	int count;
};

/* Success lines go with -q; what a dry run would do is always said. */
static void instance_report(const char *name, long pid, void *arg)
{
	struct reap_ctx *c = arg;

	c->count++;
	if (c->dry)
		printf("would remove %s/%s (pid %ld is gone)\n", c->dir, name, pid);
	else if (!c->quiet)
		printf("removed %s/%s (pid %ld is gone)\n", c->dir, name, pid);
}

static void probe_report(const char *probe, long pid, bool gone, void *arg)
{
	struct reap_ctx *c = arg;

	c->count++;
	if (c->dry)
		printf("would remove probe %s (pid %ld is gone)\n", probe, pid);
	else if (c->quiet)
		return;
	else if (gone)
		printf("forgot probe %s (pid %ld is gone; the probe was already deleted)\n", probe,
		       pid);
	else
		printf("removed probe %s (pid %ld is gone)\n", probe, pid);
}

int cmd_reset(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"dry-run", no_argument, NULL, 'n'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct reap_ctx rc = {0};
	const char *root;
	char *dir;
	int c, r = CLI_OK;

	while ((c = getopt_long(argc, argv, ":nqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			rc.dry = true;
			break;
		case 'q':
			rc.quiet = true;
			break;
		default: /* -h, or an option getopt rejected */
			return cli_help_or_bad_option(c, argv, cmd_reset_usage);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	root = tk_tracefs_root();
	if (!root)
		return cli_lib_error(NULL);
	if (asprintf(&dir, "%s/instances", root) < 0)
		return cli_error("out of memory");
	rc.dir = dir;
	/* Instances first: the kernel keeps a probe that an instance has enabled. */
	if (tk_tracefs_instances_reap(instance_report, &rc, rc.dry) < 0)
		r = cli_lib_error(NULL);
	if (tk_tracefs_ledger_reap(probe_report, &rc, rc.dry) < 0)
		r = cli_lib_error(NULL);
	free(dir);
	if (!rc.quiet && !rc.dry && !rc.count && r == CLI_OK)
		printf("no instance or probe left by a dead recorder\n");
	return cli_finish_stdout(r);
}
