// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * perfdata-damage: the warning lines report, dump and convert print for
 * the damaged regions a salvaging perf.data reader met (issue 21).
 *
 * One line per region on stderr, in the form every command shares for
 * damaged input:
 *   tracekit CMD: FILE: offset 0xOFF: WHAT (skipped N bytes, M events lost)
 * with "events lost unknown" when the reader cannot count them. The
 * library lists the regions (tk_perfdata_damage_get()) and never prints;
 * the commands print them after their output, so stdout stays what could
 * be read and the exit status says that something was not.
 */
#include <inttypes.h>
#include <stdio.h>

#include <tracekit/perfdata.h>

#include "cli.h"

int cli_perf_damage(const char *path, const struct tk_perfdata *pd)
{
	size_t n = tk_perfdata_damage_count(pd);

	for (size_t i = 0; i < n; i++) {
		const struct tk_perfdata_damage *d = tk_perfdata_damage_get(pd, i);

		fprintf(stderr,
			"tracekit %s: %s: offset 0x%" PRIx64 ": %s (skipped %" PRIu64 " bytes, ",
			cli_cmd_name, path, d->offset, d->what, d->skipped);
		if (d->lost_known)
			fprintf(stderr, "%" PRIu64 " events lost)\n", d->lost);
		else
			fputs("events lost unknown)\n", stderr);
	}
	return n ? CLI_FAIL : CLI_OK;
}
