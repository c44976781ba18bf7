/*
 * text_parse.h: the .ptg parser's state and the helpers its statements share, so that the
 * training statements (text_parse_train.c) live apart from the graph statements (text_parse.c).
 * Every helper reports a problem at the current token (line and column) and returns false.
 */
#ifndef PORTC_IR_TEXT_PARSE_H
#define PORTC_IR_TEXT_PARSE_H

#include "graph.h"

typedef enum { T_END, T_EOL, T_IDENT, T_INT, T_FLOAT, T_STRING, T_PUNCT, T_BAD } tkind;

typedef struct tok {
  tkind k;
  const char *s;
  int len;
  int line, col;
} tok;

typedef struct parser {
  const char *src;  /* source name for messages */
  const char *p;    /* cursor */
  const char *bol;  /* beginning of the current line */
  int line;
  tok t;            /* current token */
  portc_graph *g;
  strbuf errs;
  int nerr;
  portc_status first; /* status of the first error */
  char **poisoned;    /* names whose definition failed */
  int npoisoned;
  bool stmt_failed;   /* the current statement already reported */
  bool quiet_fail;    /* the current statement uses a poisoned value */
  char defining[128]; /* the name the current statement defines */
} parser;

void ps_next(parser *ps);
void ps_errorf_at(parser *ps, int line, int col, portc_status s, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
bool ps_expected(parser *ps, const char *what);
bool ps_is_punct(const parser *ps, char c);
bool ps_is_word(const parser *ps, const char *w);
bool ps_accept(parser *ps, char c);
bool ps_expect(parser *ps, char c, const char *what);
bool ps_ident(parser *ps, char *out, size_t len, const char *what);
bool ps_float_value(parser *ps, double *out);
bool ps_end_of_statement(parser *ps);
int32_t ps_use(parser *ps); /* a use of an earlier value; -1 when it is not one */
void ps_report_build_error(parser *ps, tok at, const char *name, portc_node n);

/* the training statements (text_parse_train.c), called after their first word */
void ptg_update(parser *ps);                                                   /* update P = V */
void ptg_grad(parser *ps, char (*names)[128], int nnames, tok op_at);          /* N, ... = grad(...) */
void ptg_loss(parser *ps, const char *name, const char *kind, tok op_at);     /* N = cross_entropy(...) */
void ptg_step(parser *ps, tok at);                                             /* step OPT(...): P, ... by L */
void ptg_autocast(parser *ps);                                                 /* autocast f16 */

#endif
