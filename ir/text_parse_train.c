/*
 * text_parse_train.c: the .ptg statements of training (docs/ptg.md, "Training"): gradients,
 * losses, updates, optimizer steps and mixed precision. Each builds through the public calls
 * (portc_graph_grad, portc_cross_entropy, portc_update, portc_train_step, portc_graph_autocast)
 * and reports their message at the statement.
 */
#include <stdlib.h>
#include <string.h>

#include "text_parse.h"

/* update PARAM = VALUE */
void ptg_update(parser *ps) {
  tok at = ps->t;
  int32_t p = ps_use(ps);
  if (p < 0 || !ps_expect(ps, '=', "'=' and the value the parameter takes")) return;
  int32_t v = ps_use(ps);
  if (v < 0 || !ps_end_of_statement(ps)) return;
  portc_status st = portc_update(ps->g, p, v);
  if (st) ps_errorf_at(ps, at.line, at.col, st, "%s", portc_last_error());
}

/* VALUE, VALUE...: at most 64 earlier values into out; their count, or -1 after reporting */
static int value_list(parser *ps, int32_t *out, const char *too_many) {
  int n = 0;
  do {
    if (n == 64) {
      ps_errorf_at(ps, ps->t.line, ps->t.col, PORTC_ERR_INVALID, "%s", too_many);
      return -1;
    }
    if ((out[n++] = ps_use(ps)) < 0) return -1;
  } while (ps_accept(ps, ','));
  return n;
}

/* NAME, NAME... = grad(LOSS, WRT, WRT...): one gradient per name, in order */
void ptg_grad(parser *ps, char (*names)[128], int nnames, tok op_at) {
  int32_t args[64];
  int n;
  if (!ps_expect(ps, '(', "'(' after grad") || (n = value_list(ps, args, "more than 63 values to differentiate for")) < 0) return;
  if (!ps_expect(ps, ')', "',' or ')'") || !ps_end_of_statement(ps)) return;
  if (n - 1 != nnames) {
    ps_errorf_at(ps, op_at.line, op_at.col, PORTC_ERR_INVALID, "grad names %d result%s for %d value%s to differentiate for", nnames, nnames == 1 ? "" : "s", n - 1,
              n == 2 ? "" : "s");
    return;
  }
  portc_node grads[64];
  if (portc_graph_grad(ps->g, args[0], n - 1, args + 1, grads) != PORTC_OK) {
    ps_errorf_at(ps, op_at.line, op_at.col, PORTC_ERR_INVALID, "%s", portc_last_error());
    return;
  }
  /* each result is a node of its own (portc_graph_grad makes a value listed twice two), and each
   * name is new: naming them cannot clash */
  for (int k = 0; k < nnames; k++)
    if (portc_set_name(ps->g, grads[k], names[k]) != PORTC_OK) ps_errorf_at(ps, op_at.line, op_at.col, PORTC_ERR_INVALID, "%s", portc_last_error());
}

/* KEY=NUMBER, ... up to ')' for the training statements; keys[i] sets v[i] */
static bool number_args(parser *ps, const char *const *keys, int nkeys, double *v) {
  if (ps_accept(ps, ')')) return true;
  do {
    tok at = ps->t;
    char key[32];
    if (!ps_ident(ps, key, sizeof key, "a setting (NAME=NUMBER)") || !ps_expect(ps, '=', "'='")) return false;
    int k = 0;
    while (k < nkeys && strcmp(keys[k], key) != 0) k++;
    if (k == nkeys) {
      strbuf b = {0};
      for (int i = 0; i < nkeys; i++) sb_printf(&b, "%s%s", i ? ", " : "", keys[i]);
      ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "'%s' is not a setting here; there are %s", key, b.s ? b.s : "none");
      free(b.s);
      return false;
    }
    if (!ps_float_value(ps, &v[k])) return false;
  } while (ps_accept(ps, ','));
  return ps_expect(ps, ')', "',' or ')'");
}

/* NAME = cross_entropy(LOGITS, LABELS[, label_smoothing=F]) or mse_loss(PRED, TARGET): losses
 * built from ops (train.c), not ops of their own */
void ptg_loss(parser *ps, const char *name, const char *kind, tok op_at) {
  bool ce = strcmp(kind, "cross_entropy") == 0;
  int32_t a, b;
  double smooth = 0;
  static const char *const keys[] = {"label_smoothing"};
  if (!ps_expect(ps, '(', "'(' after the loss") || (a = ps_use(ps)) < 0 || !ps_expect(ps, ',', "',' and the second operand") || (b = ps_use(ps)) < 0) return;
  if (ps_accept(ps, ',') ? !number_args(ps, keys, ce ? 1 : 0, &smooth) : !ps_expect(ps, ')', "')'")) return;
  if (!ps_end_of_statement(ps)) return;
  portc_node n = ce ? portc_cross_entropy(ps->g, a, b, smooth) : portc_mse_loss(ps->g, a, b);
  if (n < 0 || portc_set_name(ps->g, n, name) != PORTC_OK) ps_report_build_error(ps, op_at, name, n < 0 ? n : -(portc_node)PORTC_ERR_INVALID);
}

/* step KIND(SETTINGS): PARAM, PARAM... by LOSS: the gradients of the loss for the parameters and
 * one optimizer step of them (sgd, adam, adamw; torch.optim's settings and defaults) */
void ptg_step(parser *ps, tok at) {
  static const char *const kinds[] = {"sgd", "adam", "adamw"};
  static const char *const keys[] = {"lr", "loss_scale", "momentum", "weight_decay", "beta1", "beta2", "eps"};
  char kind[16];
  tok kind_at = ps->t;
  if (!ps_ident(ps, kind, sizeof kind, "an optimizer (sgd, adam or adamw)")) return;
  int k = 0;
  while (k < 3 && strcmp(kinds[k], kind) != 0) k++;
  if (k == 3) {
    ps_errorf_at(ps, kind_at.line, kind_at.col, PORTC_ERR_INVALID, "'%s' is not an optimizer; there are sgd, adam and adamw", kind);
    return;
  }
  double v[7] = {0, 0, 0, 0, 0.9, 0.999, 1e-8};
  int32_t params[64];
  int n;
  if (!ps_expect(ps, '(', "'(' and the optimizer's settings") || !number_args(ps, keys, k == 0 ? 4 : 7, v) || !ps_expect(ps, ':', "':' and the parameters")) return;
  if (k && v[2] != 0) {
    ps_errorf_at(ps, kind_at.line, kind_at.col, PORTC_ERR_INVALID, "%s has no momentum (it has beta1)", kind);
    return;
  }
  if ((n = value_list(ps, params, "more than 64 parameters in one step")) < 0) return;
  if (!ps_is_word(ps, "by")) {
    ps_expected(ps, "',' or 'by' and the loss");
    return;
  }
  ps_next(ps);
  int32_t loss = ps_use(ps);
  if (loss < 0 || !ps_end_of_statement(ps)) return;
  portc_optimizer o = {sizeof o, (portc_optimizer_kind)k, v[0], v[2], v[3], v[4], v[5], v[6]};
  if (portc_train_step(ps->g, loss, n, params, &o, v[1]) != PORTC_OK) ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "%s", portc_last_error());
}

/* autocast f16 | bf16 | off: the mixed-precision mode of the ops that follow (portc_graph_autocast) */
void ptg_autocast(parser *ps) {
  tok at = ps->t;
  char word[16];
  if (!ps_ident(ps, word, sizeof word, "f16, bf16 or off") || !ps_end_of_statement(ps)) return;
  portc_dtype t = PORTC_F32;
  if (strcmp(word, "off") != 0 && (!portc_dtype_parse(word, &t) || (t != PORTC_F16 && t != PORTC_BF16))) {
    ps_errorf_at(ps, at.line, at.col, PORTC_ERR_INVALID, "autocast takes f16, bf16 or off, not '%s'", word);
    return;
  }
  portc_graph_autocast(ps->g, t);
}

