// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perf-host: the running machine's topology in the byte layouts of perf's
 * host features, for perf.data files that record this machine.
 *
 * Strings are perf's header strings: u32 len, then the text NUL-padded to
 * len, a multiple of 64. Layouts, as perf 6.1 writes them (and prints them
 * with perf report --header-only -I):
 *
 *   CPU_TOPOLOGY  u32 n, n strings: package_cpus_list of each online CPU,
 *                 each distinct list once ("sibling sockets");
 *                 u32 n, n strings: core_cpus_list likewise ("sibling
 *                 threads"); per configured CPU u32 core_id, u32
 *                 physical_package_id; then, where sysfs has dies,
 *                 u32 n, n strings: die_cpus_list, and per CPU u32 die_id.
 *   NUMA_TOPOLOGY u32 nr; per online node: u32 node, u64 MemTotal kB,
 *                 u64 MemFree kB (its meminfo), string cpulist.
 *   PMU_MAPPINGS  u32 nr; per PMU of /sys/bus/event_source/devices, in
 *                 directory order as perf scans it: u32 type, string name.
 *   CACHE         u32 version 1, u32 nr; per cache: u32 level, line size,
 *                 sets, ways; strings type, size, shared_cpu_list. Every
 *                 CPU's cache/indexN levels, each distinct one once, in CPU
 *                 order, then stably by level (perf's sort keeps the CPU
 *                 order within a level).
 *   MEM_TOPOLOGY  u64 version 1, u64 block size (memory/block_size_bytes,
 *                 hex), u64 nr; per node, by number: u64 node, u64 bits
 *                 (highest memoryN block + 1), bitmap {u64 bits, u64
 *                 words} of the node's blocks.
 *
 * Host facts are gathered here, in capture, and handed to the writer as
 * payloads: the writer itself never looks at the machine, so converting a
 * file from elsewhere cannot mix ours in. An offline CPU's ids are
 * written as -1, which is what perf writes for a CPU it cannot read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/perfrecord.h>

#include "internal/bytebuf.h"
#include "internal/error.h"
#include "perfdata-internal.h"
#include "perf-host.h"

#define SYS_CPU	 "/sys/devices/system/cpu"
#define SYS_NODE "/sys/devices/system/node"

/* The first line of a small sysfs file, without its newline; -1 when absent. */
static int read_line(const char *path, char *out, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, out, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	return 0;
}

static uint32_t read_id(int cpu, const char *name)
{
	char path[128], v[32];

	snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/%s", cpu, name);
	if (read_line(path, v, sizeof(v)) < 0)
		return UINT32_MAX;
	return (uint32_t)strtol(v, NULL, 10);
}

/* The distinct @name lists of the online CPUs, in CPU order; false when sysfs lacks them. */
static bool sibling_lists(struct tk_bytebuf *b, const bool *online, int nr, const char *name,
			  const char *alt)
{
	char(*seen)[256] = calloc((size_t)nr, sizeof(*seen));
	uint32_t n = 0;
	bool ok = true;

	if (!seen) {
		b->err = -ENOMEM;
		return false;
	}
	for (int c = 0; c < nr && ok; c++) {
		char path[128], v[256];
		bool dup = false;

		if (!online[c])
			continue;
		snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/%s", c, name);
		if (read_line(path, v, sizeof(v)) < 0) {
			snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/%s", c, alt);
			if (!alt || read_line(path, v, sizeof(v)) < 0) {
				ok = false;
				break;
			}
		}
		for (uint32_t i = 0; i < n && !dup; i++)
			dup = !strcmp(seen[i], v);
		if (!dup)
			memcpy(seen[n++], v, sizeof(v));
	}
	if (ok) {
		tk_bytebuf_put_u32(b, n);
		for (uint32_t i = 0; i < n; i++)
			tk_perf_put_string(b, seen[i]);
	}
	free(seen);
	return ok;
}

static int set(struct tk_perfdata_writer *w, uint32_t id, struct tk_bytebuf *b)
{
	int r = b->err ? tk_fail(ENOMEM, "out of memory")
		       : tk_perfdata_writer_set_feature(w, id, b->data, b->len);

	tk_bytebuf_release(b);
	return r;
}

static int cpu_topology(struct tk_perfdata_writer *w)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int nr = conf > 0 && conf < 65536 ? (int)conf : 0;
	struct tk_bytebuf b = {.big = TK_HOST_BIG_ENDIAN};
	bool *online;
	bool dies;

	if (!nr)
		return 0;
	online = calloc((size_t)nr, sizeof(*online));
	if (!online)
		return tk_fail(ENOMEM, "out of memory");
	for (int c = 0; c < nr; c++) {
		char path[128], v[8];

		snprintf(path, sizeof(path), SYS_CPU "/cpu%d/online", c);
		/* cpu0 often has no online file: it cannot go offline. */
		online[c] = read_line(path, v, sizeof(v)) < 0 || v[0] == '1';
	}
	if (!sibling_lists(&b, online, nr, "package_cpus_list", "core_siblings_list") ||
	    !sibling_lists(&b, online, nr, "core_cpus_list", "thread_siblings_list")) {
		free(online);
		tk_bytebuf_release(&b);
		return b.err ? tk_fail(ENOMEM, "out of memory") : 0;
	}
	for (int c = 0; c < nr; c++) {
		tk_bytebuf_put_u32(&b, online[c] ? read_id(c, "core_id") : UINT32_MAX);
		tk_bytebuf_put_u32(&b, online[c] ? read_id(c, "physical_package_id") : UINT32_MAX);
	}
	/* The die part is optional: perf reads a section that ends here as one without dies. */
	{
		size_t before = b.len;

		dies = sibling_lists(&b, online, nr, "die_cpus_list", NULL);
		if (!dies)
			b.len = before;
	}
	for (int c = 0; dies && c < nr; c++)
		tk_bytebuf_put_u32(&b, online[c] ? read_id(c, "die_id") : UINT32_MAX);
	free(online);
	return set(w, TK_PERF_FEAT_CPU_TOPOLOGY, &b);
}

static uint64_t meminfo_kb(const char *text, const char *field)
{
	const char *p = strstr(text, field);

	return p ? strtoull(p + strlen(field), NULL, 10) : 0;
}

static int numa_topology(struct tk_perfdata_writer *w)
{
	char online[256], path[128], cpus[256];
	char *text = malloc(4096);
	struct tk_bytebuf b = {.big = TK_HOST_BIG_ENDIAN};
	uint32_t nr = 0;
	int32_t *nodes = NULL;
	size_t nnodes = 0;

	if (!text)
		return tk_fail(ENOMEM, "out of memory");
	if (read_line(SYS_NODE "/online", online, sizeof(online)) < 0) {
		free(text);
		return 0;
	}
	tk_bytebuf_put_u32(&b, 0); /* the count, set below */
	/* The online nodes, a list such as "0-1,3": perf's -C syntax, one parser. */
	if (tk_perfrecord_parse_list(online, &nodes, &nnodes) < 0)
		nnodes = 0;
	for (size_t i = 0; i < nnodes; i++) {
		long n = nodes[i];
		int fd;
		ssize_t len;

		snprintf(path, sizeof(path), SYS_NODE "/node%ld/meminfo", n);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		len = read(fd, text, 4095);
		close(fd);
		text[len > 0 ? len : 0] = 0;
		snprintf(path, sizeof(path), SYS_NODE "/node%ld/cpulist", n);
		if (read_line(path, cpus, sizeof(cpus)) < 0)
			cpus[0] = 0;
		tk_bytebuf_put_u32(&b, (uint32_t)n);
		tk_bytebuf_put_u64(&b, meminfo_kb(text, "MemTotal:"));
		tk_bytebuf_put_u64(&b, meminfo_kb(text, "MemFree:"));
		tk_perf_put_string(&b, cpus);
		nr++;
	}
	free(nodes);
	free(text);
	if (!nr) {
		tk_bytebuf_release(&b);
		return 0;
	}
	tk_bytebuf_patch_u32(&b, 0, nr);
	return set(w, TK_PERF_FEAT_NUMA_TOPOLOGY, &b);
}

static int pmu_mappings(struct tk_perfdata_writer *w)
{
	DIR *d = opendir("/sys/bus/event_source/devices");
	struct tk_bytebuf b = {.big = TK_HOST_BIG_ENDIAN};
	struct dirent *e;
	uint32_t nr = 0;

	if (!d)
		return 0;
	tk_bytebuf_put_u32(&b, 0);
	while ((e = readdir(d))) {
		char path[512], v[32];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", e->d_name);
		if (read_line(path, v, sizeof(v)) < 0)
			continue;
		tk_bytebuf_put_u32(&b, (uint32_t)strtoul(v, NULL, 10));
		tk_perf_put_string(&b, e->d_name);
		nr++;
	}
	closedir(d);
	if (!nr) {
		tk_bytebuf_release(&b);
		return 0;
	}
	tk_bytebuf_patch_u32(&b, 0, nr);
	return set(w, TK_PERF_FEAT_PMU_MAPPINGS, &b);
}

struct cache {
	uint32_t level, line, sets, ways;
	char type[32], size[32], map[256];
};

static bool read_cache(int cpu, int idx, struct cache *c)
{
	char path[160], v[32];
	uint32_t *nums[] = {&c->level, &c->line, &c->sets, &c->ways};
	static const char *const num_names[] = {"level", "coherency_line_size", "number_of_sets",
						"ways_of_associativity"};

	for (size_t i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), SYS_CPU "/cpu%d/cache/index%d/%s", cpu, idx,
			 num_names[i]);
		if (read_line(path, v, sizeof(v)) < 0)
			return false;
		*nums[i] = (uint32_t)strtoul(v, NULL, 10);
	}
	snprintf(path, sizeof(path), SYS_CPU "/cpu%d/cache/index%d/type", cpu, idx);
	if (read_line(path, c->type, sizeof(c->type)) < 0)
		return false;
	snprintf(path, sizeof(path), SYS_CPU "/cpu%d/cache/index%d/size", cpu, idx);
	if (read_line(path, c->size, sizeof(c->size)) < 0)
		return false;
	snprintf(path, sizeof(path), SYS_CPU "/cpu%d/cache/index%d/shared_cpu_list", cpu, idx);
	return read_line(path, c->map, sizeof(c->map)) == 0;
}

static int caches(struct tk_perfdata_writer *w)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int nr = conf > 0 && conf < 65536 ? (int)conf : 0;
	struct cache *all = calloc((size_t)nr * 4 + 1, sizeof(*all)), c;
	struct tk_bytebuf b = {.big = TK_HOST_BIG_ENDIAN};
	uint32_t n = 0;

	if (!all)
		return tk_fail(ENOMEM, "out of memory");
	/* perf reads four levels (index0..3) per CPU. */
	for (int cpu = 0; cpu < nr; cpu++) {
		for (int idx = 0; idx < 4 && read_cache(cpu, idx, &c); idx++) {
			bool dup = false;

			for (uint32_t i = 0; i < n && !dup; i++)
				dup = !memcmp(&all[i], &c, sizeof(c));
			if (!dup) {
				/* Keep equal levels in the order met: a stable insertion. */
				uint32_t at = n;

				while (at > 0 && all[at - 1].level > c.level) {
					all[at] = all[at - 1];
					at--;
				}
				all[at] = c;
				n++;
			}
			memset(&c, 0, sizeof(c));
		}
	}
	if (!n) {
		free(all);
		return 0;
	}
	tk_bytebuf_put_u32(&b, 1);
	tk_bytebuf_put_u32(&b, n);
	for (uint32_t i = 0; i < n; i++) {
		tk_bytebuf_put_u32(&b, all[i].level);
		tk_bytebuf_put_u32(&b, all[i].line);
		tk_bytebuf_put_u32(&b, all[i].sets);
		tk_bytebuf_put_u32(&b, all[i].ways);
		tk_perf_put_string(&b, all[i].type);
		tk_perf_put_string(&b, all[i].size);
		tk_perf_put_string(&b, all[i].map);
	}
	free(all);
	return set(w, TK_PERF_FEAT_CACHE, &b);
}

/* A node's memory blocks: the memoryN entries of its sysfs directory. */
static int node_blocks(struct tk_bytebuf *b, long node)
{
	char path[128];
	struct dirent *e;
	uint64_t bits = 0, *words;
	unsigned int phys;
	DIR *d;

	snprintf(path, sizeof(path), SYS_NODE "/node%ld", node);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (sscanf(e->d_name, "memory%u", &phys) == 1 && phys + 1ULL > bits)
			bits = phys + 1ULL;
	if (!bits) {
		closedir(d);
		return 0;
	}
	words = calloc((size_t)((bits + 63) / 64), 8);
	if (!words) {
		closedir(d);
		b->err = -ENOMEM;
		return -1;
	}
	rewinddir(d);
	while ((e = readdir(d)))
		if (sscanf(e->d_name, "memory%u", &phys) == 1)
			words[phys / 64] |= 1ULL << (phys % 64);
	closedir(d);
	tk_bytebuf_put_u64(b, (uint64_t)node);
	tk_bytebuf_put_u64(b, bits);
	tk_bytebuf_put_u64(b, bits);
	tk_bytebuf_put(b, words, (size_t)((bits + 63) / 64) * 8);
	free(words);
	return 1;
}

static int mem_topology(struct tk_perfdata_writer *w)
{
	char online[256], v[32];
	struct tk_bytebuf b = {.big = TK_HOST_BIG_ENDIAN};
	uint64_t nr = 0, block;
	int32_t *nodes = NULL;
	size_t nnodes = 0;

	if (read_line("/sys/devices/system/memory/block_size_bytes", v, sizeof(v)) < 0 ||
	    read_line(SYS_NODE "/online", online, sizeof(online)) < 0)
		return 0;
	block = strtoull(v, NULL, 16);
	tk_bytebuf_put_u64(&b, 1);
	tk_bytebuf_put_u64(&b, block);
	tk_bytebuf_put_u64(&b, 0); /* the count, set below */
	if (tk_perfrecord_parse_list(online, &nodes, &nnodes) < 0)
		nnodes = 0;
	for (size_t i = 0; i < nnodes; i++)
		if (node_blocks(&b, nodes[i]) > 0)
			nr++;
	free(nodes);
	if (!nr && !b.err) {
		tk_bytebuf_release(&b);
		return 0;
	}
	tk_bytebuf_patch_u64(&b, 16, nr);
	return set(w, TK_PERF_FEAT_MEM_TOPOLOGY, &b);
}

int tk_perfhost_set_topology(struct tk_perfdata_writer *w)
{
	int r = cpu_topology(w);

	if (r == 0)
		r = numa_topology(w);
	if (r == 0)
		r = pmu_mappings(w);
	if (r == 0)
		r = caches(w);
	if (r == 0)
		r = mem_topology(w);
	return r;
}
