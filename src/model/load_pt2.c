/* .pt2 archives (torch.export.save): the archive reader (io/pt2_archive.h)
 * checks the archive, pt2_graph.c writes its program as a .porta graph,
 * and the graph is parsed and checked like a .porta file's. Weights stay
 * in the archive (views of the mapping on the CPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/model.h"
#include "model/pt2_graph.h"

typedef struct pt2_state {
    pt2_archive *archive;
    pt2_weight_names names;
} pt2_state;

static porta_status *get_weight(void *state, const model_tensor_decl *decl, porta_device *device,
                                porta_tensor **out) {
    pt2_state *s = state;
    for (int i = 0; i < s->names.count; i++)
        if (!strcmp(s->names.placeholders[i], decl->name))
            return pt2_tensor_get(s->archive, s->names.fqns[i], device, out);
    return porta_error(PORTA_ERR_INTERNAL, ".pt2: no archive tensor for weight %s", decl->name);
}

static void close_state(void *state) {
    pt2_state *s = state;
    pt2_weight_names_free(&s->names);
    pt2_close(s->archive);
    free(s);
}

porta_status *model_load_pt2(const char *path, porta_model **out) {
    pt2_state *s = calloc(1, sizeof *s);
    if (!s) return porta_error(PORTA_ERR_OUT_OF_MEMORY, ".pt2: out of memory");
    porta_status *status = pt2_open(path, NULL, &s->archive);
    if (status) { /* pt2_open's messages name the path already */
        close_state(s);
        return status;
    }
    core_text graph_text = {0};
    model_program *graph = NULL;
    status = pt2_graph_to_porta(s->archive, &graph_text, &s->names);
    if (!status) status = model_program_parse(graph_text.chars, graph_text.length, &graph);
    text_free(&graph_text);
    if (status) {
        close_state(s);
        return porta_error_context(status, "%s", path);
    }
    int64_t major = 0, minor = 0;
    pt2_schema_version(s->archive, &major, &minor);
    char format[64];
    snprintf(format, sizeof format, "pt2 (schema %lld.%lld)", (long long)major, (long long)minor);
    model_weight_source source = {.state = s, .get = get_weight, .close = close_state};
    return model_create(graph, source, format, out);
}
