// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * tables-stack: perf.data call stacks as Perfetto's stack_profile tables,
 * for tables.c.
 *
 *   stack_profile_mapping   id, build_id, exact_offset, start, end, name
 *                           one row per distinct (name, start, end, file
 *                           offset, build id) of the MMAP / MMAP2 records;
 *                           build_id in hex, from MMAP2 or else the
 *                           file's BUILD_ID feature entry of that name
 *   stack_profile_frame     id, name, mapping, rel_pc
 *                           one row per distinct (mapping, rel_pc), rel_pc
 *                           = ip - start + exact_offset (the offset in the
 *                           mapped file); name is "" (not symbolized)
 *   stack_profile_callsite  id, depth, parent_id, frame_id
 *                           the call tree: root frames at depth 0 with
 *                           parent_id -1; one row per distinct path
 * perf_sample.callsite_id is the callsite of the sample's innermost frame
 * (its callchain without perf's context markers; without a callchain its
 * ip alone), -1 when it has neither.
 *
 * An ip belongs to the last mapping of its process (pid) that covers it,
 * else to a kernel mapping (pid -1), else to one "[unknown]" mapping.
 * Each process keeps its maps in insertion order (a few hundred at most)
 * and is searched from the newest; frames and callsites are interned in
 * open-addressing tables. Memory is per distinct mapping, frame and path,
 * not per sample.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tables-stack.h"
#include "internal/error.h"

/* perf's callchain context markers: PERF_CONTEXT_MAX (-4095) and above. */
#define CONTEXT_MARK ((uint64_t)-4095)

struct map {
	uint64_t start, end, pgoff;
	int64_t id;
};

struct proc_maps {
	int32_t pid;
	bool used;
	struct map *maps;
	size_t n, cap;
};

/* An interned pair (a, b) -> id. */
struct slot {
	uint64_t a, b;
	int64_t id; /* -1 free */
};

struct table2 {
	struct slot *s;
	size_t n, cap;
};

struct buildid {
	char *name;
	char hex[41];
};

struct tk_stack {
	struct tk_stack_sink sink;
	struct proc_maps *procs; /* open addressing on pid */
	size_t nprocs, proccap;
	struct table2 frames, callsites;
	int64_t next_mapping, unknown_mapping;
	struct buildid *bids;
	size_t nbids;
	struct {
		char *name, *hex;
		uint64_t start, end, pgoff;
		int64_t id;
	} * mappings; /* distinct mappings, for dedup (few) */
	size_t nmappings, mapcap;
};

struct tk_stack *tk_stack_new(const struct tk_stack_sink *sink)
{
	struct tk_stack *s = calloc(1, sizeof(*s));

	if (!s) {
		tk_fail(ENOMEM, "out of memory");
		return NULL;
	}
	s->sink = *sink;
	s->unknown_mapping = -1;
	return s;
}

void tk_stack_free(struct tk_stack *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->proccap; i++)
		free(s->procs[i].maps);
	free(s->procs);
	free(s->frames.s);
	free(s->callsites.s);
	for (size_t i = 0; i < s->nbids; i++)
		free(s->bids[i].name);
	free(s->bids);
	for (size_t i = 0; i < s->nmappings; i++) {
		free(s->mappings[i].name);
		free(s->mappings[i].hex);
	}
	free(s->mappings);
	free(s);
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6));

	return h ^ (h >> 29);
}

static int table2_grow(struct table2 *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct slot *s = malloc(cap * sizeof(*s));

	if (!s)
		return tk_fail(ENOMEM, "out of memory");
	for (size_t i = 0; i < cap; i++)
		s[i].id = -1;
	for (size_t i = 0; i < t->cap; i++) {
		size_t h;

		if (t->s[i].id < 0)
			continue;
		h = mix(t->s[i].a, t->s[i].b) & (cap - 1);
		while (s[h].id >= 0)
			h = (h + 1) & (cap - 1);
		s[h] = t->s[i];
	}
	free(t->s);
	t->s = s;
	t->cap = cap;
	return 0;
}

/* The id of (a, b); *@added tells whether it is new (id = the count before). */
static int64_t table2_get(struct table2 *t, uint64_t a, uint64_t b, bool *added)
{
	size_t h;

	if ((t->n + 1) * 2 > t->cap && table2_grow(t))
		return -ENOMEM;
	h = mix(a, b) & (t->cap - 1);
	while (t->s[h].id >= 0) {
		if (t->s[h].a == a && t->s[h].b == b) {
			*added = false;
			return t->s[h].id;
		}
		h = (h + 1) & (t->cap - 1);
	}
	t->s[h].a = a;
	t->s[h].b = b;
	t->s[h].id = (int64_t)t->n++;
	*added = true;
	return t->s[h].id;
}

static struct proc_maps *proc_get(struct tk_stack *s, int32_t pid, bool create)
{
	size_t h;

	if (create && (s->nprocs + 1) * 2 > s->proccap) {
		size_t cap = s->proccap ? s->proccap * 2 : 256;
		struct proc_maps *p = calloc(cap, sizeof(*p));

		if (!p)
			return NULL;
		for (size_t i = 0; i < s->proccap; i++) {
			if (!s->procs[i].used)
				continue;
			h = ((uint32_t)s->procs[i].pid * 2654435761u) & (cap - 1);
			while (p[h].used)
				h = (h + 1) & (cap - 1);
			p[h] = s->procs[i];
		}
		free(s->procs);
		s->procs = p;
		s->proccap = cap;
	}
	if (!s->proccap)
		return NULL;
	h = ((uint32_t)pid * 2654435761u) & (s->proccap - 1);
	while (s->procs[h].used) {
		if (s->procs[h].pid == pid)
			return &s->procs[h];
		h = (h + 1) & (s->proccap - 1);
	}
	if (!create)
		return NULL;
	s->procs[h].used = true;
	s->procs[h].pid = pid;
	s->nprocs++;
	return &s->procs[h];
}

static void to_hex(const uint8_t *id, uint8_t size, char *out)
{
	for (uint8_t i = 0; i < size && i < 20; i++) {
		out[2 * i] = "0123456789abcdef"[id[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[id[i] & 15];
	}
	out[2 * (size < 20 ? size : 20)] = 0;
}

int tk_stack_build_id(struct tk_stack *s, const void *blob, uint32_t size)
{
	const uint8_t *b = blob;
	struct buildid *n;

	if (size < 21)
		return 0;
	n = realloc(s->bids, (s->nbids + 1) * sizeof(*n));
	if (!n)
		return tk_fail(ENOMEM, "out of memory");
	s->bids = n;
	n += s->nbids;
	n->name = strndup((const char *)b + 21, size - 21);
	if (!n->name)
		return tk_fail(ENOMEM, "out of memory");
	to_hex(b + 1, b[0], n->hex);
	s->nbids++;
	return 0;
}

/* The mapping's id, its row emitted when new. */
static int64_t mapping_id(struct tk_stack *s, const char *name, const char *hex, uint64_t start,
			  uint64_t end, uint64_t pgoff)
{
	int ret;

	for (size_t i = s->nmappings; i-- > 0;) {
		if (s->mappings[i].start == start && s->mappings[i].end == end &&
		    s->mappings[i].pgoff == pgoff && !strcmp(s->mappings[i].name, name) &&
		    !strcmp(s->mappings[i].hex, hex))
			return s->mappings[i].id;
	}
	if (s->nmappings == s->mapcap) {
		size_t cap = s->mapcap ? s->mapcap * 2 : 64;
		void *m = realloc(s->mappings, cap * sizeof(*s->mappings));

		if (!m)
			return tk_fail(ENOMEM, "out of memory");
		s->mappings = m;
		s->mapcap = cap;
	}
	s->mappings[s->nmappings].name = strdup(name);
	s->mappings[s->nmappings].hex = strdup(hex);
	if (!s->mappings[s->nmappings].name || !s->mappings[s->nmappings].hex) {
		free(s->mappings[s->nmappings].name);
		free(s->mappings[s->nmappings].hex);
		return tk_fail(ENOMEM, "out of memory");
	}
	s->mappings[s->nmappings].start = start;
	s->mappings[s->nmappings].end = end;
	s->mappings[s->nmappings].pgoff = pgoff;
	s->mappings[s->nmappings].id = s->next_mapping;
	s->nmappings++;
	ret = s->sink.mapping(s->sink.ctx, s->next_mapping, s->mappings[s->nmappings - 1].hex,
			      pgoff, start, end, s->mappings[s->nmappings - 1].name);
	if (ret)
		return ret;
	return s->next_mapping++;
}

int tk_stack_mmap(struct tk_stack *s, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  const void *blob, uint32_t size)
{
	const uint8_t *b = blob;
	char name[4097], hex[41] = "";
	struct proc_maps *p;
	size_t n = size > 21 ? size - 21 : 0;
	int64_t id;

	if (size < 21)
		return 0;
	if (n > 4096)
		n = 4096;
	memcpy(name, b + 21, n);
	name[n] = 0;
	if (b[0]) {
		to_hex(b + 1, b[0], hex);
	} else {
		for (size_t i = s->nbids; i-- > 0;) {
			if (!strcmp(s->bids[i].name, name)) {
				memcpy(hex, s->bids[i].hex, sizeof(hex));
				break;
			}
		}
	}
	id = mapping_id(s, name, hex, start, start + len, pgoff);
	if (id < 0)
		return (int)id;
	p = proc_get(s, pid, true);
	if (!p)
		return tk_fail(ENOMEM, "out of memory");
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct map *m = realloc(p->maps, cap * sizeof(*m));

		if (!m)
			return tk_fail(ENOMEM, "out of memory");
		p->maps = m;
		p->cap = cap;
	}
	p->maps[p->n++] =
		(struct map){.start = start, .end = start + len, .pgoff = pgoff, .id = id};
	return 0;
}

static const struct map *find_map(struct tk_stack *s, int32_t pid, uint64_t ip)
{
	const int32_t pids[2] = {pid, -1};

	for (int k = 0; k < 2; k++) {
		const struct proc_maps *p = proc_get(s, pids[k], false);

		for (size_t i = p ? p->n : 0; i-- > 0;)
			if (ip >= p->maps[i].start && ip < p->maps[i].end)
				return &p->maps[i];
	}
	return NULL;
}

/* The frame of @ip in @pid's maps, its row emitted when new. */
static int64_t frame_id(struct tk_stack *s, int32_t pid, uint64_t ip)
{
	const struct map *m = find_map(s, pid, ip);
	int64_t mapping, id;
	uint64_t rel;
	bool added;
	int ret;

	if (m) {
		mapping = m->id;
		rel = ip - m->start + m->pgoff;
	} else {
		if (s->unknown_mapping < 0) {
			s->unknown_mapping = mapping_id(s, "[unknown]", "", 0, 0, 0);
			if (s->unknown_mapping < 0)
				return s->unknown_mapping;
		}
		mapping = s->unknown_mapping;
		rel = ip;
	}
	id = table2_get(&s->frames, (uint64_t)mapping, rel, &added);
	if (id >= 0 && added) {
		ret = s->sink.frame(s->sink.ctx, id, mapping, rel);
		if (ret)
			return ret;
	}
	return id;
}

int64_t tk_stack_sample(struct tk_stack *s, int32_t pid, uint64_t ip, const void *chain,
			uint32_t size)
{
	uint64_t n = size / 8, one = ip;
	const uint8_t *c = chain;
	int64_t parent = -1;
	uint32_t depth = 0;

	if (!n) {
		if (!ip)
			return -1;
		c = (const uint8_t *)&one;
		n = 1;
	}
	/* perf stores the innermost frame first: the tree is built from the root. */
	for (uint64_t i = n; i-- > 0;) {
		uint64_t pc;
		int64_t frame, id;
		bool added;
		int ret;

		memcpy(&pc, c + i * 8, 8);
		if (pc >= CONTEXT_MARK)
			continue;
		frame = frame_id(s, pid, pc);
		if (frame < 0)
			return frame;
		id = table2_get(&s->callsites, (uint64_t)parent, (uint64_t)frame, &added);
		if (id < 0)
			return id;
		if (added) {
			ret = s->sink.callsite(s->sink.ctx, id, depth, parent, frame);
			if (ret)
				return ret;
		}
		parent = id;
		depth++;
	}
	return parent;
}
