/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * array: room for one more element in a growable array. The library's
 * arrays of records, threads and names grow by doubling from a first size
 * fitting their use; this is that step, written once with its overflow
 * check, so each caller keeps only its own pointer and count.
 */
#ifndef TRACEKIT_INTERNAL_ARRAY_H
#define TRACEKIT_INTERNAL_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Make room for element @n of @items, an array of *@cap elements of @size
 * bytes: when it is full, double it (to @first elements when empty).
 * Return: the array, moved or not (*@cap updated), or NULL when memory
 * or the size runs out; then @items and *@cap are untouched.
 */
static inline void *tk_array_grow(void *items, size_t *cap, size_t n, size_t size, size_t first)
{
	size_t want;
	void *p;

	if (n < *cap)
		return items;
	want = *cap ? *cap * 2 : first;
	if (want < *cap || want > SIZE_MAX / size)
		return NULL;
	p = realloc(items, want * size);
	if (p)
		*cap = want;
	return p;
}

#endif
