// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * dat-guest: the options of a guest/host session (trace-cmd record -A), and
 * the time correction that puts a guest's records on the host's clock.
 *
 * trace-cmd writes two files: the host's, and one per guest, which the host
 * completes when the time synchronisation with the guest stops. What each
 * holds (all numbers in the file's byte order):
 *
 *   host   GUEST (13)      guest name, NUL
 *                          u64 trace id of the guest's session (its file's TRACEID)
 *                          u32 vCPU count N
 *                          N x { u32 vcpu, u32 host pid of the thread running it }
 *   guest  TRACEID (11)    u64 the guest session's id
 *          TSC2NSEC (14)   u32 mult, u32 shift, u64 offset (the host's TSC)
 *          TIME_SHIFT (12) u64 trace id of the host's session
 *                          u32 flags (bit 0: interpolate)
 *                          u32 CPU count C
 *                          C x { u32 count K, K x u64 time, K x s64 offset,
 *                                K x u64 scaling }
 *                          C x { K x u64 fraction bits }      (trace-cmd >= 2.10)
 *
 * trace-cmd 2.9 wrote TIME_SHIFT without the fraction arrays; a reader
 * takes them when bytes follow the per-CPU arrays. Bytes past the fraction
 * arrays are ignored, as trace-cmd ignores them.
 *
 * Correction (trace-cmd 3.4's trace-input.c, which 3.1.6 shares): a guest
 * record's raw time on CPU c of the top buffer (trace-cmd's instance
 * handles start without the samples) is mapped with c's samples, sorted by time
 * (equal times kept once), before TSC2NSEC and the user's offsets:
 * one sample adds its offset and nothing else; with two or more the pair
 * around the time is used (the first pair before the first sample, the
 * last pair after the last), and host = ((raw * scaling) >> fraction) +
 * offset with the earlier sample's scaling and fraction; the offset is the
 * earlier sample's, or with the interpolate flag the linear interpolation
 * between the pair, rounded to nearest. The arithmetic is 64-bit and wraps
 * as trace-cmd's does (its comparisons of the raw time with the samples'
 * times are unsigned, its sort signed; a shift count is taken modulo 64 as
 * the x86 instruction takes it); the one case where trace-cmd would trap
 * (a division by zero or of INT64_MIN by -1, which sorted distinct times
 * cannot produce) gives 0 or the wrapped quotient here.
 *
 * Damage: a TIME_SHIFT shorter than its 16-byte head, per-CPU arrays or
 * fraction arrays that run past the option, a GUEST without its name's NUL,
 * trace id or count, vCPU pairs past the option, or a vCPU id at or past
 * the count are -EBADMSG with the offset inside the option; the reader
 * then skips the option whole (salvage) or fails (strict). trace-cmd 3.4
 * fails the whole file on the first TIME_SHIFT kind and drops the GUEST
 * silently on the second. All memory is bounded by the option's size: a
 * count is checked against the bytes left before anything is allocated.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dat-guest.h"
#include "internal/bytes.h"
#include "internal/error.h"

static int bad(char *why, size_t cap, uint64_t *at, uint64_t where, const char *what)
{
	snprintf(why, cap, "%s", what);
	*at = where;
	return -EBADMSG;
}

/* One sample and where it was stored, so equal times keep file order. */
struct ranked {
	struct tk_dat_time_sample s;
	uint32_t rank;
};

static int by_time(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->s.time != y->s.time)
		return x->s.time < y->s.time ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Sort @n samples by time and keep each time once; returns the count kept. */
static uint32_t sort_samples(struct tk_dat_time_sample *s, uint32_t n, struct ranked *tmp)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < n; i++) {
		tmp[i].s = s[i];
		tmp[i].rank = i;
	}
	qsort(tmp, n, sizeof(*tmp), by_time);
	for (uint32_t i = 0; i < n; i++) {
		if (i && tmp[i].s.time == tmp[i - 1].s.time)
			continue;
		s[kept++] = tmp[i].s;
	}
	return kept;
}

int tk_dat_time_shift_parse(const void *data, uint32_t size, bool big, uint64_t base,
			    struct tk_dat_time_shift **out, char *why, size_t whylen, uint64_t *at)
{
	struct tk_cursor c;
	struct tk_dat_time_shift *ts;
	struct tk_dat_time_shift_cpu *cpus;
	struct tk_dat_time_sample *samples;
	struct ranked *tmp;
	uint64_t total = 0, frac_bytes;
	uint32_t cpu_count, flags, max = 0;
	uint64_t peer;
	const uint8_t *head;
	size_t bytes;

	*out = NULL;
	tk_cursor_init(&c, data, size, base, big);
	if (!tk_cursor_u64(&c, &peer) || !tk_cursor_u32(&c, &flags) ||
	    !tk_cursor_u32(&c, &cpu_count))
		return bad(why, whylen, at, base,
			   "TIME_SHIFT option shorter than its 16-byte head");
	if ((uint64_t)cpu_count * 4 > tk_cursor_left(&c))
		return bad(why, whylen, at, base + 12,
			   "TIME_SHIFT option: CPU count runs past the option");
	/* First pass: the counts fit the option (so the block below is bounded by it). */
	for (uint32_t i = 0; i < cpu_count; i++) {
		uint64_t where = tk_cursor_offset(&c);
		uint32_t k;
		const uint8_t *skip;

		if (!tk_cursor_u32(&c, &k) || (uint64_t)k * 24 > tk_cursor_left(&c))
			return bad(why, whylen, at, where,
				   "TIME_SHIFT option: a CPU's samples run past the option");
		tk_cursor_bytes(&c, (uint64_t)k * 24, &skip);
		total += k;
		if (k > max)
			max = k;
	}
	frac_bytes = total * 8;
	if (tk_cursor_left(&c) && tk_cursor_left(&c) < frac_bytes)
		return bad(why, whylen, at, tk_cursor_offset(&c),
			   "TIME_SHIFT option: fraction bits run past the option");

	bytes = sizeof(*ts) + (size_t)cpu_count * sizeof(*cpus) + (size_t)total * sizeof(*samples);
	ts = calloc(1, bytes);
	tmp = malloc((max ? max : 1) * sizeof(*tmp));
	if (!ts || !tmp) {
		free(ts);
		free(tmp);
		return tk_fail(ENOMEM, "out of memory");
	}
	cpus = (struct tk_dat_time_shift_cpu *)(ts + 1);
	samples = (struct tk_dat_time_sample *)(cpus + cpu_count);
	ts->peer_trace_id = peer;
	ts->flags = flags;
	ts->cpu_count = cpu_count;
	ts->cpus = cpus;
	ts->has_fraction = tk_cursor_left(&c) != 0;

	/* Second pass: fill in, then the fraction arrays, then sort each CPU's. */
	tk_cursor_init(&c, data, size, base, big);
	tk_cursor_bytes(&c, 16, &head);
	for (uint32_t i = 0, used = 0; i < cpu_count; i++) {
		struct tk_dat_time_sample *s = samples + used;
		uint32_t k = 0;
		uint64_t v = 0;

		tk_cursor_u32(&c, &k);
		for (uint32_t j = 0; j < k; j++) {
			tk_cursor_u64(&c, &v);
			s[j].time = (int64_t)v;
		}
		for (uint32_t j = 0; j < k; j++) {
			tk_cursor_u64(&c, &v);
			s[j].offset = (int64_t)v;
		}
		for (uint32_t j = 0; j < k; j++) {
			tk_cursor_u64(&c, &v);
			s[j].scaling = (int64_t)v;
		}
		cpus[i].samples = s;
		cpus[i].count = k;
		used += k;
	}
	for (uint32_t i = 0; ts->has_fraction && i < cpu_count; i++) {
		struct tk_dat_time_sample *s = (struct tk_dat_time_sample *)cpus[i].samples;
		uint64_t v = 0;

		for (uint32_t j = 0; j < cpus[i].count; j++) {
			tk_cursor_u64(&c, &v);
			s[j].fraction = (int64_t)v;
		}
	}
	for (uint32_t i = 0; i < cpu_count; i++)
		cpus[i].count = sort_samples((struct tk_dat_time_sample *)cpus[i].samples,
					     cpus[i].count, tmp);
	free(tmp);
	*out = ts;
	return 0;
}

int tk_dat_guest_parse(const void *data, uint32_t size, bool big, struct tk_dat_guest *out,
		       uint64_t base, void **mem, char *why, size_t whylen, uint64_t *at)
{
	struct tk_cursor c;
	const char *name;
	size_t len;
	uint64_t id;
	uint32_t n;
	int32_t *pids;
	char *copy;

	*mem = NULL;
	tk_cursor_init(&c, data, size, base, big);
	if (!tk_cursor_cstr(&c, &name, &len))
		return bad(why, whylen, at, base, "GUEST option: the guest's name has no NUL");
	if (!tk_cursor_u64(&c, &id) || !tk_cursor_u32(&c, &n))
		return bad(why, whylen, at, tk_cursor_offset(&c),
			   "GUEST option: trace id or vCPU count cut short");
	if ((uint64_t)n * 8 > tk_cursor_left(&c))
		return bad(why, whylen, at, tk_cursor_offset(&c) - 4,
			   "GUEST option: vCPU list runs past the option");
	pids = malloc((size_t)n * sizeof(*pids) + len + 1);
	if (!pids)
		return tk_fail(ENOMEM, "out of memory");
	for (uint32_t i = 0; i < n; i++)
		pids[i] = -1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t where = tk_cursor_offset(&c);
		uint32_t vcpu = 0, pid = 0;

		tk_cursor_u32(&c, &vcpu);
		tk_cursor_u32(&c, &pid);
		if (vcpu >= n) {
			free(pids);
			return bad(why, whylen, at, where,
				   "GUEST option: a vCPU id is not below the vCPU count");
		}
		pids[vcpu] = (int32_t)pid;
	}
	copy = (char *)(pids + n);
	memcpy(copy, name, len);
	copy[len] = '\0';
	out->name = copy;
	out->trace_id = id;
	out->vcpu_count = n;
	out->vcpu_pids = pids;
	*mem = pids;
	return 0;
}

/* The correction with the pair (@lo, @hi) around @ts; see the notes above. */
static uint64_t correct(uint64_t ts, uint32_t flags, const struct tk_dat_time_sample *lo,
			const struct tk_dat_time_sample *hi)
{
	uint64_t tscor = (uint64_t)lo->offset;

	if (flags & TK_DAT_TSYNC_INTERPOLATE) {
		int64_t delta = (int64_t)((uint64_t)hi->time - (uint64_t)lo->time);
		int64_t num = (int64_t)((ts - (uint64_t)lo->time) *
					((uint64_t)hi->offset - (uint64_t)lo->offset));
		int64_t top = (int64_t)((uint64_t)num + (uint64_t)(delta / 2));
		uint64_t q;

		if (!delta)
			q = 0;
		else if (delta == -1)
			q = 0 - (uint64_t)top;
		else
			q = (uint64_t)(top / delta);
		tscor += q;
	}
	ts = (ts * (uint64_t)lo->scaling) >> ((uint64_t)lo->fraction & 63);
	return ts + tscor;
}

TK_API uint64_t tk_dat_time_shift_apply(const struct tk_dat_time_shift *shift, uint32_t cpu,
					uint64_t ts)
{
	const struct tk_dat_time_sample *s;
	int64_t lo, hi, mid;
	uint32_t n;

	if (!shift || cpu >= shift->cpu_count)
		return ts;
	s = shift->cpus[cpu].samples;
	n = shift->cpus[cpu].count;
	if (!n)
		return ts;
	if (n == 1)
		return ts + (uint64_t)s[0].offset;
	if (n == 2 || ts <= (uint64_t)s[0].time)
		return correct(ts, shift->flags, &s[0], &s[1]);
	if (ts >= (uint64_t)s[n - 1].time)
		return correct(ts, shift->flags, &s[n - 2], &s[n - 1]);
	/* The sample at or before @ts: trace-cmd's search, unsigned compares and all. */
	lo = 0;
	hi = n - 1;
	mid = (lo + hi) / 2;
	while (lo <= hi) {
		if (ts < (uint64_t)s[mid].time)
			hi = mid - 1;
		else if (ts > (uint64_t)s[mid].time)
			lo = mid + 1;
		else
			break;
		mid = (lo + hi) / 2;
	}
	if (mid < 0)
		mid = 0;
	if (mid > (int64_t)n - 2)
		mid = (int64_t)n - 2;
	return correct(ts, shift->flags, &s[mid], &s[mid + 1]);
}
