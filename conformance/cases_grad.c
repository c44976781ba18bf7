/*
 * cases_grad.c: the gradient suite. Each case is a forward graph y = f(inputs), a loss
 * sum(y * r) with a random cotangent r, and `d_x = grad(loss, x)` for the inputs: the backward
 * graph that portc_graph_grad appends is then run on every target against the float64 reference,
 * within bounds derived from its ops like any other graph. The reference's own gradients are
 * checked against central finite differences by the unit tests (test_grad.cpp), over these cases.
 * Training steps (a loss, its gradients and an optimizer's updates), of small graphs and of the
 * example models, close the suite.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance.h"

/* body defines y (of type ytype) from inputs; wrt lists the inputs to differentiate for */
static void grad_case(conf_cases *cs, const char *name, const char *body, const char *ytype, const char *wrt) {
  char names[256] = "", list[256] = "";
  char copy[256];
  snprintf(copy, sizeof copy, "%s", wrt);
  for (char *save = NULL, *w = strtok_r(copy, ", ", &save); w; w = strtok_r(NULL, ", ", &save)) {
    size_t at = strlen(names);
    snprintf(names + at, sizeof names - at, "%sd_%s", at ? ", " : "", w);
  }
  snprintf(list, sizeof list, "%s", wrt);
  conf_case_text(conf_case_new(cs, "grad", "grad/%s", name), "%sinput r: %s\nry = mul(y, r)\nloss = sum(ry)\n%s = grad(loss, %s)\noutput loss, %s\n", body, ytype,
                 names, list, names);
}

static void elementwise(conf_cases *cs) {
  char body[1024], name[128];
  static const char *const dts[] = {"f32", "f16", "bf16"};
  for (int o = 0; o < CONF_NUNARY; o++)
    for (int d = 0; d < 3; d++) {
      if (d && strcmp(CONF_UNARY[o].op, "exp") && strcmp(CONF_UNARY[o].op, "tanh") && strcmp(CONF_UNARY[o].op, "gelu")) continue; /* f16, bf16: a few */
      const char *t = dts[d];
      if (!CONF_UNARY[o].prep) snprintf(body, sizeof body, "input x: %s[7, 33]\ny = %s(x)\n", t, CONF_UNARY[o].op);
      else
        snprintf(body, sizeof body, "input x: %s[7, 33]\nconst four: %s[] = 4\nconst tenth: %s[] = 0.1\nax = abs(x)\np = %s\ny = %s(p)\n", t, t, t,
                 CONF_UNARY[o].prep, CONF_UNARY[o].op);
      snprintf(name, sizeof name, "%s/%s", CONF_UNARY[o].op, t);
      char yt[32];
      snprintf(yt, sizeof yt, "%s[7, 33]", t);
      grad_case(cs, name, body, yt, "x");
    }
  /* binary ops with broadcasting on either side; b kept away from 0 where it divides */
  static const struct { const char *op, *prep; } BIN[] = {
      {"add", NULL}, {"sub", NULL}, {"mul", NULL}, {"div", "bb = add(babs, half)"}, {"pow", "bb = add(babs, half)"},
      {"maximum", NULL}, {"minimum", NULL},
  };
  static const char *const shapes[][3] = {{"7, 33", "7, 33", "7, 33"}, {"7, 33", "33", "7, 33"}, {"7, 1", "1, 33", "7, 33"}};
  for (unsigned o = 0; o < sizeof BIN / sizeof *BIN; o++)
    for (int s = 0; s < 3; s++) {
      bool pos = BIN[o].prep != NULL, pw = strcmp(BIN[o].op, "pow") == 0;
      snprintf(body, sizeof body,
               "input a: f32[%s]\ninput b: f32[%s]\nconst half: f32[] = 0.5\nbabs = abs(b)\naabs = abs(a)\naa = add(aabs, half)\n%s\ny = %s(%s, %s)\n",
               shapes[s][0], shapes[s][1], pos ? BIN[o].prep : "bb = neg(b)", BIN[o].op, pw ? "aa" : "a", "bb");
      snprintf(name, sizeof name, "%s/[%s]-[%s]", BIN[o].op, shapes[s][0], shapes[s][1]);
      char yt[32];
      snprintf(yt, sizeof yt, "f32[%s]", shapes[s][2]);
      grad_case(cs, name, body, yt, "a, b");
    }
  grad_case(cs, "where", "input c: bool[7, 33]\ninput a: f32[7, 33]\ninput b: f32[33]\ny = where(c, a, b)\n", "f32[7, 33]", "a, b");
  grad_case(cs, "cast/f32-f16-f32", "input x: f32[7, 33]\nh = cast(x, to=f16)\nm = mul(h, h)\ny = cast(m, to=f32)\n", "f32[7, 33]", "x");
  grad_case(cs, "fused-chain", "input x: f32[7, 33]\ninput w: f32[33]\nm = mul(x, w)\nt = tanh(m)\ne = exp(t)\ny = add(e, x)\n", "f32[7, 33]", "x, w");
}

static void reductions(conf_cases *cs) {
  static const struct { const char *attrs, *out; } R[] = {
      {"axes=[1]", "5, 7"}, {"axes=[0, 2]", "6"}, {"axes=[1], keepdim=true", "5, 1, 7"}, {"", ""},
  };
  static const char *const ops[] = {"sum", "mean", "max", "min", "prod"};
  char body[512], name[128], yt[32];
  for (int o = 0; o < 5; o++)
    for (int r = 0; r < 4; r++) {
      /* prod over few terms of values near 1, so that it neither vanishes nor overflows */
      snprintf(body, sizeof body, "input x: f32[5, 6, 7]\n%sy = %s(%s%s%s)\n", o == 4 ? "const half: f32[] = 0.5\nxh = mul(x, half)\nq = add(xh, half)\n" : "",
               ops[o], o == 4 ? "q" : "x", R[r].attrs[0] ? ", " : "", R[r].attrs);
      snprintf(name, sizeof name, "%s/%s", ops[o], R[r].attrs[0] ? R[r].attrs : "all");
      snprintf(yt, sizeof yt, "f32[%s]", R[r].out);
      grad_case(cs, name, body, yt, "x");
    }
  grad_case(cs, "prod/with-a-zero", "const x: f32[2, 3] = [0.5, 0, 2, 0, 0, 3]\ninput s: f32[2, 3]\nxs = add(x, s)\nz = sub(xs, s)\ny = prod(z, axes=[1])\n",
            "f32[2]", "s");
}

static void views(conf_cases *cs) {
  static const struct { const char *name, *body, *yt; } V[] = {
      {"reshape", "input x: f32[6, 35]\ny = reshape(x, shape=[5, 7, 6])\n", "f32[5, 7, 6]"},
      {"permute", "input x: f32[3, 4, 5, 6]\ny = permute(x, perm=[3, 1, 0, 2])\n", "f32[6, 4, 3, 5]"},
      {"expand", "input x: f32[3, 1, 5]\ny = expand(x, shape=[2, 3, 4, 5])\n", "f32[2, 3, 4, 5]"},
      {"slice", "input x: f32[33, 40]\ny = slice(x, axis=1, start=3, stop=-2, step=3)\n", "f32[33, 12]"},
      {"slice/step1", "input x: f32[9, 8]\ny = slice(x, axis=0, start=2, stop=7)\n", "f32[5, 8]"},
      {"concat", "input a: f32[7, 3]\ninput b: f32[7, 5]\ny = concat(a, b, a, axis=1)\n", "f32[7, 11]"},
      {"pad", "input x: f32[7, 5]\ny = pad(x, pads=[1, 2, 0, 3], value=0.5)\n", "f32[10, 8]"},
      {"gather/axis0", "input x: f32[10, 7]\nconst i: i64[5, 2] = [0, 3, 9, 3, -1, 2, 2, 2, 7, 0]\ny = gather(x, i, axis=0)\n", "f32[5, 2, 7]"},
      {"gather/axis1", "input x: f32[3, 9, 4]\nconst i: i32[4] = [8, 1, 1, 5]\ny = gather(x, i, axis=1)\n", "f32[3, 4, 4]"},
      {"causal_mask", "input x: f32[2, 5, 7]\nm = causal_mask(x)\ny = softmax(m)\n", "f32[2, 5, 7]"},
  };
  for (unsigned k = 0; k < sizeof V / sizeof *V; k++) {
    bool two = strcmp(V[k].name, "concat") == 0;
    grad_case(cs, V[k].name, V[k].body, V[k].yt, two ? "a, b" : "x");
  }
}

static void contractions(conf_cases *cs) {
  static const struct { const char *a, *b, *y; } MM[] = {
      {"7, 33", "33, 5", "7, 5"}, {"2, 7, 9", "9, 5", "2, 7, 5"}, {"2, 1, 7, 9", "3, 9, 5", "2, 3, 7, 5"}, {"33", "33, 7", "7"}, {"7, 33", "33", "7"},
  };
  char body[512], name[128], yt[32];
  for (unsigned m = 0; m < sizeof MM / sizeof *MM; m++) {
    snprintf(body, sizeof body, "input a: f32[%s]\ninput b: f32[%s]\ny = matmul(a, b)\n", MM[m].a, MM[m].b);
    snprintf(name, sizeof name, "matmul/[%s]x[%s]", MM[m].a, MM[m].b);
    snprintf(yt, sizeof yt, "f32[%s]", MM[m].y);
    grad_case(cs, name, body, yt, "a, b");
  }
  grad_case(cs, "matmul/f16", "input a: f16[16, 24]\ninput b: f16[24, 8]\ny = matmul(a, b)\n", "f16[16, 8]", "a, b");
  static const struct { const char *attrs, *w, *y; } CV[] = {
      {"", "6, 4, 3, 3", "2, 6, 7, 7"}, {", padding=[1, 1]", "6, 4, 3, 3", "2, 6, 9, 9"},
      {", stride=[2, 2], padding=[1, 1]", "6, 4, 3, 3", "2, 6, 5, 5"}, {", dilation=[2, 2]", "6, 4, 3, 3", "2, 6, 5, 5"},
      {", groups=2", "6, 2, 3, 3", "2, 6, 7, 7"}, {", stride=[2, 3]", "6, 4, 2, 3", "2, 6, 4, 3"},
      {", groups=4, padding=[1, 1]", "4, 1, 3, 3", "2, 4, 9, 9"},
  };
  for (unsigned k = 0; k < sizeof CV / sizeof *CV; k++) {
    int O = CV[k].w[0] - '0';
    snprintf(body, sizeof body, "input x: f32[2, 4, 9, 9]\ninput w: f32[%s]\ninput bias: f32[%d]\ny = conv2d(x, w, bias%s)\n", CV[k].w, O, CV[k].attrs);
    snprintf(name, sizeof name, "conv2d/%u", k);
    snprintf(yt, sizeof yt, "f32[%s]", CV[k].y);
    grad_case(cs, name, body, yt, "x, w, bias");
  }
  static const struct { const char *attrs, *y; } P[] = {
      {"kernel=[2, 2]", "2, 3, 4, 4"}, {"kernel=[3, 3], stride=[1, 1], padding=[1, 1]", "2, 3, 9, 9"}, {"kernel=[3, 3], stride=[2, 2]", "2, 3, 4, 4"},
      /* ResNet's stem pooling; a stride longer than the window (phases no offset reaches); uneven windows and strides */
      {"kernel=[3, 3], stride=[2, 2], padding=[1, 1]", "2, 3, 5, 5"}, {"kernel=[2, 2], stride=[3, 3]", "2, 3, 3, 3"},
      {"kernel=[3, 2], stride=[2, 3], padding=[1, 0]", "2, 3, 5, 3"},
  };
  for (unsigned p = 0; p < sizeof P / sizeof *P; p++)
    for (int mx = 0; mx < 2; mx++) {
      snprintf(body, sizeof body, "input x: f32[2, 3, 9, 9]\ny = %s(x, %s)\n", mx ? "max_pool2d" : "avg_pool2d", P[p].attrs);
      snprintf(name, sizeof name, "%s/%u", mx ? "max_pool2d" : "avg_pool2d", p);
      snprintf(yt, sizeof yt, "f32[%s]", P[p].y);
      grad_case(cs, name, body, yt, "x");
    }
}

static void composites(conf_cases *cs) {
  grad_case(cs, "softmax", "input x: f32[7, 33]\ny = softmax(x)\n", "f32[7, 33]", "x");
  grad_case(cs, "softmax/axis0", "input x: f32[7, 33]\ny = softmax(x, axis=0)\n", "f32[7, 33]", "x");
  grad_case(cs, "log_softmax", "input x: f32[7, 33]\ny = log_softmax(x)\n", "f32[7, 33]", "x");
  grad_case(cs, "layer_norm", "input x: f32[3, 5, 33]\ninput w: f32[33]\ninput b: f32[33]\ny = layer_norm(x, w, b)\n", "f32[3, 5, 33]", "x, w, b");
  grad_case(cs, "layer_norm/plain", "input x: f32[7, 33]\ny = layer_norm(x)\n", "f32[7, 33]", "x");
  grad_case(cs, "rms_norm", "input x: f32[7, 33]\ninput w: f32[33]\ny = rms_norm(x, w)\n", "f32[7, 33]", "x, w");
  grad_case(cs, "layer_norm/f16", "input x: f16[7, 64]\ninput w: f16[64]\ninput b: f16[64]\ny = layer_norm(x, w, b)\n", "f16[7, 64]", "x, w, b");
  for (int causal = 0; causal < 2; causal++) {
    char body[256], name[64];
    snprintf(body, sizeof body, "input q: f32[2, 3, 9, 16]\ninput k: f32[2, 3, 9, 16]\ninput v: f32[2, 3, 9, 8]\ny = attention(q, k, v, causal=%s)\n",
             causal ? "true" : "false");
    snprintf(name, sizeof name, "attention/%s", causal ? "causal" : "full");
    grad_case(cs, name, body, "f32[2, 3, 9, 8]", "q, k, v");
  }
  grad_case(cs, "attention/masked", "input q: f32[2, 3, 9, 16]\ninput k: f32[2, 3, 11, 16]\ninput v: f32[2, 3, 11, 8]\ninput m: f32[2, 1, 9, 11]\n"
            "y = attention(q, k, v, m, causal=true)\n", "f32[2, 3, 9, 8]", "q, k, v, m");
  grad_case(cs, "attention/cross-broadcast", "input q: f32[2, 4, 5, 8]\ninput k: f32[4, 7, 8]\ninput v: f32[4, 7, 3]\ny = attention(q, k, v, scale=0.5)\n",
            "f32[2, 4, 5, 3]", "q, k, v");
}

/* whole training steps: a model, a loss, its gradients and an optimizer's updates */
static void steps(conf_cases *cs) {
  static const char *const mlp =
      "input x: f32[16, 12]\ninput y: i64[16]\n"
      "param w1: f32[12, 32] = normal(std=0.3, seed=1)\nparam b1: f32[32] = zeros\n"
      "param w2: f32[32, 5] = normal(std=0.3, seed=2)\nparam b2: f32[5] = zeros\n"
      "h = matmul(x, w1)\nhb = add(h, b1)\na = relu(hb)\no = matmul(a, w2)\nlogits = add(o, b2)\n";
  conf_case_text(conf_case_new(cs, "grad", "grad/cross_entropy"),
                 "%sloss = cross_entropy(logits, y)\nd_w1, d_b1, d_w2, d_b2 = grad(loss, w1, b1, w2, b2)\noutput loss, d_w1, d_b1, d_w2, d_b2\n", mlp);
  conf_case_text(conf_case_new(cs, "grad", "grad/cross_entropy/label-smoothing"),
                 "%sloss = cross_entropy(logits, y, label_smoothing=0.1)\nd_w1, d_w2 = grad(loss, w1, w2)\noutput loss, d_w1, d_w2\n", mlp);
  conf_case_text(conf_case_new(cs, "grad", "grad/mse"),
                 "input x: f32[8, 6]\ninput t: f32[8, 3]\nparam w: f32[6, 3] = normal(std=0.5, seed=3)\np = matmul(x, w)\nloss = mse_loss(p, t)\n"
                 "d_w = grad(loss, w)\noutput loss, d_w\n");
  static const char *const opt[] = {"sgd(lr=0.1)", "sgd(lr=0.1, momentum=0.9, weight_decay=0.01)", "adam(lr=0.01, weight_decay=0.01)",
                                    "adamw(lr=0.01, weight_decay=0.01)"};
  static const char *const oname[] = {"sgd", "sgd-momentum", "adam", "adamw"};
  for (int k = 0; k < 4; k++)
    conf_case_text(conf_case_new(cs, "grad", "grad/step/mlp-%s", oname[k]),
                   "%sloss = cross_entropy(logits, y)\nstep %s: w1, b1, w2, b2 by loss\noutput loss\n", mlp, opt[k]);
  /* mixed precision: the matmuls in f16 and bf16, master weights and the optimizer in f32 */
  static const char *const amp[] = {"f16", "bf16"};
  for (int k = 0; k < 2; k++)
    conf_case_text(conf_case_new(cs, "grad", "grad/step/mlp-autocast-%s", amp[k]),
                   "autocast %s\n%sloss = cross_entropy(logits, y)\nstep adamw(lr=0.01): w1, b1, w2, b2 by loss\noutput loss\n", amp[k], mlp);
  conf_case_text(conf_case_new(cs, "grad", "grad/step/mlp-autocast-f16-loss-scale"),
                 "autocast f16\n%sloss = cross_entropy(logits, y)\nstep adamw(lr=0.01, loss_scale=1024): w1, b1, w2, b2 by loss\noutput loss\n", mlp);
  conf_case_text(conf_case_new(cs, "grad", "grad/autocast-f16/conv-attention"),
                 "autocast f16\ninput x: f32[2, 4, 9, 9]\ninput w: f32[6, 4, 3, 3]\ninput q: f32[2, 5, 8]\ninput k: f32[2, 7, 8]\ninput v: f32[2, 7, 4]\n"
                 "c = conv2d(x, w, padding=[1, 1])\na = attention(q, k, v)\ncs = sum(c)\nas = sum(a)\nloss = add(cs, as)\n"
                 "d_x, d_w, d_q, d_k, d_v = grad(loss, x, w, q, k, v)\noutput loss, d_x, d_w, d_q, d_k, d_v\n");
  conf_case_text(conf_case_new(cs, "grad", "grad/step/cnn-sgd"),
                 "input x: f32[4, 1, 8, 8]\ninput y: i64[4]\nparam cw: f32[4, 1, 3, 3] = normal(std=0.3, seed=1)\nparam cb: f32[4] = zeros\n"
                 "param fw: f32[64, 3] = normal(std=0.2, seed=2)\nc = conv2d(x, cw, cb, padding=[1, 1])\nr = relu(c)\np = max_pool2d(r, kernel=[2, 2])\n"
                 "f = reshape(p, shape=[4, 64])\nlogits = matmul(f, fw)\nloss = cross_entropy(logits, y)\nstep sgd(lr=0.05, momentum=0.9): cw, cb, fw by loss\n"
                 "output loss\n");
}

/* the example models as training steps: each one's graph, an MSE loss against a random target
 * and an SGD step of all its parameters; a symbol given a value here is written as that
 * constant (a convolution's weight gradient needs its batch known), the others stay symbolic */
static void model_steps(conf_cases *cs, const char *dir) {
  static const struct { const char *file, *y, *fixed; int64_t n; const char *sym[2]; int64_t v[2]; } M[] = {
      {"mlp", "f32[N, 1024]", "N", 4, {NULL, NULL}, {0, 0}},
      {"cnn", "f32[N, 10]", "N", 2, {NULL, NULL}, {0, 0}},
      {"transformer", "f32[B, S, 256]", NULL, 0, {"B", "S"}, {2, 9}},
  };
  for (unsigned m = 0; m < sizeof M / sizeof *M; m++) {
    char path[4096], line[1024], num[32];
    snprintf(path, sizeof path, "%s/%s.ptg", dir, M[m].file);
    FILE *f = fopen(path, "r");
    if (!f) continue; /* the forward models' cases report the missing file */
    size_t cap = 1 << 16, len = 0;
    char *text = calloc(cap, 1), params[1024] = "";
    snprintf(num, sizeof num, "%lld", (long long)M[m].n);
    while (text && fgets(line, sizeof line, f)) {
      if (strncmp(line, "output", 6) == 0) continue;
      char pname[128];
      if (sscanf(line, "param %127[^:]:", pname) == 1) {
        size_t at = strlen(params);
        snprintf(params + at, sizeof params - at, "%s%s", at ? ", " : "", pname);
      }
      /* SYM as a whole word, in dimensions and shapes, becomes its value */
      for (char *p = line; M[m].fixed && line[0] != '#' && (p = strstr(p, M[m].fixed));) {
        size_t k = strlen(M[m].fixed);
        bool word = (p == line || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'))) &&
                    !(p[k] == '_' || (p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') || (p[k] >= '0' && p[k] <= '9'));
        if (!word) {
          p += k;
          continue;
        }
        memmove(p + strlen(num), p + k, strlen(p + k) + 1);
        memcpy(p, num, strlen(num));
        p += strlen(num);
      }
      size_t n = strlen(line);
      if (len + n + 1 > cap) break;
      memcpy(text + len, line, n + 1);
      len += n;
    }
    fclose(f);
    char ytype[64];
    snprintf(ytype, sizeof ytype, "%s", M[m].y);
    if (M[m].fixed) {
      char *p = strstr(ytype, M[m].fixed);
      if (p) {
        memmove(p + strlen(num), p + 1, strlen(p + 1) + 1);
        memcpy(p, num, strlen(num));
      }
    }
    conf_case *c = conf_case_new(cs, "grad", "grad/step/model-%s", M[m].file);
    if (c && text) conf_case_text(c, "%sinput t: %s\nloss = mse_loss(y, t)\nstep sgd(lr=0.01): %s by loss\noutput loss\n", text, ytype, params);
    for (int k = 0; c && k < 2 && M[m].sym[k]; k++) {
      snprintf(c->sym[k], sizeof c->sym[k], "%s", M[m].sym[k]);
      c->symval[0][k] = M[m].v[k];
      c->nsyms = k + 1;
    }
    free(text);
  }
}

void conf_generate_grad(conf_cases *cs, const char *examples_dir) {
  elementwise(cs);
  reductions(cs);
  views(cs);
  contractions(cs);
  composites(cs);
  steps(cs);
  if (examples_dir) model_steps(cs, examples_dir);
}
