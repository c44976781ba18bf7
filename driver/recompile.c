/*
 * recompile.c: what a module compiled without `dynamic` does when a run brings other symbol
 * values, as torch.compile does with its guards: the guard is the symbol values the module was
 * specialized to; on a miss it compiles again for the new values and keeps that variant; when a
 * symbol shows a third distinct value, or after PORTC_RECOMPILE_LIMIT recompiles (8 by default),
 * it compiles once with every symbol dynamic and runs everything else with that ("automatic
 * dynamic"). Each recompile is logged under PORTC_LOG=recompiles with the guard that failed.
 * The module's lock is held throughout (the caller's), so threads sharing a module compile once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/bindings.h"
#include "module.h"

enum { DEFAULT_RECOMPILE_LIMIT = 8 };

/* PORTC_RECOMPILE_LIMIT: 0 to MODULE_MAX_VARIANTS recompiles with specialized values */
static int recompile_limit(void) {
  const char *v = getenv("PORTC_RECOMPILE_LIMIT");
  char *end;
  long n = v && *v ? strtol(v, &end, 10) : DEFAULT_RECOMPILE_LIMIT;
  if (v && *v && (*end || n < 0)) n = DEFAULT_RECOMPILE_LIMIT;
  return n > MODULE_MAX_VARIANTS ? MODULE_MAX_VARIANTS : (int)n;
}

static bool specialized_for(const portc_module *v, const portc_bindings *b) {
  for (int k = 0; k < v->g->nsyms; k++)
    if (v->symvals[k] != b->sym[k]) return false;
  return true;
}

/* how many values other than `value` symbol k has been specialized to, in m and its variants */
static int other_values(const portc_module *m, int k, int64_t value) {
  int64_t seen[MODULE_MAX_VARIANTS + 1];
  int n = 0;
  for (int i = -1; i < m->nvariant; i++) {
    int64_t x = (i < 0 ? m : m->variant[i])->symvals[k];
    bool dup = x == value;
    for (int j = 0; j < n && !dup; j++) dup = seen[j] == x;
    if (!dup) seen[n++] = x;
  }
  return n;
}

portc_status module_for_values(portc_module *m, portc_bindings *b, portc_module **use) {
  *use = m;
  if (!m->symvals || !m->g->nsyms || !b) return PORTC_OK; /* nothing to guard, or the run says what is missing */
  portc_status st = bindings_bind_symbols(m->g, b);
  for (int k = 0; !st && k < m->g->nsyms; k++)
    if (!b->sym_set[k]) return PORTC_OK; /* the run says which is missing */
  if (st || specialized_for(m, b)) return st;
  if (m->dyn) return *use = m->dyn, PORTC_OK;
  for (int i = 0; i < m->nvariant; i++)
    if (specialized_for(m->variant[i], b)) return *use = m->variant[i], PORTC_OK;
  /* a recompile: the first symbol that differs is the guard that failed */
  int k = 0, third = -1;
  while (m->symvals[k] == b->sym[k]) k++;
  for (int j = 0; j < m->g->nsyms && third < 0; j++)
    if (other_values(m, j, b->sym[j]) >= 2) third = j;
  int limit = recompile_limit(); /* at most MODULE_MAX_VARIANTS: the variants always fit */
  bool dynamic = third >= 0 || m->nvariant >= limit;
  char how[160];
  if (third >= 0) snprintf(how, sizeof how, "with every symbol dynamic (%s has a third value)", m->g->syms[third]);
  else if (dynamic) snprintf(how, sizeof how, "with every symbol dynamic (the recompile limit, %d, is reached)", limit);
  else snprintf(how, sizeof how, "for these values");
  log_line("recompiles", "graph %s: guard %s == %lld failed (this run has %lld): recompile %d, %s", m->g->name, m->g->syms[k],
           (long long)m->symvals[k], (long long)b->sym[k], m->nvariant + 1, how);
  portc_compile_options o = m->opts;
  o.dynamic = dynamic;
  portc_module *v = NULL;
  if ((st = module_compile(m->g, &o, b, NULL, &v))) {
    if (m->file) /* a module file holds its guards' kernels alone: others need the compiler */
      err_set(st, "module file %s holds kernels for %s=%lld; this run has %s=%lld, and compiling for it failed: %s", m->file, m->g->syms[k],
              (long long)m->symvals[k], m->g->syms[k], (long long)b->sym[k], portc_last_error());
    return st;
  }
  if (dynamic) m->dyn = v;
  else m->variant[m->nvariant++] = v;
  *use = v;
  return PORTC_OK;
}

void module_variants_free(portc_module *m) {
  for (int i = 0; i < m->nvariant; i++) portc_module_free(m->variant[i]);
  portc_module_free(m->dyn);
  m->nvariant = 0, m->dyn = NULL;
}
