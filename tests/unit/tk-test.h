/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Helpers shared by the cmocka unit tests. Include after <cmocka.h>.
 */
#ifndef TRACEKIT_TK_TEST_H
#define TRACEKIT_TK_TEST_H

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

#endif
