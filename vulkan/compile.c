/*
 * compile.c: GLSL compute shaders to SPIR-V with shaderc (Debian's static libraries, linked in),
 * optimized by shaderc's SPIRV-Tools passes, then checked by the SPIRV-Tools validator. A shader
 * that fails to compile or validate is a bug in the dialect: the error carries the validator's
 * or compiler's message and the numbered GLSL. What the device lacks is passed as macros, so the
 * prelude can pick another way (subgroup arithmetic) or name the missing feature. A kernel on
 * cooperative matrices for a device with only the KHR extension is validated as compiled (NV)
 * and then rewritten (spirv_coop.c): the validator here predates the KHR extension.
 */
#include <shaderc/shaderc.h>
#include <spirv-tools/libspirv.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/graph.h"
#include "../codegen/emit.h"
#include "vk.h"

static char compiler_id[160];

static void name_compiler(void) {
  unsigned v = 0, r = 0;
  shaderc_get_spv_version(&v, &r);
  snprintf(compiler_id, sizeof compiler_id, "shaderc spv %u.%u, %s", v, r, spvSoftwareVersionString());
}

const char *vk_compiler_id(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT; /* compiles run on many threads at once */
  pthread_once(&once, name_compiler);
  return compiler_id;
}

static portc_status fail(const char *what, const char *name, const char *msg, const char *glsl) {
  char *src = emit_numbered(glsl);
  portc_status st = err_set(PORTC_ERR_INTERNAL, "vulkan: %s of kernel %s failed (a bug in portc's GLSL dialect):\n%s\n%s", what, name,
                            msg, src ? src : glsl);
  free(src);
  return st;
}

void vk_compile_options(const vk_context *c, const char *const *defines, build_args *a) {
  build_args_add(a, "--target-env=vulkan1.1");
  build_args_add(a, "--target-spv=spv1.3");
  build_args_add(a, "-O");
  build_args_add(a, "-DPC_SUBGROUP_ARITH=%d", c->f.subgroup_arith ? 1 : 0);
  build_args_add(a, "-DPC_DENORM_PRESERVE=%d", c->f.denorm_preserve ? 1 : 0);
  build_args_add(a, "-DPC_F16_CONVERT=%d", c->f.f16_convert ? 1 : 0);
  build_args_add(a, "-DPC_RTE32=%d", c->f.rte32 ? 1 : 0);
  build_args_add(a, "-DPC_RTE64=%d", c->f.rte64 ? 1 : 0);
  build_args_add(a, "-DPC_KEEP64=%d", c->f.keep64 ? 1 : 0);
  build_args_add(a, "-DPC_SUBGROUP_SIZE=%u", c->f.subgroup_size ? c->f.subgroup_size : 1);
  for (int i = 0; defines && defines[i]; i++) build_args_add(a, "-D%s=1", defines[i]);
}

/* applies glslc-style options to shaderc's: the ones vk_compile_options writes */
static bool apply_options(shaderc_compile_options_t o, const build_args *a) {
  for (int i = 0; i < a->n; i++) {
    const char *v = a->v[i];
    if (strcmp(v, "--target-env=vulkan1.1") == 0) shaderc_compile_options_set_target_env(o, shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
    else if (strcmp(v, "--target-spv=spv1.3") == 0) shaderc_compile_options_set_target_spirv(o, shaderc_spirv_version_1_3);
    else if (strcmp(v, "-O") == 0) shaderc_compile_options_set_optimization_level(o, shaderc_optimization_level_performance);
    else if (strncmp(v, "-D", 2) == 0 && strchr(v, '=')) {
      const char *eq = strchr(v, '=');
      shaderc_compile_options_add_macro_definition(o, v + 2, (size_t)(eq - v - 2), eq + 1, strlen(eq + 1));
    } else return false;
  }
  return true;
}

static bool has_define(const char *const *defines, const char *name) {
  for (int i = 0; defines && defines[i]; i++)
    if (strcmp(defines[i], name) == 0) return true;
  return false;
}

portc_status vk_compile(vk_context *c, const char *glsl, const char *name, const char *const *defines, uint32_t **spirv, size_t *words) {
  *spirv = NULL;
  *words = 0;
  build_args opts = {0};
  vk_compile_options(c, defines, &opts);
  shaderc_compiler_t comp = shaderc_compiler_initialize();
  shaderc_compile_options_t o = shaderc_compile_options_initialize();
  if (!comp || !o) {
    if (comp) shaderc_compiler_release(comp);
    return err_set(PORTC_ERR_NOMEM, "vulkan: cannot start shaderc");
  }
  if (!apply_options(o, &opts)) {
    shaderc_compile_options_release(o);
    shaderc_compiler_release(comp);
    return err_set(PORTC_ERR_INTERNAL, "vulkan: an option of kernel %s is not one shaderc takes here", name);
  }
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
      /* validated as NV, above */
      if (has_define(defines, "PC_COOPMAT_KHR")) st = vk_spirv_coop_khr(spirv, words);
      if (!st && has_define(defines, "PC_WG_TENSOR")) st = vk_spirv_tensor_loads(spirv, words);
      if (st) {
        free(*spirv);
        *spirv = NULL, *words = 0;
      }
    }
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
  }
  if (r) shaderc_result_release(r);
  shaderc_compile_options_release(o);
  shaderc_compiler_release(comp);
  return st;
}
