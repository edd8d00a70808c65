// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * appevent-load: the application of tests/integration/test-appevents.sh.
 *
 *   appevent-load THREADS PER_THREAD [PROGRESS_FILE]
 *
 * Each thread emits PER_THREAD events (20 us apart), cycling through three types (ints,
 * a string, an array), with getppid() before and after each; the main
 * thread meanwhile sends the workers SIGUSR1, whose handler does the same
 * (getppid, one event, getppid) from inside whatever the thread was doing,
 * emits included. Payloads are functions of (thread, seq) so that the test
 * can check every one. Prints "emitted K lost L" at the end.
 *
 * With PROGRESS_FILE, PER_THREAD 0 means forever, and each thread stores
 * in that (mmap'ed) file how many events it has emitted, so that a test
 * that SIGKILLs the program knows what it had committed.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <tracekit/appevent.h>

TK_APPEVENT_DEFINE(apptest, ints,
		   TK_APPEVENT_PRINT("t=%u seq=%u a=%llu b=%lld c=%u", REC->t, REC->seq, REC->a,
				     REC->b, REC->c),
		   TK_AE_FIELD(uint32_t, t), TK_AE_FIELD(uint32_t, seq), TK_AE_FIELD(uint64_t, a),
		   TK_AE_FIELD(int64_t, b), TK_AE_FIELD(uint8_t, c));
TK_APPEVENT_DEFINE(apptest, str,
		   TK_APPEVENT_PRINT("t=%u seq=%u s=%s", REC->t, REC->seq, __get_str(s)),
		   TK_AE_FIELD(uint32_t, t), TK_AE_FIELD(uint32_t, seq), TK_AE_STRING(s));
TK_APPEVENT_DEFINE(apptest, arr,
		   TK_APPEVENT_PRINT("t=%u seq=%u v=%s", REC->t, REC->seq,
				     __print_array(REC->v, 4, 4)),
		   TK_AE_FIELD(uint32_t, t), TK_AE_FIELD(uint32_t, seq),
		   TK_AE_ARRAY(uint32_t, v, 4));

#define MAX_THREADS 16
/* Handler events are thread 100 + the worker's number, numbered per worker. */
#define HANDLER_T 100

static uint64_t *progress;
static uint32_t handler_seq[MAX_THREADS];
static __thread int my_index = -1;

static void emit(uint32_t t, uint32_t seq)
{
	uint32_t v[4] = {seq, seq * 2, seq + t, 0xdead0000u + t};
	char s[48];

	switch (seq % 3) {
	case 0:
		TK_APPEVENT(apptest, ints, t, seq, (uint64_t)seq * 3, -(int64_t)seq, (uint8_t)seq);
		break;
	case 1:
		snprintf(s, sizeof(s), "msg-%u-%u", t, seq);
		TK_APPEVENT(apptest, str, t, seq, s);
		break;
	default:
		TK_APPEVENT(apptest, arr, t, seq, v);
		break;
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	if (my_index < 0)
		return;
	getppid();
	emit(HANDLER_T + (uint32_t)my_index, handler_seq[my_index]++);
	getppid();
}

struct worker {
	pthread_t th;
	uint32_t t, count;
	volatile int done;
};

static void *run(void *arg)
{
	struct worker *w = arg;

	my_index = (int)w->t;
	for (uint32_t i = 0; !w->count || i < w->count; i++) {
		/* A pause, so that signals find the thread anywhere, and the recorder keeps up. */
		struct timespec ts = {0, 20 * 1000};

		getppid();
		emit(w->t, i);
		if (progress)
			__atomic_store_n(&progress[w->t], i + 1, __ATOMIC_RELEASE);
		getppid();
		nanosleep(&ts, NULL);
	}
	w->done = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	struct worker w[MAX_THREADS] = {0};
	uint32_t threads, per;
	uint64_t total = 0;
	int left;

	if (argc < 3 || argc > 4)
		return 2;
	threads = (uint32_t)strtoul(argv[1], NULL, 10);
	per = (uint32_t)strtoul(argv[2], NULL, 10);
	if (threads < 1 || threads > MAX_THREADS)
		return 2;
	if (argc == 4) {
		int fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || ftruncate(fd, 4096) < 0)
			return 1;
		progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (progress == MAP_FAILED)
			return 1;
	}
	sigaction(SIGUSR1, &sa, NULL);
	for (uint32_t t = 0; t < threads; t++) {
		w[t].t = t;
		w[t].count = per;
		if (pthread_create(&w[t].th, NULL, run, &w[t]))
			return 1;
	}
	/* Signals while the workers run; not after, so that every handler finds its thread. */
	do {
		struct timespec ts = {0, 200 * 1000};

		left = 0;
		for (uint32_t t = 0; t < threads; t++) {
			if (!w[t].done) {
				left++;
				pthread_kill(w[t].th, SIGUSR1);
			}
		}
		nanosleep(&ts, NULL);
	} while (left);
	for (uint32_t t = 0; t < threads; t++) {
		pthread_join(w[t].th, NULL);
		total += per + handler_seq[t];
	}
	printf("emitted %llu lost %llu\n", (unsigned long long)total,
	       (unsigned long long)tk_appevent_lost());
	return 0;
}
