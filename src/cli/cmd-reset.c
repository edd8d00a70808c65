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
 * instance still has enabled.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

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

/* The pid in "tracekit-<pid>", or -1 when @name is not one of ours. */
static long instance_pid(const char *name)
{
	char *end;
	long pid;

	if (strncmp(name, "tracekit-", 9) || name[9] < '1' || name[9] > '9')
		return -1;
	errno = 0;
	pid = strtol(name + 9, &end, 10);
	if (errno || *end || pid <= 0 || pid > 4194304)
		return -1;
	return pid;
}

struct reap_ctx {
	bool quiet, dry;
	int count;
};

static void reap_report(const char *probe, long pid, bool gone, void *arg)
{
	struct reap_ctx *c = arg;

	c->count++;
	if (c->quiet)
		return;
	if (c->dry)
		printf("would remove probe %s (pid %ld is gone)\n", probe, pid);
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
	bool dry = false, quiet = false;
	const char *root;
	char *dir;
	struct dirent *de;
	DIR *d;
	int c, r = CLI_OK, removed = 0;

	while ((c = getopt_long(argc, argv, ":nqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			dry = true;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			fputs(cmd_reset_usage, stdout);
			return cli_finish_stdout(CLI_OK);
		default:
			return cli_bad_option(c, argv);
		}
	}
	if (optind < argc)
		return cli_usage_error("unexpected argument '%s'", argv[optind]);
	root = tk_tracefs_root();
	if (!root)
		return cli_lib_error(NULL);
	if (asprintf(&dir, "%s/instances", root) < 0)
		return cli_error("out of memory");
	d = opendir(dir);
	if (!d) {
		r = cli_error("%s: %m", dir);
		free(dir);
		return r;
	}
	while ((de = readdir(d))) {
		long pid = instance_pid(de->d_name);

		if (pid < 0)
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		if (dry) {
			printf("would remove %s/%s (pid %ld is gone)\n", dir, de->d_name, pid);
			continue;
		}
		struct tk_tracefs *tfs = tk_tracefs_open(de->d_name, 0);

		if (!tfs || tk_tracefs_remove(tfs) < 0) {
			r = cli_lib_error(NULL);
			continue;
		}
		removed++;
		if (!quiet)
			printf("removed %s/%s (pid %ld is gone)\n", dir, de->d_name, pid);
	}
	closedir(d);
	free(dir);
	{
		struct reap_ctx rc = {.quiet = quiet, .dry = dry};

		if (tk_tracefs_ledger_reap(reap_report, &rc, dry) < 0)
			r = cli_lib_error(NULL);
		removed += rc.count;
	}
	if (!quiet && !dry && !removed && r == CLI_OK)
		printf("no instance or probe left by a dead recorder\n");
	return cli_finish_stdout(r);
}
