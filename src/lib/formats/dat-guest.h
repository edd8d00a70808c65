/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * The .dat reader's decoders of the guest/host options (dat-guest.c).
 */
#ifndef TRACEKIT_DAT_GUEST_H
#define TRACEKIT_DAT_GUEST_H

#include <tracekit/dat.h>

/*
 * A TIME_SHIFT payload of @size bytes in one malloc'ed block *@out (free()
 * it), each CPU's samples sorted; @base is the payload's file offset (0
 * when it was compressed). Return: 0; -EBADMSG with a message in @why and
 * the file offset of the bad bytes in *@at; -ENOMEM.
 */
int tk_dat_time_shift_parse(const void *data, uint32_t size, bool big, uint64_t base,
			    struct tk_dat_time_shift **out, char *why, size_t whylen, uint64_t *at);

/*
 * A GUEST payload into *@out; its name and pids live in *@mem (free()
 * it). Return: as tk_dat_time_shift_parse().
 */
int tk_dat_guest_parse(const void *data, uint32_t size, bool big, struct tk_dat_guest *out,
		       uint64_t base, void **mem, char *why, size_t whylen, uint64_t *at);

#endif
