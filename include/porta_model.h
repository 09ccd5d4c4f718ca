/*
 * porta_model.h - loading and running whole models saved from PyTorch.
 *
 * The conventions of porta.h apply: fallible calls return a porta_status
 * (NULL on success), handles are released by porta_model_free.
 *
 * A model is a graph of PyTorch's aten ops (the Core ATen set that
 * torch.export produces) with its weights. Two files hold one:
 *  - a .porta file (torch_porta.export; docs/porta-format.md): a
 *    safetensors file whose metadata carries the graph as JSON;
 *  - a .pt2 archive written by torch.export.save, when Porta was built with
 *    its reader.
 * porta_model_load tells them apart by content, not by name. The whole
 * graph is checked before anything runs: every op exists and gets the
 * argument kinds it takes, every value is defined before use, dtypes and
 * sizes are sane, weights match their declarations; a file that fails is
 * rejected with a message naming what was expected and what it holds.
 *
 * Weights are loaded to a device on the first run there and kept until
 * porta_model_free (on the CPU they are views of the mapped file). A model
 * runs on one thread at a time.
 */
#ifndef PORTA_MODEL_H
#define PORTA_MODEL_H

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct porta_model porta_model;

PORTA_API porta_status *porta_model_load(const char *path, porta_model **out);
PORTA_API void porta_model_free(porta_model *model);

PORTA_API int porta_model_input_count(const porta_model *model);
PORTA_API int porta_model_output_count(const porta_model *model);

/* An input as the model declares it. A dimension of -1 is symbolic: any
 * size within [min, max] of its symbol, the same size wherever the symbol
 * appears (symbol names the symbol, "" for fixed dimensions). */
typedef struct porta_model_input_info {
    const char *name;
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    const char *symbols[PORTA_MAX_RANK];
} porta_model_input_info;
PORTA_API porta_status *porta_model_input_info_get(const porta_model *model, int index,
                                                   porta_model_input_info *out);
/* The name of output `index` (NULL when out of range). */
PORTA_API const char *porta_model_output_name(const porta_model *model, int index);

/* Weights (parameters, buffers and constants) and their total elements;
 * weight_info_get describes weight `index` (every dim fixed). */
PORTA_API int porta_model_weight_count(const porta_model *model);
PORTA_API porta_status *porta_model_weight_info_get(const porta_model *model, int index,
                                                    porta_model_input_info *out);
PORTA_API int64_t porta_model_parameter_count(const porta_model *model);
/* The graph's nodes and, for each distinct op, how many nodes call it:
 * op_count_at fills the name and count of distinct op `index` (ops in
 * order of first use; false when out of range). */
PORTA_API int porta_model_node_count(const porta_model *model);
PORTA_API int porta_model_op_kind_count(const porta_model *model);
PORTA_API bool porta_model_op_count_at(const porta_model *model, int index, const char **name,
                                       int *count);
/* "porta 1.0" or "pt2 ...": the file's format and version. */
PORTA_API const char *porta_model_format(const porta_model *model);

/* What one run of the model costs, worked out from its program before
 * running it: each value's shape from its op's rule and its arguments'
 * shapes (docs/porta-format.md describes the rules), at the symbol sizes given
 * (symbols[i] = values[i]; the others at their smallest size above 0).
 * flops counts a multiply-add as 2; peak_bytes is the most memory held at
 * once by the weights, the inputs and the results alive (each from its node
 * to its last use, as porta_model_run frees them; views take none). Nodes
 * of ops beyond the rules, and those reading their results, are left out:
 * nodes_sized says how many were counted, unsized_op names the first op
 * that was not (NULL when every node was). */
typedef struct porta_model_cost {
    double flops;
    uint64_t peak_bytes;
    uint64_t weight_bytes;
    int nodes_sized;
    const char *unsized_op; /* valid while the model is */
} porta_model_cost;
PORTA_API porta_status *porta_model_estimate(const porta_model *model,
                                             const char *const *symbols, const int64_t *values,
                                             int count, porta_model_cost *out);

/* Bounds how long each later porta_model_run may take: a run still going
 * after `seconds` (weight loading included) stops before its next node with
 * PORTA_ERR_UNAVAILABLE (worth trying again later); a node already started
 * finishes first. With a bound, each node's device work is waited for
 * before the next node starts (so queued work counts), which gives up
 * overlapping nodes. 0 removes the bound; a negative or non-finite value is PORTA_ERR_INVALID_ARGUMENT. */
PORTA_API porta_status *porta_model_set_time_limit(porta_model *model, double seconds);

/* Runs the model on `device`. inputs: one tensor per model input, in order,
 * on any device (copied to `device` when elsewhere); outputs: one new tensor
 * per model output, on `device`, released by the caller. */
PORTA_API porta_status *porta_model_run(porta_model *model, porta_device *device,
                                        porta_tensor *const *inputs, int input_count,
                                        porta_tensor **outputs, int output_count);

#ifdef __cplusplus
}
#endif

#endif
