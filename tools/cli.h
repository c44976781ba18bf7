/*
 * cli.h: the verbs of the portc command. Each verb parses its own arguments and returns the
 * process exit code: 0 success, 1 failure, 2 usage error.
 */
#ifndef PORTC_TOOLS_CLI_H
#define PORTC_TOOLS_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "portc/portc.h"

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int cmd_run(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_ops(int argc, char **argv);

bool is_help(const char *arg);
int usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* one line of statistics: shape, min, max, mean, std, NaN and Inf counts */
void print_summary(FILE *f, const char *name, const portc_tensor *t, portc_dtype graph_dtype, const portc_dim *dims);

#endif
