/*
 * compile.c: GLSL compute shaders to SPIR-V with shaderc (Debian's static libraries, linked in),
 * optimized by shaderc's SPIRV-Tools passes, then checked by the SPIRV-Tools validator. A shader
 * that fails to compile or validate is a bug in the dialect: the error carries the validator's
 * or compiler's message and the numbered GLSL. What the device lacks is passed as macros, so the
 * prelude can pick another way (subgroup arithmetic) or name the missing feature.
 */
#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "../codegen/emit.h"
#include "vk.h"

const char *vk_compiler_id(void) {
  static char id[160];
  if (!id[0]) {
    unsigned v = 0, r = 0;
    shaderc_get_spv_version(&v, &r);
    snprintf(id, sizeof id, "shaderc spv %u.%u, %s, vulkan1.1 O", v, r, spvSoftwareVersionString());
  }
  return id;
}

static portc_status fail(const char *what, const char *name, const char *msg, const char *glsl) {
  char *src = emit_numbered(glsl);
  portc_status st = err_set(PORTC_ERR_INTERNAL, "vulkan: %s of kernel %s failed (a bug in portc's GLSL dialect):\n%s\n%s", what, name,
                            msg, src ? src : glsl);
  free(src);
  return st;
}

portc_status vk_compile(vk_context *c, const char *glsl, const char *name, const char *const *defines, uint32_t **spirv, size_t *words) {
  *spirv = NULL;
  *words = 0;
  shaderc_compiler_t comp = shaderc_compiler_initialize();
  shaderc_compile_options_t o = shaderc_compile_options_initialize();
  if (!comp || !o) {
    if (comp) shaderc_compiler_release(comp);
    return err_set(PORTC_ERR_NOMEM, "vulkan: cannot start shaderc");
  }
  shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
  shaderc_compile_options_set_target_spirv(o, shaderc_spirv_version_1_3);
  shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_performance);
  char sg[16];
  snprintf(sg, sizeof sg, "%u", c->f.subgroup_size ? c->f.subgroup_size : 1);
  shaderc_compile_options_add_macro_definition(o, "PC_SUBGROUP_ARITH", 17, c->f.subgroup_arith ? "1" : "0", 1);
  shaderc_compile_options_add_macro_definition(o, "PC_DENORM_PRESERVE", 18, c->f.denorm_preserve ? "1" : "0", 1);
  shaderc_compile_options_add_macro_definition(o, "PC_SUBGROUP_SIZE", 16, sg, strlen(sg));
  for (int i = 0; defines && defines[i]; i++) shaderc_compile_options_add_macro_definition(o, defines[i], strlen(defines[i]), "1", 1);
  shaderc_compilation_result_t r = shaderc_compile_into_spv(comp, glsl, strlen(glsl), shaderc_compute_shader, name, "main", o);
  portc_status st = PORTC_OK;
  if (!r || shaderc_result_get_compilation_status(r) != shaderc_compilation_status_success) {
    st = fail("compiling", name, r ? shaderc_result_get_error_message(r) : "shaderc gave no result", glsl);
  } else {
    size_t n = shaderc_result_get_length(r);
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_1);
    spv_const_binary_t bin = {(const uint32_t *)(const void *)shaderc_result_get_bytes(r), n / 4};
    spv_diagnostic diag = NULL;
    if (spvValidate(ctx, &bin, &diag) != SPV_SUCCESS) {
      st = fail("validating the SPIR-V", name, diag && diag->error ? diag->error : "the validator gave no message", glsl);
    } else if (!(*spirv = malloc(n))) {
      st = err_set(PORTC_ERR_NOMEM, "vulkan: out of memory");
    } else {
      memcpy(*spirv, bin.code, n);
      *words = n / 4;
    }
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
  }
  if (r) shaderc_result_release(r);
  shaderc_compile_options_release(o);
  shaderc_compiler_release(comp);
  return st;
}
