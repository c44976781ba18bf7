/*
 * train.h: what the training calls share inside ir/ (train.c, loss_scale.c).
 */
#ifndef PORTC_IR_TRAIN_H
#define PORTC_IR_TRAIN_H

#include "graph.h"

/* portc_optimizer_step, with every update (parameters and state) keeping its old value when the
 * bool scalar skip is true (PORTC_NONE: never): a step that dynamic loss scaling rejects */
portc_status optimizer_step_unless(portc_graph *g, const portc_optimizer *o, int n, const portc_node *params, const portc_node *grads, portc_node skip);

#endif
