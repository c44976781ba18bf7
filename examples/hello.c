/*
 * hello.c: build a small graph through the C API, print it as .ptg text, and run it on the
 * float64 reference evaluator: y = softmax(relu(x @ w + b)) over a batch of N rows.
 */
#include <stdio.h>
#include <stdlib.h>

#include "portc/portc.h"

static int fail(const char *what) {
  fprintf(stderr, "hello: %s: %s\n", what, portc_last_error());
  return 1;
}

int main(void) {
  portc_graph *g = portc_graph_new("hello");
  portc_dim xd[] = {{.symbol = "N"}, {.size = 4}};
  portc_dim wd[] = {{.size = 4}, {.size = 3}};
  portc_dim bd[] = {{.size = 3}};
  portc_node x = portc_input(g, "x", PORTC_F32, 2, xd);
  portc_node w = portc_param_init(g, "w", PORTC_F32, 2, wd, PORTC_INIT_NORMAL, 7, 0.0, 0.5);
  portc_node b = portc_param_init(g, "b", PORTC_F32, 1, bd, PORTC_INIT_ONES, 0, 0, 0);
  portc_node h = portc_relu(g, portc_add(g, portc_matmul(g, x, w), b));
  portc_node y = portc_softmax(g, h, -1);
  /* one check covers the chain: a failed call makes every later call on it fail */
  if (y < 0 || portc_set_name(g, y, "y") || portc_output(g, y)) return fail("build");

  char *text = portc_graph_print(g);
  printf("%s\n", text);
  free(text);

  int64_t shape[] = {2, 4};
  portc_tensor *xt = portc_tensor_new(PORTC_F32, 2, shape);
  for (int i = 0; i < 8; i++) portc_tensor_set(xt, i, i * 0.25 - 1.0);
  portc_bindings *run = portc_bindings_new(g);
  portc_tensor *out[1];
  if (portc_bindings_set(run, "x", xt) || portc_reference_run(g, run, out)) return fail("run");
  for (int r = 0; r < 2; r++) {
    printf("y[%d] =", r);
    for (int c = 0; c < 3; c++) printf(" %.6f", portc_tensor_get(out[0], r * 3 + c));
    printf("\n");
  }
  portc_tensor_free(out[0]);
  portc_tensor_free(xt);
  portc_bindings_free(run);
  portc_graph_free(g);
  return 0;
}
