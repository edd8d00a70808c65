/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * Texts tracefs shows on x86-64 that tests and benchmarks write into .dat
 * metadata: events/header_event as it reads, and the four common fields
 * every event format opens with. Needs no test framework (bench-dat
 * includes it too).
 */
#ifndef TRACEKIT_TK_TEST_TEXTS_H
#define TRACEKIT_TK_TEST_TEXTS_H

/* events/header_event. */
static const char tk_test_header_event[] __attribute__((unused)) = "# compressed entry header\n"
								   "\ttype_len    :    5 bits\n"
								   "\ttime_delta  :   27 bits\n"
								   "\tarray       :   32 bits\n"
								   "\n"
								   "\tpadding     : type == 29\n"
								   "\ttime_extend : type == 30\n"
								   "\ttime_stamp : type == 31\n"
								   "\tdata max type_len  == 28\n";

/* The common fields' lines of an event's format file, 8 bytes in all. */
#define TK_TEST_COMMON_FIELDS                                                                      \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                     \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"             \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"

#endif
