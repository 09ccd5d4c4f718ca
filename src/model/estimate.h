/* The cost estimate of a model run (porta_model_estimate): the shapes of
 * every value worked out from the program without running it, op by op,
 * and from them the arithmetic (FLOPs) and the memory alive at once.
 * estimate_rules.c knows the ops; estimate.c walks the program. */
#ifndef PORTA_MODEL_ESTIMATE_H
#define PORTA_MODEL_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/program.h"
#include "porta_model.h"

/* What the estimate knows of a value. */
typedef struct est_value {
    bool known;
    bool view;           /* shares its first tensor argument's memory */
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t i;           /* an int slot's value */
} est_value;

/* A node's arguments as the rules see them. */
typedef struct est_node {
    const model_node *node;
    const char *codes;        /* the op's argument codes (aten.h) */
    const est_value *values;  /* by slot */
    est_value *outputs;       /* node->output_count of them, to fill */
    double flops;             /* to add to */
} est_node;

/* porta_model_estimate on a program (what the fuzz target drives). */
porta_status *model_estimate(const model_program *g, const char *const *symbols,
                             const int64_t *values, int count, porta_model_cost *out);

/* Fills e->outputs and e->flops for an aten node; false when the op's
 * shapes are beyond the rules (or an argument's shape is unknown). */
bool est_aten_node(est_node *e);

int64_t est_numel(const est_value *v);

#endif
