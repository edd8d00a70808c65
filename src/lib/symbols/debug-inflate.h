/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * debug-inflate: uncompressed copies of separate debug files, kept by build
 * id in the build-id cache (debug-inflate.c says why and how).
 */
#ifndef TRACEKIT_SYMBOLS_DEBUG_INFLATE_H
#define TRACEKIT_SYMBOLS_DEBUG_INFLATE_H

/*
 * tk_debug_inflated() - the copy of @debug (a debug file of build id @bid,
 * hex) with its compressed sections inflated, from @cache_dir's
 * .tk-inflated directory: the one there when its build id is @bid, else
 * made now. Returns its path (malloc'ed), or NULL when @debug has no
 * compressed section or no copy can be used (no cache, read-only, too
 * big, any error): the caller then reads @debug itself. Records no error.
 */
char *tk_debug_inflated(const char *cache_dir, const char *debug, const char *bid);

#endif
