// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * Names of .dat section and option ids, for dump output and messages.
 */
#include "dat-internal.h"

TK_API const char *tk_dat_section_name(uint16_t id)
{
	switch (id) {
	case TK_DAT_SECTION_OPTIONS:
		return "OPTIONS";
	case TK_DAT_SECTION_FLYRECORD:
		return "BUFFER_FLYRECORD";
	case TK_DAT_SECTION_STRINGS:
		return "STRINGS";
	case TK_DAT_SECTION_HEADER_INFO:
		return "HEADER_INFO";
	case TK_DAT_SECTION_FTRACE_EVENTS:
		return "FTRACE_EVENTS";
	case TK_DAT_SECTION_EVENT_FORMATS:
		return "EVENT_FORMATS";
	case TK_DAT_SECTION_KALLSYMS:
		return "KALLSYMS";
	case TK_DAT_SECTION_PRINTK:
		return "PRINTK";
	case TK_DAT_SECTION_CMDLINES:
		return "CMDLINES";
	case TK_DAT_SECTION_BUFFER_TEXT:
		return "BUFFER_TEXT";
	case 23: /* trace-cmd 3.4+ */
		return "BTF_FILE";
	case 25:
		return "MODULES_FILE";
	default:
		return "UNKNOWN";
	}
}

TK_API const char *tk_dat_option_name(uint16_t id)
{
	static const char *const names[] = {
		"DONE",		"DATE",	       "CPUSTAT",	"BUFFER",	 "TRACECLOCK",
		"UNAME",	"HOOK",	       "OFFSET",	"CPUCOUNT",	 "VERSION",
		"PROCMAPS",	"TRACEID",     "TIME_SHIFT",	"GUEST",	 "TSC2NSEC",
		"STRINGS",	"HEADER_INFO", "FTRACE_EVENTS", "EVENT_FORMATS", "KALLSYMS",
		"PRINTK",	"CMDLINES",    "BUFFER_TEXT",	"BTF_FILE",	 "LAST_BOOT_INFO",
		"MODULES_FILE",
	};

	return id < sizeof(names) / sizeof(names[0]) ? names[id] : "UNKNOWN";
}
