/* The model program: what a .porta (or .pt2) file's graph of aten ops
 * becomes once parsed and checked. "Program", not "graph", because
 * porta_graph (src/graph/) is the graph of primitives; this one's nodes are
 * aten ops run by the interpreter (run.c). Every value the graph names is a slot; a node
 * reads slots through its arguments and writes its results into slots.
 * Nothing here touches files: parsing (program_parse.c) reads JSON text from
 * memory, so a fuzzer can drive it directly. */
#ifndef PORTA_MODEL_PROGRAM_H
#define PORTA_MODEL_PROGRAM_H

#include <stdbool.h>
#include <stdint.h>

#include "porta.h"

/* Largest counts a graph may declare (a hostile file cannot make the
 * loader allocate more than this many of each). */
#define MODEL_MAX_NODES 1000000
#define MODEL_MAX_SLOTS 4000000
#define MODEL_MAX_LIST 100000
/* Largest dimension a declared shape may have. */
#define MODEL_MAX_DIM ((int64_t)1 << 48)

typedef enum model_slot_kind { SLOT_TENSOR = 0, SLOT_INT } model_slot_kind;
typedef enum model_slot_source { FROM_INPUT = 0, FROM_WEIGHT, FROM_NODE } model_slot_source;

typedef struct model_slot {
    char *name;
    model_slot_kind kind;
    model_slot_source source;
    int index;     /* the input, weight or node that defines it */
    int last_use;  /* last node reading it; node_count when an output; -1 unused */
} model_slot;

typedef enum model_arg_kind {
    ARG_NONE = 0,
    ARG_TENSOR,  /* slot (tensor) */
    ARG_TENSORS, /* slots, -1 for a None entry */
    ARG_INT,
    ARG_SYM,     /* slot (int) */
    ARG_FLOAT,
    ARG_BOOL,
    ARG_INTS,    /* constants, or slots where syms[i] >= 0 */
    ARG_DTYPE,
    ARG_STRING
} model_arg_kind;

typedef struct model_arg {
    model_arg_kind kind;
    union {
        int slot;
        struct {
            int *slots;
            int count;
        } tensors;
        int64_t i;
        double f;
        bool b;
        struct {
            int64_t *values;
            int *syms;
            int count;
        } ints;
        porta_dtype dtype;
        char *string;
    };
} model_arg;

/* Integer arithmetic on sizes that torch.export emits with dynamic shapes,
 * run by the interpreter itself. */
typedef enum model_builtin {
    BUILTIN_NONE = 0, /* an aten op */
    BUILTIN_SYM_SIZE, /* sym_size.int(tensor, dim) */
    BUILTIN_SYM_NUMEL,
    BUILTIN_ADD, BUILTIN_SUB, BUILTIN_MUL, BUILTIN_FLOORDIV, BUILTIN_MOD,
    BUILTIN_NEG, BUILTIN_MAX, BUILTIN_MIN
} model_builtin;

typedef struct model_node {
    int op;                /* aten op id when builtin == BUILTIN_NONE */
    model_builtin builtin;
    const char *op_name;   /* the aten name or the builtin's */
    model_arg *args;
    int arg_count;
    int *outputs;          /* slots, -1 for a result nobody reads */
    int output_count;
} model_node;

typedef struct model_dim {
    int64_t size;  /* -1: symbolic */
    int symbol;    /* index into symbols when symbolic */
} model_dim;

typedef struct model_tensor_decl {
    char *name;
    int slot;
    porta_dtype dtype;
    int rank;
    model_dim dims[PORTA_MAX_RANK];
} model_tensor_decl;

typedef struct model_symbol {
    char *name;
    int64_t min, max;
} model_symbol;

typedef struct model_program {
    int version_major, version_minor;
    model_slot *slots;
    int slot_count;
    model_tensor_decl *inputs;
    int input_count;
    model_tensor_decl *weights; /* every dim fixed */
    int weight_count;
    model_symbol *symbols;
    int symbol_count;
    model_node *nodes;
    int node_count;
    int *outputs; /* slots */
    int output_count;
} model_program;

/* The format version this build reads: files of another major version are
 * rejected; a newer minor version of the same major is read. */
#define MODEL_FORMAT_MAJOR 1
#define MODEL_FORMAT_MINOR 0

/* Parses and checks a graph's JSON text (`length` bytes): structure, names
 * defined before use, ops known to the aten layer with the argument kinds
 * they take, dtypes, shapes. On success *out owns everything. */
porta_status *model_program_parse(const char *json, size_t length, model_program **out);
void model_program_free(model_program *graph);

/* The checks parse runs after building the graph: every node's op and
 * argument kinds, every reference defined before use; fills last_use. */
porta_status *model_program_validate(model_program *graph);

/* Builder helpers shared by the .porta and .pt2 readers. */
porta_status *model_program_add_slot(model_program *graph, const char *name,
                                     model_slot_kind kind, model_slot_source source, int index,
                                     int *out);
/* The slot called `name`, or -1. Linear; the readers keep their own maps
 * where it matters. */
int model_program_find_slot(const model_program *graph, const char *name);
/* A builtin's name ("sym_size.int", "sym.add") and back. */
model_builtin model_builtin_from_name(const char *name);
bool model_dtype_from_name(const char *name, porta_dtype *out);

#endif
