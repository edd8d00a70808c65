/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * event: the event formats of one trace, field access and fast printing.
 *
 * A tk_event_set holds what a trace needs to be read as text: the event
 * formats (the text of tracefs `format` files), the kernel symbols, the
 * printk formats and the saved command lines. libtraceevent parses the
 * formats; tracekit compiles each print format once into a small program
 * that the hot loop runs per record with no allocation. Print formats the
 * compiled form does not handle fall back to libtraceevent's printer, so
 * the text is the same as trace-cmd report's either way.
 *
 * Records passed in are untrusted: every field read is checked against the
 * record's size.
 */
#ifndef TRACEKIT_EVENT_H
#define TRACEKIT_EVENT_H

#include <tracekit/common.h>
#include <tracekit/outbuf.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tk_event_set;
struct tk_event;

/** A field of an event format. */
struct tk_event_field {
	const char *name;
	const char *type; /* C type text from the format ("unsigned int") */
	uint32_t offset;
	uint32_t size;
	bool is_signed;
	bool is_array;	  /* fixed array (char comm[16]) */
	bool is_dynamic;  /* __data_loc / __rel_loc: 32-bit offset|len<<16 word */
	bool is_relative; /* __rel_loc: offset counts from the end of the field */
	bool is_string;	  /* char array or dynamic string */
	bool is_common;	  /* common_type, common_pid, ... */
};

/**
 * tk_event_set_new() - an empty set for one trace
 * @long_size:  the traced kernel's sizeof(long), 4 or 8
 * @big_endian: byte order of the records
 * @page_size:  ring-buffer page size (libtraceevent wants it)
 *
 * Return: the set for tk_event_set_free(), or NULL with errno ENOMEM or
 * EINVAL.
 */
TK_API struct tk_event_set *tk_event_set_new(uint8_t long_size, bool big_endian,
					     uint32_t page_size);

/** tk_event_set_free() - free a set; NULL is accepted. */
TK_API void tk_event_set_free(struct tk_event_set *set);

/**
 * tk_event_set_add_format() - parse one event format
 * @system: the event's system ("sched"); "ftrace" for the ftrace events
 * @text, @len: the format text (not NUL-terminated necessarily)
 *
 * The print format is compiled at once; what cannot be compiled is marked
 * for the slower libtraceevent printer.
 * Return: the event id (>= 0), -EBADMSG when the text is not a format,
 * -EEXIST for a second format with the same id, -ENOMEM.
 */
TK_API int tk_event_set_add_format(struct tk_event_set *set, const char *system, const char *text,
				   size_t len);

/** Parse an events/header_page text. Return: 0, -EBADMSG. */
TK_API int tk_event_set_add_header_page(struct tk_event_set *set, const char *text, size_t len);
/** Load /proc/kallsyms text (for %pS, %ps and function events). Return: 0, -ENOMEM. */
TK_API int tk_event_set_add_kallsyms(struct tk_event_set *set, const char *text, size_t len);
/**
 * tk_event_set_add_kallsyms_borrowed() - the same without copying @text
 *
 * A kernel's kallsyms is ~5 MB: copying it (and faulting the copy in) was
 * a fifth of a small report's start-up. @text must stay valid and
 * unchanged until the set is freed or given other kallsyms (the text of
 * an open tk_dat qualifies while the dat stays open).
 * Return: 0.
 */
TK_API int tk_event_set_add_kallsyms_borrowed(struct tk_event_set *set, const char *text,
					      size_t len);
/** Load printk_formats text (for bprint and bputs). Return: 0, -ENOMEM. */
TK_API int tk_event_set_add_printk(struct tk_event_set *set, const char *text, size_t len);
/**
 * Load saved_cmdlines text ("PID COMM" lines) as trace-cmd does: every line
 * is registered, repeated pids included; which name a pid then shows follows
 * libtraceevent 1.7.1's table exactly (see tk_event_register_comm()).
 * Return: 0, -ENOMEM.
 */
TK_API int tk_event_set_add_cmdlines(struct tk_event_set *set, const char *text, size_t len);

/**
 * tk_event_set_load_plugins() - load libtraceevent's plugins, as trace-cmd
 * report does, so that events with plugin handlers print alike
 * Return: 0 (missing plugins are not an error).
 */
TK_API int tk_event_set_load_plugins(struct tk_event_set *set);

/**
 * tk_event_spec_match() - whether an event filter names an event
 * @spec:   "NAME", "SYSTEM" or "SYSTEM:NAME", each part a glob (fnmatch);
 *          a spec without ':' matches the name or the system
 * @system: the event's system ("" for events without one, e.g. cpu-clock)
 * @name:   the event's name
 * Context: any thread.
 */
TK_API bool tk_event_spec_match(const char *spec, const char *system, const char *name);

/** Number of events; tk_event_set_get() returns them in the order added. */
TK_API size_t tk_event_set_count(const struct tk_event_set *set);
TK_API const struct tk_event *tk_event_set_get(const struct tk_event_set *set, size_t index);

/** tk_event_find() - the event with type @id, or NULL. Borrowed until the set is freed. */
TK_API const struct tk_event *tk_event_find(const struct tk_event_set *set, int id);
/** tk_event_find_by_name() - by system (NULL: any) and name, or NULL. */
TK_API const struct tk_event *tk_event_find_by_name(const struct tk_event_set *set,
						    const char *system, const char *name);

TK_API int tk_event_id(const struct tk_event *ev);
TK_API const char *tk_event_name(const struct tk_event *ev);
TK_API const char *tk_event_system(const struct tk_event *ev);
/** True when the print format runs compiled (no libtraceevent per record). */
TK_API bool tk_event_is_compiled(const struct tk_event *ev);

/** Fields in format order, common fields first. */
TK_API size_t tk_event_field_count(const struct tk_event *ev);
TK_API const struct tk_event_field *tk_event_field_get(const struct tk_event *ev, size_t index);
/** tk_event_field_find() - by name, or NULL. */
TK_API const struct tk_event_field *tk_event_field_find(const struct tk_event *ev,
							const char *name);

/**
 * tk_event_field_read() - read a numeric field of a record
 * @val: receives the value, sign-extended when the field is signed
 * Return: 0, -EINVAL for a field that is not 1, 2, 4 or 8 bytes, -EBADMSG
 * when the record is too short.
 */
TK_API int tk_event_field_read(const struct tk_event_set *set, const struct tk_event_field *field,
			       const void *data, uint32_t size, uint64_t *val);

/**
 * tk_event_field_string() - the text of a string field (char array or
 * __data_loc string) of a record, up to its NUL
 * @str, @len: receive a pointer into @data and the length
 * Return: 0, -EINVAL when the field is not a string, -EBADMSG when its
 * location is outside the record.
 */
TK_API int tk_event_field_string(const struct tk_event_set *set, const struct tk_event_field *field,
				 const void *data, uint32_t size, const char **str, uint32_t *len);

/**
 * tk_event_record_type() - the event type id of a record (common_type)
 * Return: the id, or -EBADMSG when the record is too short.
 */
TK_API int tk_event_record_type(const struct tk_event_set *set, const void *data, uint32_t size);

/** tk_event_record_pid() - common_pid of a record, or -1 when too short. */
TK_API int tk_event_record_pid(const struct tk_event_set *set, const void *data, uint32_t size);

/**
 * tk_event_comm() - the command name of @pid: "<idle>" for 0, the saved
 * command line, or "<...>" when unknown. Borrowed until the set changes.
 */
TK_API const char *tk_event_comm(const struct tk_event_set *set, int pid);

/**
 * tk_event_register_comm() - register @pid's name, with libtraceevent
 * 1.7.1's two-phase semantics so that names print as trace-cmd prints them:
 * until the first lookup of a non-zero pid, names are only appended
 * (duplicates kept); that lookup sorts them by pid (stable, newest first) and
 * later lookups binary-search as glibc's bsearch does, so which duplicate
 * wins depends on the table's layout. After that, a pid already present is
 * refused (-EEXIST) and pid 0 is ignored.
 * Return: 0, -EEXIST, -ENOMEM.
 */
TK_API int tk_event_register_comm(struct tk_event_set *set, int pid, const char *comm, size_t len);

/* Flags for tk_event_print_info(). */
enum {
	TK_EVENT_PRINT_RAW = 1 << 0,  /* "field=value" of every field (trace-cmd -R) */
	TK_EVENT_PRINT_SLOW = 1 << 1, /* always use libtraceevent's printer */
};

/**
 * tk_event_print_info() - append the text of one record's event
 * @ev: the record's event (tk_event_find() of its type)
 * @data, @size: the record payload
 * @cpu: the record's CPU (some handlers print it)
 * @out: receives the text, without a final newline
 *
 * Events whose printer is a plugin handler that registers command names
 * (sched_switch, sched_wakeup) update the set's command names as
 * trace-cmd report does.
 * Context: hot path: no allocation on the compiled path.
 * Return: 0, or -EBADMSG when the record is shorter than its format needs
 * (a "[truncated record]" marker is printed then).
 */
TK_API int tk_event_print_info(struct tk_event_set *set, const struct tk_event *ev,
			       const void *data, uint32_t size, int cpu, unsigned int flags,
			       struct tk_outbuf *out);

/**
 * tk_event_print_latency() - the latency columns trace-cmd -l prints
 * ("d.h1." style: irqs-off, need-resched, hard/soft irq, preempt depth)
 */
TK_API int tk_event_print_latency(struct tk_event_set *set, const void *data, uint32_t size,
				  int cpu, struct tk_outbuf *out);

#ifdef __cplusplus
}
#endif
#endif
