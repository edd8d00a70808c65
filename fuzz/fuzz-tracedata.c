// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Fuzz target: the tracing-data codecs (tracedata.c).
 *
 * Input layout: one mode byte, then the body. Mode 0..5 decodes the body
 * as .dat metadata section 16 + mode, little-endian; 8..13 the same,
 * big-endian; anything else decodes it as a perf.data TRACING_DATA blob.
 * A body that decodes is encoded again and decoded once more: the second
 * decoding must succeed and give the same encoding (a round-trip oracle),
 * so the encoder and the decoder agree on every input the decoder accepts.
 * What decodes is also listed as report -P, -f and -E list it
 * (report-info.c reads the printk and kallsyms texts itself), into memory.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tracekit/report.h>
#include <tracekit/tracedata.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int decode(struct tk_tracedata *td, int mode, const void *p, uint64_t len)
{
	if ((mode & 7) < 6 && mode < 16)
		return tk_tracedata_decode_dat_section(td, (uint16_t)(16 + (mode & 7)), p, len,
						       mode & 8);
	return tk_tracedata_decode_perf(td, p, len);
}

static int encode(const struct tk_tracedata *td, int mode, void **out, uint64_t *len)
{
	if ((mode & 7) < 6 && mode < 16)
		return tk_tracedata_encode_dat_section(td, (uint16_t)(16 + (mode & 7)), mode & 8,
						       out, len);
	return tk_tracedata_encode_perf(td, out, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_tracedata *a, *b;
	void *body, *once = NULL, *twice = NULL;
	uint64_t once_len, twice_len;
	int mode;

	if (size < 1)
		return 0;
	mode = data[0];
	/* A copy of exactly the body, so that a read past it is caught. */
	body = malloc(size - 1 ? size - 1 : 1);
	a = tk_tracedata_new();
	b = tk_tracedata_new();
	if (body && a && b) {
		memcpy(body, data + 1, size - 1);
		if (decode(a, mode, body, size - 1) == 0) {
			/* A negative descriptor keeps the text in memory. */
			tk_report_list_tracedata(a, TK_REPORT_LIST_PRINTK, -1);
			tk_report_list_tracedata(a, TK_REPORT_LIST_FUNCS, -1);
			tk_report_list_tracedata(a, TK_REPORT_LIST_EVENTS, -1);
			if (encode(a, mode, &once, &once_len) == 0) {
				if (decode(b, mode, once, once_len) != 0)
					abort();
				if (encode(b, mode, &twice, &twice_len) != 0 ||
				    twice_len != once_len || memcmp(once, twice, once_len) != 0)
					abort();
			}
		}
	}
	tk_tracedata_free(b);
	tk_tracedata_free(a);
	free(twice);
	free(once);
	free(body);
	return 0;
}
