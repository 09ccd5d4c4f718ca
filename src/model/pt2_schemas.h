/* The argument names and defaults of every aten op's PyTorch schema, for
 * completing the calls a .pt2 archive stores (it leaves out arguments that
 * take their default). Generated into pt2_schemas.c. */
#ifndef PORTA_MODEL_PT2_SCHEMAS_H
#define PORTA_MODEL_PT2_SCHEMAS_H

typedef struct pt2_schema {
    const char *op;   /* "addmm", "add.Tensor" */
    const char *args; /* JSON: [["self"], ["alpha", {"int": 1}], ...] */
} pt2_schema;

/* Sorted by op name (strcmp), terminated by {0, 0}. */
extern const pt2_schema pt2_schemas[];

#endif
