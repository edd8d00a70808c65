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
 * the record.
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
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
	id = tk_event_set_add_format(set, "fuzz", (const char *)data + 2, n);
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
