/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Helpers shared by the cmocka unit tests. Include after <cmocka.h>.
 */
#ifndef TRACEKIT_TK_TEST_H
#define TRACEKIT_TK_TEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tracekit/common.h>

/*
 * Assert that @ret is -@err and that the failing call left a message, and
 * say "returned -22 (EINVAL), expected -EBADMSG: <message>" rather than two
 * bare numbers when it is not.
 */
#define assert_errno(ret, err)                                                                     \
	do {                                                                                       \
		long long r_ = (ret);                                                              \
		if (r_ != -(long long)(err))                                                       \
			fail_msg("%s returned %lld (%s), expected -%s: %s", #ret, r_,              \
				 r_ < 0 ? strerrorname_np((int)-r_) : "ok", strerrorname_np(err),  \
				 tk_errmsg());                                                     \
		assert_true(tk_errmsg()[0] != '\0');                                               \
	} while (0)

/*
 * A log handler for tests that check warnings: tk_log_set_handler(
 * tk_test_catch_warning, NULL, TK_LOG_WARN) counts them in
 * tk_test_warnings and keeps the last one's text.
 */
static unsigned int tk_test_warnings __attribute__((unused));
static char tk_test_last_warning[512] __attribute__((unused));

static inline void tk_test_catch_warning(enum tk_log_level level, const char *msg, void *ctx)
{
	(void)level;
	(void)ctx;
	tk_test_warnings++;
	snprintf(tk_test_last_warning, sizeof(tk_test_last_warning), "%s", msg);
}

/* xorshift64: a deterministic stream of test data from the seed in *@state (never 0). */
static inline uint64_t tk_test_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
