/*
 * train.h: what the training calls share inside ir/ (train.c, loss_scale.c).
 */
#ifndef PORTC_IR_TRAIN_H
#define PORTC_IR_TRAIN_H

#include "graph.h"

/* a build of many calls: the first failure kept with its message (later calls on failed nodes
 * fail too, and would only repeat it) */
typedef struct build_ctx {
  portc_graph *g;
  portc_status st;
  char why[512];
} build_ctx;
/* n, recording it when it is the first failure */
portc_node build_ok(build_ctx *c, portc_node n);

/* portc_optimizer_step, with every update (parameters and state) keeping its old value when the
 * bool scalar skip is true (PORTC_NONE: never): a step that dynamic loss scaling rejects */
portc_status optimizer_step_unless(portc_graph *g, const portc_optimizer *o, int n, const portc_node *params, const portc_node *grads, portc_node skip);

#endif
