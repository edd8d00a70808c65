/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * samples: the samples of a perf.data in perf's delivery order, each with
 * its thread's name and its ip and callchain resolved to interned frames
 * (dso, symbol). Private to the library; profile.c and flamegraph.c ride
 * on it. samples.c holds the design notes.
 */
#ifndef TRACEKIT_ANALYZE_SAMPLES_H
#define TRACEKIT_ANALYZE_SAMPLES_H

#include <tracekit/common.h>

/* A place in the code, interned: equal frames have one id. */
struct tk_samples_frame {
	const char *dso;   /* perf's short name ("libc.so.6", "[kernel.kallsyms]"); NULL: no map */
	const char *sym;   /* NULL: no symbol covers the address */
	uint64_t addr;	   /* what perf shows without a symbol: the address in the dso's file
			      (user maps), else the ip */
	uint64_t ip;	   /* without a symbol: the ip as recorded (0 with one) */
	char level;	   /* 'k' kernel, '.' user (perf's [k] / [.]) */
	uint64_t start;	   /* the symbol's start (kernel: address; user: in the file), or 0 */
	uint32_t dso_rank; /* order of the dso's first appearance (perf's dso object order) */
};

/* One sample, valid during the callback only. */
struct tk_samples_sample {
	size_t evsel; /* index of its event in the file */
	uint32_t pid, tid;
	int32_t cpu;	       /* -1 when the samples carry no CPU */
	uint64_t time, period; /* aggregated: the sum of the periods, time 0 */
	uint64_t count;	       /* samples it stands for (1 unless aggregated) */
	uint32_t comm;	       /* interned thread name at the time of the sample */
	uint32_t ip;	       /* the frame of the sample's ip */
	uint32_t nchain;
	const uint32_t *chain; /* callchain frames, the sampled function first, markers dropped */
	bool has_chain;	       /* the event records callchains */
	const void *raw;       /* a tracepoint's payload (PERF_SAMPLE_RAW), or NULL */
	uint32_t raw_size;
};

typedef int (*tk_samples_fn)(void *ctx, const struct tk_samples_sample *s);

struct tk_samples_opts {
	const char *symfs, *kallsyms; /* as perf's --symfs and --kallsyms; NULL: none */
	const char *vmlinux;	      /* as perf's --vmlinux (by build id only); NULL: none */
	uint64_t max_stack;	      /* callchain entries kept; 0: kernel.perf_event_max_stack */
	bool no_symbols;	      /* do not resolve (the off-CPU pass needs none of it) */
	bool ip_only;		      /* resolve the sample's ip, not its callchain */
	bool aggregate;		      /* deliver each distinct sample once, at the end */
};

struct tk_samples;

struct tk_samples *tk_samples_new(const struct tk_samples_opts *opts);
void tk_samples_free(struct tk_samples *s);
/*
 * Read @path (a perf.data) and call @fn for every sample, in perf's order;
 * with opts.aggregate, once per distinct sample (event, thread and its
 * name, cpu, maps, ip and callchain) after the last, in first-seen order.
 */
int tk_samples_read(struct tk_samples *s, const char *path, tk_samples_fn fn, void *ctx);
const struct tk_samples_frame *tk_samples_frame(const struct tk_samples *s, uint32_t id);
const char *tk_samples_comm(const struct tk_samples *s, uint32_t id);
/* Interns @name as a thread name (for analyses that name threads themselves). */
int64_t tk_samples_intern_comm(struct tk_samples *s, const char *name, size_t len);

/* The last name of thread @tid (":TID" when it has none), interned. */
int64_t tk_samples_thread_comm(struct tk_samples *s, int32_t tid);

/* What the file says beside its samples; valid after tk_samples_read(). */
size_t tk_samples_evsel_count(const struct tk_samples *s);
const char *tk_samples_evsel_name(const struct tk_samples *s, size_t i);
uint64_t tk_samples_lost(const struct tk_samples *s);

#endif
