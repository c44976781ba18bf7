/*
 * static_vulkan_app.c: an application that links libportc.a and the Vulkan loader itself, and
 * calls Vulkan directly. libportc's volk keeps entry points in variables named like Vulkan's
 * functions (vkEnumerateInstanceVersion); they are local to the library's objects, so this call
 * reaches the loader's function and not a variable (which would crash). Then portc compiles and
 * runs a graph on the Vulkan target, through volk, in the same process.
 */
#include <stdio.h>
#include <vulkan/vulkan.h>

#include "portc/portc.h"

int main(void) {
  uint32_t version = 0;
  VkResult r = vkEnumerateInstanceVersion(&version);
  if (r != VK_SUCCESS || version < VK_API_VERSION_1_1) {
    fprintf(stderr, "static_vulkan_app: vkEnumerateInstanceVersion gave %d, version %u\n", (int)r, version);
    return 1;
  }
  portc_graph *g = NULL;
  portc_module *m = NULL;
  portc_tensor *y = NULL;
  if (portc_graph_parse("graph g\ninput x: f32[3]\ny = add(x, x)\noutput y\n", "app.ptg", &g)) goto fail;
  portc_compile_options o = {.size = sizeof o, .target = "vulkan"};
  if (portc_compile(g, &o, NULL, &m)) goto fail;
  portc_bindings *b = portc_bindings_new(g);
  portc_bindings_set_seed(b, 3);
  if (portc_module_run(m, b, &y)) goto fail;
  printf("vulkan %u.%u through the loader; portc on vulkan: y[0] = %g\n", VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version),
         portc_tensor_get(y, 0));
  portc_tensor_free(y);
  portc_bindings_free(b);
  portc_module_free(m);
  portc_graph_free(g);
  return 0;
fail:
  fprintf(stderr, "static_vulkan_app: %s\n", portc_last_error());
  return 1;
}
