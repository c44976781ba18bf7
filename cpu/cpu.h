/*
 * cpu.h: the CPU target's parts: its dialect (dialect.c), the system C compiler (compile.c), and
 * loading and launching compiled kernels (runtime.c).
 */
#ifndef PORTC_CPU_CPU_H
#define PORTC_CPU_CPU_H

#include "../targets/target.h"

extern const dialect cpu_dialect;

/* the schedule hook (schedule.c) */
void cpu_schedule(kir_module *m, int i, int device);

/* the C compiler ($PORTC_CC, else cc) and its version line; false when it cannot be run */
bool cpu_compiler(char *cc, size_t cclen, char *version, size_t vlen);
/* the flags every kernel object is built with */
extern const char cpu_cflags[];
/* compiles source into a shared object at out_path */
portc_status cpu_compile(const char *source, const char *work_dir, const char *out_path);

#endif
