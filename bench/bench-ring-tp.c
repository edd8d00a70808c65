// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * The probe of bench-ring's LTTng-UST tracepoint: this file instantiates
 * the provider of bench-ring-tp.h (probes and tracepoint definitions), so
 * bench-ring.c only includes the header and calls lttng_ust_tracepoint().
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "bench-ring-tp.h"
