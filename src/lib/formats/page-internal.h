/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Page decoding entry points for the library's own hot loops; never
 * installed.
 */
#ifndef TRACEKIT_PAGE_INTERNAL_H
#define TRACEKIT_PAGE_INTERNAL_H

#include <tracekit/page.h>

/*
 * tk_page_iter_fill() - decode the next data records of a page in one pass
 * @it:   an iterator set up by tk_page_iter_init()
 * @recs: room for @cap records (@cap >= 1)
 *
 * What @cap calls of tk_page_iter_next() would give, without a call per
 * record: a consumer that walks a whole page keeps the decoding loop tight
 * and its own per-record work free of the iterator's state.
 *
 * Records before a corrupt one are returned first; the call after them
 * fails, as tk_page_iter_next() would, with recs[0].offset set to the bad
 * record's offset in the page.
 *
 * Return: the number of records stored (1..@cap), 0 at the end of the
 * page, or -EBADMSG.
 */
int tk_page_iter_fill(struct tk_page_iter *it, struct tk_page_record *recs, uint32_t cap);

/*
 * tk_page_iter_at_end() - whether the iterator has passed its page's last record
 *
 * After a tk_page_iter_fill() that returned fewer records than it had room
 * for, false means it stopped at a bad record (the next call fails).
 */
static inline bool tk_page_iter_at_end(const struct tk_page_iter *it)
{
	return it->done;
}

/*
 * tk_page_iter_intact() - whether the rest of a page decodes to its end
 * @it: an iterator set up by tk_page_iter_init(); it is not moved
 *
 * The checks of tk_page_iter_next() on every record left, with no record
 * handed out and no time kept: a reader that must know a page is whole
 * before it hands it on (the salvaging reader) pays a few instructions a
 * record for it, not a second decoding.
 *
 * Return: true when tk_page_iter_next() would reach the end of the page
 * without an error, false when it would fail on some record.
 */
bool tk_page_iter_intact(const struct tk_page_iter *it);

#endif
