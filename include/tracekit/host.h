/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * host: the facts about the running machine that a recording stores
 * (perf.data's HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, CPUID,
 * TOTAL_MEM and CMDLINE features), gathered in one place.
 *
 * Writers take these as data (tk_perfdata_writer_set_host_facts()), so a
 * writer can be tested with made-up facts and a converted file carries the
 * facts of the machine that recorded it, never ours.
 */
#ifndef TRACEKIT_HOST_H
#define TRACEKIT_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tk_host - facts about a machine and the recording command
 * @sysname, @hostname, @osrelease, @arch: uname's sysname, nodename,
 *                  release and machine
 * @version:        the recording tool ("tracekit 0.1.0")
 * @nr_cpus_avail:  CPUs configured (possible)
 * @nr_cpus_online: CPUs online
 * @cpudesc:        the CPU model ("model name"), NULL when unknown
 * @cpuid:          "vendor,family,model,stepping", NULL when unknown
 * @has_total_mem:  whether @total_mem_kb is known
 * @total_mem_kb:   MemTotal
 * @exe:            path of the recording executable, NULL when unknown
 * @argc, @argv:    the recording command line; perf stores @exe in place
 *                  of argv[0]
 *
 * Callers may fill one by hand (every pointer borrowed) or have
 * tk_host_new() gather this machine's.
 */
struct tk_host {
	const char *sysname, *hostname, *osrelease, *version, *arch;
	uint32_t nr_cpus_avail, nr_cpus_online;
	const char *cpudesc, *cpuid;
	bool has_total_mem;
	uint64_t total_mem_kb;
	const char *exe;
	int argc;
	const char *const *argv;
};

/**
 * tk_host_new() - gather this machine's facts
 *
 * Reads uname(2), sysconf (CPU counts), /proc/cpuinfo, /proc/meminfo,
 * /proc/self/exe and /proc/self/cmdline (this process's command line,
 * every word as exec'ed: getopt's reordering of argv does not touch it).
 * Facts that cannot be read (no /proc/cpuinfo in a container) stay unset.
 * Context: blocking file I/O.
 * Return: facts for tk_host_free(), or NULL with errno set (ENOMEM, or
 * uname's error) and tk_errmsg() saying why.
 */
TK_API struct tk_host *tk_host_new(void);

/** tk_host_free() - free facts from tk_host_new(); NULL is accepted. */
TK_API void tk_host_free(struct tk_host *host);

/**
 * tk_host_set_cmdline() - replace the command line of facts from
 * tk_host_new() with a copy of @argc words of @argv
 * Return: 0, -ENOMEM (the old command line stays).
 */
TK_API int tk_host_set_cmdline(struct tk_host *host, int argc, const char *const *argv);

#ifdef __cplusplus
}
#endif
#endif
