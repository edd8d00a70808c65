/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * ELF facts tracekit needs for its build-id cache, uprobes and symbols:
 * the GNU build id, the symbol tables, the SystemTap SDT notes, and a
 * sorted symbol table for address lookups. Built on libelf; every length
 * and offset read from the file is checked, and a malformed file is an
 * error naming the file and the offset.
 */
#ifndef TRACEKIT_ELF_H
#define TRACEKIT_ELF_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest build id kept (SHA-1); longer ones are cut, as perf does. */
#define TK_BUILD_ID_MAX 20
/** Size of a buffer holding a build id as lowercase hex with its NUL. */
#define TK_BUILD_ID_HEX_MAX (2 * TK_BUILD_ID_MAX + 1)

struct tk_elf;

/**
 * tk_elf_open() - open an ELF file
 * @path: file name (kept for error messages)
 *
 * Context: blocking (opens and maps the file); the handle is for one thread.
 * Return: handle for tk_elf_close(), or NULL with errno set (ENOENT, EACCES,
 * ENOEXEC when the file is not ELF, EBADMSG when its headers are corrupt
 * or the file is cut short: its section or program header table runs past
 * its end, and the message names the file, the table's offset and says
 * "truncated") and tk_errmsg() naming the file.
 */
TK_API struct tk_elf *tk_elf_open(const char *path);

/**
 * tk_elf_open_mem() - parse an ELF image held in memory
 * @data, @len: the image; copied, so the caller may free it at once
 * @name: name used in error messages (e.g. "fuzz-input")
 * Return: as tk_elf_open().
 */
TK_API struct tk_elf *tk_elf_open_mem(const void *data, size_t len, const char *name);

/**
 * tk_elf_open_unmapped() - open an ELF file that is read on demand, never mapped
 * @path: file name (kept for error messages)
 *
 * For ELF core files such as /proc/kcore, which cannot be mapped and whose
 * size is the kernel's address space: only the ELF header is read at open;
 * program headers, notes and bytes are read with pread() when asked for.
 * Everything else works as on a tk_elf_open() handle, each access costing
 * a read. The file's type is not checked: see tk_elf_header().
 * Context: blocking; the handle is for one thread.
 * Return: as tk_elf_open().
 */
TK_API struct tk_elf *tk_elf_open_unmapped(const char *path);

/** tk_elf_close() - free the handle and everything borrowed from it. NULL is accepted. */
TK_API void tk_elf_close(struct tk_elf *elf);

/** Name given at open; borrowed until close. */
TK_API const char *tk_elf_name(const struct tk_elf *elf);

/** True for ELFCLASS64 files. */
TK_API bool tk_elf_is_64(const struct tk_elf *elf);

/**
 * tk_elf_build_id() - the GNU build id (NT_GNU_BUILD_ID note)
 * @id:  receives up to TK_BUILD_ID_MAX bytes
 * @cap: size of @id
 *
 * Looks in .note.gnu.build-id, then .notes (vmlinux), then .note (vdso),
 * then in any other SHT_NOTE section, as perf does.
 * Return: length of the id (1..TK_BUILD_ID_MAX), -ENOENT when the file has
 * none, -EBADMSG for a malformed note (message names file and offset).
 */
TK_API int tk_elf_build_id(struct tk_elf *elf, uint8_t *id, size_t cap);

/**
 * tk_elf_notes_build_id() - find the build id in a raw note area
 * @notes, @len: a sequence of Elf_Nhdr-framed notes (e.g. /sys/kernel/notes)
 * @big:   true when the notes are big-endian
 * @name:  file name for messages
 * @base_offset: file offset of @notes[0], for messages
 * @id, @cap: as tk_elf_build_id()
 * Return: as tk_elf_build_id().
 */
TK_API int tk_elf_notes_build_id(const void *notes, size_t len, bool big, const char *name,
				 uint64_t base_offset, uint8_t *id, size_t cap);

/**
 * tk_elf_kernel_build_id() - build id of the running kernel (/sys/kernel/notes)
 * Return: as tk_elf_build_id().
 */
TK_API int tk_elf_kernel_build_id(uint8_t *id, size_t cap);

/**
 * tk_elf_build_id_hex() - format a build id as lowercase hex
 * @out: at least 2 * @len + 1 bytes (TK_BUILD_ID_HEX_MAX always fits)
 * Return: number of characters written (without the NUL), -EINVAL when
 * @len is 0 or larger than TK_BUILD_ID_MAX, or @out is too small.
 */
TK_API int tk_elf_build_id_hex(const uint8_t *id, size_t len, char *out, size_t cap);

/** Which symbol table tk_elf_symbols() reads. */
enum tk_elf_symtab_kind {
	TK_ELF_SYMTAB, /* .symtab only */
	TK_ELF_DYNSYM, /* .dynsym only */
	TK_ELF_ANY,    /* .symtab when present, else .dynsym (what perf uses) */
};

/** One symbol-table entry; the name is borrowed until tk_elf_close(). */
struct tk_elf_symbol {
	const char *name;
	uint64_t value; /* st_value: link-time virtual address */
	uint64_t size;
	uint16_t shndx; /* section index (SHN_UNDEF 0 for undefined) */
	uint8_t type;	/* STT_* */
	uint8_t bind;	/* STB_* */
};

/**
 * tk_elf_symbols() - the entries of a symbol table, in table order
 * @kind:  which table
 * @syms:  receives a borrowed array (valid until close); entry 0 (the
 *         null symbol) is left out
 * @count: receives its length
 * Return: 0, -ENOENT when the table is absent, -EBADMSG for a table or
 * string table outside the file, -ENOMEM.
 */
TK_API int tk_elf_symbols(struct tk_elf *elf, enum tk_elf_symtab_kind kind,
			  const struct tk_elf_symbol **syms, size_t *count);

/** One SystemTap SDT probe (a .note.stapsdt note); strings borrowed until close. */
struct tk_elf_sdt {
	const char *provider;
	const char *name;
	const char *args;     /* "-4@%edi -8@%rsi", "" when none */
	uint64_t pc;	      /* as stored: link-time address of the probe */
	uint64_t base;	      /* as stored: link-time address of .stapsdt.base */
	uint64_t semaphore;   /* as stored: address of the semaphore, 0 when none */
	uint64_t offset;      /* file offset of the probe: pc + sh_offset(.stapsdt.base) - base */
	uint64_t sem_offset;  /* file offset of the semaphore (uprobe ref_ctr), 0 when none */
	uint64_t note_offset; /* file offset of the note, for messages */
};

/**
 * tk_elf_sdt_notes() - the SDT probes of the file, in note order
 *
 * Offsets are adjusted as perf does: the probe by the .stapsdt.base
 * section (which makes prelinked images right), the semaphore by the
 * .probes section's address-to-offset delta.
 * Return: 0 (a file without .note.stapsdt has @count 0), -EBADMSG for a
 * malformed note (message names file and offset), -ENOMEM.
 */
TK_API int tk_elf_sdt_notes(struct tk_elf *elf, const struct tk_elf_sdt **notes, size_t *count);

/**
 * tk_elf_sdt_parse() - parse a raw .note.stapsdt area (fuzzing, tests)
 * @notes, @len, @big, @is64: the section contents and the file's layout
 * @name, @base_offset: for messages
 * @fn: called per note with the note filled in except @offset and
 *      @sem_offset (which need the section headers); strings borrowed
 *      from @notes are NUL-terminated within it
 * Return: number of notes, or -EBADMSG / the first negative @fn result.
 */
typedef int (*tk_elf_sdt_fn)(const struct tk_elf_sdt *note, void *ctx);
TK_API int tk_elf_sdt_parse(const void *notes, size_t len, bool big, bool is64, const char *name,
			    uint64_t base_offset, tk_elf_sdt_fn fn, void *ctx);

/**
 * tk_elf_vaddr_to_offset() - file offset of a virtual address (via PT_LOAD)
 * Return: 0 and *@offset, or -ENOENT when no loadable segment holds @vaddr.
 */
TK_API int tk_elf_vaddr_to_offset(struct tk_elf *elf, uint64_t vaddr, uint64_t *offset);

/**
 * tk_elf_offset_to_vaddr() - virtual address of a file offset (via PT_LOAD)
 * Return: 0 and *@vaddr, or -ENOENT when no loadable segment maps @offset.
 */
TK_API int tk_elf_offset_to_vaddr(struct tk_elf *elf, uint64_t offset, uint64_t *vaddr);

/** A loadable segment (PT_LOAD). */
struct tk_elf_segment {
	uint64_t offset; /* p_offset */
	uint64_t filesz; /* p_filesz */
	uint64_t vaddr;	 /* p_vaddr */
	uint64_t memsz;	 /* p_memsz */
	uint32_t flags;	 /* PF_R/PF_W/PF_X */
};

/** The ELF header's facts that say what a file is and where its program headers lie. */
struct tk_elf_header {
	uint8_t ident[16];  /* e_ident: class, byte order, version, OS ABI */
	uint16_t type;	    /* e_type: ET_EXEC, ET_DYN, ET_CORE... */
	uint16_t machine;   /* e_machine */
	uint64_t phoff;	    /* e_phoff */
	uint16_t phentsize; /* e_phentsize */
	uint32_t phnum;	    /* number of program headers (extended numbering resolved) */
};

/**
 * tk_elf_header() - the ELF header of an open file
 * @out: receives it
 * Context: the handle's thread.
 * Return: 0, or -EBADMSG (the message names the file).
 */
TK_API int tk_elf_header(struct tk_elf *elf, struct tk_elf_header *out);

/** A program header of any type. */
struct tk_elf_phdr {
	uint32_t type;	 /* p_type: PT_LOAD, PT_NOTE... */
	uint32_t flags;	 /* p_flags */
	uint64_t offset; /* p_offset */
	uint64_t vaddr;	 /* p_vaddr */
	uint64_t paddr;	 /* p_paddr */
	uint64_t filesz; /* p_filesz */
	uint64_t memsz;	 /* p_memsz */
	uint64_t align;	 /* p_align */
};

/**
 * tk_elf_program_headers() - every program header, in table order
 * @out, @cap: receive up to @cap headers (@out may be NULL when @cap is 0)
 *
 * The values are the file's, unchecked: a segment may claim bytes past
 * the end of the file, which tk_elf_read() then refuses.
 * Context: the handle's thread; blocking on an unmapped handle.
 * Return: the number of program headers (may exceed @cap), or -EBADMSG.
 */
TK_API int tk_elf_program_headers(struct tk_elf *elf, struct tk_elf_phdr *out, size_t cap);

/** tk_elf_size() - the file's size in bytes (for /proc/kcore: what stat() says). */
TK_API uint64_t tk_elf_size(const struct tk_elf *elf);

/**
 * tk_elf_read() - copy bytes of the file
 * @offset: file offset of the first byte
 * @buf, @len: where to, how many
 *
 * Context: the handle's thread; blocking.
 * Return: 0; -EBADMSG when the bytes run past the end of the file (the
 * message names the file and the offset where it ends); -errno of a
 * failed read, with the file and offset in the message.
 */
TK_API int tk_elf_read(struct tk_elf *elf, uint64_t offset, void *buf, size_t len);

/** One ELF note; name and desc are borrowed for the callback only. */
struct tk_elf_note {
	uint32_t type;	     /* n_type */
	uint32_t namesz;     /* n_namesz, NUL included */
	uint32_t descsz;     /* n_descsz */
	const char *name;    /* namesz bytes */
	const uint8_t *desc; /* descsz bytes */
	uint64_t offset;     /* file offset of the note's header */
};

/** Called per note; return 0 to go on, anything else to stop with that value. */
typedef int (*tk_elf_note_fn)(const struct tk_elf_note *note, void *ctx);

/**
 * tk_elf_segment_notes() - walk the notes of a PT_NOTE segment
 * @seg: a program header from tk_elf_program_headers()
 * @max_bytes: the largest segment to read (larger is -EFBIG)
 * @fn, @ctx: called for each note, in file order
 *
 * Notes in segments are 4-byte aligned (the kernel's /proc/kcore and
 * vmcore write them so); the last one may lack its padding.
 * Context: the handle's thread; blocking; allocates the segment's bytes.
 * Return: what @fn returned to stop, else 0; -EBADMSG for a malformed note
 * or a segment outside the file (file and offset in the message);
 * -EINVAL when @seg is not PT_NOTE; -EFBIG; -ENOMEM.
 */
TK_API int tk_elf_segment_notes(struct tk_elf *elf, const struct tk_elf_phdr *seg,
				uint64_t max_bytes, tk_elf_note_fn fn, void *ctx);

/**
 * tk_elf_segments() - the PT_LOAD segments, in program-header order
 * @out, @cap: receive up to @cap segments (@out may be NULL when @cap is 0)
 * Return: the number of PT_LOAD segments (may exceed @cap), or -EBADMSG.
 */
TK_API int tk_elf_segments(struct tk_elf *elf, struct tk_elf_segment *out, size_t cap);

/*
 * A symbol table sorted for lookups, holding the symbols perf 6.1 would
 * show: functions and objects, labels (named STT_NOTYPE symbols of code
 * sections, such as ld.so's _start), and "NAME@plt" entries synthesized
 * from .rela.plt for the .plt; C++ names demangled as perf prints them by
 * default (no parameters or return type: "ns::Widget::twice"); at one
 * address the symbol perf keeps; each with a size (a size-0 symbol
 * extends to the next one, the last one to the end of the next page).
 * Owns its strings, so it outlives the tk_elf it came from.
 *
 * Demangling loads libstdc++.so.6 with dlopen() at first need and uses its
 * __cxa_demangle(); without it C++ names stay mangled.
 */
struct tk_elf_symtab;

/**
 * tk_elf_symtab_new_elf() - sorted table of @elf's symbols (.symtab, else .dynsym) and PLT entries
 * Context: may dlopen() libstdc++ once per process (thread-safe).
 * Return: table for tk_elf_symtab_free(), or NULL with errno (ENOENT when the
 * file has no symbols, EBADMSG for a symbol table outside the file or
 * malformed, ENOMEM).
 */
TK_API struct tk_elf_symtab *tk_elf_symtab_new_elf(struct tk_elf *elf);

/**
 * tk_elf_symtab_new_dso() - sorted table of a DSO whose symbols may live elsewhere
 * @syms:    the file to read symbols from: the binary, or its separate
 *           debug file (perf's choice of symbol source)
 * @kind:    which table of @syms: TK_ELF_ANY for .symtab, else .dynsym
 * @runtime: the binary itself, whose .plt and .rela.plt name the PLT
 *           entries (a debug file has no bytes for them), or NULL for none
 *
 * tk_elf_symtab_new_elf(elf) is tk_elf_symtab_new_dso(elf, TK_ELF_ANY, elf).
 * Context: as tk_elf_symtab_new_elf().
 * Return: as tk_elf_symtab_new_elf(); -EINVAL (errno) for a bad @kind.
 */
TK_API struct tk_elf_symtab *
tk_elf_symtab_new_dso(struct tk_elf *syms, enum tk_elf_symtab_kind kind, struct tk_elf *runtime);

/**
 * tk_elf_symtab_new_kallsyms() - sorted table from /proc/kallsyms text
 * @text, @len: "ADDR TYPE NAME [module]" lines; malformed lines are errors
 * @name: for messages
 * Return: as tk_elf_symtab_new_elf().
 */
TK_API struct tk_elf_symtab *tk_elf_symtab_new_kallsyms(const char *text, size_t len,
							const char *name);

/**
 * tk_elf_symtab_new_perfmap() - sorted table from a JIT's /tmp/perf-PID.map text
 * @text, @len: lines "START SIZE NAME" (hex numbers, no 0x), as perf reads
 *        them; lines too short for a name are skipped
 * @name: the file, for messages
 * Symbols keep their sizes (an address past a symbol's end has none) and
 * are keyed by the process address (a JIT map is not a file).
 * Return: as tk_elf_symtab_new_elf().
 */
TK_API struct tk_elf_symtab *tk_elf_symtab_new_perfmap(const char *text, size_t len,
						       const char *name);

/** tk_elf_symtab_free() - NULL is accepted. */
TK_API void tk_elf_symtab_free(struct tk_elf_symtab *st);

/** Number of symbols in the table. */
TK_API size_t tk_elf_symtab_count(const struct tk_elf_symtab *st);

/**
 * tk_elf_symtab_lookup() - the symbol holding @addr (binary search)
 * @addr:   link-time virtual address (for kallsyms: kernel address)
 * @offset: receives @addr minus the symbol's start (may be NULL)
 * @start:  receives the symbol's start (may be NULL)
 * Context: the table is read-only: any number of threads may look up.
 * Return: borrowed name (until tk_elf_symtab_free()), or NULL when no symbol
 * covers @addr.
 */
TK_API const char *tk_elf_symtab_lookup(const struct tk_elf_symtab *st, uint64_t addr,
					uint64_t *offset, uint64_t *start);

#ifdef __cplusplus
}
#endif
#endif
