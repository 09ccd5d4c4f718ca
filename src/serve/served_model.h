/* A model as the server serves it: loaded once on its device, warmed up,
 * described for the protocol's metadata (inputs and outputs with -1 for
 * dynamic dims), with its batch dimension when it declares one, and run on
 * host tensors. */
#ifndef PORTA_SERVE_SERVED_MODEL_H
#define PORTA_SERVE_SERVED_MODEL_H

#include "porta_model.h"
#include "serve/protocol.h"

typedef struct serve_tensor_info {
    char *name;
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK]; /* -1: dynamic */
    int symbols[PORTA_MAX_RANK];   /* the model's symbol of a dynamic input dim, else -1 */
} serve_tensor_info;

typedef struct serve_model {
    char *name;    /* the file's name without folders and extension */
    char *version; /* "1": one version per name */
    porta_model *model;
    porta_device *device;
    serve_tensor_info *inputs;
    int input_count;
    serve_tensor_info *outputs;
    int output_count;
    /* Dim 0 of every input is one symbol found nowhere else in the inputs,
     * and dim 0 of every output follows it: requests can be stacked along
     * it, up to batch_max rows in all. */
    bool batchable;
    int64_t batch_max;
} serve_model;

/* Loads the model at `path` onto `device` and runs it twice on zeros (at
 * two sizes of each symbol when its range allows) to learn its outputs'
 * dtypes and which of their dims are dynamic; the weights stay loaded. */
porta_status *serve_model_open(const char *path, porta_device *device, serve_model **out);
void serve_model_free(serve_model *model);

/* Checks a request's inputs against the model (names, dtypes, fixed dims,
 * each symbol's size the same everywhere and within its range) and puts
 * them in the model's input order. *rows: dim 0 of the inputs when the model
 * is batchable, else 1. */
porta_status *serve_model_check(const serve_model *model, serve_request *request, int64_t *rows);

/* One run on host tensors (model order); outputs[] receives one host tensor
 * per model output (serve_tensor_clear each). */
porta_status *serve_model_run(serve_model *model, const serve_tensor *inputs,
                              serve_tensor *outputs);

/* The protocol's model metadata: {"name","versions","platform","inputs",
 * "outputs"}. *json is free()d by the caller. */
porta_status *serve_model_metadata(const serve_model *model, char **json);

#endif
