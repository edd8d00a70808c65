// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/* A stand-in for a kernel module's code (see README.md: usbdemo.ko, usbdemo-other.ko). */
int demo_counter;

#ifdef OTHER
/* usbdemo-other.ko: another build of the module, its code moved on. */
int demo_other(int a)
{
	return a + demo_counter;
}
#endif

static __attribute__((noinline)) int demo_helper(int x)
{
	return x * 3 + demo_counter;
}

int demo_probe(int a)
{
	int s = 0;

	for (int i = 0; i < a; i++)
		s += demo_helper(i);
	return s;
}

int demo_xmit(int a, int b)
{
	return demo_probe(a) + b;
}

void demo_poll(void)
{
	demo_counter += demo_xmit(demo_counter, 2);
}

__attribute__((section(".init.text"))) int demo_init(void)
{
	demo_poll();
	return 0;
}
