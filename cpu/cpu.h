/*
 * cpu.h: the CPU target's parts: its dialect (dialect.c), the system C compiler (compile.c), and
 * loading and launching compiled kernels (runtime.c).
 */
#ifndef PORTC_CPU_CPU_H
#define PORTC_CPU_CPU_H

#include "../targets/cache.h"
#include "../targets/target.h"

extern const dialect cpu_dialect;

/* the schedule hook and the tuning hooks (schedule.c) */
void cpu_schedule(kir_module *m, int i, int device);
void cpu_device_key(int device, tune_device *d);
bool cpu_schedule_check(kir_module *m, int i, int device, char *why, size_t len);
int cpu_tune_space(const kir_module *m, int i, const tune_device *d, tune_knobs *out, int max);

/* the C compiler ($PORTC_CC, else cc) and its version line; false when it cannot be run */
bool cpu_compiler(char *cc, size_t cclen, char *version, size_t vlen);
/* the compiler and its options, exactly as cpu_compile runs it (without the file names) */
void cpu_compile_options(build_args *a);
/* the environment variables that change the compiler's output (NULL-terminated) */
extern const char *const cpu_compiler_env[];
/* the instruction-set flags -march=native stands for with this compiler on this machine */
const char *cpu_isa_flags(void);
/* compiles source into a shared object at out_path, writing kernels.c and kernels.log in work_dir */
portc_status cpu_compile(const char *source, const char *work_dir, const char *out_path);

#endif
