/*
 * tune.h: tune tables. A table is plain text, one entry per line, each entry a device match, a
 * kernel match, the knobs it sets and where its numbers come from:
 *
 *   api=cuda arch=sm_90 kind=conv dtype=f32 o=64..128 tile=64x64 prov=measured device="NVIDIA H100" date=2026-11-23 median_us=41.2
 *
 * The tables a compile reads, first match wins: the user's measured table (tune.txt in the
 * kernel cache folder), the site tables named by $PORTC_TUNE_PATH (':'-separated files), then
 * the tables shipped inside libportc (the .tune files of targets/tune/), then the target's own rules (schedule.c).
 * Within a table the most specific device (model, then architecture, family, type, vendor) and
 * then the most specific shape (exact, then range, then wildcard) wins; a later line wins a tie.
 * An entry only overrides knobs: the target's schedule hook fills the rules first, and its
 * schedule_check refuses a combination the kernel cannot run.
 */
#ifndef PORTC_TARGETS_TUNE_H
#define PORTC_TARGETS_TUNE_H

#include <stdio.h>

#include "../lower/kir.h"

/* A device, from most to least specific, and the facts that filter candidates. */
typedef struct tune_device {
  char api[16];      /* cuda, hip, vulkan, webgpu, cpu */
  char vendor[32];   /* nvidia, amd, intel, arm, qualcomm, apple, mesa */
  char type[16];     /* discrete, integrated, cpu, virtual */
  char family[32];   /* hopper, rdna3, xe-hpg, valhall, llvmpipe, avx2 */
  char arch[32];     /* sm_90, gfx1100 */
  char model[128];   /* the device's name */
  char driver[64];   /* the driver's version */
  char compiler[64]; /* the kernel compiler's identity */
  int units;         /* multiprocessors, compute units or cores */
  int subgroup;      /* warp, wavefront or subgroup size */
  int shared_bytes;  /* shared memory a work group may use */
} tune_device;

/* The named extents of a kernel's key; a kernel has the ones its kind has. */
enum { TX_B, TX_M, TX_N, TX_K, TX_C, TX_H, TX_W, TX_O, TX_ROWS, TX_LEN, TX_ELEMS, TX_COUNT };
#define TUNE_NONE INT64_MIN     /* the kernel has no such extent */
#define TUNE_DYN (INT64_MIN + 1) /* the extent is a symbol the module keeps dynamic */

/* A kernel: class, dtypes, layout, epilogue, op parameters and shape. */
typedef struct tune_kernel {
  char kind[16];     /* pointwise, row, matmul, conv, opaque */
  char dtype[40];    /* "f32", or "f16,f16>f32" when inputs and output differ */
  char layout[16];   /* matmul: plain (operands as they lie, 16-byte rows) or view; else "-" */
  char epilogue[16]; /* matmul, conv: none, bias or fused; else "-" */
  char params[48];   /* conv: "3x3/s1/p1/d1/g1"; opaque: the op; else "-" */
  int64_t ext[TX_COUNT];
} tune_kernel;

/* The knobs an entry may set, each a field of kir_schedule (tune_table.c's knob table). */
typedef struct tune_knobs {
  unsigned mask; /* which of the knob table's knobs are set */
  kir_schedule v;
} tune_knobs;

typedef enum tune_prov { PROV_MEASURED, PROV_HEURISTIC, PROV_TRANSFERRED } tune_prov;

typedef struct tune_range {
  int64_t lo, hi; /* lo == hi: exact; TUNE_DYN: matches a dynamic extent */
  bool set;
} tune_range;

typedef struct tune_entry {
  tune_device dev;   /* the fields that match; empty: any */
  tune_kernel kern;  /* the fields that match; empty: any */
  tune_range ext[TX_COUNT];
  tune_knobs knobs;
  tune_prov prov;
  char why[256];     /* measured: device, driver, date, median; heuristic: the source; transferred: from */
  double median_us;  /* measured: the entry's median time */
  int line;
} tune_entry;

typedef struct tune_table {
  char name[256]; /* "shipped:nvidia.tune", a file's path */
  const char *origin; /* "user" (the measured table), "site", "shipped", "file" */
  tune_entry *e;
  int n, cap;
  int problems; /* lines that are not entries (tune_table_load) */
  char *err;    /* and what is wrong with each, "name:line: what" a line (malloc'd; NULL: none) */
} tune_table;

/* ---- tables (tune_table.c) ---- */

/* parses text into t (appending); every problem is reported as "name:line: what", all of them,
 * into err; returns the number of problems (0: all lines are entries) */
int tune_parse(const char *text, tune_table *t, char *err, size_t errlen);
/* a table named `name` from text: its entries, and its problems in problems and err */
void tune_table_load(tune_table *t, const char *name, const char *origin, const char *text);
/* the same from the file at path (it names the table); false with errno when it cannot be read */
bool tune_table_read(tune_table *t, const char *path, const char *origin);
/* "measured", "heuristic", "transferred" */
const char *tune_prov_name(tune_prov p);
/* checks an entry's values against knob and provenance rules; false with why */
bool tune_lint(const tune_entry *e, char *why, size_t len);
void tune_table_free(tune_table *t);
/* one line for an entry, in the table's syntax (ends with '\n') */
void tune_format(const tune_entry *e, char *out, size_t len);
/* the name of knob bit b, or NULL past the last */
const char *tune_knob_name(int b);
/* the mask bit of the knob called name (0: no such knob) */
unsigned tune_knob_bit(const char *name);
/* candidates that each set one knob, "tile" (square) or "threads" (1-D), to one of values other
 * than current; appended to out (at most max in all, *n counts them) */
void tune_candidates(const char *knob, const int *values, int nvalues, int current, tune_knobs *out, int max, int *n);
/* the square SIMT tiles worth timing for kernel i: 32, 64 and 128 but for those a simple cost
 * model rules out (codegen/gpu_kernels.c: gpu_tile_useful); returns how many, into tiles[3] */
int tune_useful_tiles(const kir_module *m, int i, int tiles[3]);
/* convolution i's useful tiles crossed with the split-K slices worth timing on a device of
 * `units` multiprocessors (gpu_conv_split_useful; up to max_split), but its current schedule */
void tune_conv_candidates(const kir_module *m, int i, int units, int max_split, tune_knobs *out, int max, int *n);
/* the direct convolution's runs of outputs per invocation (1, 2, 4, 8) but its current one, where
 * kernel i is one of a known output width */
void tune_run_candidates(const kir_module *m, int i, tune_knobs *out, int max, int *n);
/* "tile=64x64 threads=256": the set knobs, in the table's syntax */
void tune_knobs_format(const tune_knobs *k, char *out, size_t len);
/* the set knobs written into s */
void tune_knobs_apply(const tune_knobs *k, kir_schedule *s);

/* the key of kernel i of m (tune_key.c) */
void tune_kernel_key(const kir_module *m, int i, tune_kernel *out);
/* "kind=conv dtype=f32 ... n=32 c=64": the kernel's match fields, exact */
void tune_kernel_format(const tune_kernel *k, char *out, size_t len);
/* "api=cuda vendor=nvidia ... model=\"...\"": the device's match fields */
void tune_device_format(const tune_device *d, char *out, size_t len);

/* whether e's device fields match d; *dev_rank: 5 model, 4 arch, 3 family, 2 type, 1 vendor, 0 api */
bool tune_match_device(const tune_entry *e, const tune_device *d, int *dev_rank);
/* whether e matches the device and kernel; *dev_rank and *shape_rank say how specifically */
bool tune_match(const tune_entry *e, const tune_device *d, const tune_kernel *k, int *dev_rank, int *shape_rank);
/* the best entry of t for the device and kernel, or NULL */
const tune_entry *tune_best(const tune_table *t, const tune_device *d, const tune_kernel *k);

/* a .ptg graph with a kernel of e's kind and dtype, of e's shape or (small) of a small one: what
 * the tests and compile_all check an entry's knobs on */
void tune_sample_graph(const tune_entry *e, bool small, char *out, size_t len);

/* ---- the tables a compile reads, in precedence order (tune_tables.c) ---- */

enum { TUNE_MAX_TABLES = 16 };
typedef struct tune_set {
  tune_table t[TUNE_MAX_TABLES];
  int n;
  char unread[2048]; /* tables that could not be read, a line each, reported by PORTC_LOG=tune */
} tune_set;
/* the user's measured table, the site tables and the shipped ones; a table that cannot be read
 * is skipped and named in unread, a line that is not an entry is skipped and named in its table's
 * err (a broken table never stops a compile) */
void tune_set_load(tune_set *s);
void tune_set_free(tune_set *s);
/* a table file's text (malloc'd), or NULL with errno (EINVAL: not a regular file) */
char *tune_read_file(const char *path);
/* the user's measured table's path (in the cache folder) */
portc_status tune_user_path(char *out, size_t len);
/* the shipped tables, as text (generated from the .tune files of targets/tune/) */
extern const char *const tune_shipped_name[];
extern const char *const tune_shipped_text[];
/* replaces (or adds) the entry with e's device and kernel key in the table file at path,
 * atomically; other lines are kept as they are */
portc_status tune_store(const char *path, const tune_entry *e);

#endif
