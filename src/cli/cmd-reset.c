// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tracekit reset: remove the flight recorder ("tracekit start") and the
 * tracefs instances and dynamic probes that dead recorders left.
 *
 * The flight recorder's instance has no process behind it by design, so
 * no pid says whether it is still wanted: it goes because the user asks
 * for a reset, as "trace-cmd reset" ends what "trace-cmd start" began. -B
 * and --top name the buffer of a "start -B NAME" or "start --top" and
 * reset that one only (tk_flight_reset()).
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
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <tracekit/flight.h>
#include <tracekit/tracefs.h>

#include "cli.h"

const char cmd_reset_usage[] =
	"usage: tracekit reset [options]\n"
	"\n"
	"Remove the flight recorder that 'tracekit start' left (the instance\n"
	"tracekit, with its events), then the tracefs instances (tracekit-<pid>)\n"
	"and the dynamic probes (uprobes, kprobes) left behind by tracekit\n"
	"recorders that died (SIGKILL, a crash); those of live recorders are kept.\n"
	"\n"
	"options:\n"
	"  -B, --instance NAME  only remove the flight recorder of 'start -B NAME'\n"
	"      --top        only put the top buffer back after 'start --top':\n"
	"                   events off, pid filter cleared, tracer nop, tracing on\n"
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

/*
 * Reset one flight recorder buffer. @named: the user named it (-B, --top),
 * so its absence is an error; the default instance may well not exist.
 */
static int reset_flight(struct reap_ctx *rc, const char *instance, bool top, bool named)
{
	const char *name = top ? NULL : instance ? instance : TK_FLIGHT_INSTANCE;
	char *path = NULL;
	struct stat st;
	int r = CLI_OK;

	if (name) {
		if (asprintf(&path, "%s/%s", rc->dir, name) < 0)
			return cli_error("out of memory");
		if (stat(path, &st) < 0 && errno == ENOENT && !named) {
			free(path);
			return CLI_OK;
		}
	}
	if (rc->dry) {
		if (name)
			printf("would remove %s (flight recorder)\n", path);
		else
			printf("would reset the top buffer\n");
	} else if (tk_flight_reset(instance, top) < 0) {
		r = cli_lib_error(NULL);
	} else if (!rc->quiet) {
		if (name)
			printf("removed %s (flight recorder)\n", path);
		else
			printf("reset the top buffer\n");
	}
	if (r == CLI_OK)
		rc->count++;
	free(path);
	return r;
}

int cmd_reset(int argc, char **argv)
{
	enum { OPT_TOP = 256 };
	static const struct option longopts[] = {
		{"instance", required_argument, NULL, 'B'}, {"top", no_argument, NULL, OPT_TOP},
		{"dry-run", no_argument, NULL, 'n'},	    {"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},	    {NULL, 0, NULL, 0},
	};
	struct reap_ctx rc = {0};
	const char *root, *instance = NULL;
	bool top = false;
	char *dir;
	int c, r = CLI_OK;

	while ((c = getopt_long(argc, argv, ":B:nqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'B':
			instance = optarg;
			break;
		case OPT_TOP:
			top = true;
			break;
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
	if (top && instance)
		return cli_usage_error("--top and -B exclude each other");
	root = tk_tracefs_root();
	if (!root)
		return cli_lib_error(NULL);
	if (asprintf(&dir, "%s/instances", root) < 0)
		return cli_error("out of memory");
	rc.dir = dir;
	if (top || instance) {
		r = reset_flight(&rc, instance, top, true);
		free(dir);
		return cli_finish_stdout(r);
	}
	r = reset_flight(&rc, NULL, false, false);
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
