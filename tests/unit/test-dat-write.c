// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/* stub: being written */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

static void test_placeholder(void **state)
{
	(void)state;
	skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_placeholder) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
