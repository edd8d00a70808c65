/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * What the application side (appevent.c) and the recorder side
 * (appevent-session.c) share: the layout of a shared buffer and the
 * messages on the session socket. Both sides are the same library build,
 * but an application may link an older or newer libtracekit than the
 * recorder, so every message and buffer starts with a magic and a version.
 */
#ifndef TRACEKIT_APPEVENT_INTERNAL_H
#define TRACEKIT_APPEVENT_INTERNAL_H

#include <stdint.h>

#define AE_MAGIC      0x45414b54u /* "TKAE" */
#define AE_VERSION    2		  /* 2: head and tail on separate cache lines */
#define AE_HDR_SIZE   4096u	  /* the buffer's control page */
#define AE_PAGE_SIZE  4096u	  /* event pages: the kernel's size on x86-64 */
#define AE_PAGE_DATA  16u	  /* u64 timestamp | u64 commit */
#define AE_MAX_PAGES  ((AE_HDR_SIZE - 128u) / 4u)
#define AE_MIN_PAGES  2u
#define AE_MAX_RECORD (AE_PAGE_SIZE - AE_PAGE_DATA - 16u)

/*
 * Event pages carry the kernel's u64 commit word: data bytes in bits 0-26.
 * The writer also puts in bits 32-63 the number of events it dropped
 * (drop-newest) between the previous page and this one; the recorder
 * turns that, and the overwritten events, into the kernel's missed-events
 * flags (bits 30-31) and clears the rest.
 *
 * The control page of a shared buffer (a memfd: this page, then nr_pages
 * pages in the kernel's page format). Page s (a sequence number that only
 * grows) lives in slot s % nr_pages. The words each side writes while
 * events flow sit on cache lines of their own: head (the reader's, beside
 * the words written once) on the first line, tail and the counters (the
 * writer's) on the second, so that a copy by the recorder does not pull
 * the writer's line away, nor the other way round.
 */
struct ae_shm {
	uint32_t magic, version;
	uint32_t page_size, nr_pages;
	int32_t pid, tid;
	uint32_t level, mode;
	uint64_t head; /* oldest unread page: reader cmpxchg; overwrite writer too */
	uint8_t pad0[64 - 40];
	uint64_t tail;	  /* writer: the page it writes; release store */
	uint64_t lost;	  /* writer: events dropped or overwritten */
	uint64_t closed;  /* the thread exited */
	uint64_t overrun; /* writer: events of pages it overwrote (part of lost) */
	uint8_t pad1[128 - 96];
	uint32_t page_events[]; /* writer: events in each slot's page */
};

enum ae_msg_kind {
	AE_MSG_HELLO = 1,   /* app -> recorder */
	AE_MSG_WELCOME = 2, /* recorder -> app */
	AE_MSG_FORMAT = 3,  /* app -> recorder: one event format */
	AE_MSG_BUFFER = 4,  /* app -> recorder: a buffer, its memfd attached */
};

struct ae_msg_head {
	uint32_t magic, kind;
};

struct ae_msg_hello {
	struct ae_msg_head h;
	int32_t pid;
	uint32_t version;
	char comm[16];
};

struct ae_msg_welcome {
	struct ae_msg_head h;
	uint32_t id_base, id_count;
	uint32_t nr_pages, mode;
	uint32_t clock, pad; /* enum tk_appevent_clock */
};

/* Followed by the format text ("name: ...\nID: ...\nformat:\n..."), NUL-terminated. */
struct ae_msg_format {
	struct ae_msg_head h;
	uint32_t id;
	char system[64];
};

struct ae_msg_buffer {
	struct ae_msg_head h;
	int32_t tid;
	uint32_t level;
	uint64_t size; /* bytes of the memfd */
};

#define AE_MSG_MAX 16384u

#endif
