// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * app-events: a program instrumented with tracekit application events.
 *
 *   app-events N [THREADS]
 *
 * Emits N events of system "example" in all, from THREADS threads (default
 * 2), and calls getppid() between them, so that under
 *
 *   tracekit record -e raw_syscalls --user -- ./app-events 1000
 *
 * each event shows up between the getppid system calls around it. Without
 * a recorder the events are off and the program just runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tracekit/appevent.h>

/* An event with integers, an array and a string, as TRACE_EVENT defines one. */
TK_APPEVENT_DEFINE(example, step,
		   TK_APPEVENT_PRINT("thread=%u i=%llu sum=%d name=%s", REC->thread, REC->i,
				     REC->sum, __get_str(name)),
		   TK_AE_FIELD(uint32_t, thread), TK_AE_FIELD(uint64_t, i),
		   TK_AE_FIELD(int32_t, sum), TK_AE_ARRAY(uint8_t, digest, 4), TK_AE_STRING(name));

struct worker {
	pthread_t th;
	uint32_t id;
	uint64_t count;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	char name[32];

	snprintf(name, sizeof(name), "worker-%u", w->id);
	for (uint64_t i = 0; i < w->count; i++) {
		uint8_t digest[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)w->id, 0xaa};

		getppid();
		TK_APPEVENT(example, step, w->id, i, (int32_t)(i * 3) - 7, digest, name);
		getppid();
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100;
	unsigned long threads = argc > 2 ? strtoul(argv[2], NULL, 10) : 2;
	struct worker *w;

	if (threads < 1 || threads > 64 || argc > 3) {
		fprintf(stderr, "usage: app-events N [THREADS 1..64]\n");
		return 2;
	}
	w = calloc(threads, sizeof(*w));
	if (!w)
		return 1;
	for (unsigned long t = 0; t < threads; t++) {
		w[t].id = (uint32_t)t;
		w[t].count = n / threads + (t < n % threads);
		if (pthread_create(&w[t].th, NULL, run, &w[t]) != 0) {
			fprintf(stderr, "app-events: cannot start a thread\n");
			return 1;
		}
	}
	for (unsigned long t = 0; t < threads; t++)
		pthread_join(w[t].th, NULL);
	printf("app-events: %lu events from %lu threads, %llu lost\n", n, threads,
	       (unsigned long long)tk_appevent_lost());
	free(w);
	return 0;
}
