/* Reading a .porta file (docs/porta-format.md): a safetensors file whose
 * metadata holds "porta.format" (the format version) and "porta.graph"
 * (the graph as JSON); its tensors are the weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/utf8.h"
#include "model/model.h"
#include "porta_io.h"

static porta_status *get_weight(void *state, const model_tensor_decl *decl, porta_device *device,
                                porta_tensor **out) {
    return porta_safetensors_get(state, decl->name, device, out);
}

static void close_weights(void *state) { porta_safetensors_close(state); }

/* "MAJOR.MINOR" with MAJOR this build's. */
static porta_status *check_version(const char *path, const char *version) {
    char *end;
    long major = strtol(version, &end, 10);
    if (end == version || *end != '.' || !(end[1] >= '0' && end[1] <= '9')) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected \"porta.format\" to be a version MAJOR.MINOR, got %s",
                           path, utf8_excerpt(version, strlen(version), quoted, sizeof quoted));
    }
    if (major != MODEL_FORMAT_MAJOR) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "%s: .porta format version %s is not supported; this build reads "
                           "version %d.x",
                           path, utf8_excerpt(version, strlen(version), quoted, sizeof quoted),
                           MODEL_FORMAT_MAJOR);
    }
    return NULL;
}

/* Each weight the graph declares is in the file, with its dtype and shape. */
static porta_status *check_weights(const char *path, const model_program *graph,
                                   const porta_safetensors *file) {
    for (int w = 0; w < graph->weight_count; w++) {
        const model_tensor_decl *decl = &graph->weights[w];
        porta_safetensors_info info;
        porta_status *status = porta_safetensors_info_get(file, decl->name, &info);
        if (status) {
            porta_status_free(status);
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: the graph declares weight %s, which the file does not hold",
                               path, decl->name);
        }
        bool same = info.dtype == decl->dtype && info.rank == decl->rank;
        for (int d = 0; same && d < decl->rank; d++) same = info.sizes[d] == decl->dims[d].size;
        if (!same) {
            int64_t sizes[PORTA_MAX_RANK];
            for (int d = 0; d < decl->rank; d++) sizes[d] = decl->dims[d].size;
            char want[CORE_SHAPE_STR_CAP], have[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_SHAPE,
                               "%s: weight %s: the graph declares %s %s, the file holds %s %s",
                               path, decl->name, porta_dtype_name(decl->dtype),
                               core_format_shape(want, sizeof want, decl->rank, sizes),
                               porta_dtype_name(info.dtype),
                               core_format_shape(have, sizeof have, info.rank, info.sizes));
        }
    }
    return NULL;
}

porta_status *model_load_porta(const char *path, porta_model **out) {
    porta_safetensors *file = NULL;
    PORTA_TRY(porta_safetensors_open(path, &file));
    const char *version = porta_safetensors_metadata_get(file, "porta.format");
    const char *json = porta_safetensors_metadata_get(file, "porta.graph");
    porta_status *status = NULL;
    if (!version || !json)
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "%s: a safetensors file without a model (no \"%s\" metadata); "
                             "expected a .porta file or a .pt2 archive",
                             path, version ? "porta.graph" : "porta.format");
    if (!status) status = check_version(path, version);
    model_program *graph = NULL;
    if (!status) {
        status = model_program_parse(json, strlen(json), &graph);
        if (status) porta_error_context(status, "%s", path);
    }
    if (!status) status = check_weights(path, graph, file);
    if (status) {
        model_program_free(graph);
        porta_safetensors_close(file);
        return status;
    }
    char format[32];
    snprintf(format, sizeof format, "porta %d.%d", graph->version_major, graph->version_minor);
    model_weight_source source = {.state = file, .get = get_weight, .close = close_weights};
    return model_create(graph, source, format, out);
}
