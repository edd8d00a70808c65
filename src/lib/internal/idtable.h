/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * idtable: entries of one fixed size found by a pid or tid, the int32_t
 * each entry holds in its first four bytes; -1 there marks a free slot.
 * The perf.data report and the samples reader keep their threads and
 * processes in one: open addressing with linear probing, at most half
 * full, doubled when an insert would pass that. Entries move when the
 * table grows, so a pointer from tk_idtable_get() is good only until the
 * next insert. Private to the library; header-only so that lookups inline
 * with the entry size a constant.
 */
#ifndef TRACEKIT_INTERNAL_IDTABLE_H
#define TRACEKIT_INTERNAL_IDTABLE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tk_idtable {
	void *slots; /* cap entries of the caller's size */
	size_t cap;  /* 0 or a power of two */
	size_t n;    /* entries in use */
};

static inline uint32_t tk_id_hash(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static inline int32_t tk_idtable_key(const void *entry)
{
	int32_t id;

	memcpy(&id, entry, sizeof(id));
	return id;
}

/* The slot where @id is, or the free slot where it would go. */
static inline void *tk_idtable_probe(const struct tk_idtable *t, size_t size, int32_t id)
{
	size_t j = tk_id_hash((uint32_t)id) & (t->cap - 1);
	char *slot = (char *)t->slots + j * size;

	for (int32_t k; (k = tk_idtable_key(slot)) != id && k >= 0;) {
		j = (j + 1) & (t->cap - 1);
		slot = (char *)t->slots + j * size;
	}
	return slot;
}

/* The entry of @id, or NULL when there is none (or @id is negative). */
static inline void *tk_idtable_find(const struct tk_idtable *t, size_t size, int32_t id)
{
	void *slot;

	if (id < 0 || !t->cap)
		return NULL;
	slot = tk_idtable_probe(t, size, id);
	return tk_idtable_key(slot) == id ? slot : NULL;
}

/* Double the table (@first_cap entries the first time). Return: 0 or -ENOMEM. */
static inline int tk_idtable_grow(struct tk_idtable *t, size_t size, size_t first_cap)
{
	struct tk_idtable bigger = {.cap = t->cap ? t->cap * 2 : first_cap};

	if (bigger.cap > SIZE_MAX / size / 2)
		return -ENOMEM;
	bigger.slots = malloc(bigger.cap * size);
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < bigger.cap; i++)
		memset((char *)bigger.slots + i * size, 0xff, sizeof(int32_t));
	for (size_t i = 0; i < t->cap; i++) {
		const char *old = (const char *)t->slots + i * size;

		if (tk_idtable_key(old) >= 0)
			memcpy(tk_idtable_probe(&bigger, size, tk_idtable_key(old)), old, size);
	}
	free(t->slots);
	bigger.n = t->n;
	*t = bigger;
	return 0;
}

/*
 * The entry of @id, added when absent: zeroed but for its id, and *@added
 * set (NULL allowed). NULL for a negative @id or when memory runs out.
 * @first_cap (a power of two) sizes the table on the first insert.
 */
static inline void *tk_idtable_get(struct tk_idtable *t, size_t size, int32_t id, size_t first_cap,
				   bool *added)
{
	char *slot;

	if (added)
		*added = false;
	if (id < 0)
		return NULL;
	if (t->cap) {
		slot = tk_idtable_probe(t, size, id);
		if (tk_idtable_key(slot) == id)
			return slot;
	}
	if ((t->n + 1) * 2 > t->cap && tk_idtable_grow(t, size, first_cap))
		return NULL;
	slot = tk_idtable_probe(t, size, id);
	memset(slot, 0, size);
	memcpy(slot, &id, sizeof(id));
	t->n++;
	if (added)
		*added = true;
	return slot;
}

/* The @i-th slot (0 <= @i < cap), in use when its key is not negative. */
static inline void *tk_idtable_at(const struct tk_idtable *t, size_t size, size_t i)
{
	return (char *)t->slots + i * size;
}

#endif
