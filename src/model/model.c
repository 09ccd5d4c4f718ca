/* porta_model: creation, weights per device, freeing, and what inspect
 * shows (inputs, outputs, parameter and op counts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "io/file_map.h"
#include "model/model.h"

/* The distinct ops in order of first use, with how many nodes call each. */
static porta_status *count_ops(porta_model *model) {
    const model_program *g = model->graph;
    model->op_counts = calloc((size_t)g->node_count + 1, sizeof *model->op_counts);
    if (!model->op_counts) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    /* Small graphs dominate; a linear search per node over the distinct
     * ops (a few dozen in practice) is enough. */
    for (int n = 0; n < g->node_count; n++) {
        const char *name = g->nodes[n].op_name;
        int k = 0;
        while (k < model->op_kind_count && strcmp(model->op_counts[k].name, name)) k++;
        if (k == model->op_kind_count) model->op_counts[model->op_kind_count++].name = name;
        model->op_counts[k].count++;
    }
    return NULL;
}

porta_status *model_create(model_program *graph, model_weight_source source, const char *format,
                           porta_model **out) {
    porta_model *model = calloc(1, sizeof *model);
    if (!model) {
        model_program_free(graph);
        if (source.close) source.close(source.state);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    }
    model->graph = graph;
    model->weights = source;
    snprintf(model->format, sizeof model->format, "%s", format);
    porta_status *status = count_ops(model);
    if (status) {
        porta_model_free(model);
        return status;
    }
    *out = model;
    return NULL;
}

porta_status *model_weights_on(porta_model *model, porta_device *device, porta_tensor ***out) {
    for (int i = 0; i < model->loaded_count; i++)
        if (model->loaded[i].device == device) {
            *out = model->loaded[i].tensors;
            return NULL;
        }
    const model_program *g = model->graph;
    model_device_weights *grown =
        realloc(model->loaded, ((size_t)model->loaded_count + 1) * sizeof *grown);
    if (!grown) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    model->loaded = grown;
    porta_tensor **tensors = calloc((size_t)g->weight_count + 1, sizeof *tensors);
    if (!tensors) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    for (int w = 0; w < g->weight_count; w++) {
        porta_status *status =
            model->weights.get(model->weights.state, &g->weights[w], device, &tensors[w]);
        if (status) {
            for (int k = 0; k < w; k++) porta_tensor_release(tensors[k]);
            free(tensors);
            return porta_error_context(status, "loading weight %s", g->weights[w].name);
        }
    }
    model->loaded[model->loaded_count++] = (model_device_weights){device, tensors};
    *out = tensors;
    return NULL;
}

void porta_model_free(porta_model *model) {
    if (!model) return;
    for (int i = 0; i < model->loaded_count; i++) {
        for (int w = 0; w < model->graph->weight_count; w++)
            porta_tensor_release(model->loaded[i].tensors[w]);
        free(model->loaded[i].tensors);
    }
    free(model->loaded);
    if (model->weights.close) model->weights.close(model->weights.state);
    free(model->op_counts);
    model_program_free(model->graph);
    free(model);
}

/* Whether the first bytes of the file are a ZIP local header (.pt2). */
static porta_status *is_zip(const char *path, bool *out) {
    int fd;
    size_t size;
    PORTA_TRY(io_file_open(path, "model", &fd, &size));
    unsigned char magic[4] = {0};
    ssize_t got = size >= sizeof magic ? pread(fd, magic, sizeof magic, 0) : 0;
    close(fd);
    *out = got == 4 && magic[0] == 'P' && magic[1] == 'K' && magic[2] == 3 && magic[3] == 4;
    return NULL;
}

porta_status *porta_model_load(const char *path, porta_model **out) {
    if (!path || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_model_load: expected a path and an output pointer");
    bool zip = false;
    PORTA_TRY(is_zip(path, &zip));
    return zip ? model_load_pt2(path, out) : model_load_porta(path, out);
}

int porta_model_input_count(const porta_model *model) {
    return model ? model->graph->input_count : 0;
}

int porta_model_output_count(const porta_model *model) {
    return model ? model->graph->output_count : 0;
}

static void describe(const model_program *g, const model_tensor_decl *decl,
                     porta_model_input_info *out) {
    out->name = decl->name;
    out->dtype = decl->dtype;
    out->rank = decl->rank;
    for (int d = 0; d < decl->rank; d++) {
        out->sizes[d] = decl->dims[d].size;
        out->symbols[d] = decl->dims[d].size < 0 ? g->symbols[decl->dims[d].symbol].name : "";
    }
}

porta_status *porta_model_input_info_get(const porta_model *model, int index,
                                         porta_model_input_info *out) {
    if (!model || !out || index < 0 || index >= model->graph->input_count)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "model input %d: the model has %d inputs",
                           index, model ? model->graph->input_count : 0);
    describe(model->graph, &model->graph->inputs[index], out);
    return NULL;
}

porta_status *porta_model_weight_info_get(const porta_model *model, int index,
                                          porta_model_input_info *out) {
    if (!model || !out || index < 0 || index >= model->graph->weight_count)
        return porta_error(PORTA_ERR_OUT_OF_RANGE, "model weight %d: the model has %d weights",
                           index, model ? model->graph->weight_count : 0);
    describe(model->graph, &model->graph->weights[index], out);
    return NULL;
}

const char *porta_model_output_name(const porta_model *model, int index) {
    if (!model || index < 0 || index >= model->graph->output_count) return NULL;
    return model->graph->slots[model->graph->outputs[index]].name;
}

int porta_model_weight_count(const porta_model *model) {
    return model ? model->graph->weight_count : 0;
}

int64_t porta_model_parameter_count(const porta_model *model) {
    if (!model) return 0;
    int64_t total = 0;
    for (int w = 0; w < model->graph->weight_count; w++) {
        const model_tensor_decl *decl = &model->graph->weights[w];
        int64_t numel = 1;
        for (int d = 0; d < decl->rank; d++) numel *= decl->dims[d].size;
        total += numel;
    }
    return total;
}

int porta_model_node_count(const porta_model *model) {
    return model ? model->graph->node_count : 0;
}

int porta_model_op_kind_count(const porta_model *model) {
    return model ? model->op_kind_count : 0;
}

bool porta_model_op_count_at(const porta_model *model, int index, const char **name, int *count) {
    if (!model || index < 0 || index >= model->op_kind_count) return false;
    if (name) *name = model->op_counts[index].name;
    if (count) *count = model->op_counts[index].count;
    return true;
}

const char *porta_model_format(const porta_model *model) {
    return model ? model->format : "";
}
