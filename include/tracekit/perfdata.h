/* SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause */
/*
 * perfdata: the perf.data file of Linux perf ("PERFILE2"), as perf 6.1
 * reads and writes it: file mode and pipe mode.
 *
 * Reader: tk_perfdata_open() parses the header, the attrs with their ids
 * and every feature section (pipe mode: the HEADER_ATTR, HEADER_FEATURE and
 * HEADER_TRACING_DATA records that open the stream). Records are then
 * streamed with tk_perfdata_next() with bounded memory, COMPRESSED (zstd)
 * records decompressed on the fly. A file whose recorder was killed (data
 * size 0 or past the end of the file) is read up to its last complete
 * record, with a warning.
 *
 * Writer: writes a file front to back: ids, attrs, a provisional header
 * whose data size is kept current at every flush and whose feature bitmap
 * stays zero until the feature sections exist, the records, and at finish
 * the feature table with its payloads. tk_perfdata_writer_open_append() reopens
 * an existing file to add a recording after its data.
 *
 * Layout facts: shared/specs/perfdata.md. Files are read in host byte
 * order only (perf writes host order; a file from a machine of the other
 * byte order is refused with ENOTSUP). Offsets and sizes are uint64_t.
 */
#ifndef TRACEKIT_PERFDATA_H
#define TRACEKIT_PERFDATA_H

#include <tracekit/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PERF_RECORD_* (kernel, 1..21) and perf's user-space types (64..82). */
enum tk_perf_record_type {
	TK_PERF_RECORD_MMAP = 1,
	TK_PERF_RECORD_LOST = 2,
	TK_PERF_RECORD_COMM = 3,
	TK_PERF_RECORD_EXIT = 4,
	TK_PERF_RECORD_THROTTLE = 5,
	TK_PERF_RECORD_UNTHROTTLE = 6,
	TK_PERF_RECORD_FORK = 7,
	TK_PERF_RECORD_READ = 8,
	TK_PERF_RECORD_SAMPLE = 9,
	TK_PERF_RECORD_MMAP2 = 10,
	TK_PERF_RECORD_AUX = 11,
	TK_PERF_RECORD_ITRACE_START = 12,
	TK_PERF_RECORD_LOST_SAMPLES = 13,
	TK_PERF_RECORD_SWITCH = 14,
	TK_PERF_RECORD_SWITCH_CPU_WIDE = 15,
	TK_PERF_RECORD_NAMESPACES = 16,
	TK_PERF_RECORD_KSYMBOL = 17,
	TK_PERF_RECORD_BPF_EVENT = 18,
	TK_PERF_RECORD_CGROUP = 19,
	TK_PERF_RECORD_TEXT_POKE = 20,
	TK_PERF_RECORD_AUX_OUTPUT_HW_ID = 21,
	TK_PERF_RECORD_HEADER_ATTR = 64,
	TK_PERF_RECORD_HEADER_EVENT_TYPE = 65,
	TK_PERF_RECORD_HEADER_TRACING_DATA = 66,
	TK_PERF_RECORD_HEADER_BUILD_ID = 67,
	TK_PERF_RECORD_FINISHED_ROUND = 68,
	TK_PERF_RECORD_ID_INDEX = 69,
	TK_PERF_RECORD_AUXTRACE_INFO = 70,
	TK_PERF_RECORD_AUXTRACE = 71,
	TK_PERF_RECORD_AUXTRACE_ERROR = 72,
	TK_PERF_RECORD_THREAD_MAP = 73,
	TK_PERF_RECORD_CPU_MAP = 74,
	TK_PERF_RECORD_STAT_CONFIG = 75,
	TK_PERF_RECORD_STAT = 76,
	TK_PERF_RECORD_STAT_ROUND = 77,
	TK_PERF_RECORD_EVENT_UPDATE = 78,
	TK_PERF_RECORD_TIME_CONV = 79,
	TK_PERF_RECORD_HEADER_FEATURE = 80,
	TK_PERF_RECORD_COMPRESSED = 81,
	TK_PERF_RECORD_FINISHED_INIT = 82,
	TK_PERF_RECORD_COMPRESSED2 = 83, /* perf 6.16: COMPRESSED with a data size, 8-aligned */
};

/* Feature bits (HEADER_* of perf 6.1); 32 = HEADER_LAST_FEATURE. */
enum tk_perf_feature {
	TK_PERF_FEAT_TRACING_DATA = 1,
	TK_PERF_FEAT_BUILD_ID = 2,
	TK_PERF_FEAT_HOSTNAME = 3,
	TK_PERF_FEAT_OSRELEASE = 4,
	TK_PERF_FEAT_VERSION = 5,
	TK_PERF_FEAT_ARCH = 6,
	TK_PERF_FEAT_NRCPUS = 7,
	TK_PERF_FEAT_CPUDESC = 8,
	TK_PERF_FEAT_CPUID = 9,
	TK_PERF_FEAT_TOTAL_MEM = 10,
	TK_PERF_FEAT_CMDLINE = 11,
	TK_PERF_FEAT_EVENT_DESC = 12,
	TK_PERF_FEAT_CPU_TOPOLOGY = 13,
	TK_PERF_FEAT_NUMA_TOPOLOGY = 14,
	TK_PERF_FEAT_BRANCH_STACK = 15,
	TK_PERF_FEAT_PMU_MAPPINGS = 16,
	TK_PERF_FEAT_GROUP_DESC = 17,
	TK_PERF_FEAT_AUXTRACE = 18,
	TK_PERF_FEAT_STAT = 19,
	TK_PERF_FEAT_CACHE = 20,
	TK_PERF_FEAT_SAMPLE_TIME = 21,
	TK_PERF_FEAT_MEM_TOPOLOGY = 22,
	TK_PERF_FEAT_CLOCKID = 23,
	TK_PERF_FEAT_DIR_FORMAT = 24,
	TK_PERF_FEAT_BPF_PROG_INFO = 25,
	TK_PERF_FEAT_BPF_BTF = 26,
	TK_PERF_FEAT_COMPRESSED = 27,
	TK_PERF_FEAT_CPU_PMU_CAPS = 28,
	TK_PERF_FEAT_CLOCK_DATA = 29,
	TK_PERF_FEAT_HYBRID_TOPOLOGY = 30,
	TK_PERF_FEAT_PMU_CAPS = 31,
	TK_PERF_FEAT_LAST = 32,
};

/* perf_event_attr.sample_type bits. */
enum tk_perf_sample_bits {
	TK_PERF_SAMPLE_IP = 1u << 0,
	TK_PERF_SAMPLE_TID = 1u << 1,
	TK_PERF_SAMPLE_TIME = 1u << 2,
	TK_PERF_SAMPLE_ADDR = 1u << 3,
	TK_PERF_SAMPLE_READ = 1u << 4,
	TK_PERF_SAMPLE_CALLCHAIN = 1u << 5,
	TK_PERF_SAMPLE_ID = 1u << 6,
	TK_PERF_SAMPLE_CPU = 1u << 7,
	TK_PERF_SAMPLE_PERIOD = 1u << 8,
	TK_PERF_SAMPLE_STREAM_ID = 1u << 9,
	TK_PERF_SAMPLE_RAW = 1u << 10,
	TK_PERF_SAMPLE_BRANCH_STACK = 1u << 11,
	TK_PERF_SAMPLE_REGS_USER = 1u << 12,
	TK_PERF_SAMPLE_STACK_USER = 1u << 13,
	TK_PERF_SAMPLE_WEIGHT = 1u << 14,
	TK_PERF_SAMPLE_DATA_SRC = 1u << 15,
	TK_PERF_SAMPLE_IDENTIFIER = 1u << 16,
	TK_PERF_SAMPLE_TRANSACTION = 1u << 17,
	TK_PERF_SAMPLE_REGS_INTR = 1u << 18,
	TK_PERF_SAMPLE_PHYS_ADDR = 1u << 19,
	TK_PERF_SAMPLE_AUX = 1u << 20,
	TK_PERF_SAMPLE_CGROUP = 1u << 21,
	TK_PERF_SAMPLE_DATA_PAGE_SIZE = 1u << 22,
	TK_PERF_SAMPLE_CODE_PAGE_SIZE = 1u << 23,
	TK_PERF_SAMPLE_WEIGHT_STRUCT = 1u << 24,
};

/* Bits of tk_perf_attr.flags used by this module. */
#define TK_PERF_ATTR_FLAG_SAMPLE_ID_ALL (1ull << 18)
#define TK_PERF_ATTR_FLAG_USE_CLOCKID	(1ull << 25)

/* perf_event_attr as 6.1 knows it (PERF_ATTR_SIZE_VER7, 128 bytes), unpacked. */
struct tk_perf_attr {
	uint32_t type;		/* 0 HW, 1 SW, 2 TRACEPOINT, ... */
	uint32_t size;		/* as stored; the writer always stores 128 */
	uint64_t config;	/* tracepoint: the format's ID */
	uint64_t sample_period; /* or sample_freq when flags bit 10 (freq) is set */
	uint64_t sample_type;
	uint64_t read_format;
	uint64_t flags; /* the bitfield word at offset 40 */
	uint32_t wakeup_events;
	uint32_t bp_type;
	uint64_t config1;
	uint64_t config2;
	uint64_t branch_sample_type;
	uint64_t sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack;
	uint32_t aux_sample_size;
	uint64_t sig_data;
};

/** An event of the file: its attr, kernel ids and name. */
struct tk_perfdata_evsel {
	struct tk_perf_attr attr;
	const uint64_t *ids; /* borrowed until close */
	uint64_t nr_ids;
	const char *name;     /* from EVENT_DESC, else NULL */
	uint64_t attr_offset; /* file offset of its perf_file_attr (pipe: of the record) */
	uint64_t ids_offset;  /* file offset of its id array (0 when none) */
};

/** One feature section as found in the file. */
struct tk_perfdata_feature {
	uint32_t id;	 /* enum tk_perf_feature; may be >= 32 (unknown) */
	uint64_t offset; /* file offset of the payload */
	uint64_t size;
	const void *data; /* payload, borrowed until close (NULL when not loaded) */
	bool valid;	  /* payload parsed without error */
};

/** A build id entry (BUILD_ID feature or HEADER_BUILD_ID record). */
struct tk_perfdata_build_id {
	int32_t pid;   /* machine pid: -1 host */
	uint16_t misc; /* cpumode | 0x8000 when size is valid */
	uint8_t size;  /* bytes of id that count */
	uint8_t id[20];
	const char *filename; /* borrowed until close */
};

/** A CPU's ids in CPU_TOPOLOGY, indexed by CPU number. */
struct tk_perfdata_cpu {
	uint32_t core_id;
	uint32_t socket_id;
	uint32_t die_id; /* 0 when the section has no die part */
};

/**
 * CPU_TOPOLOGY: the sibling lists (cpu-list strings such as "0-3,8-11", one
 * per package, die or core) and the per-CPU ids. Files from old perf stop
 * after the thread lists (nr_cpus 0) or after the per-CPU core and socket
 * ids (has_dies false).
 */
struct tk_perfdata_cpu_topology {
	uint32_t nr_sockets; /* perf's "sibling sockets": CPUs sharing a package */
	const char *const *sockets;
	uint32_t nr_dies; /* "sibling dies" */
	const char *const *dies;
	uint32_t nr_threads; /* "sibling threads": CPUs sharing a core */
	const char *const *threads;
	bool has_dies;	  /* the die lists and die ids are present */
	uint32_t nr_cpus; /* per-CPU ids: NRCPUS' avail count, 0 when absent */
	const struct tk_perfdata_cpu *cpus;
};

/** A NUMA_TOPOLOGY node. */
struct tk_perfdata_numa_node {
	uint32_t node;
	uint64_t mem_total_kb, mem_free_kb;
	const char *cpus; /* cpu list, e.g. "0-1" */
};

/** A GROUP_DESC entry: events leader_idx .. leader_idx + nr_members - 1. */
struct tk_perfdata_group {
	const char *name;    /* "{anon_group}" when the group has no name */
	uint32_t leader_idx; /* attr index of the leader */
	uint32_t nr_members; /* the leader included */
};

/** An AUXTRACE index entry: an AUXTRACE record and its data in the file. */
struct tk_perfdata_auxtrace_entry {
	uint64_t file_offset;
	uint64_t size;
};

/** One capability of a PMU, from its sysfs caps/ directory ("branches", "32"). */
struct tk_perfdata_pmu_cap {
	const char *name, *value;
};

/** The capabilities of one PMU (CPU_PMU_CAPS: the "cpu" PMU; PMU_CAPS: each PMU). */
struct tk_perfdata_pmu_caps {
	const char *pmu;
	uint32_t nr_caps; /* 0: "not available" */
	const struct tk_perfdata_pmu_cap *caps;
};

/** A HYBRID_TOPOLOGY node: a core PMU and its CPUs. */
struct tk_perfdata_hybrid_node {
	const char *pmu;  /* "cpu_core", "cpu_atom" */
	const char *cpus; /* cpu list */
};

/** A jited function of a BPF program. */
struct tk_perfdata_bpf_func {
	uint64_t addr; /* kernel address of its code */
	uint32_t len;  /* bytes of code */
	uint8_t tag[8];
	uint32_t btf_type_id; /* its FUNC in the program's BTF; 0 without func info */
	const char *btf_name; /* that FUNC's name when the BTF is in the file, else NULL */
};

/**
 * A BPF_PROG_INFO entry: a program loaded while perf recorded. The fixed
 * fields come from its struct bpf_prog_info (zero beyond info_len); funcs
 * from the arrays perf stores after it, present when its jited symbol,
 * length and tag arrays agree in count (as perf requires to print them).
 */
struct tk_perfdata_bpf_prog {
	uint32_t info_len, data_len;
	uint64_t arrays; /* which arrays follow (perf's PERF_BPIL_* bits) */
	uint32_t type, id;
	uint8_t tag[8];
	char name[17]; /* the kernel's copy, at most 15 characters */
	uint32_t jited_prog_len, xlated_prog_len;
	uint32_t btf_id; /* 0: no BTF */
	uint32_t nr_funcs;
	const struct tk_perfdata_bpf_func *funcs;
};

/** A BPF_BTF entry: the raw BTF of a program (perf stores those its programs use). */
struct tk_perfdata_bpf_btf {
	uint32_t id;
	uint32_t size;
	const void *data; /* size bytes, borrowed until close */
};

/** Host facts decoded from the features; fields are zero/NULL when absent. */
struct tk_perfdata_host {
	const char *hostname, *osrelease, *version, *arch, *cpudesc, *cpuid;
	bool has_nrcpus;
	uint32_t nr_cpus_avail, nr_cpus_online;
	bool has_total_mem;
	uint64_t total_mem_kb;
	uint32_t cmdline_argc;
	const char *const *cmdline_argv;
	bool has_clockid;
	uint64_t clockid_res_ns;
	bool has_clock_data;
	uint32_t clock_data_version, clock_data_clockid;
	uint64_t clock_tod_ns, clock_clockid_ns;
	bool has_sample_time;
	uint64_t sample_time_first, sample_time_last;
	bool has_compressed;
	uint32_t comp_version, comp_type, comp_level, comp_ratio, comp_mmap_len;
	bool has_dir_format;
	uint64_t dir_format_version;
	uint32_t nr_pmu_mappings; /* PMU_MAPPINGS entries */
	uint32_t nr_groups;	  /* GROUP_DESC entries */
	uint32_t nr_numa_nodes;	  /* NUMA_TOPOLOGY nodes */
	uint32_t nr_cache_levels; /* CACHE entries */
	/* Decoded by this version on: NULL/0 when absent or malformed. */
	const struct tk_perfdata_cpu_topology *cpu_topology;
	const struct tk_perfdata_numa_node *numa_nodes; /* nr_numa_nodes */
	const struct tk_perfdata_group *groups;		/* nr_groups */
	bool has_branch_stack; /* BRANCH_STACK: samples carry branch stacks */
	bool has_stat;	       /* STAT: a perf stat record file */
	bool has_auxtrace;     /* AUXTRACE: AUX area data and its index */
	uint64_t nr_auxtrace;
	const struct tk_perfdata_auxtrace_entry *auxtrace;
	const struct tk_perfdata_pmu_caps *cpu_pmu_caps; /* CPU_PMU_CAPS, pmu "cpu" */
	uint32_t nr_pmu_caps;				 /* PMU_CAPS */
	const struct tk_perfdata_pmu_caps *pmu_caps;
	uint32_t nr_hybrid_nodes; /* HYBRID_TOPOLOGY */
	const struct tk_perfdata_hybrid_node *hybrid_nodes;
	uint32_t nr_bpf_progs; /* BPF_PROG_INFO */
	const struct tk_perfdata_bpf_prog *bpf_progs;
	uint32_t nr_bpf_btfs; /* BPF_BTF */
	const struct tk_perfdata_bpf_btf *bpf_btfs;
};

/** Facts from the file header; borrowed until close, counters updated while reading. */
struct tk_perfdata_info {
	const char *path;     /* name used in messages */
	bool pipe;	      /* pipe-mode stream (16-byte header) */
	uint64_t header_size; /* 104 (or 72), pipe: 16 */
	uint64_t attr_size;
	uint64_t attrs_offset, attrs_size;
	uint64_t data_offset, data_size; /* as stored in the header */
	uint64_t data_end;		 /* where records end: data_offset + usable size */
	bool data_size_repaired;	 /* data size was 0 or past EOF: read to the last record */
	uint64_t features[4];		 /* adds_features bitmap */
	uint64_t file_size;		 /* 0 for a pipe */
	uint64_t nr_compressed;		 /* COMPRESSED records met so far */
	uint64_t compressed_bytes;	 /* their payload bytes */
	uint64_t decompressed_bytes;	 /* what they expanded to */
};

/** A record handed out by tk_perfdata_next(). */
struct tk_perf_record {
	uint32_t type;
	uint16_t misc;
	uint16_t size;	  /* header included */
	uint64_t offset;  /* file (or stream) offset; for records from a COMPRESSED
			     record, the offset of that record */
	bool compressed;  /* came out of a COMPRESSED record */
	const void *data; /* size bytes, header included, 8-byte aligned;
			     borrowed until the next tk_perfdata_next() */
	/*
	 * HEADER_TRACING_DATA (66) and AUXTRACE (71) carry bytes after
	 * header.size: extra_size of them at extra_offset. For 66 they are
	 * loaded into extra (borrowed like data); AUXTRACE data is skipped and
	 * extra is NULL.
	 */
	const void *extra;
	uint64_t extra_size;
	uint64_t extra_offset;
};

/** Sample fields, decoded by the attr's sample_type; absent fields are 0/NULL. */
struct tk_perf_sample {
	int attr_index;	 /* evsel it belongs to */
	uint64_t fields; /* sample_type bits actually decoded */
	uint64_t id, ip, time, addr, stream_id, period;
	uint32_t pid, tid, cpu;
	const void *read; /* READ block; read_size bytes */
	uint64_t read_size;
	uint64_t callchain_nr; /* callchain: nr u64 (use tk_perf_load_u64) */
	const void *callchain;
	uint32_t raw_size;
	const void *raw;
	uint64_t branch_nr, branch_hw_idx;
	const void *branch; /* branch_nr x {from, to, flags} */
	uint64_t regs_user_abi, regs_user_nr;
	const void *regs_user;
	uint64_t stack_user_size, stack_user_dyn_size;
	const void *stack_user;
	uint64_t weight, data_src, transaction;
	uint64_t regs_intr_abi, regs_intr_nr;
	const void *regs_intr;
	uint64_t phys_addr, cgroup, data_page_size, code_page_size;
	uint64_t aux_size;
	const void *aux;
};

/** Load the @i-th u64 of an unaligned array from a sample (host order). */
static inline uint64_t tk_perf_load_u64(const void *base, uint64_t i)
{
	uint64_t v;

	__builtin_memcpy(&v, (const char *)base + i * 8, sizeof(v));
	return v;
}

/* A parsed TRACING_DATA blob; texts are borrowed, not NUL-terminated. */
#define tk_perfdata_text tk_text

struct tk_perfdata_tracing {
	const char *version; /* "0.6" */
	bool big_endian;
	uint8_t long_size;
	uint32_t page_size;
	struct tk_perfdata_text header_page, header_event, kallsyms, printk, cmdlines;
	uint32_t nr_ftrace;  /* ftrace formats */
	uint32_t nr_formats; /* event formats of all systems */
};

/** Name of a record type ("SAMPLE", "FINISHED_ROUND"...); "UNKNOWN" otherwise. */
TK_API const char *tk_perfdata_record_name(uint32_t type);

/** Name of a feature bit ("HOSTNAME"...); "UNKNOWN" otherwise. */
TK_API const char *tk_perfdata_feature_name(uint32_t id);

/* ------------------------------------------------------------------ reader */

struct tk_perfdata;

/**
 * tk_perfdata_open() - open a perf.data file (file or pipe format)
 * @path: file to read; "-" reads standard input as a pipe
 *
 * Parses the header, attrs, ids and every feature section (pipe mode: the
 * metadata records at the start of the stream). A file whose data size is
 * 0 or points past EOF is accepted with a warning and read to its last
 * complete record. Unknown feature bits are skipped with a warning; a
 * feature payload that does not parse is skipped with a warning (valid =
 * false), except TRACING_DATA for tracepoint attrs, which is an error.
 * Context: blocking I/O.
 * Return: handle for tk_perfdata_close(), or NULL with errno set (ENOENT,
 * EBADMSG for malformed files, ENOTSUP for other byte orders or formats,
 * ENOMEM) and tk_errmsg() naming file and offset.
 */
TK_API struct tk_perfdata *tk_perfdata_open(const char *path);

/**
 * tk_perfdata_open_fd() - same on a descriptor (seekable file or pipe)
 * @fd:   read from its current position when not seekable, else from 0;
 *        not closed by tk_perfdata_close()
 * @name: used in messages
 */
TK_API struct tk_perfdata *tk_perfdata_open_fd(int fd, const char *name);

/**
 * struct tk_perfdata_open_opts - how a reader treats a damaged file
 * @sz:     sizeof(struct tk_perfdata_open_opts): declare it with TK_OPTS()
 * @strict: stop at the first damage with an error (tk_perfdata_open()'s
 *          behaviour); false (the default) salvages: the damage is listed
 *          (tk_perfdata_damage_get()) and reading goes on after it
 */
struct tk_perfdata_open_opts {
	size_t sz;
	bool strict;
};

/**
 * struct tk_perfdata_damage - one damaged region of a file
 * @offset:     where the damage starts (file or stream offset)
 * @skipped:    bytes passed over without being read as records
 * @lost:       records lost, when @lost_known
 * @lost_known: whether @lost is a count (false: unknown)
 * @what:       what is wrong, one line, no file name or offset
 */
struct tk_perfdata_damage {
	uint64_t offset;
	uint64_t skipped;
	uint64_t lost;
	bool lost_known;
	char what[160];
};

/**
 * tk_perfdata_open_opts() - open a perf.data file, salvaging damage
 * @path: as tk_perfdata_open()
 * @opts: NULL or zero-initialised: salvage
 *
 * Without @opts->strict a damaged file is read as far as it can be: an
 * unreadable feature table or feature payload (TRACING_DATA included) is
 * skipped; an attr whose ids lie outside the file keeps no ids; in the
 * data section a record whose size is below 8 or runs past the data end,
 * or whose type no perf writes, starts a damaged region that ends at the
 * next plausible record; a COMPRESSED record that does not decompress is
 * lost alone; a file or stream cut short is read to its last complete
 * record. Each region is listed for tk_perfdata_damage_get() as it is met
 * (the data section's while tk_perfdata_next() reads). Only a header or
 * attr section from which no sample could be decoded is fatal.
 * Context: blocking I/O.
 * Return: as tk_perfdata_open().
 */
TK_API struct tk_perfdata *tk_perfdata_open_opts(const char *path,
						 const struct tk_perfdata_open_opts *opts);

/**
 * tk_perfdata_damage_count() - damaged regions met so far
 * @pd: reader
 * Return: their count; it grows while tk_perfdata_next() reads.
 */
TK_API size_t tk_perfdata_damage_count(const struct tk_perfdata *pd);

/**
 * tk_perfdata_damage_get() - one damaged region, in the order met
 * @pd: reader
 * @i:  below tk_perfdata_damage_count()
 * Return: borrowed until close, or NULL when @i is out of range.
 */
TK_API const struct tk_perfdata_damage *tk_perfdata_damage_get(const struct tk_perfdata *pd,
							       size_t i);

/**
 * struct tk_perfdata_check_result - what tk_perfdata_check() found
 * @sz:          sizeof(struct tk_perfdata_check_result): declare it with TK_OPTS()
 * @records:     records read (those inside COMPRESSED records counted)
 * @samples:     SAMPLE records
 * @samples_bad: samples whose fields do not fit their record
 * @unknown_id:  samples whose id names no event of the file
 * @damage:      the damaged regions (each bad sample is one too); the
 *               caller frees the array with free()
 * @nr_damage:   their count
 */
struct tk_perfdata_check_result {
	size_t sz;
	uint64_t records;
	uint64_t samples;
	uint64_t samples_bad;
	uint64_t unknown_id;
	struct tk_perfdata_damage *damage;
	size_t nr_damage;
};

/**
 * tk_perfdata_check() - read a whole perf.data file and report its damage
 * @path:   file to check ("-": standard input)
 * @opts:   NULL (salvage), or strict: stop at the first damage
 * @result: filled; @result->damage is allocated even when empty
 *
 * Reads every record, decodes every sample by its attr and lists each
 * damaged region as tk_perfdata_open_opts() does, plus samples that do not
 * decode. Nothing is printed.
 * Context: blocking I/O; memory as one reader.
 * Return: the number of damaged regions plus samples of unknown ids (0: the
 * file is whole), or a negative errno when the file cannot be opened or
 * read at all (strict: at the first damage), with tk_errmsg() set and
 * @result->damage NULL.
 */
TK_API int tk_perfdata_check(const char *path, const struct tk_perfdata_open_opts *opts,
			     struct tk_perfdata_check_result *result);

/** tk_perfdata_close() - free a reader; NULL is accepted. */
TK_API void tk_perfdata_close(struct tk_perfdata *pd);

/** tk_perfdata_get_info() - header facts; borrowed until close. */
TK_API const struct tk_perfdata_info *tk_perfdata_get_info(const struct tk_perfdata *pd);

/** Events in file order; borrowed until close. Pipe mode: those seen so far. */
TK_API size_t tk_perfdata_evsel_count(const struct tk_perfdata *pd);
TK_API const struct tk_perfdata_evsel *tk_perfdata_evsel_get(const struct tk_perfdata *pd,
							     size_t index);

/**
 * tk_perfdata_evsel_of_id() - the event a sample id belongs to
 * @pd: the file
 * @id: an id of the file's attr id arrays (a sample's ID/IDENTIFIER, or a
 *      member id of a PERF_SAMPLE_READ group)
 *
 * Context: any thread, as long as no other call uses @pd (pipe mode adds ids).
 * Return: the event's index for tk_perfdata_evsel_get(), or -ENOENT when no
 * event of the file has @id.
 */
TK_API int tk_perfdata_evsel_of_id(const struct tk_perfdata *pd, uint64_t id);

/** Feature sections in bit order (pipe mode: in stream order); borrowed until close. */
TK_API size_t tk_perfdata_feature_count(const struct tk_perfdata *pd);
TK_API const struct tk_perfdata_feature *tk_perfdata_feature_get(const struct tk_perfdata *pd,
								 size_t index);

/**
 * tk_perfdata_get_host() - decoded host facts; borrowed until close, with
 * everything they point to. A feature that does not parse leaves its fields
 * zero/NULL (and its tk_perfdata_feature valid = false). Pipe mode: a
 * feature sent again replaces the earlier values.
 */
TK_API const struct tk_perfdata_host *tk_perfdata_get_host(const struct tk_perfdata *pd);

/** Build ids from the BUILD_ID feature and HEADER_BUILD_ID records seen so far. */
TK_API size_t tk_perfdata_build_id_count(const struct tk_perfdata *pd);
TK_API const struct tk_perfdata_build_id *tk_perfdata_build_id_get(const struct tk_perfdata *pd,
								   size_t index);

/**
 * tk_perfdata_tracing() - the TRACING_DATA feature (or pipe record), parsed
 * @blob, @len: optional; receive the raw blob, borrowed until close
 * Return: 0, -ENOENT when the file has none.
 */
TK_API int tk_perfdata_tracing(const struct tk_perfdata *pd, struct tk_perfdata_tracing *t,
			       const void **blob, uint64_t *len);

/**
 * tk_perfdata_tracing_format() - the @index-th event format of TRACING_DATA
 * @system: receives the system name ("ftrace" for ftrace formats), borrowed
 * Return: 0, -ENOENT past the end.
 */
TK_API int tk_perfdata_tracing_format(const struct tk_perfdata *pd, uint32_t index,
				      const char **system, struct tk_perfdata_text *text);

struct tk_tracedata;

/**
 * tk_perfdata_get_tracedata() - the TRACING_DATA as one tracedata
 *
 * The same texts as tk_perfdata_tracing(), in the model a .dat shares
 * (tracekit/tracedata.h): tk_tracedata_encode_dat_section() turns them
 * into .dat metadata sections. Pipe mode: the last blob seen so far.
 * Context: read-only; the handle's one-thread rule applies.
 * Return: borrowed until tk_perfdata_close() (pipe mode: until the next
 * tk_perfdata_next() that meets another blob), or NULL when the file has no
 * tracing data.
 */
TK_API const struct tk_tracedata *tk_perfdata_get_tracedata(const struct tk_perfdata *pd);

/**
 * tk_perfdata_next() - the next record of the data section
 * @rec: receives the record; its pointers are borrowed until the next call
 *
 * Records of COMPRESSED records are returned decompressed (the COMPRESSED
 * record itself is not returned). Memory stays bounded by the largest
 * record, one read window and one decompressed chunk. A record cut short
 * by the end of a killed recording ends the stream with a warning.
 * Context: blocking I/O; one thread at a time per handle.
 * Return: 1 with a record, 0 at the end, negative errno on a read error or
 * corrupt record (message names file and offset).
 */
TK_API int tk_perfdata_next(struct tk_perfdata *pd, struct tk_perf_record *rec);

/**
 * tk_perfdata_parse_sample() - decode the sample fields of a record
 * @rec: a SAMPLE, or a kernel record (types 1..21) with its sample_id_all
 *       trailer
 * @s:   receives the fields
 *
 * The evsel is found by the record's id (IDENTIFIER or ID), or is the only
 * one. Pointers in @s point into @rec and live as long as it.
 * Return: 0; -ENOENT when the record carries no sample fields (user-space
 * types, sample_id_all off) or its id matches no evsel; -EBADMSG when the
 * fields do not fit the record (message names file and offset).
 */
TK_API int tk_perfdata_parse_sample(const struct tk_perfdata *pd, const struct tk_perf_record *rec,
				    struct tk_perf_sample *s);

/** A COMM record's fields; @comm points into the record and lives as long as it. */
struct tk_perf_comm {
	uint32_t pid, tid;
	const char *comm; /* not NUL-terminated when the record is cut: use @len */
	size_t len;
	bool exec; /* PERF_RECORD_MISC_COMM_EXEC: renamed by exec */
};

/** A FORK or EXIT record's fields. */
struct tk_perf_task {
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/**
 * tk_perfdata_parse_comm() / tk_perfdata_parse_task() - the fields of a
 * COMM record, or of a FORK or EXIT record (the sample_id_all trailer, if
 * any, is tk_perfdata_parse_sample()'s)
 * Context: pure.
 * Return: 0; -EINVAL for another record type; -EBADMSG when the record is
 * too short for its fields.
 */
TK_API int tk_perfdata_parse_comm(const struct tk_perf_record *rec, struct tk_perf_comm *out);
TK_API int tk_perfdata_parse_task(const struct tk_perf_record *rec, struct tk_perf_task *out);

/** A STAT_CONFIG record's terms: @nr pairs of u64 {tag, value}, borrowed from the record. */
struct tk_perf_stat_config {
	uint64_t nr;
	const void *terms; /* term i: tag tk_perf_load_u64(terms, 2*i), value (terms, 2*i+1) */
};

/** Tags of STAT_CONFIG terms (perf's enum perf_stat_config_term). */
enum {
	TK_PERF_STAT_CONFIG_AGGR_MODE = 0,
	TK_PERF_STAT_CONFIG_INTERVAL = 1,
	TK_PERF_STAT_CONFIG_SCALE = 2,
};

/**
 * tk_perfdata_parse_stat_config() - the terms of a STAT_CONFIG record
 * (u64 nr, then nr {u64 tag, u64 value}), as perf stat record writes it
 * @rec: a record of type STAT_CONFIG
 * @out: receives the count and the terms, which live as long as @rec
 * Context: pure.
 * Return: 0; -EINVAL for another record type; -EBADMSG when nr does not
 * fit the record.
 */
TK_API int tk_perfdata_parse_stat_config(const struct tk_perf_record *rec,
					 struct tk_perf_stat_config *out);

/* ------------------------------------------------------------------ writer */

struct tk_perfdata_writer;

/**
 * tk_perfdata_writer_open() - create (truncate) a perf.data file
 * @path: output file; a FIFO or character device is opened write-only and
 *        never truncated, and "-" is standard output: those get perf's
 *        pipe format (perf record -o -), streamed front to back
 *
 * Nothing is written until the first record or tk_perfdata_writer_begin():
 * attrs must be added first. In pipe mode the metadata goes out at begin
 * (features set later, such as SAMPLE_TIME, are not sent; build ids go out
 * as HEADER_BUILD_ID records at finish).
 * Return: handle, or NULL with errno set.
 */
TK_API struct tk_perfdata_writer *tk_perfdata_writer_open(const char *path);

/**
 * tk_perfdata_writer_open_fd() - same on an empty descriptor, which the
 * writer does not close: a regular file gets file mode, anything else (or
 * @name "-") pipe mode
 */
TK_API struct tk_perfdata_writer *tk_perfdata_writer_open_fd(int fd, const char *name);

/**
 * tk_perfdata_writer_open_append() - reopen a perf.data file to append a recording
 * @path: an existing, finished file-mode perf.data
 *
 * The file's events come back as indexes 0..n-1; tk_perfdata_writer_add_attr()
 * then merges: an attr equal to one of the file's (all 128 bytes but size)
 * returns that index; one with the same type and config but other settings
 * is a mismatch (-EINVAL); a new event is added only when every event
 * carries IDENTIFIER and all agree on sample_id_all (perf could not tell the
 * events apart otherwise). The file's features are kept: BUILD_ID is merged
 * with the entries added, SAMPLE_TIME widened, EVENT_DESC rebuilt; a feature
 * the caller sets replaces the old one. At finish the new records follow
 * the old data, then come the feature table and payloads, then the merged
 * ids and attrs (the header points at them). Nothing is written before the
 * first flush, so a failure up to then leaves the file untouched. From the
 * first flush to finish the header's feature bitmap is zero (the old
 * feature table is being overwritten by records).
 * Return: handle, or NULL with errno (EINVAL for a file that was never
 * finished, EBADMSG/ENOTSUP for a file that cannot be read).
 */
TK_API struct tk_perfdata_writer *tk_perfdata_writer_open_append(const char *path);

/** tk_perfdata_writer_close() - free the writer (without finishing); NULL is accepted. */
TK_API void tk_perfdata_writer_close(struct tk_perfdata_writer *w);

/**
 * tk_perfdata_writer_add_attr() - add an event (before any record)
 * @attr: its attr; size is forced to 128
 * @name: event name for EVENT_DESC, or NULL
 * Return: the event's index (>= 0), or -EINVAL (after data started,
 * sample_id_all differing from the first attr's, an append mismatch: the
 * message names the event and says what differs in the words of the
 * recording options, e.g. "the file was recorded system-wide (-a), this
 * recording follows a command"), -ENOMEM.
 */
TK_API int tk_perfdata_writer_add_attr(struct tk_perfdata_writer *w,
				       const struct tk_perf_attr *attr, const char *name);

/**
 * tk_perfdata_writer_add_ids() - add kernel ids to an event (before any record)
 * Return: 0, -EINVAL (bad index, after data started, id already used), -ENOMEM.
 */
TK_API int tk_perfdata_writer_add_ids(struct tk_perfdata_writer *w, size_t index,
				      const uint64_t *ids, size_t nr);

/**
 * tk_perfdata_writer_begin() - write ids, attrs and the provisional header;
 * implied by the first record
 *
 * Features set before this call are "early": their payloads are written
 * now, ahead of the data, EVENT_DESC joins them (built from the names
 * given to tk_perfdata_writer_add_attr()), and from now on a table of them
 * follows the data at every flush, with their bits and bit 0 in the header
 * (see tk_perfdata_writer_flush()). This is what keeps a killed recording
 * of tracepoints readable by perf, which refuses one without TRACING_DATA.
 * Without early features the header says data size 0 and no feature bits.
 * In append mode nothing is written and no feature is early.
 * Return: 0, -EINVAL (no events; several events, one without ids), I/O
 * errors, -ENOMEM.
 */
TK_API int tk_perfdata_writer_begin(struct tk_perfdata_writer *w);

/**
 * tk_perfdata_writer_write() - append one record
 * @rec: a record with its perf_event_header; @size must equal its
 *       header.size (8..65535). Copied.
 *
 * Records are buffered up to 1 MiB; a full buffer is committed as by
 * tk_perfdata_writer_flush(). SAMPLE records also widen SAMPLE_TIME.
 * Return: 0, -EINVAL for a bad record, I/O errors.
 */
TK_API int tk_perfdata_writer_write(struct tk_perfdata_writer *w, const void *rec, size_t size);

/**
 * tk_perfdata_writer_flush() - commit the buffered records
 *
 * Writes them, then the header's data size. With early features the
 * records go after the previous table and a fresh table follows them, so
 * that the old table stays valid until the new data size replaces it; the
 * old table then lies inside the data as a PERF_RECORD_HEADER_EVENT_TYPE
 * record, which perf and tracekit skip (16 bytes per early feature plus 16
 * per flush). Either way a writer killed at any moment leaves the last
 * commit whole. Does nothing when no record is buffered.
 * Context: a few system calls; call it as often as a crash may cost data
 * (the perf recorder: every 100 ms).
 * Return: 0 or an I/O error (the writer then refuses further work; the
 * file keeps its last commit).
 */
TK_API int tk_perfdata_writer_flush(struct tk_perfdata_writer *w);

/**
 * tk_perfdata_writer_set_feature() - set a feature's raw payload
 * @id: 1..31; EVENT_DESC and SAMPLE_TIME are made by the writer unless set
 *      here. Set before the first record, a feature is early (see
 *      tk_perfdata_writer_begin()); set later, or set again, it is written
 *      at finish.
 * @data, @size: payload as stored in the file, copied
 * Return: 0, -EINVAL, -ENOMEM.
 */
TK_API int tk_perfdata_writer_set_feature(struct tk_perfdata_writer *w, uint32_t id,
					  const void *data, uint64_t size);

/** tk_perfdata_writer_set_string() - a string feature (HOSTNAME, OSRELEASE...). */
TK_API int tk_perfdata_writer_set_string(struct tk_perfdata_writer *w, uint32_t id,
					 const char *value);

/**
 * tk_perfdata_writer_add_build_id() - add a BUILD_ID entry
 * @misc: cpumode (1 kernel, 2 user); 0x8000 is added
 * @pid:  machine pid, -1 for the host
 * @id, @len: 1..20 bytes
 * Return: 0, -EINVAL, -ENOMEM.
 */
TK_API int tk_perfdata_writer_add_build_id(struct tk_perfdata_writer *w, uint16_t misc, int32_t pid,
					   const uint8_t *id, size_t len, const char *filename);

struct tk_host;

/**
 * tk_perfdata_writer_set_host_facts() - fill HOSTNAME, OSRELEASE, VERSION,
 * ARCH, NRCPUS, CPUDESC, CPUID, TOTAL_MEM and CMDLINE from @host
 * @host: the facts (tracekit/host.h): this machine's from tk_host_new(),
 *        or those of the machine a converted file was recorded on; a
 *        NULL string or has_total_mem false leaves its feature out. CMDLINE
 *        is @host->exe (argv[0] when NULL) and argv[1..], as perf stores it.
 *
 * The writer reads nothing from the running machine.
 * Return: 0, -ENOMEM.
 */
TK_API int tk_perfdata_writer_set_host_facts(struct tk_perfdata_writer *w,
					     const struct tk_host *host);

/**
 * tk_perfdata_writer_set_host() - the same with this machine's facts
 * (tk_host_new()), a shorthand for recorders
 * @argc, @argv: the command line for CMDLINE, argv[0] replaced by the
 *               executable path, as perf does; @argv NULL: this process's
 *               own, every word of it (/proc/self/cmdline, which getopt's
 *               reordering does not change)
 * Return: 0, -ENOMEM, or an error reading /proc.
 */
TK_API int tk_perfdata_writer_set_host(struct tk_perfdata_writer *w, int argc,
				       const char *const *argv);

/**
 * tk_perfdata_writer_set_clock() - CLOCKID (resolution) and CLOCK_DATA
 * (a reference pair of CLOCK_REALTIME and @clockid read now)
 */
TK_API int tk_perfdata_writer_set_clock(struct tk_perfdata_writer *w, int32_t clockid);

/**
 * tk_perfdata_writer_set_tracedata() - TRACING_DATA from a tracedata
 * (tracekit/tracedata.h), encoded in its own byte order and layout
 * Return: 0, -EINVAL (a text too long for the layout), -ENOMEM.
 */
TK_API int tk_perfdata_writer_set_tracedata(struct tk_perfdata_writer *w,
					    const struct tk_tracedata *td);

/**
 * tk_perfdata_tracing_build() - make a TRACING_DATA blob from the live kernel
 * (tk_tracedata_gather() on the top level, then tk_tracedata_encode_perf())
 * @events, @nr: "system:event" names whose formats go in
 * @blob, @len: receive a malloc'ed blob the caller frees
 * Return: 0, -ENOENT (unknown event), tracefs errors, -ENOMEM.
 */
TK_API int tk_perfdata_tracing_build(const char *const *events, size_t nr, void **blob,
				     uint64_t *len);

/**
 * tk_perfdata_writer_finish() - write the feature table and payloads after
 * the data, then the final header (data size, bitmap of the written
 * features, bit 0 cleared); early payloads stay where begin put them
 * Return: 0 or a negative errno; the writer refuses further records.
 */
TK_API int tk_perfdata_writer_finish(struct tk_perfdata_writer *w);

/**
 * tk_perfdata_attr_encode() / tk_perfdata_attr_decode() - the 128-byte
 * host-order perf_event_attr
 */
TK_API void tk_perfdata_attr_encode(const struct tk_perf_attr *attr, uint8_t out[128]);
TK_API void tk_perfdata_attr_decode(const uint8_t *in, size_t len, struct tk_perf_attr *attr);

/* ------------------------------------------------- records from fields */

/*
 * Records built from fields, so that no caller lays out perf's bytes. Each
 * add_* call returns the size of the record it wrote (for byte counts).
 */

/**
 * tk_perfdata_attr_tracepoint() - fill @attr for a tracepoint event
 * @attr:        receives the attr (zeroed first)
 * @event_id:    the tracepoint format's ID (config)
 * @sample_type: TK_PERF_SAMPLE_* bits the samples carry
 *
 * Type TRACEPOINT, period 1, sample_id_all set, as perf record makes them;
 * set use_clockid and clockid afterwards when the times are on such a clock.
 * Context: any.
 */
TK_API void tk_perfdata_attr_tracepoint(struct tk_perf_attr *attr, uint64_t event_id,
					uint64_t sample_type);

/**
 * tk_perfdata_writer_add_sample() - append a SAMPLE record built from fields
 * @w:          a writer
 * @attr_index: the event (from tk_perfdata_writer_add_attr())
 * @s:          the fields; those the event's sample_type names are written
 *              (id, ip, pid/tid, time, addr, stream_id, cpu, period, raw).
 *              A zero @s->id means the event's first kernel id. The raw
 *              payload is zero padded to keep the record 8-byte sized.
 *
 * Context: blocking I/O (records are buffered, see tk_perfdata_writer_write()).
 * Return: the record's size in bytes, -EINVAL (unknown event), -ENOTSUP (the sample_type has fields
 * other than those above), -E2BIG (over 64 KiB), -ENOMEM, I/O errors.
 */
TK_API int tk_perfdata_writer_add_sample(struct tk_perfdata_writer *w, size_t attr_index,
					 const struct tk_perf_sample *s);

/**
 * tk_perfdata_writer_add_comm() - append a COMM record
 * @w:        a writer whose events are added
 * @pid, @tid: the task
 * @comm:     its name (up to 15 bytes are kept)
 * @exec:     the name changed by exec (PERF_RECORD_MISC_COMM_EXEC)
 * @id:       the sample_id_all trailer's fields (pid, tid, time, cpu, id;
 *            id 0: event 0's first kernel id); NULL: all zero, as perf
 *            leaves a synthesized record's; unused without sample_id_all
 *
 * Return: the record's size in bytes, or as tk_perfdata_writer_write().
 */
TK_API int tk_perfdata_writer_add_comm(struct tk_perfdata_writer *w, uint32_t pid, uint32_t tid,
				       const char *comm, bool exec,
				       const struct tk_perf_sample *id);

/** The fields of an MMAP2 record (perf_event.h's PERF_RECORD_MMAP2, build-id-less form). */
struct tk_perf_mmap2 {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
	const char *filename;
};

/**
 * tk_perfdata_writer_add_mmap() / tk_perfdata_writer_add_mmap2() - append
 * an MMAP or MMAP2 record: @filename (at most 4095 bytes) mapped at @start
 * for @len bytes from file offset @pgoff in task @pid/@tid
 * @misc: cpumode (1 kernel, 2 user) and flags of the record header
 * @id:   as for tk_perfdata_writer_add_comm()
 * Return: the record's size in bytes, -ENAMETOOLONG, or as
 * tk_perfdata_writer_write().
 */
TK_API int tk_perfdata_writer_add_mmap(struct tk_perfdata_writer *w, uint16_t misc, uint32_t pid,
				       uint32_t tid, uint64_t start, uint64_t len, uint64_t pgoff,
				       const char *filename, const struct tk_perf_sample *id);
TK_API int tk_perfdata_writer_add_mmap2(struct tk_perfdata_writer *w, uint16_t misc,
					const struct tk_perf_mmap2 *m,
					const struct tk_perf_sample *id);

/**
 * tk_perfdata_writer_add_fork() / tk_perfdata_writer_add_exit() - append a
 * FORK or EXIT record of task @pid/@tid, child of @ppid/@ptid, at @time;
 * @id as for tk_perfdata_writer_add_comm()
 * Return: the record's size in bytes, or as tk_perfdata_writer_write().
 */
TK_API int tk_perfdata_writer_add_fork(struct tk_perfdata_writer *w, uint32_t pid, uint32_t ppid,
				       uint32_t tid, uint32_t ptid, uint64_t time,
				       const struct tk_perf_sample *id);
TK_API int tk_perfdata_writer_add_exit(struct tk_perfdata_writer *w, uint32_t pid, uint32_t ppid,
				       uint32_t tid, uint32_t ptid, uint64_t time,
				       const struct tk_perf_sample *id);

/**
 * tk_perfdata_writer_add_round() - append a FINISHED_ROUND record: perf may
 * sort and deliver everything queued before it
 * Return: the record's size in bytes, or as tk_perfdata_writer_write().
 */
TK_API int tk_perfdata_writer_add_round(struct tk_perfdata_writer *w);

/* ------------------------------------------------------------------ report */

enum {
	TK_PERFDATA_REPORT_NSEC = 1 << 0, /* times with nanoseconds (perf script --ns) */
	/*
	 * Frames unwound from a --call-graph dwarf sample's stack without
	 * the functions inlined at them (perf script --no-inline); by
	 * default each frame is preceded by one "name+0xoff (inlined)" line
	 * per function inlined there, as perf script 6.1 prints them.
	 */
	TK_PERFDATA_REPORT_NO_INLINE = 1 << 8,
};

/* The fields of perf script -F, for tk_perfdata_report_opts.fields. */
enum {
	TK_PERFDATA_FIELD_COMM = 1 << 0,
	TK_PERFDATA_FIELD_TID = 1 << 1,
	TK_PERFDATA_FIELD_PID = 1 << 2,
	TK_PERFDATA_FIELD_TIME = 1 << 3,
	TK_PERFDATA_FIELD_CPU = 1 << 4,
	TK_PERFDATA_FIELD_EVENT = 1 << 5,
	TK_PERFDATA_FIELD_TRACE = 1 << 6,
	TK_PERFDATA_FIELD_IP = 1 << 7,
	TK_PERFDATA_FIELD_SYM = 1 << 8,
	TK_PERFDATA_FIELD_SYMOFF = 1 << 9,
	TK_PERFDATA_FIELD_DSO = 1 << 10,
	TK_PERFDATA_FIELD_PERIOD = 1 << 11,
	/* memory samples' fields, printed as perf script prints them (perf record -d, -W, ...) */
	TK_PERFDATA_FIELD_ADDR = 1 << 12,
	TK_PERFDATA_FIELD_DATA_SRC = 1 << 13,
	TK_PERFDATA_FIELD_WEIGHT = 1 << 14,
	TK_PERFDATA_FIELD_INS_LAT = 1 << 15,
	TK_PERFDATA_FIELD_PHYS_ADDR = 1 << 16,
	TK_PERFDATA_FIELD_DATA_PAGE_SIZE = 1 << 17,
	TK_PERFDATA_FIELD_CODE_PAGE_SIZE = 1 << 18,
	/* the record's cpumode letters (K, U, H, G, g), padded to six columns */
	TK_PERFDATA_FIELD_MISC = 1 << 19,
	/*
	 * Branch flags and the call depth indent they drive: only samples
	 * synthesized from AUX area traces carry flags, and tracekit decodes
	 * none, so flags prints perf's column for "no flags" and callindent
	 * nothing, as perf script prints them on such samples.
	 */
	TK_PERFDATA_FIELD_FLAGS = 1 << 20,
	TK_PERFDATA_FIELD_CALLINDENT = 1 << 21,
	/*
	 * Fields tracekit accepts for perf's sake but prints nothing for: on
	 * samples without them perf prints nothing either; a file whose
	 * samples carry them (registers, a branch stack, synthesized or
	 * hardware events) makes the run fail with -EINVAL, "not supported".
	 */
	TK_PERFDATA_FIELD_IREGS = 1 << 22,
	TK_PERFDATA_FIELD_UREGS = 1 << 23,
	TK_PERFDATA_FIELD_BRSTACK = 1 << 24, /* brstack, brstacksym and brstackoff */
	TK_PERFDATA_FIELD_SYNTH = 1 << 25,
	TK_PERFDATA_FIELD_METRIC = 1 << 26,
	TK_PERFDATA_FIELD_IPC = 1 << 27,   /* only AUX area samples count cycles */
	TK_PERFDATA_FIELD_GUEST = 1 << 28, /* machine_pid and vcpu (perf inject --guest-data) */
	/*
	 * The wall-clock time of the sample from the CLOCK_DATA feature
	 * (perf record -k), in the local time zone as perf prints it;
	 * "disabled" in pipe mode, where perf cannot check for the feature.
	 */
	TK_PERFDATA_FIELD_TOD = 1 << 29,
};

/** What tk_perfdata_report_run() prints; zero-initialise. */
struct tk_perfdata_report_opts {
	size_t sz;	    /* sizeof(struct tk_perfdata_report_opts): declare it with TK_OPTS() */
	int fd;		    /* output descriptor */
	unsigned int flags; /* TK_PERFDATA_REPORT_* */
	/* Filters, as in struct tk_report_opts; a sample must pass all that are set. */
	const uint8_t *cpu_mask; /* bitmap of CPUs to show; NULL: all */
	uint32_t cpu_mask_bits;
	const char *const *events; /* event names (tk_event_spec_match()); NULL: all */
	size_t nevents;
	const int *pids; /* process ids (perf script --pid); NULL: all */
	size_t npids;
	const char *const *comms; /* thread names (globs); NULL: all */
	size_t ncomms;
	bool has_start, has_end;
	uint64_t start_ns, end_ns; /* sample time window, inclusive start, exclusive end */
	/* Build-id cache for symbols; NULL: $TRACEKIT_CACHE_DIR, then ~/.debug (if present). */
	const char *cache_dir;
	/*
	 * Threads that print lines (1: the calling thread alone; 0: one per
	 * online CPU up to 4 for 4 MiB of data or more). Only files whose
	 * events are all tracepoints without callchains print on several;
	 * the text is the same.
	 */
	unsigned int threads;
	/*
	 * Where symbols may come from besides the cache, as perf's options of
	 * the same names: binaries below @symfs (NULL: at their paths), the
	 * kernel's from the @kallsyms file whatever its build id (NULL: the
	 * running kernel's when its build id is the recorded one).
	 */
	const char *symfs;
	const char *kallsyms;
	/*
	 * TK_PERFDATA_FIELD_* to print, as perf script -F with the same names
	 * prints them, for every event (0: perf script's default per event
	 * type). sym, symoff and dso show with ip only, as in perf. A field
	 * the samples do not carry (cpu without PERF_SAMPLE_CPU, ...) makes
	 * the run fail with -EINVAL and perf's message. Printed in one thread.
	 */
	unsigned int fields;
	/*
	 * Callchain entries printed at most per sample, as perf's
	 * --max-stack; 0: this machine's kernel.perf_event_max_stack (127
	 * when unreadable), perf's default.
	 */
	unsigned int max_stack;
	/*
	 * The kernel's symbols from this ELF instead of any kallsyms, only
	 * when its build id is the recorded kernel's (perf's --vmlinux);
	 * otherwise kernel addresses print [unknown] and one warning is
	 * logged. NULL: none.
	 */
	const char *vmlinux;
	/* Thread ids alone (perf script --tid); NULL: all. With @pids, both must pass. */
	const int *tids;
	size_t ntids;
};

/**
 * struct tk_perfdata_report_stats - what a report printed, and the losses
 * the file records, for the warnings perf script prints at its end
 * @printed:      samples printed
 * @records:      records read (perf's "events")
 * @samples:      SAMPLE records
 * @lost_records: PERF_RECORD_LOST records (perf's "chunks")
 * @lost_events:  their lost counts, summed
 * @lost_samples: PERF_RECORD_LOST_SAMPLES counts, summed
 * @unknown_id:   samples whose id names no event of the file: not printed
 *                (a damaged file; perf script refuses it)
 */
struct tk_perfdata_report_stats {
	uint64_t printed;
	uint64_t records;
	uint64_t samples;
	uint64_t lost_records;
	uint64_t lost_events;
	uint64_t lost_samples;
	uint64_t unknown_id;
};

/**
 * tk_perfdata_report_run() - print the samples as `perf script` 6.1 does
 * @pd:      an open reader, not yet read from (records are consumed)
 * @opts:    output settings
 * @stats:   optional; receives what was printed and what the file lost
 *
 * Records are delivered in perf's order (sorted by time within the
 * FINISHED_ROUND windows); threads are named from COMM and FORK records.
 * Tracepoint samples print their TRACING_DATA format's text; other samples
 * print period, ip, symbol and dso (kallsyms for the kernel, the mapped
 * file's ELF symbols for user space), each named only from a file whose
 * build id is the one the file recorded, else "[unknown]" as perf prints.
 * Context: blocking I/O; memory holds one round of records.
 * Return: 0, or a negative errno (reader errors, -ENOMEM, write errors)
 * with tk_errmsg() set.
 */
TK_API int tk_perfdata_report_run(struct tk_perfdata *pd,
				  const struct tk_perfdata_report_opts *opts,
				  struct tk_perfdata_report_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
