/*
 * train_mlp.c: trains a two-layer MLP classifier (or, with --model cnn, a small convolutional
 * one) with portc on any target: the forward graph,
 * its gradients (portc_graph_grad) and an optimizer step (portc_optimizer_step) compiled once
 * into one module, then one portc_module_step per batch: the parameters and optimizer state stay
 * on the target's device from step to step (only the batch goes up and the loss comes back), and
 * portc_bindings_get reads the trained parameters back at the end. A second graph, the same model without the step, measures
 * the test accuracy with the trained parameters.
 *
 *   train_mlp DATA [-t TARGET] [--model mlp|cnn] [--opt sgd|adamw] [--steps N] [--hidden H] [--losses FILE]
 *
 * DATA holds x_train.npy (f32 [N, F]), y_train.npy (i64 [N]), x_test.npy, y_test.npy (the
 * handwritten digits of scikit-learn, exported by tests/train/digits.py), and optionally the
 * initial weights w1.npy [F, H], b1.npy [H], w2.npy [H, C], b2.npy [C] (the CNN's: cw.npy
 * [8, 1, 3, 3], cb.npy [8], fw.npy [128, C], fb.npy [C]; its images are 8 x 8). Batches of 64 are taken
 * in order, wrapping around; --losses writes each step's loss, one per line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "portc/portc.h"

enum { BATCH = 64 };

static int fail(const char *what) {
  fprintf(stderr, "train_mlp: %s: %s\n", what, portc_last_error());
  return 1;
}

static portc_tensor *load(const char *dir, const char *name, bool required) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.npy", dir, name);
  portc_tensor *t = NULL;
  if (portc_tensor_load_npy(path, &t) != PORTC_OK && required) fprintf(stderr, "train_mlp: %s\n", portc_last_error());
  return t;
}

/* the model: logits = relu(x @ w1 + b1) @ w2 + b2, for a batch of n rows */
static portc_node model(portc_graph *g, int64_t n, int64_t f, int64_t h, int64_t c) {
  portc_dim xd[] = {{n, NULL}, {f, NULL}}, w1d[] = {{f, NULL}, {h, NULL}}, b1d[] = {{h, NULL}}, w2d[] = {{h, NULL}, {c, NULL}}, b2d[] = {{c, NULL}};
  portc_node x = portc_input(g, "x", PORTC_F32, 2, xd);
  /* PyTorch's nn.Linear default: uniform in +-1/sqrt(fan_in) (the weights from DATA replace it) */
  portc_node w1 = portc_param_init(g, "w1", PORTC_F32, 2, w1d, PORTC_INIT_UNIFORM, 1, -0.125, 0.125);
  portc_node b1 = portc_param_init(g, "b1", PORTC_F32, 1, b1d, PORTC_INIT_ZEROS, 0, 0, 0);
  portc_node w2 = portc_param_init(g, "w2", PORTC_F32, 2, w2d, PORTC_INIT_UNIFORM, 2, -0.125, 0.125);
  portc_node b2 = portc_param_init(g, "b2", PORTC_F32, 1, b2d, PORTC_INIT_ZEROS, 0, 0, 0);
  portc_node a = portc_relu(g, portc_add(g, portc_matmul(g, x, w1), b1));
  return portc_add(g, portc_matmul(g, a, w2), b2);
}

/* the CNN: conv 3x3 (8 channels, padding 1), relu, 2x2 max pool, linear; x holds 8 x 8 images */
static portc_node cnn(portc_graph *g, int64_t n, int64_t f, int64_t c) {
  portc_dim xd[] = {{n, NULL}, {f, NULL}}, img[] = {{n, NULL}, {1, NULL}, {8, NULL}, {8, NULL}};
  portc_dim cwd[] = {{8, NULL}, {1, NULL}, {3, NULL}, {3, NULL}}, cbd[] = {{8, NULL}}, fwd[] = {{128, NULL}, {c, NULL}}, fbd[] = {{c, NULL}};
  portc_dim flat[] = {{n, NULL}, {128, NULL}};
  portc_node x = portc_reshape(g, portc_input(g, "x", PORTC_F32, 2, xd), 4, img);
  portc_node cw = portc_param_init(g, "cw", PORTC_F32, 4, cwd, PORTC_INIT_UNIFORM, 1, -1.0 / 3, 1.0 / 3);
  portc_node cb = portc_param_init(g, "cb", PORTC_F32, 1, cbd, PORTC_INIT_ZEROS, 0, 0, 0);
  portc_node fw = portc_param_init(g, "fw", PORTC_F32, 2, fwd, PORTC_INIT_UNIFORM, 2, -0.088, 0.088);
  portc_node fb = portc_param_init(g, "fb", PORTC_F32, 1, fbd, PORTC_INIT_ZEROS, 0, 0, 0);
  portc_conv2d_opts co = {sizeof co, {1, 1}, {1, 1}, {1, 1}, 1, false};
  portc_pool2d_opts po = {sizeof po, {2, 2}, {2, 2}, {0, 0}, false};
  portc_node h = portc_max_pool2d(g, portc_relu(g, portc_conv2d(g, x, cw, cb, &co)), &po);
  return portc_add(g, portc_matmul(g, portc_reshape(g, h, 2, flat), fw), fb);
}

static const char *const MLP_PARAMS[] = {"w1", "b1", "w2", "b2"}, *const CNN_PARAMS[] = {"cw", "cb", "fw", "fb"};

int main(int argc, char **argv) {
  const char *dir = NULL, *target = "cpu", *opt = "adamw", *loss_file = NULL, *kind = "mlp";
  int steps = 300;
  int64_t hidden = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-t") && i + 1 < argc) target = argv[++i];
    else if (!strcmp(argv[i], "--opt") && i + 1 < argc) opt = argv[++i];
    else if (!strcmp(argv[i], "--model") && i + 1 < argc) kind = argv[++i];
    else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--hidden") && i + 1 < argc) hidden = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--losses") && i + 1 < argc) loss_file = argv[++i];
    else if (argv[i][0] != '-' && !dir) dir = argv[i];
    else {
      dir = NULL;
      break;
    }
  }
  if (!dir || steps < 1 || hidden < 1 || (strcmp(opt, "sgd") && strcmp(opt, "adamw")) || (strcmp(kind, "mlp") && strcmp(kind, "cnn"))) {
    fprintf(stderr, "usage: train_mlp DATA [-t TARGET] [--model mlp|cnn] [--opt sgd|adamw] [--steps N] [--hidden H] [--losses FILE]\n");
    return 2;
  }
  bool conv = !strcmp(kind, "cnn");
  const char *const *PARAMS = conv ? CNN_PARAMS : MLP_PARAMS;
  portc_tensor *xtr = load(dir, "x_train", true), *ytr = load(dir, "y_train", true), *xte = load(dir, "x_test", true), *yte = load(dir, "y_test", true);
  if (!xtr || !ytr || !xte || !yte) return 1;
  int64_t ntr = xtr->shape[0], f = xtr->shape[1], nte = xte->shape[0], classes = 0;
  if (conv && f != 64) {
    fprintf(stderr, "train_mlp: the CNN takes 8 x 8 images (64 features); %s has %lld\n", dir, (long long)f);
    return 1;
  }
  for (int64_t i = 0; i < ntr; i++)
    if ((int64_t)portc_tensor_get(ytr, i) + 1 > classes) classes = (int64_t)portc_tensor_get(ytr, i) + 1;

  /* the training step: forward, loss, gradients and the optimizer, one graph */
  portc_graph *g = portc_graph_new("train_mlp");
  portc_dim yd[] = {{BATCH, NULL}};
  portc_node logits = conv ? cnn(g, BATCH, f, classes) : model(g, BATCH, f, hidden, classes);
  portc_node labels = portc_input(g, "y", PORTC_I64, 1, yd);
  portc_node loss = portc_cross_entropy(g, logits, labels, 0);
  if (loss < 0 || portc_set_name(g, loss, "loss") || portc_output(g, loss)) return fail("build");
  portc_node params[4], grads[4];
  for (int k = 0; k < 4; k++) params[k] = portc_graph_find(g, PARAMS[k]);
  portc_optimizer o = {sizeof o, PORTC_OPT_SGD, 0.1, 0.9, 0, 0, 0, 0};
  if (!strcmp(opt, "adamw")) o = (portc_optimizer){sizeof o, PORTC_OPT_ADAMW, 0.01, 0, 0.01, 0.9, 0.999, 1e-8};
  if (portc_graph_grad(g, loss, 4, params, grads) || portc_optimizer_step(g, &o, 4, params, grads)) return fail("gradients");

  portc_bindings *b = portc_bindings_new(g);
  for (int k = 0; k < 4; k++) {
    portc_tensor *w = load(dir, PARAMS[k], false);
    if (w && portc_bindings_set(b, PARAMS[k], w)) return fail("initial weights");
    portc_tensor_free(w);
  }
  portc_compile_options co = {.size = sizeof co, .target = target};
  portc_module *m = NULL;
  if (portc_compile(g, &co, b, &m)) return fail("compile");
  int li = 0;
  while (portc_graph_output(g, li) != loss) li++;

  int64_t xs[2] = {BATCH, f}, ys[1] = {BATCH};
  portc_tensor *xb = portc_tensor_new(PORTC_F32, 2, xs), *yb = portc_tensor_new(PORTC_I64, 1, ys);
  portc_tensor **out = calloc((size_t)portc_graph_output_count(g), sizeof *out);
  FILE *lf = loss_file ? fopen(loss_file, "w") : NULL;
  if (loss_file && !lf) {
    perror(loss_file);
    return 1;
  }
  if (conv) printf("training a CNN (conv 3x3 x8, relu, max pool, linear to %lld) on %s with %s, %d steps of %d\n", (long long)classes, target, opt, steps, BATCH);
  else printf("training %lld-%lld-%lld on %s with %s, %d steps of %d\n", (long long)f, (long long)hidden, (long long)classes, target, opt, steps, BATCH);
  for (int s = 0; s < steps; s++) {
    for (int r = 0; r < BATCH; r++) {
      int64_t row = ((int64_t)s * BATCH + r) % ntr;
      memcpy((float *)xb->data + r * f, (float *)xtr->data + row * f, sizeof(float) * (size_t)f);
      ((int64_t *)yb->data)[r] = (int64_t)portc_tensor_get(ytr, row);
    }
    if (portc_bindings_set(b, "x", xb) || portc_bindings_set(b, "y", yb) || portc_module_step(m, b, out)) return fail("step");
    double l = portc_tensor_get(out[li], 0);
    if (lf) fprintf(lf, "%.9g\n", l);
    if (s % 50 == 0 || s == steps - 1) printf("step %4d  loss %.6f\n", s, l);
    for (int k = 0; k < portc_graph_output_count(g); k++) portc_tensor_free(out[k]), out[k] = NULL;
  }
  if (lf) fclose(lf);

  /* test accuracy: the model alone over the whole test set, with the trained parameters */
  portc_graph *e = portc_graph_new("eval_mlp");
  portc_node pred = portc_argmax(e, conv ? cnn(e, nte, f, classes) : model(e, nte, f, hidden, classes), -1, false);
  if (pred < 0 || portc_output(e, pred)) return fail("build eval");
  portc_bindings *eb = portc_bindings_new(e);
  for (int k = 0; k < 4; k++)
    if (portc_bindings_set(eb, PARAMS[k], portc_bindings_get(b, PARAMS[k]))) return fail("trained weights");
  portc_module *em = NULL;
  portc_tensor *p = NULL;
  if (portc_bindings_set(eb, "x", xte) || portc_compile(e, &co, eb, &em) || portc_module_run(em, eb, &p)) return fail("eval");
  int64_t right = 0;
  for (int64_t i = 0; i < nte; i++) right += portc_tensor_get(p, i) == portc_tensor_get(yte, i);
  printf("test accuracy %.4f (%lld of %lld)\n", (double)right / (double)nte, (long long)right, (long long)nte);

  portc_tensor_free(p);
  portc_module_free(em);
  portc_bindings_free(eb);
  portc_graph_free(e);
  free(out);
  portc_tensor_free(xb), portc_tensor_free(yb);
  portc_tensor_free(xtr), portc_tensor_free(ytr), portc_tensor_free(xte), portc_tensor_free(yte);
  portc_module_free(m);
  portc_bindings_free(b);
  portc_graph_free(g);
  return 0;
}
