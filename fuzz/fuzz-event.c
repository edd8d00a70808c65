// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target: event format parsing and printing of a record.
 *
 * Input layout: the first 2 bytes give the format text's length N (LE);
 * then N bytes of format text (a tracefs `format` file), then a record
 * payload (the rest). The format is parsed, and the record printed by the
 * compiled printer (every op kind: numbers, strings, symbols, %pU/%pM,
 * '*' widths, hex dumps, arrays, bitmasks, ternaries), by libtraceevent's
 * printer and as JSON-style field reads: none may crash or read outside
 * the record. The set has a few kallsyms (jiffies among them, for names
 * in print formats) and printk formats (for %s of a long); a format named
 * like a kmem call_site event or sys_enter_futex is added to its real
 * system with libtraceevent's plugins loaded, so the compiled mirrors of
 * those plugins run too.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/event.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

static const char kallsyms[] = "ffffffff81000000 T _stext\n"
			       "ffffffff81001000 T kmalloc_trace\n"
			       "ffffffff82000000 D jiffies\n";
static const char printk[] = "0xffffffff83000000 : \"hello %d\\n\"\n"
			     "0xffffffff83000100 : \"suspend_enter\"\n";

/* The system a plugin handles the format's event in, else "fuzz". */
static const char *plugin_system(const char *text, size_t n)
{
	static const char *const kmem[] = {"kfree",
					   "kmalloc",
					   "kmalloc_node",
					   "kmem_cache_alloc",
					   "kmem_cache_alloc_node",
					   "kmem_cache_free"};
	char name[32];
	size_t i = 0;

	if (n < 6 || memcmp(text, "name: ", 6))
		return "fuzz";
	for (; i + 6 < n && i < sizeof(name) - 1 && text[i + 6] != '\n'; i++)
		name[i] = text[i + 6];
	name[i] = '\0';
	if (!strcmp(name, "sys_enter_futex"))
		return "syscalls";
	for (i = 0; i < sizeof(kmem) / sizeof(kmem[0]); i++)
		if (!strcmp(name, kmem[i]))
			return "kmem";
	return "fuzz";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *system;
	struct tk_event_set *set;
	struct tk_outbuf out;
	const struct tk_event *ev;
	size_t n;
	int id;

	if (size < 2)
		return 0;
	n = (size_t)data[0] | (size_t)data[1] << 8;
	if (n > size - 2)
		n = size - 2;
	set = tk_event_set_new(8, false, 4096);
	if (!set)
		return 0;
	system = plugin_system((const char *)data + 2, n);
	tk_event_set_add_kallsyms(set, kallsyms, sizeof(kallsyms) - 1);
	tk_event_set_add_printk(set, printk, sizeof(printk) - 1);
	if (strcmp(system, "fuzz"))
		tk_event_set_load_plugins(set);
	id = tk_event_set_add_format(set, system, (const char *)data + 2, n);
	if (id >= 0 && tk_outbuf_init(&out, -1, 1 << 16) == 0) {
		const uint8_t *rec = data + 2 + n;
		uint32_t len = (uint32_t)(size - 2 - n);
		uint8_t *copy = malloc(len ? len : 1);

		/* A record of its own so that reads past it are caught. */
		if (copy) {
			memcpy(copy, rec, len);
			ev = tk_event_find(set, id);
			/*
			 * -EBADMSG: the compiled printer found a length that
			 * libtraceevent would follow out of bounds (a hex dump
			 * of gigabytes, a negative '*' width): the slow path
			 * is not asked for such a record.
			 */
			if (tk_event_print_info(set, ev, copy, len, 0, 0, &out) != -EBADMSG) {
				out.len = 0;
				tk_event_print_info(set, ev, copy, len, 0, TK_EVENT_PRINT_SLOW,
						    &out);
			}
			out.len = 0;
			for (size_t i = 0; i < tk_event_field_count(ev); i++) {
				const struct tk_event_field *f = tk_event_field_get(ev, i);
				const char *s;
				uint32_t sl;
				uint64_t v;

				tk_event_field_read(set, f, copy, len, &v);
				tk_event_field_string(set, f, copy, len, &s, &sl);
			}
			free(copy);
		}
		tk_outbuf_release(&out);
	}
	tk_event_set_free(set);
	return 0;
}
