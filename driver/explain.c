/*
 * explain.c: what a compiled module does, for people: `portc explain` prints, per kernel, its
 * kind, the graph nodes fused into it, what it reads and writes, bytes and FLOPs, and why it
 * ends where it does; then the memory plan.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/gpu_kernels.h"
#include "../ir/api_struct.h"
#include "../ir/bindings.h"
#include "module.h"


/* symbol values for the lowered graph, from b or the specialization; false when unknown */
static bool symbols(const portc_module *m, portc_bindings *b, int64_t *S) {
  const portc_graph *lg = m->km->g;
  if (b && bindings_bind_symbols(m->g, b) != PORTC_OK) return false;
  for (int k = 0; k < lg->nsyms; k++) {
    int u = m->ksym[k];
    if (u < 0) return false;
    if (m->symvals) S[k] = m->symvals[u];
    else if (b && b->sym_set[u]) S[k] = b->sym[u];
    else return false;
  }
  return true;
}

static portc_status info_fill(const portc_module *m, portc_bindings *b, portc_module_info *info) {
  info->target = m->t->name;
  info->device = m->t->device();
  info->kernels = m->km->nk;
  info->compile_seconds = m->compile_seconds;
  info->cache_hit = m->cache_hit;
  info->timer = m->t->gpu ? m->t->gpu->timer(m->handle) : "host clock";
  info->flushes_denormals = m->t->flushes_denormals && m->t->flushes_denormals(m->handle);
  for (int i = 0; i < m->km->nk; i++) info->tuned_kernels += strcmp(m->km->k[i].sched.source, "rules") != 0;
  info->uploaded_bytes = m->uploaded, info->downloaded_bytes = m->downloaded;
  info->derived_kernels = derived_kernels(m->km), info->last_run_kernels = m->launched;
  int64_t S[64] = {0};
  if (m->km->g->nsyms > 64 || !symbols(m, b, S)) return err_set(PORTC_ERR_SHAPE, "info: symbol values are needed for sizes");
  for (int i = 0; i < m->km->nk; i++) {
    if (m->km->k[i].derived) continue; /* not part of a run once its result is kept */
    int64_t by, fl;
    kir_cost(m->km, &m->km->k[i], S, &by, &fl);
    info->bytes += by;
    info->flops += fl;
  }
  mem_plan plan;
  portc_status st = plan_memory(m->km, S, &plan, NULL);
  if (st) return st;
  info->arena_bytes = plan.arena_bytes;
  info->intermediate_bytes = plan.naive_bytes;
  info->kept_bytes = plan.kept_bytes;
  for (int i = 0; i < m->km->nbuf; i++)
    if (m->km->buf[i].role != BUF_TEMP)
      info->io_bytes += shape_count(&m->km->buf[i].sh, S) * (int64_t)portc_dtype_size(m->km->buf[i].dt);
  return PORTC_OK;
}

portc_status portc_module_info_get(const portc_module *m, portc_bindings *b, portc_module_info *info) {
  if (!m || !info) return err_set(PORTC_ERR_INVALID, "module_info_get: NULL argument");
  portc_module_info whole;
  memset(&whole, 0, sizeof whole);
  module_lock(m, b);
  portc_status st = m->parts ? partition_info(m, b, &whole) : info_fill(m, b, &whole);
  module_unlock(m, b);
  api_struct_out(info, &whole, sizeof whole, API_FIRST_SIZE(portc_module_info, flushes_denormals));
  return st;
}

static const char *const kinds[] = {"pointwise", "row reduction", "matmul", "conv2d", "opaque"};

/* the launch decisions the target's schedule hook made, and where they come from */
static void schedule_line(const kir_kernel *k, strbuf *out) {
  const kir_schedule *s = &k->sched;
  if (!s->source[0]) return;
  static const char *const variants[] = {"", ", shared-memory tiles", ", matrix instructions", ", warpgroup matrix instructions fed by TMA"};
  sb_printf(out, "  schedule: ");
  if (s->threads[0]) {
    sb_printf(out, "%d", s->threads[0]);
    if (s->threads[1] > 1) sb_printf(out, "x%d", s->threads[1]);
    sb_printf(out, " threads");
  } else {
    sb_printf(out, "vector %d, chunk %lld, matmul blocks %dx%d, %dx%dx%d", s->vector, (long long)s->chunk, s->mr, s->nr, s->mc, s->nc, s->kc);
  }
  if ((k->kind == KK_MATMUL || k->kind == KK_CONV) && s->variant != KS_PLAIN) {
    sb_printf(out, "%s %dx%d", variants[s->variant], s->tile_m, s->tile_n);
    if (s->stages) sb_printf(out, "x%d, %d stages", s->tile_k, s->stages);
    if (s->split_k > 1) sb_printf(out, ", the reduction in %d slices added by an epilogue kernel", s->split_k);
    if (s->wg_matrices) sb_printf(out, ", on matrices of the whole work group%s", s->wg_matrices == 2 ? ", loaded through tensor layouts" : "");
  }
  if (k->kind == KK_OPAQUE && s->tile_m > 0) /* attention: its query rows per work group, its keys a step */
    sb_printf(out, "%s, %d queries by %d keys a step", variants[s->variant == KS_MMA ? KS_MMA : KS_PLAIN], s->tile_m, s->tile_n);
  if (s->threads[0] && s->vector) sb_printf(out, ", vectors of %d", s->vector);
  if (gpu_conv_run(k) > 1) sb_printf(out, ", runs of %d outputs per invocation", s->run);
  if (s->library) sb_printf(out, ", or the vendor library");
  if (s->library && s->library_algo) sb_printf(out, " (its algorithm %d)", s->library_algo);
  sb_printf(out, " (%s)\n", s->source);
}

static void buf_list(const kir_module *km, const kir_kernel *k, bool stores, strbuf *b) {
  int n = 0;
  if (stores) {
    for (int s = 0; s < k->nstore; s++) sb_printf(b, "%s%s", n++ ? ", " : "", km->g->nodes[km->buf[k->store[s].buf].node].name);
    return;
  }
  bool *seen = calloc((size_t)km->nbuf + 1, sizeof *seen);
  for (int i = 0; seen && i < k->nval + k->nin; i++) {
    int bi = i < k->nval ? (k->val[i].kind == KV_LOAD ? k->val[i].buf : -1) : k->in_buf[i - k->nval];
    if (bi < 0 || seen[bi]) continue;
    seen[bi] = true;
    sb_printf(b, "%s%s", n++ ? ", " : "", km->g->nodes[km->buf[bi].node].name);
  }
  free(seen);
  if (!n) sb_printf(b, "(nothing)");
}

static char *explain(const portc_module *m, portc_bindings *b) {
  const kir_module *km = m->km;
  strbuf out = {0};
  int64_t S[64] = {0};
  bool sized = km->g->nsyms <= 64 && symbols(m, b, S);
  sb_printf(&out, "graph %s on %s (%s): %d kernel%s%s\n", m->g->name, m->t->name, m->t->device(), km->nk, km->nk == 1 ? "" : "s",
            km->eager ? " (eager: one per op)" : "");
  int64_t tb = 0, tf = 0;
  for (int i = 0; i < km->nk; i++) {
    const kir_kernel *k = &km->k[i];
    char dom[256];
    shape_str(km->g, &k->dom, dom, sizeof dom);
    bool attention = k->kind == KK_OPAQUE && km->g->nodes[k->node].op == OP_attention;
    sb_printf(&out, "\nkernel %d: %s over %s", i, attention ? "attention (online softmax; no score matrix in memory)" : kinds[k->kind], dom);
    if (k->kind == KK_ROW) {
      char red[256];
      shape_str(km->g, &k->red, red, sizeof red);
      sb_printf(&out, " x %s (", red);
      for (int p = 0; p < k->nphase; p++) sb_printf(&out, "%s%s", p ? ", then " : "", op_get(k->phase[p].op)->name);
      sb_printf(&out, ")");
    }
    sb_printf(&out, "\n  fuses:  ");
    for (int j = 0; j < k->nnodes; j++) {
      const node *n = &km->g->nodes[k->nodes[j]];
      sb_printf(&out, "%s%s(%s)", j ? ", " : "", n->name, op_get(n->op)->name);
    }
    sb_printf(&out, "\n  reads:  ");
    buf_list(km, k, false, &out);
    sb_printf(&out, "\n  writes: ");
    buf_list(km, k, true, &out);
    if (sized) {
      int64_t by, fl;
      kir_cost(km, k, S, &by, &fl);
      if (!k->derived) tb += by, tf += fl;
      sb_printf(&out, "\n  moves %lld bytes, %lld FLOPs", (long long)by, (long long)fl);
    }
    sb_printf(&out, "\n  ends:   %s\n", k->why);
    if (k->derived) sb_printf(&out, "  kept:   computed from parameters and constants alone; run again only when one is set anew\n");
    schedule_line(k, &out);
    char note[400] = "";
    if (m->t->kernel_note) m->t->kernel_note(m->handle, i, note, sizeof note);
    if (note[0]) sb_printf(&out, "  runs:   %s\n", note);
  }
  if (sized) {
    mem_plan plan;
    bool planned = plan_memory(km, S, &plan, NULL) == PORTC_OK;
    if (planned)
      sb_printf(&out, "\ntotal: %lld bytes moved, %lld FLOPs; intermediates: %lld bytes planned in one arena (%lld if each had its own)\n",
                (long long)tb, (long long)tf, (long long)plan.arena_bytes, (long long)plan.naive_bytes);
    int nd = derived_kernels(km);
    if (nd && planned)
      sb_printf(&out, "kept: %d kernel%s computed from parameters alone (not in the total), %lld bytes of results kept on the device between runs\n", nd,
                nd == 1 ? "" : "s", (long long)plan.kept_bytes);
    if (km->remat_values)
      sb_printf(&out, "rematerialization: %d values computed again where they are read late, or partial sums kept (%lld bytes without)\n",
                km->remat_values, (long long)km->remat_arena_before);
  } else {
    sb_printf(&out, "\n(give symbol values for byte and FLOP counts)\n");
  }
  char *s = sb_take(&out);
  if (!s) err_set(PORTC_ERR_NOMEM, "explain: out of memory");
  return s;
}

char *portc_module_explain(const portc_module *m, portc_bindings *b) {
  if (!m) {
    err_set(PORTC_ERR_INVALID, "explain: NULL module");
    return NULL;
  }
  module_lock(m, b);
  char *text = m->parts ? partition_explain(m, b) : explain(m, b);
  module_unlock(m, b);
  return text;
}
