/*
 * conformance.h: the conformance suite: generated cases, the tolerance policy, the runner.
 */
#ifndef PORTC_CONFORMANCE_H
#define PORTC_CONFORMANCE_H

#include <stdio.h>

#include "portc/portc.h"

typedef struct conf_case {
  char name[128];
  const char *suite;     /* ops, special, fusion, models, dynamic, grad */
  char *text;            /* .ptg source (NULL when path is set) */
  char *path;            /* a .ptg file (the example models) */
  int nsyms;
  char sym[4][16];
  int64_t symval[4][4];  /* up to 4 runs of one module (dynamic cases), else one */
  int nruns;
  portc_dtype autocast;  /* F16 or BF16: the case runs the graph's autocast copy (F32: as written) */
} conf_case;

typedef struct conf_cases {
  conf_case *c;
  int n, cap;
} conf_cases;

/* every case; example .ptg files are looked up under examples_dir */
void conf_generate(conf_cases *out, const char *examples_dir);
/* only the given models (.ptg or .onnx), as the models suite; symbols of their inputs take the
 * SYM=N values of sets, else 2; autocast F16 or BF16: their autocast copies */
void conf_generate_models(conf_cases *out, int n, const char *const *paths, int nsets, const char *const *sets, portc_dtype autocast);
void conf_free(conf_cases *cs);
/* the unary ops of the suite, and how each one's input is mapped into its domain (cases.c) */
typedef struct conf_unary {
  const char *op, *prep;
} conf_unary;
extern const conf_unary CONF_UNARY[];
extern const int CONF_NUNARY;
/* one more case of a suite, named by fmt, and its .ptg text (cases.c) */
conf_case *conf_case_new(conf_cases *cs, const char *suite, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void conf_case_text(conf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* the gradient suite (cases_grad.c): every differentiable op's backward, the losses, and
 * training steps with optimizers (of the example models under examples_dir too, unless NULL),
 * each checked like a forward graph */
void conf_generate_grad(conf_cases *cs, const char *examples_dir);

/* bounds for one graph, derived from its ops (TOLERANCES.md) */
typedef struct tolerance {
  double rtol; /* per element: |out - ref| <= rtol * (|ref| + atol * rms(ref) + max|input|) */
  double atol; /* the absolute part, in units of rtol times the output's RMS */
  double norm; /* ||out - ref|| / ||ref|| <= norm */
} tolerance;
void conf_tolerance(const portc_graph *g, portc_bindings *b, const char *target, bool eager, tolerance *t);
/* the largest finite magnitude among the inputs and parameters a run used */
double conf_input_scale(const portc_graph *g, const portc_bindings *b);
/* one output against the reference within t; false with a message in msg */
bool conf_compare(const portc_tensor *out, const portc_tensor *ref, const tolerance *t, double in_scale, char *msg, size_t len);

typedef struct conf_options {
  const char *targets; /* comma-separated; NULL: every available target */
  const char *filter;  /* POSIX extended regex over case names */
  const char *json, *junit;
  uint64_t seed;
  bool seed_given;
  bool eager;          /* also check eager mode (default true) */
  bool quiet;
  const char *const *models; /* when set: verify these models instead of the suite */
  int nmodels;
  const char *const *sets; /* SYM=N for the models' symbols */
  int nsets;
  portc_dtype autocast;    /* the models' autocast copies (F32: as written) */
} conf_options;

/* runs the suite; returns the number of failures, or -1 on a usage problem */
int conf_run(const conf_options *o, const char *examples_dir, FILE *out);

#endif
