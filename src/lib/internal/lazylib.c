// SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
/*
 * lazylib: libzstd, zlib, liblzma and libelf, opened (dlopen()) the first
 * time one of their functions is called rather than linked.
 *
 * Linked, ld.so mapped and relocated all four at the start of every
 * command: ~27 page faults (11.3 us each on the bench VM), ~40 system
 * calls and ~230 000 instructions (libzstd and liblzma are built with
 * BIND_NOW, so each binds all of its libc imports at load), ~0.4 ms that
 * `tracekit --version`, a report of an uncompressed .dat and a report of
 * a perf.data without compressed records or user symbols pay for nothing.
 * Only compressed sections and chunks (libzstd, zlib), kernel modules
 * shipped compressed (zlib, liblzma) and symbols read from ELF files
 * (libelf) need them. libtraceevent stays linked: every report parses
 * its event formats with it.
 *
 * This file defines the functions the library calls, under the
 * libraries' own names and with the prototypes of their headers (the
 * compiler checks each against its declaration), so the modules calling
 * them are written as if the library were linked. Each definition calls
 * through a table of the library's own functions, filled by dlsym() once
 * when the first of them is called (under pthread_once(), as decoding
 * threads may call at the same time); after that a call costs one load,
 * one predictable branch and one indirect call, as a PLT call did. The
 * definitions are hidden: nothing outside libtracekit binds to them.
 * The functions that free (ZSTD_free*Ctx, elf_end) return at once for
 * NULL without opening the library, because teardown calls them on paths
 * that never used it.
 *
 * A library that cannot be opened, or lacks one of the functions, ends
 * the process with one line on stderr naming it and exit status 2: it is
 * a dependency of the package (scripts/install-deps.sh), and linked, its
 * absence stopped every command before main() (ld.so's "error while
 * loading shared libraries"); most of the functions have no error value
 * of their own to return instead (crc32(), ZSTD_isError(), elf_errmsg()),
 * and a failure reported as the caller's "out of memory" or "corrupt
 * block" would name the wrong cause. Commands that never call a library
 * work without it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* zstd's headers mark their functions visible; the definitions here stay hidden. */
#define ZSTDLIB_VISIBLE
#define ZSTDERRORLIB_VISIBLE
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

struct lazylib {
	const char *soname;
	const char *what; /* what it is needed for, in the message */
	pthread_once_t once;
	bool ready;
	void *handle;
};

static void lazylib_die(const struct lazylib *lib, const char *why)
{
	fprintf(stderr, "%s: cannot load %s (needed for %s): %s\n", program_invocation_short_name,
		lib->soname, lib->what, why);
	/*
	 * Not exit(): the caller may be a decoding thread, and exit() would run
	 * the process's destructors under the threads still working.
	 */
	_exit(2);
}

/* The library's function @name, or the end of the process. */
static void *lazylib_sym(const struct lazylib *lib, const char *name)
{
	void *f = dlsym(lib->handle, name);

	if (!f) {
		char why[256];

		snprintf(why, sizeof(why), "it has no %s", name);
		lazylib_die(lib, why);
	}
	return f;
}

/*
 * X(lib, return type, name, (parameters), (arguments)) for each function
 * the library calls; F(lib, return type, name, argument type) for one that
 * frees its argument; V(...) as X for one returning void. What is not
 * listed here fails to link.
 */
#define ZSTD_CALLS(X, F, V)                                                                        \
	X(zstd, size_t, ZSTD_CCtx_setParameter, (ZSTD_CCtx * c, ZSTD_cParameter p, int v),         \
	  (c, p, v))                                                                               \
	X(zstd, size_t, ZSTD_DCtx_reset, (ZSTD_DCtx * d, ZSTD_ResetDirective r), (d, r))           \
	X(zstd, size_t, ZSTD_compress2,                                                            \
	  (ZSTD_CCtx * c, void *dst, size_t cap, const void *src, size_t n),                       \
	  (c, dst, cap, src, n))                                                                   \
	X(zstd, size_t, ZSTD_compressBound, (size_t n), (n))                                       \
	X(zstd, size_t, ZSTD_compressCCtx,                                                         \
	  (ZSTD_CCtx * c, void *dst, size_t cap, const void *src, size_t n, int level),            \
	  (c, dst, cap, src, n, level))                                                            \
	X(zstd, ZSTD_CCtx *, ZSTD_createCCtx, (void), ())                                          \
	X(zstd, ZSTD_DCtx *, ZSTD_createDCtx, (void), ())                                          \
	X(zstd, size_t, ZSTD_decompressDCtx,                                                       \
	  (ZSTD_DCtx * d, void *dst, size_t cap, const void *src, size_t n),                       \
	  (d, dst, cap, src, n))                                                                   \
	X(zstd, size_t, ZSTD_decompressStream,                                                     \
	  (ZSTD_DStream * d, ZSTD_outBuffer * out, ZSTD_inBuffer * in), (d, out, in))              \
	X(zstd, size_t, ZSTD_findFrameCompressedSize, (const void *src, size_t n), (src, n))       \
	X(zstd, ZSTD_ErrorCode, ZSTD_getErrorCode, (size_t r), (r))                                \
	X(zstd, const char *, ZSTD_getErrorName, (size_t r), (r))                                  \
	X(zstd, unsigned, ZSTD_isError, (size_t r), (r))                                           \
	X(zstd, int, ZSTD_maxCLevel, (void), ())                                                   \
	X(zstd, int, ZSTD_minCLevel, (void), ())                                                   \
	X(zstd, const char *, ZSTD_versionString, (void), ())                                      \
	F(zstd, size_t, ZSTD_freeCCtx, ZSTD_CCtx *)                                                \
	F(zstd, size_t, ZSTD_freeDCtx, ZSTD_DCtx *)

#define ZLIB_CALLS(X, F, V)                                                                        \
	X(zlib, uLong, compressBound, (uLong n), (n))                                              \
	X(zlib, uLong, crc32, (uLong crc, const Bytef *buf, uInt len), (crc, buf, len))            \
	X(zlib, int, deflate, (z_streamp s, int flush), (s, flush))                                \
	X(zlib, uLong, deflateBound, (z_streamp s, uLong n), (s, n))                               \
	X(zlib, int, deflateEnd, (z_streamp s), (s))                                               \
	X(zlib, int, deflateInit2_,                                                                \
	  (z_streamp s, int level, int method, int wbits, int memlevel, int strategy,              \
	   const char *version, int size),                                                         \
	  (s, level, method, wbits, memlevel, strategy, version, size))                            \
	X(zlib, int, deflateInit_, (z_streamp s, int level, const char *version, int size),        \
	  (s, level, version, size))                                                               \
	X(zlib, int, deflateReset, (z_streamp s), (s))                                             \
	X(zlib, int, inflate, (z_streamp s, int flush), (s, flush))                                \
	X(zlib, int, inflateEnd, (z_streamp s), (s))                                               \
	X(zlib, int, inflateInit2_, (z_streamp s, int wbits, const char *version, int size),       \
	  (s, wbits, version, size))                                                               \
	X(zlib, int, inflateInit_, (z_streamp s, const char *version, int size),                   \
	  (s, version, size))                                                                      \
	X(zlib, int, inflateReset, (z_streamp s), (s))                                             \
	X(zlib, const char *, zlibVersion, (void), ())

#define LZMA_CALLS(X, F, V)                                                                        \
	X(lzma, lzma_ret, lzma_code, (lzma_stream * s, lzma_action a), (s, a))                     \
	X(lzma, lzma_ret, lzma_stream_decoder, (lzma_stream * s, uint64_t limit, uint32_t flags),  \
	  (s, limit, flags))                                                                       \
	V(lzma, lzma_end, (lzma_stream * s), (s))

#define ELF_CALLS(X, F, V)                                                                         \
	X(elf, Elf *, elf_begin, (int fd, Elf_Cmd cmd, Elf *ref), (fd, cmd, ref))                  \
	X(elf, int, elf_compress, (Elf_Scn * s, int type, unsigned int flags), (s, type, flags))   \
	X(elf, const char *, elf_errmsg, (int err), (err))                                         \
	X(elf, unsigned int, elf_flagelf, (Elf * e, Elf_Cmd cmd, unsigned int flags),              \
	  (e, cmd, flags))                                                                         \
	X(elf, Elf_Data *, elf_getdata, (Elf_Scn * s, Elf_Data * d), (s, d))                       \
	X(elf, char *, elf_getident, (Elf * e, size_t * n), (e, n))                                \
	X(elf, int, elf_getphdrnum, (Elf * e, size_t * n), (e, n))                                 \
	X(elf, Elf_Scn *, elf_getscn, (Elf * e, size_t i), (e, i))                                 \
	X(elf, int, elf_getshdrnum, (Elf * e, size_t * n), (e, n))                                 \
	X(elf, int, elf_getshdrstrndx, (Elf * e, size_t * n), (e, n))                              \
	X(elf, Elf_Kind, elf_kind, (Elf * e), (e))                                                 \
	X(elf, Elf *, elf_memory, (char *image, size_t n), (image, n))                             \
	X(elf, size_t, elf_ndxscn, (Elf_Scn * s), (s))                                             \
	X(elf, Elf_Data *, elf_newdata, (Elf_Scn * s), (s))                                        \
	X(elf, Elf_Scn *, elf_newscn, (Elf * e), (e))                                              \
	X(elf, Elf_Scn *, elf_nextscn, (Elf * e, Elf_Scn * s), (e, s))                             \
	X(elf, Elf_Data *, elf_rawdata, (Elf_Scn * s, Elf_Data * d), (s, d))                       \
	X(elf, char *, elf_rawfile, (Elf * e, size_t * n), (e, n))                                 \
	X(elf, char *, elf_strptr, (Elf * e, size_t i, size_t off), (e, i, off))                   \
	X(elf, int64_t, elf_update, (Elf * e, Elf_Cmd cmd), (e, cmd))                              \
	X(elf, unsigned int, elf_version, (unsigned int v), (v))                                   \
	X(elf, size_t, gelf_fsize, (Elf * e, Elf_Type t, size_t n, unsigned int v), (e, t, n, v))  \
	X(elf, GElf_Chdr *, gelf_getchdr, (Elf_Scn * s, GElf_Chdr * d), (s, d))                    \
	X(elf, int, gelf_getclass, (Elf * e), (e))                                                 \
	X(elf, GElf_Ehdr *, gelf_getehdr, (Elf * e, GElf_Ehdr * d), (e, d))                        \
	X(elf, GElf_Phdr *, gelf_getphdr, (Elf * e, int i, GElf_Phdr *d), (e, i, d))               \
	X(elf, GElf_Rel *, gelf_getrel, (Elf_Data * data, int i, GElf_Rel *d), (data, i, d))       \
	X(elf, GElf_Rela *, gelf_getrela, (Elf_Data * data, int i, GElf_Rela *d), (data, i, d))    \
	X(elf, GElf_Shdr *, gelf_getshdr, (Elf_Scn * s, GElf_Shdr * d), (s, d))                    \
	X(elf, GElf_Sym *, gelf_getsym, (Elf_Data * data, int i, GElf_Sym *d), (data, i, d))       \
	X(elf, void *, gelf_newehdr, (Elf * e, int class), (e, class))                             \
	X(elf, void *, gelf_newphdr, (Elf * e, size_t n), (e, n))                                  \
	X(elf, int, gelf_update_ehdr, (Elf * e, GElf_Ehdr * s), (e, s))                            \
	X(elf, int, gelf_update_phdr, (Elf * e, int i, GElf_Phdr *s), (e, i, s))                   \
	X(elf, int, gelf_update_shdr, (Elf_Scn * s, GElf_Shdr * h), (s, h))                        \
	F(elf, int, elf_end, Elf *)

/* A library's table: one typed pointer per function, named as the function. */
#define FIELD(lib, ret, name, params, args) __typeof__(&name) name;
#define FREE_FIELD(lib, ret, name, type)    __typeof__(&name) name;
#define VOID_FIELD(lib, name, params, args) __typeof__(&name) name;
/* Its loader: open the library, resolve every function, or end the process. */
#define RESOLVE(lib, ret, name, params, args)                                                      \
	lib##_api.name = (__typeof__(&name))lazylib_sym(&lib##_lib, #name);
#define FREE_RESOLVE(lib, ret, name, type)                                                         \
	lib##_api.name = (__typeof__(&name))lazylib_sym(&lib##_lib, #name);
#define VOID_RESOLVE(lib, name, params, args)                                                      \
	lib##_api.name = (__typeof__(&name))lazylib_sym(&lib##_lib, #name);
/* Its functions, under their own names. */
#define CALL(lib, ret, name, params, args)                                                         \
	ret name params                                                                            \
	{                                                                                          \
		return lib##_get()->name args;                                                     \
	}
#define FREE_CALL(lib, ret, name, type)                                                            \
	ret name(type p)                                                                           \
	{                                                                                          \
		return p ? lib##_get()->name(p) : 0;                                               \
	}
#define VOID_CALL(lib, name, params, args)                                                         \
	void name params                                                                           \
	{                                                                                          \
		lib##_get()->name args;                                                            \
	}

#define LAZYLIB(lib, SONAME, WHAT, CALLS)                                                          \
	static struct lazylib lib##_lib = {                                                        \
		.soname = SONAME, .what = WHAT, .once = PTHREAD_ONCE_INIT};                        \
	static struct {                                                                            \
		CALLS(FIELD, FREE_FIELD, VOID_FIELD)                                               \
	} lib##_api;                                                                               \
	static void lib##_resolve(void)                                                            \
	{                                                                                          \
		lib##_lib.handle = dlopen(SONAME, RTLD_NOW | RTLD_LOCAL);                          \
		if (!lib##_lib.handle)                                                             \
			lazylib_die(&lib##_lib, dlerror());                                        \
		CALLS(RESOLVE, FREE_RESOLVE, VOID_RESOLVE)                                         \
		/* The handle stays open: the functions are used until the program ends. */        \
		__atomic_store_n(&lib##_lib.ready, true, __ATOMIC_RELEASE);                        \
	}                                                                                          \
	static inline __typeof__(&lib##_api) lib##_get(void)                                       \
	{                                                                                          \
		if (__builtin_expect(!__atomic_load_n(&lib##_lib.ready, __ATOMIC_ACQUIRE), 0))     \
			pthread_once(&lib##_lib.once, lib##_resolve);                              \
		return &lib##_api;                                                                 \
	}                                                                                          \
	CALLS(CALL, FREE_CALL, VOID_CALL)

LAZYLIB(zstd, "libzstd.so.1", "zstd-compressed data", ZSTD_CALLS)
LAZYLIB(zlib, "libz.so.1", "zlib-compressed data", ZLIB_CALLS)
LAZYLIB(lzma, "liblzma.so.5", "xz-compressed kernel modules", LZMA_CALLS)
LAZYLIB(elf, "libelf.so.1", "reading ELF files", ELF_CALLS)
