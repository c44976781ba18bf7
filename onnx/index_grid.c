/*
 * index_grid.c: integer tensors whose size is known only at run time but whose values follow
 * from their coordinates. PyTorch writes a slice assignment (`attn[:, :, 1:, 1:] += rel` in MViT
 * V2) as a ScatterND whose indices are a grid built from a Range over each axis; the batch axis's
 * Range runs to the run-time batch size, so the grid cannot be held element by element at import.
 * Every element is an affine function of its coordinates, though, and that is what the importer
 * keeps (`igrid`): a Range to a symbolic limit makes one, the shape operators and integer
 * arithmetic carry it, a Concat along the last axis makes its inputs the components of index
 * tuples, and a ScatterND whose tuple component j is `start_j + t_j` is the slice assignment it
 * spells: the data with that box replaced by the updates (a pad and a where). A grid constant
 * along its run-time axes can still become a graph node (a constant, expanded); any other grid
 * that reaches an operator outside this file is refused with its name (val_node).
 */
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

#define MAX_ELEMS (INT64_C(1) << 24) /* a grid of constant shape is enumerated up to this size */

static bool is_one(dim d) { return d.sym < 0 && d.c == 1; }
static bool same_dim(const portc_graph *g, dim a, dim b) {
  sval x = dim_sval(g, a), y = dim_sval(g, b);
  return x.c == y.c && x.sym == y.sym;
}
static bool has_symbol(const igrid *gr) {
  for (int k = 0; k < gr->rank; k++)
    if (gr->shape[k].sym >= 0) return true;
  return false;
}
static int ncomp(const igrid *gr) { return gr->comps ? gr->comps : 1; }
/* axes whose coordinates the functions read: all but the component axis */
static int coord_axes(const igrid *gr) { return gr->comps ? gr->rank - 1 : gr->rank; }

/* the value of element e (a flat index over shape, the grid's shape or 1 on its run-time axes) */
static int64_t grid_at(const igrid *gr, const int64_t *shape, int64_t e) {
  int64_t rem = e, x[PORTC_MAX_RANK] = {0};
  for (int d = gr->rank - 1; d >= 0; d--) x[d] = rem % shape[d], rem /= shape[d];
  int j = gr->comps ? (int)x[gr->rank - 1] : 0;
  int64_t val = gr->off[j];
  for (int d = 0; d < coord_axes(gr); d++) val += gr->coef[j][d] * x[d];
  return val;
}

/* a known integer tensor as a grid: false when its values are not affine in its coordinates */
static bool known_grid(const oval *v, igrid *gr) {
  memset(gr, 0, sizeof *gr);
  gr->rank = v->rank;
  int64_t n = val_numel(v), stride[PORTC_MAX_RANK], s = 1;
  for (int k = v->rank - 1; k >= 0; k--) gr->shape[k] = (dim){v->shape[k], -1}, stride[k] = s, s *= v->shape[k];
  for (int64_t e = 0; e < n; e++)
    if (v->i[e].unknown || v->i[e].sym >= 0) return false;
  if (!n) return true;
  gr->off[0] = v->i[0].c;
  for (int k = 0; k < v->rank; k++) gr->coef[0][k] = v->shape[k] > 1 ? v->i[stride[k]].c - v->i[0].c : 0;
  for (int64_t e = 0; e < n; e++) {
    int64_t rem = e, x = gr->off[0];
    for (int k = v->rank - 1; k >= 0; k--) x += gr->coef[0][k] * (rem % v->shape[k]), rem /= v->shape[k];
    if (x != v->i[e].c) return false;
  }
  return true;
}

/* input k as a grid (a grid, or a known integer tensor of affine values); error set otherwise */
static bool in_grid(imp *c, int k, igrid *gr) {
  const oval *v = op_in(c, k);
  if (v && v->grid) return *gr = *v->grid, true;
  if (int_known(v) && known_grid(v, gr)) return true;
  fail(c, PORTC_ERR_INVALID, "input '%s' must be an index grid (a Range, shaped and combined) or a known integer tensor of that form", v ? v->name : "?");
  return false;
}

/* output k: known integers where the shape is constant, the grid otherwise */
static portc_status out_grid(imp *c, int k, portc_dtype dt, const igrid *gr) {
  if (!has_symbol(gr)) {
    int64_t shape[PORTC_MAX_RANK], n = 1;
    for (int d = 0; d < gr->rank; d++) shape[d] = gr->shape[d].c, n *= shape[d];
    if (n <= MAX_ELEMS) {
      sval *r = malloc(sizeof(sval) * (size_t)(n ? n : 1));
      if (!r) return fail(c, PORTC_ERR_NOMEM, "out of memory");
      for (int64_t e = 0; e < n; e++) r[e] = (sval){grid_at(gr, shape, e), -1, false};
      return out_ints(c, k, dt, gr->rank, shape, r);
    }
  }
  if (k >= (int)c->np->n_output || !*c->np->output[k]) return PORTC_OK;
  oval *v = val_find(c, c->np->output[k]);
  if (!v) return PORTC_OK;
  if (!(v->grid = malloc(sizeof *gr))) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  *v->grid = *gr;
  v->dt = dt, v->known = false, v->node = -1;
  return PORTC_OK;
}

/* Range(start, limit, delta) with limit a run-time size: start 0 and delta 1, so that its length is
 * the size itself (portc's dimensions are constants or symbols, not expressions) */
static portc_status grid_range(imp *c) {
  double start, delta;
  const oval *lim = op_in(c, 1);
  if (!known_scalar(op_in(c, 0), &start) || !known_scalar(op_in(c, 2), &delta) || start != 0 || delta != 1)
    return fail(c, PORTC_ERR_INVALID, "a Range to the run-time size '%s' must start at 0 with step 1 (its length is then that size)", lim->name);
  portc_dim d;
  if (!sval_dim(c, lim->i[0], &d) || !d.symbol) return fail(c, PORTC_ERR_SHAPE, "limit '%s' is not a size portc can express", lim->name);
  igrid gr = {.rank = 1, .shape = {{0, graph_find_symbol(c->g, d.symbol)}}};
  gr.coef[0][0] = 1;
  return out_grid(c, 0, op_in(c, 0)->dt, &gr);
}

/* a new shape of the same elements: the axes other than 1 must be the same, in order (the
 * component axis, if any, stays last) */
static portc_status grid_reshape(imp *c, const igrid *in, int rank, const dim *shape) {
  igrid out = {.rank = rank, .comps = in->comps};
  memcpy(out.shape, shape, sizeof(dim) * (size_t)rank);
  int k = 0;
  for (int o = 0; o < rank; o++) {
    if (is_one(shape[o]) && !(in->comps == 1 && o == rank - 1)) continue;
    while (k < in->rank && is_one(in->shape[k]) && !(in->comps == 1 && k == in->rank - 1)) k++;
    if (k >= in->rank || !same_dim(c->g, in->shape[k], shape[o]) || (in->comps && (k == in->rank - 1) != (o == rank - 1)))
      return fail(c, PORTC_ERR_SHAPE, "an index grid over run-time sizes is reshaped only by adding or removing axes of size 1");
    for (int j = 0; j < ncomp(in); j++) out.coef[j][o] = in->coef[j][k];
    k++;
  }
  while (k < in->rank && is_one(in->shape[k])) k++;
  if (k != in->rank) return fail(c, PORTC_ERR_SHAPE, "an index grid over run-time sizes is reshaped only by adding or removing axes of size 1");
  memcpy(out.off, in->off, sizeof out.off);
  return out_grid(c, 0, op_in(c, 0)->dt, &out);
}

static portc_status grid_shape_op(imp *c, const char *op, const igrid *in) {
  dim d[PORTC_MAX_RANK];
  int rank = 0;
  if (!strcmp(op, "Reshape")) {
    const oval *s = op_in(c, 1);
    if (!int_known(s) || s->rank != 1 || s->shape[0] > PORTC_MAX_RANK) return fail(c, PORTC_ERR_INVALID, "the new shape must be a 1-D tensor known at import");
    rank = (int)s->shape[0];
    int inferred = -1;
    dim known = {1, -1};
    for (int k = 0; k < rank; k++) {
      sval e = s->i[k];
      portc_dim pd;
      if (!e.unknown && e.sym < 0 && e.c == 0) e = k < in->rank ? dim_sval(c->g, in->shape[k]) : e;
      if (!e.unknown && e.sym < 0 && e.c == -1 && inferred < 0) inferred = k;
      else if (sval_dim(c, e, &pd)) d[k] = (dim){pd.size, pd.symbol ? graph_find_symbol(c->g, pd.symbol) : -1};
      else return fail(c, PORTC_ERR_SHAPE, "the new shape's dimension %d is not a size portc can express", k);
      if (k != inferred && d[k].sym >= 0) known = d[k];
    }
    if (inferred >= 0) { /* the one axis of the input that the others do not account for */
      int64_t in_const = 1, out_const = 1;
      int in_sym = -1;
      for (int k = 0; k < in->rank; k++) {
        if (in->shape[k].sym >= 0) in_sym = in_sym < 0 && !(known.sym >= 0 && same_dim(c->g, known, in->shape[k])) ? k : in_sym;
        else in_const *= in->shape[k].c;
      }
      for (int k = 0; k < rank; k++)
        if (k != inferred && d[k].sym < 0) out_const *= d[k].c;
      if (in_sym >= 0 && in_const == out_const) d[inferred] = in->shape[in_sym];
      else if (in_sym < 0 && out_const && in_const % out_const == 0) d[inferred] = (dim){in_const / out_const, -1};
      else return fail(c, PORTC_ERR_SHAPE, "the new shape's -1 cannot be worked out for an index grid over run-time sizes");
    }
  } else if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze")) {
    bool un = op[0] == 'U';
    int64_t axes[PORTC_MAX_RANK];
    int n;
    portc_status st;
    if (op_in(c, 1)) {
      if ((st = known_ints(c, 1, "axes", axes, PORTC_MAX_RANK, &n))) return st;
    } else if ((n = attr_ints(c, "axes", axes, PORTC_MAX_RANK)) < 0) {
      if (un) return fail(c, PORTC_ERR_INVALID, "axes are missing");
      n = 0;
    }
    int out_rank = un ? in->rank + n : in->rank;
    if (out_rank > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "rank %d is more than %d", out_rank, PORTC_MAX_RANK);
    bool mark[PORTC_MAX_RANK] = {false};
    for (int k = 0; k < n; k++) {
      int64_t a = axes[k] < 0 ? axes[k] + out_rank : axes[k];
      if (a < 0 || a >= out_rank || mark[a]) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range or repeated", (long long)axes[k]);
      mark[a] = true;
    }
    for (int k = 0, j = 0; k < (un ? out_rank : in->rank); k++) {
      if (un) d[rank++] = mark[k] ? (dim){1, -1} : in->shape[j++];
      else if (!(n ? mark[k] : is_one(in->shape[k]))) d[rank++] = in->shape[k];
      else if (!is_one(in->shape[k])) return fail(c, PORTC_ERR_SHAPE, "axis %d does not have size 1", k);
    }
  }
  return grid_reshape(c, in, rank, d);
}

/* Expand to a shape: numpy broadcasting, a 1 in the shape keeping the grid's axis */
static portc_status grid_expand(imp *c, const igrid *in) {
  const oval *s = op_in(c, 1);
  if (!int_known(s) || s->rank != 1 || s->shape[0] > PORTC_MAX_RANK) return fail(c, PORTC_ERR_INVALID, "the shape must be a 1-D tensor known at import");
  int sr = (int)s->shape[0], rank = sr > in->rank ? sr : in->rank, lead = rank - in->rank;
  if (in->comps && sr >= in->rank) return fail(c, PORTC_ERR_SHAPE, "an index grid's component axis is not broadcast");
  igrid out = {.rank = rank, .comps = in->comps};
  memcpy(out.off, in->off, sizeof out.off);
  for (int k = 0; k < rank; k++) {
    int xi = k - lead, si = k - (rank - sr);
    dim x = xi >= 0 ? in->shape[xi] : (dim){1, -1};
    sval e = si >= 0 ? s->i[si] : (sval){1, -1, false};
    portc_dim pd;
    if (!e.unknown && e.sym < 0 && e.c == 1) out.shape[k] = x;
    else if (!sval_dim(c, e, &pd)) return fail(c, PORTC_ERR_SHAPE, "dimension %d of the shape is not a size portc can express", k);
    else {
      dim t = {pd.size, pd.symbol ? graph_find_symbol(c->g, pd.symbol) : -1};
      if (!is_one(x) && !same_dim(c->g, x, t)) return fail(c, PORTC_ERR_SHAPE, "dimension %d does not broadcast to the shape", k);
      out.shape[k] = t;
    }
    for (int j = 0; xi >= 0 && j < ncomp(in); j++) out.coef[j][k] = is_one(x) ? 0 : in->coef[j][xi];
  }
  return out_grid(c, 0, op_in(c, 0)->dt, &out);
}

/* Add, Sub, Mul of two grids with one function each; Mul only by a constant */
static portc_status grid_arith(imp *c, const char *op) {
  igrid a, b;
  if (!in_grid(c, 0, &a) || !in_grid(c, 1, &b)) return PORTC_ERR_INVALID;
  if (a.comps || b.comps) return fail(c, PORTC_ERR_INVALID, "%s of index tuples: portc combines single index grids", op);
  int rank = a.rank > b.rank ? a.rank : b.rank;
  igrid out = {.rank = rank};
  bool mul = !strcmp(op, "Mul");
  int64_t sign = !strcmp(op, "Sub") ? -1 : 1;
  bool a_const = true, b_const = true; /* no coordinate changes the value */
  for (int k = 0; k < rank; k++) {
    int ai = k - (rank - a.rank), bi = k - (rank - b.rank);
    dim x = ai >= 0 ? a.shape[ai] : (dim){1, -1}, y = bi >= 0 ? b.shape[bi] : (dim){1, -1};
    if (!is_one(x) && !is_one(y) && !same_dim(c->g, x, y)) return fail(c, PORTC_ERR_SHAPE, "operands of shapes that do not broadcast");
    out.shape[k] = is_one(x) ? y : x;
    int64_t ca = ai >= 0 && !is_one(x) ? a.coef[0][ai] : 0, cb = bi >= 0 && !is_one(y) ? b.coef[0][bi] : 0;
    out.coef[0][k] = mul ? ca * b.off[0] + cb * a.off[0] : ca + sign * cb;
    a_const = a_const && !ca, b_const = b_const && !cb;
  }
  if (mul && !a_const && !b_const) return fail(c, PORTC_ERR_INVALID, "a product of two index grids is not affine");
  out.off[0] = mul ? a.off[0] * b.off[0] : a.off[0] + sign * b.off[0];
  return out_grid(c, 0, op_in(c, 0)->dt, &out);
}

/* Slice along constant axes, or the whole of a run-time axis */
static portc_status grid_slice(imp *c, const igrid *in) {
  int64_t starts[PORTC_MAX_RANK], ends[PORTC_MAX_RANK], axes[PORTC_MAX_RANK], steps[PORTC_MAX_RANK];
  int n, ne, na = -1, ns = -1;
  portc_status st;
  if ((st = known_ints(c, 1, "starts", starts, PORTC_MAX_RANK, &n)) || (st = known_ints(c, 2, "ends", ends, PORTC_MAX_RANK, &ne))) return st;
  if (op_in(c, 3) && (st = known_ints(c, 3, "axes", axes, PORTC_MAX_RANK, &na))) return st;
  if (op_in(c, 4) && (st = known_ints(c, 4, "steps", steps, PORTC_MAX_RANK, &ns))) return st;
  if (ne != n || (na >= 0 && na != n) || (ns >= 0 && ns != n)) return fail(c, PORTC_ERR_INVALID, "starts, ends, axes and steps differ in length");
  igrid out = *in;
  for (int k = 0; k < n; k++) {
    int64_t a = na < 0 ? k : axes[k] < 0 ? axes[k] + in->rank : axes[k], step = ns < 0 ? 1 : steps[k];
    if (a < 0 || a >= in->rank) return fail(c, PORTC_ERR_INVALID, "axis %lld is out of range", (long long)(na < 0 ? k : axes[k]));
    if (step < 1) return fail(c, PORTC_ERR_INVALID, "step %lld on an index grid: portc slices it forwards only", (long long)step);
    if (in->comps && a == in->rank - 1) return fail(c, PORTC_ERR_INVALID, "a slice of an index grid's component axis");
    if (in->shape[a].sym >= 0) {
      if (starts[k] != 0 || ends[k] < (INT64_C(1) << 31) || step != 1)
        return fail(c, PORTC_ERR_SHAPE, "a slice of the run-time axis %lld of an index grid: portc takes it whole", (long long)a);
      continue;
    }
    int64_t size = in->shape[a].c, s = starts[k] < 0 ? starts[k] + size : starts[k], e = ends[k] < 0 ? ends[k] + size : ends[k];
    s = s < 0 ? 0 : s > size ? size : s, e = e < 0 ? 0 : e > size ? size : e;
    int64_t len = e > s ? (e - s + step - 1) / step : 0;
    out.shape[a] = (dim){len, -1};
    for (int j = 0; j < ncomp(in); j++) out.off[j] += in->coef[j][a] * s, out.coef[j][a] *= step;
  }
  return out_grid(c, 0, op_in(c, 0)->dt, &out);
}

/* Concat along the last axis: each input's functions become components of index tuples */
static portc_status grid_concat(imp *c) {
  int64_t axis = attr_int(c, "axis", 0);
  igrid out = {0};
  for (int k = 0; k < c->nin; k++) {
    igrid x;
    if (!op_in(c, k)) continue;
    if (!in_grid(c, k, &x)) return PORTC_ERR_INVALID;
    int last = x.rank - 1;
    if (axis != -1 && axis != last) return fail(c, PORTC_ERR_INVALID, "index grids are concatenated along their last axis, not %lld", (long long)axis);
    if (!x.comps && !is_one(x.shape[last])) return fail(c, PORTC_ERR_SHAPE, "input '%s': an index grid joins index tuples with a last axis of size 1", op_in(c, k)->name);
    if (!out.rank) out.rank = x.rank;
    else if (x.rank != out.rank) return fail(c, PORTC_ERR_SHAPE, "inputs of different ranks");
    for (int d = 0; d < last; d++) {
      if (!out.comps) out.shape[d] = x.shape[d];
      else if (!same_dim(c->g, out.shape[d], x.shape[d])) return fail(c, PORTC_ERR_SHAPE, "input '%s' differs in dimension %d", op_in(c, k)->name, d);
    }
    if (out.comps + ncomp(&x) > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "index tuples of more than %d components", PORTC_MAX_RANK);
    for (int j = 0; j < ncomp(&x); j++, out.comps++) {
      out.off[out.comps] = x.off[j];
      for (int d = 0; d < last; d++) out.coef[out.comps][d] = x.coef[j][d];
    }
  }
  if (!out.rank) return fail(c, PORTC_ERR_INVALID, "no inputs");
  out.shape[out.rank - 1] = (dim){out.comps, -1};
  return out_grid(c, 0, op_in(c, 0)->dt, &out);
}

/* ScatterND whose tuples are a strided box of the data: component j of an index tuple is start_j
 * plus step_j times the tuple's coordinate along one axis of its own (axes in the components'
 * order), or the constant start_j (an integer index). The updates, reshaped to one axis per
 * component, spread by their steps and padded to the data's shape, replace the data in the box:
 * where(inside, spread updates, data). */
static portc_status grid_scatter(imp *c, const igrid *ix) {
  char buf[16];
  const char *red = attr_string(c, "reduction", "none", buf, sizeof buf);
  if (strcmp(red, "none")) return fail(c, PORTC_ERR_INVALID, "reduction '%s': portc scatters with reduction none", red);
  int q = ix->comps, p = ix->rank - 1, axis_of[PORTC_MAX_RANK], last = -1;
  int64_t step[PORTC_MAX_RANK];
  const char *why = q ? NULL : "its last axis does not list index tuples";
  for (int j = 0; j < q && !why; j++) { /* the tuple axis that drives component j, in increasing order */
    axis_of[j] = -1, step[j] = 1;
    for (int k = 0; k < p; k++) {
      if (!ix->coef[j][k] || is_one(ix->shape[k])) continue;
      if (axis_of[j] >= 0 || k <= last || ix->coef[j][k] < 0) why = "its tuples are not a box of the data (each index must follow one axis of its own, forwards)";
      axis_of[j] = last = k, step[j] = ix->coef[j][k];
    }
  }
  for (int k = 0; k < p && !why; k++) {
    bool used = is_one(ix->shape[k]);
    for (int j = 0; j < q; j++) used = used || axis_of[j] == k;
    if (!used) why = "an axis of its tuples indexes nothing (the same element written again)";
  }
  if (why) return fail(c, PORTC_ERR_INVALID, "indices '%s' are computed at run time and %s; portc takes such a ScatterND only as a slice assignment", op_in(c, 1)->name, why);
  dim dd[PORTC_MAX_RANK], ud[PORTC_MAX_RANK];
  int dr = val_shape(c, op_in(c, 0), dd), ur = val_shape(c, op_in(c, 2), ud);
  if (q > dr || ur != p + dr - q) return fail(c, PORTC_ERR_SHAPE, "updates do not have the shape indices[:-1] + data[%d:]", q);
  for (int k = 0; k < ur; k++)
    if (!same_dim(c->g, ud[k], k < p ? ix->shape[k] : dd[q + k - p]))
      return fail(c, PORTC_ERR_SHAPE, "updates do not have the shape indices[:-1] + data[%d:] (dimension %d)", q, k);
  /* per data axis j < q: the box's start, count and step; the mask's size (1 where the box is the whole axis) */
  int64_t count[PORTC_MAX_RANK], mshape[PORTC_MAX_RANK], mn = 1;
  portc_dim box[PORTC_MAX_RANK];
  bool whole = true;
  for (int j = 0; j < dr; j++) {
    dim e = j < q ? (axis_of[j] >= 0 ? ix->shape[axis_of[j]] : (dim){1, -1}) : dd[j];
    box[j] = (portc_dim){e.c, e.sym >= 0 ? c->g->syms[e.sym] : NULL};
    mshape[j] = 1;
    if (j >= q || (same_dim(c->g, e, dd[j]) && ix->off[j] == 0 && step[j] == 1)) continue; /* the whole axis */
    count[j] = e.c;
    if (dd[j].sym >= 0 || e.sym >= 0 || ix->off[j] < 0 || (count[j] && ix->off[j] + step[j] * (count[j] - 1) >= dd[j].c))
      return fail(c, PORTC_ERR_SHAPE, "indices along axis %d run from %lld over %s%lld elements, outside the data's axis", j, (long long)ix->off[j],
                  e.sym >= 0 ? "a run-time number of " : "", (long long)e.c);
    mshape[j] = dd[j].c, mn *= dd[j].c, whole = false;
  }
  portc_graph *g = c->g;
  portc_node upd = val_node(c, op_in(c, 2)), data = upd < 0 ? upd : val_node(c, op_in(c, 0));
  if (data < 0) return out_node(c, 0, data);
  upd = portc_reshape(g, upd, dr, box);
  if (whole) return out_node(c, 0, upd);
  if (mn > MAX_ELEMS) return fail(c, PORTC_ERR_SHAPE, "the box's mask has %lld elements; at most 2^24 here", (long long)mn);
  int64_t pads[2 * PORTC_MAX_RANK] = {0};
  for (int j = 0; j < q && upd >= 0; j++) {
    if (mshape[j] == 1) continue;
    if (step[j] > 1 && count[j] > 1) { /* [.., e, ..] -> [.., e, step, ..] with zeros after each -> [.., e step, ..] -> first (e-1) step + 1 */
      portc_dim d[PORTC_MAX_RANK + 1];
      int64_t spread[2 * (PORTC_MAX_RANK + 1)] = {0};
      for (int k = 0; k < dr; k++) d[k + (k > j)] = box[k];
      d[j + 1] = (portc_dim){1, NULL};
      spread[2 * (j + 1) + 1] = step[j] - 1;
      upd = portc_pad(g, portc_reshape(g, upd, dr + 1, d), 2 * (dr + 1), spread, 0);
      box[j].size = count[j] * step[j];
      upd = portc_slice(g, portc_reshape(g, upd, dr, box), j, 0, (count[j] - 1) * step[j] + 1, 1);
    }
    int64_t span = count[j] ? (count[j] - 1) * step[j] + 1 : 0;
    pads[2 * j] = ix->off[j], pads[2 * j + 1] = dd[j].c - ix->off[j] - span;
  }
  double *inside = malloc(sizeof(double) * (size_t)mn);
  if (!inside) return fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t e = 0; e < mn; e++) {
    int64_t rem = e;
    bool in = true;
    for (int j = dr - 1; j >= 0; j--) {
      int64_t x = rem % mshape[j] - (mshape[j] > 1 ? ix->off[j] : 0);
      rem /= mshape[j];
      in = in && (mshape[j] == 1 || (x >= 0 && x % step[j] == 0 && x / step[j] < count[j]));
    }
    inside[e] = in;
  }
  portc_node mask = portc_const(g, PORTC_BOOL, dr, mshape, inside, mn);
  free(inside);
  portc_node spread = upd < 0 ? upd : portc_pad(g, upd, 2 * dr, pads, 0);
  return out_node(c, 0, mask < 0 ? mask : spread < 0 ? spread : portc_where(g, mask, spread, data));
}

static bool any_grid_input(const imp *c) {
  for (int k = 0; k < c->nin; k++)
    if (c->in[k] && c->in[k]->grid) return true;
  return false;
}

bool onnx_grid_takes(const imp *c, const char *op) {
  if (!strcmp(op, "Range")) { /* to a run-time size */
    const oval *lim = op_in(c, 1);
    return int_known(lim) && val_numel(lim) == 1 && !lim->i[0].unknown && lim->i[0].sym >= 0;
  }
  if (!strcmp(op, "Expand") && int_known(op_in(c, 0)) && int_known(op_in(c, 1))) { /* to a run-time size */
    const oval *s = op_in(c, 1);
    for (int64_t k = 0; k < val_numel(s); k++)
      if (s->i[k].sym >= 0) return true;
    return false;
  }
  static const char *const ops[] = {"Identity", "Cast", "Reshape", "Unsqueeze", "Squeeze", "Expand", "Slice", "Concat", "Add", "Sub", "Mul", "ScatterND", NULL};
  bool known = false;
  for (int i = 0; ops[i] && !known; i++) known = !strcmp(op, ops[i]);
  return known && any_grid_input(c);
}

portc_status onnx_grid_op(imp *c, const char *op) {
  if (!strcmp(op, "Range")) return grid_range(c);
  portc_status st = op_need(c, 0);
  if (!st && strcmp(op, "Identity") && strcmp(op, "Cast") && strcmp(op, "Concat") && strcmp(op, "Squeeze")) st = op_need(c, 1);
  if (st) return st;
  if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul")) return grid_arith(c, op);
  if (!strcmp(op, "Concat")) return grid_concat(c);
  igrid in;
  if (!strcmp(op, "ScatterND")) {
    if ((st = op_need(c, 2))) return st;
    return in_grid(c, 1, &in) ? grid_scatter(c, &in) : PORTC_ERR_INVALID;
  }
  if (!in_grid(c, 0, &in)) return PORTC_ERR_INVALID;
  if (!strcmp(op, "Identity")) return out_grid(c, 0, op_in(c, 0)->dt, &in);
  if (!strcmp(op, "Cast")) {
    portc_dtype to;
    if (!onnx_dtype((int32_t)attr_int(c, "to", 0), &to) || (to != PORTC_I64 && to != PORTC_I32))
      return fail(c, PORTC_ERR_DTYPE, "an index grid '%s' is cast to integers only", op_in(c, 0)->name);
    return out_grid(c, 0, to, &in);
  }
  if (!strcmp(op, "Expand")) return grid_expand(c, &in);
  if (!strcmp(op, "Slice")) return grid_slice(c, &in);
  return grid_shape_op(c, op, &in);
}

portc_node onnx_grid_node(imp *c, oval *v) {
  const igrid *gr = v->grid;
  int64_t shape[PORTC_MAX_RANK] = {0}, n = 1;
  portc_dim dims[PORTC_MAX_RANK];
  for (int k = 0; k < gr->rank; k++) {
    dim d = gr->shape[k];
    for (int j = 0; d.sym >= 0 && k < coord_axes(gr) && j < ncomp(gr); j++)
      if (gr->coef[j][k])
        return -(portc_node)fail(c, PORTC_ERR_SHAPE,
                                 "value '%s' is an index grid over the run-time size %s (a Range to it, say); portc takes it only as the indices of a ScatterND that assigns a slice",
                                 v->name, c->g->syms[d.sym]);
    shape[k] = d.sym >= 0 ? 1 : d.c, n *= shape[k];
    dims[k] = (portc_dim){d.c, d.sym >= 0 ? c->g->syms[d.sym] : NULL};
  }
  if (n > MAX_ELEMS) return -(portc_node)fail(c, PORTC_ERR_SHAPE, "value '%s' has more than 2^24 elements along its constant axes", v->name);
  double *vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!vals) return -(portc_node)fail(c, PORTC_ERR_NOMEM, "out of memory");
  for (int64_t e = 0; e < n; e++) vals[e] = (double)grid_at(gr, shape, e);
  portc_node k = portc_const(c->g, v->dt, gr->rank, shape, vals, n);
  free(vals);
  return k < 0 ? k : portc_expand(c->g, k, gr->rank, dims);
}
