/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * appevent: application events on the kernel's timeline.
 *
 * An application defines event types at compile time, as the kernel's
 * TRACE_EVENT does, and emits them with one macro:
 *
 *   #include <tracekit/appevent.h>
 *
 *   TK_APPEVENT_DEFINE(example, tick,
 *           TK_APPEVENT_PRINT("n=%u value=%llu tag=%s", REC->n, REC->value, __get_str(tag)),
 *           TK_AE_FIELD(uint32_t, n), TK_AE_FIELD(uint64_t, value),
 *           TK_AE_ARRAY(uint8_t, bytes, 8), TK_AE_STRING(tag));
 *
 *   TK_APPEVENT(example, tick, i, v, bytes, "hello");
 *
 * Field kinds: TK_AE_FIELD (an integer type, u8..u64 and signed), TK_AE_ARRAY
 * (a fixed array; its argument is a pointer to that many elements) and
 * TK_AE_STRING (a NUL-terminated string stored as __data_loc char[]; NULL
 * is stored as "(null)"). One to twelve fields. Define each event in one .c
 * file (the definition registers the type from a constructor) and emit it
 * there.
 *
 * Cost: a disabled event is one relaxed load of tk_appevent_on and one
 * predictable branch. An enabled one is a call that reads the recorder's
 * clock (the TSC, or CLOCK_MONOTONIC through the vDSO), writes the record into the calling thread's
 * own buffer and publishes it with one release store: no lock, no allocation, no system call, no
 * atomic read-modify-write. An event is built on the stack and handed over in one call:
 * tk_appevent_write(), or tk_appevent_write_str() with its strings as a list after it. A
 * thread's first event (and a signal handler's first nested one)
 * creates its buffer: memfd_create, mmap and one sendmsg to the recorder, all async-signal-safe
 * system calls.
 *
 * Recording: events are on only when the process runs under
 * "tracekit record --user" (the recorder puts TRACEKIT_SESSION=PATH in the
 * environment, the path of a unix socket it owns) or after
 * tk_appevent_connect(). Each thread's buffer is shared memory handed to
 * the recorder; the recorder copies whole pages out as it copies the
 * kernel's and writes them into the .dat as the buffer instance "user".
 * Without a recorder events stay off and the application runs normally;
 * a recorder that goes away turns events off, never blocks or signals the
 * application. A process that defines event types runs one small watcher
 * thread (TRACEKIT_ATTACH=0 in its environment keeps it off): it notices a
 * recorder that hangs up, and connects to one that attaches by pid
 * ("tracekit record --user-pid PID": TK_APPEVENT_ATTACH_DIR/PID.sock,
 * looked for every 100 ms).
 *
 * Signal handlers and fork: an event emitted from a signal handler that
 * interrupted an event of the same thread goes to a buffer of its own
 * nesting level (up to TK_APPEVENT_MAX_NEST levels), so writes never
 * interleave. A forked child starts with no buffers and connects again on
 * its first event.
 */
#ifndef TRACEKIT_APPEVENT_H
#define TRACEKIT_APPEVENT_H

#include <stddef.h>
#include <string.h>
#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Buffers per thread: the thread itself and nested signal handlers. */
#define TK_APPEVENT_MAX_NEST 4
/* Name of the environment variable that carries the recorder's socket path. */
#define TK_APPEVENT_ENV "TRACEKIT_SESSION"
/* Where a recorder attaching to a running process puts its socket: DIR/PID.sock. */
#define TK_APPEVENT_ATTACH_DIR "/run/tracekit"
/*
 * Event ids of application events: 28672 up to 32767. The kernel numbers
 * its events from ~30 up (~2300 here); KernelShark keeps an id in an
 * int16_t, so ids from 32768 on would show there without a name.
 */
#define TK_APPEVENT_ID_BASE 28672
#define TK_APPEVENT_ID_END  32768
/* Ids the recorder gives each connected process (so 64 processes). */
#define TK_APPEVENT_IDS_PER_PROCESS 64

/** What kind of field a descriptor describes. */
enum tk_appevent_kind {
	TK_APPEVENT_SCALAR = 0,
	TK_APPEVENT_ARRAY = 1,
	TK_APPEVENT_STRING = 2,
};

/** One field of an event type, as the definition macros describe it. */
struct tk_appevent_field {
	const char *type; /* C type text, e.g. "uint32_t" */
	const char *name;
	uint32_t offset; /* in the record, common header included */
	uint32_t size;	 /* whole field: element size x count; 4 for a string */
	uint32_t count;	 /* array elements; 1 otherwise */
	uint8_t is_signed;
	uint8_t kind; /* enum tk_appevent_kind */
};

/** The common header every record starts with (the kernel's common_* fields). */
struct tk_appevent_common {
	uint16_t type;
	uint8_t flags;
	uint8_t preempt_count;
	int32_t pid;
};

/** An event type; made by TK_APPEVENT_DEFINE, registered before main(). */
struct tk_appevent_type {
	const char *system;
	const char *name;
	const char *print_fmt; /* the text after "print fmt: " */
	const struct tk_appevent_field *fields;
	uint32_t nr_fields;
	uint32_t fixed_size;	       /* bytes of the record before its strings */
	uint16_t id;		       /* 0 until registered with an id */
	struct tk_appevent_type *next; /* the library's list */
};

/* Nonzero while a recorder takes events. Read relaxed by TK_APPEVENT. */
TK_API extern uint32_t tk_appevent_on;

/**
 * tk_appevent_register() - make an event type known (called by the
 * constructor TK_APPEVENT_DEFINE makes)
 * @type: static storage; the library keeps the pointer and sets ->id
 *
 * The first call connects to the recorder named by $TRACEKIT_SESSION, if
 * any, and sends it the type's format.
 * Context: any thread; takes a mutex and may block up to 2 s on the
 * recorder's handshake. Not from signal handlers.
 */
TK_API void tk_appevent_register(struct tk_appevent_type *type);

/**
 * tk_appevent_reserve() - room for one record of @type in the calling
 * thread's buffer
 * @len: bytes, common header included (type->fixed_size + strings)
 *
 * Fills the common header (type id, thread id).
 * Context: any thread, async-signal-safe, lock-free. The thread's first
 * call (and the first at each signal nesting level) creates its buffer.
 * Return: the record (4-byte aligned), to be filled and then passed to
 * tk_appevent_commit() in the same context; NULL when events are off, the
 * record is too large, the buffer is full (drop-newest: counted as lost)
 * or the nesting is deeper than TK_APPEVENT_MAX_NEST.
 */
TK_API void *tk_appevent_reserve(const struct tk_appevent_type *type, uint32_t len);

/**
 * tk_appevent_commit() - publish the record tk_appevent_reserve() returned
 * Context: as tk_appevent_reserve().
 */
TK_API void tk_appevent_commit(void *record);

/**
 * tk_appevent_write() - emit one fixed-size record (what TK_APPEVENT does
 * for an event type without strings)
 * @type:   the event type
 * @record: the record as TK_APPEVENT_DEFINE lays it out, fields filled;
 *          its common header is not read (the library writes its own)
 * @len:    bytes of the record up to its last field's end (common header
 *          included; 8..112, larger ones take the general path)
 *
 * One call instead of reserve, fill and commit: the record is stamped,
 * its headers and fields are stored into the calling thread's buffer and
 * published with one release store.
 * Context: any thread, async-signal-safe, lock-free; as tk_appevent_reserve().
 * Dropped (and counted as lost) where tk_appevent_reserve() returns NULL.
 */
TK_API void tk_appevent_write(const struct tk_appevent_type *type, const void *record,
			      uint32_t len);

/** One string of a record for tk_appevent_write_str(), in the record's order. */
struct tk_appevent_str {
	const char *s; /* the bytes to store */
	uint32_t size; /* bytes of @s stored, its NUL included */
};

/**
 * tk_appevent_write_str() - emit one record with strings (what TK_APPEVENT
 * does for an event type with TK_AE_STRING fields)
 * @type:   the event type
 * @record: the fixed part as TK_APPEVENT_DEFINE lays it out, fields filled,
 *          each string's __data_loc word included ((size << 16) | offset,
 *          offsets counted from the record's start); its common header is
 *          not read
 * @len:    bytes of the fixed part up to its last field's end (common
 *          header included, at least 12)
 * @strs:   the strings, stored one after the other from @len rounded up
 *          to 4 (the padding is zeroed), as the __data_loc words say
 * @nr:     entries of @strs
 *
 * One call instead of reserve, fill and commit, with the record laid out
 * byte for byte as that path lays it out.
 * Context: any thread, async-signal-safe, lock-free; as tk_appevent_reserve().
 * Dropped (and counted as lost) where tk_appevent_reserve() returns NULL.
 */
TK_API void tk_appevent_write_str(const struct tk_appevent_type *type, const void *record,
				  uint32_t len, const struct tk_appevent_str *strs, uint32_t nr);

/**
 * tk_appevent_connect() - connect to a recorder's socket now
 * @path: the socket; NULL means $TRACEKIT_SESSION
 *
 * Sends the formats of every registered type; the threads' buffers follow
 * as they are created (a thread that already has buffers gets new ones).
 * Events go on when the recorder answers.
 * Context: any thread but a signal handler; blocks up to 2 s.
 * Return: 0, -ENOENT (no path), or the connection's negative errno.
 */
TK_API int tk_appevent_connect(const char *path);

/**
 * tk_appevent_disconnect() - turn events off and leave the recorder
 * Context: any thread but a signal handler.
 */
TK_API void tk_appevent_disconnect(void);

/**
 * tk_appevent_lost() - events the calling process dropped so far because
 * a buffer was full or nesting was too deep (all threads)
 * Context: any thread.
 */
TK_API uint64_t tk_appevent_lost(void);

/* ------------------------------------------------------ recorder side */

struct tk_appevent_session;

/** What happens when an application's buffer is full. */
enum tk_appevent_mode {
	TK_APPEVENT_DROP_NEWEST = 0, /* the new event is dropped and counted */
	TK_APPEVENT_OVERWRITE = 1,   /* the oldest unread page is overwritten */
};

/** The clock applications stamp their events with; the recording's must be the same. */
enum tk_appevent_clock {
	TK_APPEVENT_CLOCK_AUTO = 0, /* TSC when invariant on x86-64, else MONO */
	TK_APPEVENT_CLOCK_MONO = 1, /* CLOCK_MONOTONIC: trace clock "mono" */
	TK_APPEVENT_CLOCK_TSC = 2,  /* rdtsc: trace clock "x86-tsc" (with TSC2NSEC) */
};

struct tk_appevent_opts {
	size_t sz;	    /* sizeof(struct tk_appevent_opts) */
	const char *dir;    /* socket and spool directory; NULL: $TMPDIR or /tmp */
	uint32_t buffer_kb; /* per thread and level; 0 means 1024 */
	enum tk_appevent_mode mode;
	enum tk_appevent_clock clock;
};

/** Counters of one application buffer (one thread at one nesting level). */
struct tk_appevent_buffer_stats {
	int32_t pid, tid;
	uint32_t level;
	char comm[16];
	uint64_t pages; /* pages copied out */
	uint64_t lost;	/* events the writer dropped or overwrote */
};

/**
 * tk_appevent_session_new() - listen for applications, drain their buffers
 *
 * Creates a unix socket (SOCK_SEQPACKET) in a fresh private directory and
 * a thread that accepts applications, receives their formats and buffers
 * and copies their whole pages into spool files (every 5 ms, 1 ms while
 * pages keep coming), written with O_DIRECT straight from the shared
 * memory where the file system allows it.
 * Context: any thread; blocking.
 * Return: the session for tk_appevent_session_free(), or NULL with errno
 * (EINVAL, ENOMEM, socket errors) and tk_errmsg().
 */
TK_API struct tk_appevent_session *tk_appevent_session_new(const struct tk_appevent_opts *opts);

/**
 * tk_appevent_session_clock() - the trace clock the recording must use so
 * that the applications' stamps and the kernel's share one timeline:
 * "x86-tsc" or "mono"
 */
TK_API const char *tk_appevent_session_clock(const struct tk_appevent_session *s);

/** tk_appevent_session_path() - the socket path, for $TRACEKIT_SESSION. */
TK_API const char *tk_appevent_session_path(const struct tk_appevent_session *s);

/**
 * tk_appevent_session_stop() - stop draining and take what is left
 *
 * Joins the thread and copies every buffer's remaining committed events,
 * the page a writer is still on included (so an application killed
 * mid-run keeps everything it committed).
 * Return: 0 or a negative errno (spool write failure).
 */
TK_API int tk_appevent_session_stop(struct tk_appevent_session *s);

/**
 * tk_appevent_session_write() - add the applications' events to a .dat
 * @path: a complete .dat (v6 or v7) the recorder wrote
 *
 * Rewrites @path (through "@path.tkpart", renamed over it) with the
 * applications' event formats added to the event formats and their pages
 * as the buffer instance "user", one CPU per application buffer, on the
 * top buffer's clock. Does nothing when no application connected.
 * Context: after tk_appevent_session_stop(); blocking I/O.
 * Return: 0, or a negative errno with tk_errmsg() naming the file.
 */
TK_API int tk_appevent_session_write(struct tk_appevent_session *s, const char *path);

/**
 * tk_appevent_session_attach() - invite a running process
 * @pid: the process; it connects within ~100 ms if it defines event types
 *       and its watcher runs
 *
 * Makes TK_APPEVENT_ATTACH_DIR/@pid.sock, a link to the session's socket
 * (created 0755 if needed); tk_appevent_session_free() removes it.
 * Context: any thread; blocking.
 * Return: 0, -EINVAL (bad pid), -EEXIST (another recorder's link is there),
 * or the file system's negative errno.
 */
TK_API int tk_appevent_session_attach(struct tk_appevent_session *s, int pid);

/** tk_appevent_session_buffers() - buffers received so far. */
TK_API size_t tk_appevent_session_buffers(const struct tk_appevent_session *s);

/**
 * tk_appevent_session_buffer_stats() - counters of buffer @index
 * Context: after tk_appevent_session_stop() for exact values.
 * Return: 0, -EINVAL past the end.
 */
TK_API int tk_appevent_session_buffer_stats(const struct tk_appevent_session *s, size_t index,
					    struct tk_appevent_buffer_stats *out);

/** tk_appevent_session_free() - stop if needed, remove socket and spools; NULL accepted. */
TK_API void tk_appevent_session_free(struct tk_appevent_session *s);

/* ------------------------------------------------- definition macros */

/* Field tuples: (kind, C type, name, count). */
#define TK_AE_FIELD(type, name)	       (S, type, name, 1)
#define TK_AE_ARRAY(type, name, count) (A, type, name, count)
#define TK_AE_STRING(name)	       (T, char, name, 1)
/* The print format, as a tracefs format file's "print fmt:" line. */
#define TK_APPEVENT_PRINT(...) #__VA_ARGS__

#define TK__AE_CAT_(a, b)							 a##b
#define TK__AE_CAT(a, b)							 TK__AE_CAT_(a, b)
#define TK__AE_NARGS(...)							 TK__AE_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TK__AE_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define TK__AE_COMMA()								 ,
#define TK__AE_NOTHING()							 /* nothing */
#define TK__AE_PLUS()								 +
#define TK__AE_EACH(m, sep, ...)                                                                   \
	TK__AE_CAT(TK__AE_EACH_, TK__AE_NARGS(__VA_ARGS__))(m, sep, __VA_ARGS__)
#define TK__AE_EACH_1(m, sep, x)       m x
#define TK__AE_EACH_2(m, sep, x, ...)  m x sep() TK__AE_EACH_1(m, sep, __VA_ARGS__)
#define TK__AE_EACH_3(m, sep, x, ...)  m x sep() TK__AE_EACH_2(m, sep, __VA_ARGS__)
#define TK__AE_EACH_4(m, sep, x, ...)  m x sep() TK__AE_EACH_3(m, sep, __VA_ARGS__)
#define TK__AE_EACH_5(m, sep, x, ...)  m x sep() TK__AE_EACH_4(m, sep, __VA_ARGS__)
#define TK__AE_EACH_6(m, sep, x, ...)  m x sep() TK__AE_EACH_5(m, sep, __VA_ARGS__)
#define TK__AE_EACH_7(m, sep, x, ...)  m x sep() TK__AE_EACH_6(m, sep, __VA_ARGS__)
#define TK__AE_EACH_8(m, sep, x, ...)  m x sep() TK__AE_EACH_7(m, sep, __VA_ARGS__)
#define TK__AE_EACH_9(m, sep, x, ...)  m x sep() TK__AE_EACH_8(m, sep, __VA_ARGS__)
#define TK__AE_EACH_10(m, sep, x, ...) m x sep() TK__AE_EACH_9(m, sep, __VA_ARGS__)
#define TK__AE_EACH_11(m, sep, x, ...) m x sep() TK__AE_EACH_10(m, sep, __VA_ARGS__)
#define TK__AE_EACH_12(m, sep, x, ...) m x sep() TK__AE_EACH_11(m, sep, __VA_ARGS__)

/* The record's members. */
#define TK__AE_MEMBER(k, t, n, c) TK__AE_MEMBER_##k(t, n, c)
#define TK__AE_MEMBER_S(t, n, c)  t n;
#define TK__AE_MEMBER_A(t, n, c)  t n[c];
#define TK__AE_MEMBER_T(t, n, c)  uint32_t n;
/* The emitter's parameters. */
#define TK__AE_PARAM(k, t, n, c) TK__AE_PARAM_##k(t, n, c)
#define TK__AE_PARAM_S(t, n, c)	 t n
#define TK__AE_PARAM_A(t, n, c)	 const t *n
#define TK__AE_PARAM_T(t, n, c)	 const char *n
/* Events without strings take tk_appevent_write(), with strings tk_appevent_write_str(). */
#define TK__AE_NSTR(k, t, n, c)	 TK__AE_NSTR_##k
#define TK__AE_NSTR_S		 0
#define TK__AE_NSTR_A		 0
#define TK__AE_NSTR_T		 1
#define TK__AE_FILLF(k, t, n, c) TK__AE_FILLF_##k(t, n, c)
#define TK__AE_FILLF_S(t, n, c)	 tk__w.n = n;
#define TK__AE_FILLF_A(t, n, c)	 memcpy(tk__w.n, n, sizeof(tk__w.n));
#define TK__AE_FILLF_T(t, n, c)	 tk__w.n = tk__ae_addstr(tk__s, &tk__ns, &tk__off, n);
/* Bytes of the fields (the record without the padding to 4 that aligned(4) adds). */
#define TK__AE_SIZE(k, t, n, c) TK__AE_SIZE_##k(t, n, c)
#define TK__AE_SIZE_S(t, n, c)	sizeof(t)
#define TK__AE_SIZE_A(t, n, c)	(sizeof(t) * (c))
#define TK__AE_SIZE_T(t, n, c)	4
/* The field descriptors. */
#define TK__AE_DESC(k, t, n, c) TK__AE_DESC_##k(t, n, c)
#define TK__AE_DESC_S(t, n, c)                                                                     \
	{                                                                                          \
#t, #n, (uint32_t)offsetof(tk__ae_rec_t, n), (uint32_t)sizeof(t), 1,               \
			(uint8_t) !((t)-1 > 0), TK_APPEVENT_SCALAR                                 \
	}
#define TK__AE_DESC_A(t, n, c)                                                                     \
	{                                                                                          \
#t, #n, (uint32_t)offsetof(tk__ae_rec_t, n), (uint32_t)(sizeof(t) * (c)),          \
			(uint32_t)(c), (uint8_t) !((t)-1 > 0), TK_APPEVENT_ARRAY                   \
	}
#define TK__AE_DESC_T(t, n, c)                                                                     \
	{                                                                                          \
		"char", #n, (uint32_t)offsetof(tk__ae_rec_t, n), 4, 1, 1, TK_APPEVENT_STRING       \
	}

static inline uint32_t tk__ae_strsize(const char *s)
{
	return (uint32_t)strlen(s ? s : "(null)") + 1;
}

/* A string for tk_appevent_write_str(): its entry in @tab, and its __data_loc. */
static inline uint32_t tk__ae_addstr(struct tk_appevent_str *tab, uint32_t *nr, uint32_t *off,
				     const char *s)
{
	uint32_t n = tk__ae_strsize(s), at = *off;

	tab[*nr].s = s ? s : "(null)";
	tab[*nr].size = n;
	*nr += 1;
	*off = at + n;
	return (n << 16) | at;
}

/**
 * TK_APPEVENT_DEFINE() - define an event type of @system named @name
 * @print: TK_APPEVENT_PRINT(fmt, args) with the kernel's REC->field and
 *         __get_str(field) spellings
 * @...:   the fields, TK_AE_FIELD / TK_AE_ARRAY / TK_AE_STRING
 *
 * Makes the record layout, the type descriptor, a constructor that
 * registers it, and the emitter TK_APPEVENT() calls. The record is packed
 * (fields follow each other without padding, as the format file then
 * says) and 4-byte aligned, as records in the kernel's pages are: the
 * emitter's stores are unaligned-safe.
 */
#define TK_APPEVENT_DEFINE(system, name, print, ...)                                               \
	struct __attribute__((packed, aligned(4))) tk__ae_rec_##system##_##name {                  \
		struct tk_appevent_common tk__common;                                              \
		TK__AE_EACH(TK__AE_MEMBER, TK__AE_NOTHING, __VA_ARGS__)                            \
	};                                                                                         \
	static const struct tk_appevent_field *tk__ae_fields_##system##_##name(uint32_t *tk__n)    \
	{                                                                                          \
		typedef struct tk__ae_rec_##system##_##name tk__ae_rec_t;                          \
		static const struct tk_appevent_field tk__f[] = {                                  \
			TK__AE_EACH(TK__AE_DESC, TK__AE_COMMA, __VA_ARGS__)};                      \
		*tk__n = (uint32_t)(sizeof(tk__f) / sizeof(tk__f[0]));                             \
		return tk__f;                                                                      \
	}                                                                                          \
	static struct tk_appevent_type tk__ae_type_##system##_##name = {                           \
		#system, #name, print,                                                             \
		NULL,	 0,	(uint32_t)sizeof(struct tk__ae_rec_##system##_##name),             \
		0,	 NULL};                                                                    \
	__attribute__((constructor)) static void tk__ae_register_##system##_##name(void)           \
	{                                                                                          \
		struct tk_appevent_type *tk__t = &tk__ae_type_##system##_##name;                   \
                                                                                                   \
		tk__t->fields = tk__ae_fields_##system##_##name(&tk__t->nr_fields);                \
		tk_appevent_register(tk__t);                                                       \
	}                                                                                          \
	__attribute__((noinline, unused)) static void tk__ae_emit_##system##_##name(               \
		TK__AE_EACH(TK__AE_PARAM, TK__AE_COMMA, __VA_ARGS__))                              \
	{                                                                                          \
		struct tk__ae_rec_##system##_##name tk__w;                                         \
		struct tk_appevent_str tk__s[12];                                                  \
		uint32_t tk__ns = 0;                                                               \
		uint32_t tk__off = (uint32_t)sizeof(struct tk__ae_rec_##system##_##name);          \
		const uint32_t tk__len =                                                           \
			(uint32_t)(sizeof(struct tk_appevent_common) +                             \
				   (TK__AE_EACH(TK__AE_SIZE, TK__AE_PLUS, __VA_ARGS__)));          \
                                                                                                   \
		TK__AE_EACH(TK__AE_FILLF, TK__AE_NOTHING, __VA_ARGS__)                             \
		(void)tk__off;                                                                     \
		if ((TK__AE_EACH(TK__AE_NSTR, TK__AE_PLUS, __VA_ARGS__)) == 0)                     \
			tk_appevent_write(&tk__ae_type_##system##_##name, &tk__w, tk__len);        \
		else                                                                               \
			tk_appevent_write_str(&tk__ae_type_##system##_##name, &tk__w, tk__len,     \
					      tk__s, tk__ns);                                      \
	}                                                                                          \
	struct tk__ae_dummy_##system##_##name

/**
 * TK_APPEVENT() - emit an event of a type defined in this file
 * @...: one argument per field, in the definition's order
 */
#define TK_APPEVENT(system, name, ...)                                                             \
	do {                                                                                       \
		if (__builtin_expect(__atomic_load_n(&tk_appevent_on, __ATOMIC_RELAXED), 0))       \
			tk__ae_emit_##system##_##name(__VA_ARGS__);                                \
	} while (0)

#ifdef __cplusplus
}
#endif
#endif
