/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
#ifndef TRACEKIT_TRACEKIT_H
#define TRACEKIT_TRACEKIT_H

#include <tracekit/common.h>
#include <tracekit/version.h>
#include <tracekit/codec.h>
#include <tracekit/page.h>
#include <tracekit/host.h>
#include <tracekit/tracedata.h>
#include <tracekit/dat.h>
#include <tracekit/ring.h>
#include <tracekit/appevent.h>
#include <tracekit/tracefs.h>
#include <tracekit/record.h>
#include <tracekit/flight.h>
#include <tracekit/outbuf.h>
#include <tracekit/event.h>
#include <tracekit/report.h>
#include <tracekit/perfdata.h>
#include <tracekit/elf.h>
#include <tracekit/symbolizer.h>
#include <tracekit/cache.h>
#include <tracekit/perfrecord.h>
#include <tracekit/output.h>
#include <tracekit/command.h>
#include <tracekit/convert.h>
#include <tracekit/filekind.h>
#include <tracekit/analyze.h>
#include <tracekit/tables.h>
#include <tracekit/pftrace.h>

#endif
