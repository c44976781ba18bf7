/*
 * consumer.c: a program built against an installed libportc (tests/install_test.sh builds it
 * once through pkg-config and once through find_package(portc)): it checks that the header and
 * the library agree on the version, then compiles a small graph for the CPU and runs it.
 */
#include <stdio.h>
#include <string.h>

#include "portc/portc.h"

int main(void) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", PORTC_VERSION_MAJOR, PORTC_VERSION_MINOR, PORTC_VERSION_PATCH);
  if (strcmp(want, portc_version()) != 0) {
    fprintf(stderr, "consumer: header %s, library %s\n", want, portc_version());
    return 1;
  }
  portc_graph *g = NULL;
  const char *text = "graph consumer\ninput x: f32[4]\ny = relu(x)\noutput y\n";
  if (portc_graph_parse(text, "consumer.ptg", &g)) goto fail;
  portc_compile_options o = PORTC_COMPILE_OPTIONS_INIT;
  o.target = "cpu";
  portc_module *m = NULL;
  if (portc_compile(g, &o, NULL, &m)) goto fail;
  int64_t shape[1] = {4};
  portc_tensor *x = portc_tensor_new(PORTC_F32, 1, shape), *y = NULL;
  for (int i = 0; i < 4; i++) portc_tensor_set(x, i, i - 1.5);
  portc_bindings *b = portc_bindings_new(g);
  if (portc_bindings_set(b, "x", x) || portc_module_run(m, b, &y)) goto fail;
  printf("portc %s: relu = %g %g %g %g\n", portc_version(), portc_tensor_get(y, 0), portc_tensor_get(y, 1), portc_tensor_get(y, 2),
         portc_tensor_get(y, 3));
  portc_tensor_free(x);
  portc_tensor_free(y);
  portc_bindings_free(b);
  portc_module_free(m);
  portc_graph_free(g);
  return 0;
fail:
  fprintf(stderr, "consumer: %s\n", portc_last_error());
  return 1;
}
