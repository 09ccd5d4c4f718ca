/* A loaded model: its checked graph, where its weights come from, and the
 * weights already loaded on each device it has run on. */
#ifndef PORTA_MODEL_MODEL_H
#define PORTA_MODEL_MODEL_H

#include "model/program.h"
#include "porta_model.h"

/* Where weight tensors come from: a .porta file's safetensors, or a .pt2
 * archive's weight files. get makes a new tensor on `device` holding the
 * weight graph->weights[index] declares. */
typedef struct model_weight_source {
    void *state;
    porta_status *(*get)(void *state, const model_tensor_decl *decl, porta_device *device,
                         porta_tensor **out);
    void (*close)(void *state);
} model_weight_source;

typedef struct model_device_weights {
    porta_device *device;
    porta_tensor **tensors; /* one per graph weight */
} model_device_weights;

typedef struct model_op_count {
    const char *name;
    int count;
} model_op_count;

struct porta_model {
    model_program *graph;
    model_weight_source weights;
    model_device_weights *loaded;
    int loaded_count;
    model_op_count *op_counts;
    int op_kind_count;
    char format[64];
    double time_limit; /* seconds a run may take; 0: no limit */
};

/* Takes ownership of graph and source (both released on error too). */
porta_status *model_create(model_program *graph, model_weight_source source, const char *format,
                           porta_model **out);
/* The weights on `device`, loaded on first use. */
porta_status *model_weights_on(porta_model *model, porta_device *device, porta_tensor ***out);

/* Readers of each file format. */
porta_status *model_load_porta(const char *path, porta_model **out);
/* A .pt2 archive; PORTA_ERR_UNSUPPORTED where this build has no reader. */
porta_status *model_load_pt2(const char *path, porta_model **out);

#endif
