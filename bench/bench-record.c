// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * bench-record: tracekit record against perf record on the same steady
 * raw_syscalls load, in one run.
 *
 * The load is this program re-executed as "--load SECONDS CPU": pinned to
 * the last CPU, it calls getppid() in a tight loop for SECONDS and writes
 * how many calls it made and the CPU time it used to $BENCH_LOAD_OUT. Each
 * recorder records raw_syscalls:sys_enter system-wide around that command,
 * with the same ring-buffer size per CPU:
 *
 *   tracekit record --capture splice   (the default)
 *   tracekit record --capture mmap     (trace_pipe_raw mmap, kernel >= 6.10)
 *   perf record -a -e raw_syscalls:sys_enter
 *
 * Per recorder it prints: getppid calls made, getppid events found in the
 * file (tracekit report / perf script, lines "NR <getppid> "), the
 * difference (events lost), and the recorder's CPU time (wait4() rusage of
 * the recorder minus the load's own, which it reports). Needs root and
 * tracefs; otherwise prints "SKIP: reason" and exits 77. --quick runs a
 * short load with tracekit only, for make check.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double tv_sec(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static double mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int run_load(double seconds, int cpu)
{
	const char *out = getenv("BENCH_LOAD_OUT");
	cpu_set_t set;
	uint64_t n = 0;
	double end = mono() + seconds;
	struct rusage ru;
	FILE *f;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (mono() < end) {
		for (int i = 0; i < 1000; i++)
			syscall(SYS_getppid);
		n += 1000;
	}
	getrusage(RUSAGE_SELF, &ru);
	f = out ? fopen(out, "w") : NULL;
	if (!f)
		return 1;
	fprintf(f, "%" PRIu64 " %.6f\n", n, tv_sec(ru.ru_utime) + tv_sec(ru.ru_stime));
	return fclose(f) ? 1 : 0;
}

/* Run @argv, return its exit status; @cpu receives its CPU time (children included). */
static int spawn(char **argv, double *cpu, bool quiet)
{
	struct rusage ru;
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (quiet) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	*cpu = tv_sec(ru.ru_utime) + tv_sec(ru.ru_stime);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Lines of @cmd's output containing @needle. */
static int64_t count_lines(const char *cmd, const char *needle)
{
	FILE *p = popen(cmd, "r");
	char line[4096];
	int64_t n = 0;

	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p))
		n += strstr(line, needle) != NULL;
	return pclose(p) == 0 ? n : -1;
}

struct result {
	const char *name;
	bool ran;
	uint64_t made;
	int64_t found;
	double cpu;
};

static void print_result(const struct result *r, double perf_cpu)
{
	if (!r->ran) {
		printf("%-26s %12s\n", r->name, "(not run)");
		return;
	}
	printf("%-26s %12" PRIu64 " %12" PRId64 " %10" PRId64 " %7.3f%% %9.3f s", r->name, r->made,
	       r->found, (int64_t)r->made - r->found,
	       r->made ? 100.0 * (double)((int64_t)r->made - r->found) / (double)r->made : 0.0,
	       r->cpu);
	if (perf_cpu > 0)
		printf("  %5.2fx perf", r->cpu / perf_cpu);
	printf("\n");
}

int main(int argc, char **argv)
{
	const char *tracekit = getenv("TRACEKIT");
	char self[4096], dir[] = "/tmp/bench-record.XXXXXX", load_out[4200], file[4200];
	char secs[32], cpus[16], bufkb[32], perf_pages[32], cmd[8800], needle[32];
	double seconds = 3, cpu;
	bool quick = false;
	uint32_t buffer_kb = 4096;
	struct result res[3] = {
		{.name = "tracekit record (splice)"},
		{.name = "tracekit record (mmap)"},
		{.name = "perf record"},
	};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	ssize_t n;
	int fails = 0;

	if (argc == 4 && !strcmp(argv[1], "--load"))
		return run_load(atof(argv[2]), atoi(argv[3]));
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
			seconds = 0.1;
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			seconds = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--tracekit") && i + 1 < argc) {
			tracekit = argv[++i];
		} else if (!strcmp(argv[i], "--buffer-kb") && i + 1 < argc) {
			buffer_kb = (uint32_t)atoi(argv[++i]);
		} else {
			fprintf(stderr,
				"usage: bench-record [--quick] [--seconds S] [--buffer-kb KB] "
				"[--tracekit PATH]\n");
			return 2;
		}
	}
	if (geteuid() != 0) {
		printf("SKIP: not root: recording needs root\n");
		return 77;
	}
	if (access("/sys/kernel/tracing/instances", F_OK) != 0) {
		printf("SKIP: no tracefs at /sys/kernel/tracing\n");
		return 77;
	}
	if (!tracekit || access(tracekit, X_OK) != 0) {
		printf("SKIP: no tracekit binary (--tracekit PATH or $TRACEKIT)\n");
		return 77;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0 || !mkdtemp(dir))
		return 1;
	self[n] = 0;
	snprintf(load_out, sizeof(load_out), "%s/load", dir);
	setenv("BENCH_LOAD_OUT", load_out, 1);
	snprintf(secs, sizeof(secs), "%g", seconds);
	snprintf(cpus, sizeof(cpus), "%ld", ncpu > 1 ? ncpu - 1 : 0);
	snprintf(bufkb, sizeof(bufkb), "%u", buffer_kb);
	snprintf(perf_pages, sizeof(perf_pages), "%u", buffer_kb / 4);
	snprintf(needle, sizeof(needle), "NR %d ", (int)SYS_getppid);

	for (int m = 0; m < 3; m++) {
		struct result *r = &res[m];
		double load_cpu = 0;
		FILE *f;
		int st;

		if (m == 2 && (quick || access("/usr/bin/perf", X_OK) != 0))
			continue;
		if (m < 2) {
			char *av[] = {(char *)tracekit,
				      "record",
				      "-q",
				      "-b",
				      bufkb,
				      "--capture",
				      m == 0 ? "splice" : "mmap",
				      "-e",
				      "raw_syscalls:sys_enter",
				      "-o",
				      file,
				      "--",
				      self,
				      "--load",
				      secs,
				      cpus,
				      NULL};

			snprintf(file, sizeof(file), "%s/trace-%d.dat", dir, m);
			st = spawn(av, &cpu, false);
			snprintf(cmd, sizeof(cmd), "'%s' report '%s'", tracekit, file);
		} else {
			char *av[] = {"perf",	"record",   "-q", "-a",
				      "-m",	perf_pages, "-e", "raw_syscalls:sys_enter",
				      "-o",	file,	    "--", self,
				      "--load", secs,	    cpus, NULL};

			snprintf(file, sizeof(file), "%s/perf.data", dir);
			st = spawn(av, &cpu, true);
			snprintf(cmd, sizeof(cmd), "perf script -F trace -i '%s' 2>/dev/null",
				 file);
		}
		f = fopen(load_out, "r");
		if (st != 0 || !f || fscanf(f, "%" SCNu64 " %lf", &r->made, &load_cpu) != 2) {
			fprintf(stderr, "bench-record: %s failed (exit %d)\n", r->name, st);
			if (f)
				fclose(f);
			fails++;
			continue;
		}
		fclose(f);
		unlink(load_out);
		r->cpu = cpu - load_cpu;
		r->found = count_lines(cmd, needle);
		r->ran = r->found >= 0;
		if (!r->ran) {
			fprintf(stderr, "bench-record: reading %s failed\n", file);
			fails++;
		}
		unlink(file);
	}
	rmdir(dir);

	printf("bench-record: %s s of getppid() on CPU %s, raw_syscalls:sys_enter, %s KiB per "
	       "CPU\n",
	       secs, cpus, bufkb);
	printf("%-26s %12s %12s %10s %8s %11s\n", "recorder", "calls made", "events found", "lost",
	       "lost", "rec. CPU");
	for (int m = 0; m < 3; m++)
		print_result(&res[m], res[2].ran ? res[2].cpu : 0);
	/* The smoke test: a short run must record something and lose nothing silently. */
	if (quick && (!res[0].ran || res[0].found <= 0))
		fails++;
	return fails ? 1 : 0;
}
