/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * tables-stack: perf.data call stacks as Perfetto's stack_profile
 * mapping, frame and callsite tables (tables-stack.c holds the notes).
 */
#ifndef TRACEKIT_EXPORT_TABLES_STACK_H
#define TRACEKIT_EXPORT_TABLES_STACK_H

#include <stdbool.h>
#include <stdint.h>

/* Where the rows go, each once, when first met; a non-zero return stops. */
struct tk_stack_sink {
	int (*mapping)(void *ctx, int64_t id, const char *build_id, uint64_t exact_offset,
		       uint64_t start, uint64_t end, const char *name);
	int (*frame)(void *ctx, int64_t id, int64_t mapping, uint64_t rel_pc);
	int (*callsite)(void *ctx, int64_t id, uint32_t depth, int64_t parent_id, int64_t frame_id);
	void *ctx;
};

struct tk_stack;

struct tk_stack *tk_stack_new(const struct tk_stack_sink *sink);
void tk_stack_free(struct tk_stack *s);
/* A TK_FEED_BUILD_ID / TK_FEED_MMAP record's blob (feed.h). */
int tk_stack_build_id(struct tk_stack *s, const void *blob, uint32_t size);
int tk_stack_mmap(struct tk_stack *s, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		  const void *blob, uint32_t size);
/*
 * The callsite of a sample (@chain: its callchain, @size bytes): its id,
 * -1 when it has neither callchain nor ip, or a negative errno below -1.
 */
int64_t tk_stack_sample(struct tk_stack *s, int32_t pid, uint64_t ip, const void *chain,
			uint32_t size);

#endif
