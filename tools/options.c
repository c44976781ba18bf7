/*
 * options.c: the compile options every verb that compiles accepts, parsed in one place.
 */
#include <string.h>

#include "cli.h"

bool parse_autocast(const char *v, portc_dtype *t) {
  if (!strcmp(v, "f16")) return *t = PORTC_F16, true;
  if (!strcmp(v, "bf16")) return *t = PORTC_BF16, true;
  if (!strcmp(v, "off")) return *t = PORTC_F32, true;
  return false;
}

int parse_graph_arg(const char *verb, int argc, char **argv, int *i, graph_args *a, bool allow_ref) {
  const char *arg = argv[*i];
  int used = parse_compile_option(argc, argv, *i, &a->co);
  if (used) {
    *i += used - 1;
    return used < 0 ? -1 : 1;
  }
  bool takes = !strcmp(arg, "-t") || !strcmp(arg, "--set") || !strcmp(arg, "--input") || !strcmp(arg, "--seed") || !strcmp(arg, "--autocast");
  if (!takes) {
    if (arg[0] == '-') return 0;
    if (a->path) return usage_error(verb, "one graph at a time ('%s' and '%s')", a->path, arg), -1;
    a->path = arg;
    return 1;
  }
  if (*i + 1 >= argc) return usage_error(verb, "%s needs a value", arg), -1;
  const char *v = argv[++*i];
  if (!strcmp(arg, "-t")) {
    if (strchr(v, ',') && !a->several) return usage_error(verb, "-t takes one target here, not '%s'", v), -1;
    for (const char *p = v; *p;) { /* each of a comma-separated list */
      char one[64];
      size_t n = strcspn(p, ",");
      snprintf(one, sizeof one, "%.*s", (int)(n < sizeof one ? n : sizeof one - 1), p);
      if (!(allow_ref && !strcmp(one, "ref")) && !known_target(one))
        return usage_error(verb, "unknown target '%s' (available: %s%s)", one, allow_ref ? "ref" : "", target_names() + (allow_ref ? 0 : 2)), -1;
      p += n + (p[n] == ',');
    }
    a->target = v;
  } else if (!strcmp(arg, "--autocast")) {
    if (!parse_autocast(v, &a->autocast)) return usage_error(verb, "--autocast takes f16, bf16 or off, not '%s'", v), -1;
  } else if (!strcmp(arg, "--seed")) {
    if (!parse_u64(v, &a->seed)) return usage_error(verb, "--seed wants a non-negative integer, got '%s'", v), -1;
    a->seeded = true;
  } else {
    bool set = !strcmp(arg, "--set");
    if (!strchr(v, '=')) return usage_error(verb, set ? "--set wants SYM=N, got '%s'" : "--input wants NAME=FILE.npy, got '%s'", v), -1;
    if ((set ? a->nsets : a->ninputs) == 64) return usage_error(verb, "more than 64 %s options", arg), -1;
    if (set) a->sets[a->nsets++] = (char *)v;
    else a->inputs[a->ninputs++] = (char *)v;
  }
  return 1;
}

const char compile_options_help[] =
    "\n"
    "compile options:\n"
    "  --eager              one kernel per op, no fusion (the A/B baseline)\n"
    "  --dynamic            keep symbolic dimensions symbolic: one module for any value\n"
    "  --fullgraph          an op the target cannot run is an error\n"
    "  --rules              the targets' own rules alone: read no tune table (the untuned baseline)\n"
    "  --mode M             default, or reduce-overhead (GPU targets: the launches are recorded once\n"
    "                       and replayed; the CPU has nothing to record), or max-autotune (first\n"
    "                       tune what the tune tables lack, as `portc tune --missing` does, and\n"
    "                       keep it in the user's table)\n"
    "  --autocast T         mixed precision, as torch.autocast: the graph's matmuls, convolutions and\n"
    "                       attention of f32 operands compute in T (f16 or bf16; off: as written),\n"
    "                       their sums in f32, their results cast back to f32 (an addition of two\n"
    "                       such results in T, as torch.autocast's)\n"
    "  --dump DIR           write the generated kernel source into DIR\n"
    "  --dump-after PASS    print the graph after PASS: specialize form_attention decompose cast_sink channels_last split_concat\n"
    "                       split_reduce fold_batch_sum matmul_rows fold cse dce fuse\n";

int parse_compile_option(int argc, char **argv, int i, portc_compile_options *o) {
  const char *a = argv[i];
  o->size = sizeof *o; /* the options this build of the tool knows, rules_only included */
  if (strcmp(a, "--eager") == 0) return o->eager = true, 1;
  if (strcmp(a, "--dynamic") == 0) return o->dynamic = true, 1;
  if (strcmp(a, "--fullgraph") == 0) return o->fullgraph = true, 1;
  if (strcmp(a, "--rules") == 0) return o->rules_only = true, 1;
  bool takes = strcmp(a, "--mode") == 0 || strcmp(a, "--dump") == 0 || strcmp(a, "--dump-after") == 0;
  if (!takes) return 0;
  if (i + 1 >= argc) {
    usage_error(argv[0], "%s needs a value", a);
    return -1;
  }
  const char *v = argv[i + 1];
  if (strcmp(a, "--mode") == 0) {
    if (strcmp(v, "default") == 0) o->mode = PORTC_MODE_DEFAULT;
    else if (strcmp(v, "reduce-overhead") == 0) o->mode = PORTC_MODE_REDUCE_OVERHEAD;
    else if (strcmp(v, "max-autotune") == 0) o->mode = PORTC_MODE_MAX_AUTOTUNE;
    else {
      usage_error(argv[0], "unknown mode '%s' (default, reduce-overhead, max-autotune)", v);
      return -1;
    }
  } else if (strcmp(a, "--dump") == 0) {
    o->dump_dir = v;
  } else {
    /* the library names the passes when v is none of them */
    o->dump_after = v;
  }
  return 2;
}

/* "name", or "name:N" for device N of that target */
bool known_target(const char *name) {
  size_t n = strcspn(name, ":");
  if (name[n] && (!name[n + 1] || strspn(name + n + 1, "0123456789") != strlen(name + n + 1))) return false;
  for (int i = 0; i < portc_target_count(); i++)
    if (strlen(portc_target_name(i)) == n && strncmp(portc_target_name(i), name, n) == 0) return true;
  return false;
}

const char *target_names(void) {
  static char buf[256];
  buf[0] = 0;
  for (int i = 0; i < portc_target_count(); i++) {
    strcat(buf, ", ");
    strncat(buf, portc_target_name(i), sizeof buf - strlen(buf) - 1);
  }
  return buf;
}
