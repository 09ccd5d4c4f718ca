/* Loading, describing, checking and running a served model
 * (served_model.h). */
#include <libgen.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "core/tensor_layout.h"
#include "runtime/tensor.h"
#include "model/model.h"
#include "serve/served_model.h"

static void free_infos(serve_tensor_info *infos, int count) {
    for (int i = 0; infos && i < count; i++) free(infos[i].name);
    free(infos);
}

void serve_model_free(serve_model *m) {
    if (!m) return;
    porta_model_free(m->model);
    free_infos(m->inputs, m->input_count);
    free_infos(m->outputs, m->output_count);
    free(m->name);
    free(m->version);
    free(m);
}

/* The output's data for a reply: on a host-memory device a contiguous
 * output is read where it lies (the tensor moves into t->owner, so the
 * batch's rows reach the replies without a copy of the whole batch);
 * elsewhere it is copied to malloc'd memory. */
static porta_status *take_output(porta_tensor **output, serve_tensor *t) {
    porta_tensor *o = *output;
    porta_device_info info;
    PORTA_TRY(porta_device_info_get(porta_tensor_device(o), &info));
    if ((info.capabilities & PORTA_CAP_HOST_MEMORY) && porta_tensor_is_contiguous(o)) {
        PORTA_TRY(rt_buffer_host_access(o->buffer));
        t->data = core_tensor_data(o);
        t->owner = o;
        *output = NULL;
        return NULL;
    }
    if (!(t->data = malloc(t->bytes ? t->bytes : 1)))
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model run: out of memory");
    return porta_tensor_to_host(o, t->data, t->bytes);
}

porta_status *serve_model_run(serve_model *m, const serve_tensor *inputs, serve_tensor *outputs) {
    int n_in = m->input_count, n_out = m->output_count;
    porta_tensor **in = calloc((size_t)n_in + 1, sizeof *in);
    porta_tensor **out = calloc((size_t)n_out + 1, sizeof *out);
    porta_status *status = in && out ? NULL
                                     : porta_error(PORTA_ERR_OUT_OF_MEMORY, "model run: out of memory");
    for (int i = 0; !status && i < n_in; i++)
        status = porta_tensor_from_host(m->device, inputs[i].dtype, inputs[i].rank,
                                        inputs[i].sizes, inputs[i].data, &in[i]);
    if (!status) status = porta_model_run(m->model, m->device, in, n_in, out, n_out);
    for (int i = 0; !status && i < n_out; i++) {
        serve_tensor *t = &outputs[i];
        memset(t, 0, sizeof *t);
        t->dtype = porta_tensor_dtype(out[i]);
        t->rank = porta_tensor_rank(out[i]);
        memcpy(t->sizes, porta_tensor_sizes(out[i]), (size_t)t->rank * sizeof t->sizes[0]);
        t->bytes = (size_t)porta_tensor_numel(out[i]) * porta_dtype_size(t->dtype);
        t->name = strdup(porta_model_output_name(m->model, i));
        if (!t->name) status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "model run: out of memory");
        else status = take_output(&out[i], t);
        if (status) serve_tensors_clear(outputs, i + 1);
    }
    for (int i = 0; in && i < n_in; i++)
        if (in[i]) porta_tensor_release(in[i]);
    for (int i = 0; out && i < n_out; i++)
        if (out[i]) porta_tensor_release(out[i]);
    free(in);
    free(out);
    return status;
}

/* Zero inputs of the declared shapes, each symbol at `sizes[symbol]`. */
static porta_status *warm_up(serve_model *m, const int64_t *symbol_sizes, serve_tensor *outputs) {
    const model_program *g = m->model->graph;
    serve_tensor *inputs = calloc((size_t)m->input_count + 1, sizeof *inputs);
    if (!inputs) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "warm-up: out of memory");
    porta_status *status = NULL;
    for (int i = 0; !status && i < m->input_count; i++) {
        const model_tensor_decl *d = &g->inputs[i];
        serve_tensor *t = &inputs[i];
        t->dtype = d->dtype;
        t->rank = d->rank;
        for (int k = 0; k < d->rank; k++)
            t->sizes[k] = d->dims[k].size < 0 ? symbol_sizes[d->dims[k].symbol] : d->dims[k].size;
        int64_t numel = core_shape_numel(t->rank, t->sizes);
        size_t size = porta_dtype_size(t->dtype);
        if (numel < 0 || (size && (uint64_t)numel > SIZE_MAX / size)) {
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "warm-up: input %d is too large", i);
            break;
        }
        t->bytes = (size_t)numel * size;
        if (!(t->data = calloc(1, t->bytes ? t->bytes : 1)))
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "warm-up: out of memory");
    }
    if (!status) status = serve_model_run(m, inputs, outputs);
    serve_tensors_clear(inputs, m->input_count);
    free(inputs);
    return status;
}

static porta_status *describe_inputs(serve_model *m) {
    const model_program *g = m->model->graph;
    m->inputs = calloc((size_t)g->input_count + 1, sizeof *m->inputs);
    if (!m->inputs) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    m->input_count = g->input_count;
    int batch_symbol = -2; /* not yet seen */
    for (int i = 0; i < g->input_count; i++) {
        const model_tensor_decl *d = &g->inputs[i];
        serve_tensor_info *info = &m->inputs[i];
        if (!(info->name = strdup(d->name)))
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
        info->dtype = d->dtype;
        info->rank = d->rank;
        for (int k = 0; k < d->rank; k++) {
            info->sizes[k] = d->dims[k].size;
            info->symbols[k] = d->dims[k].size < 0 ? d->dims[k].symbol : -1;
        }
        int first = d->rank ? info->symbols[0] : -1;
        if (batch_symbol == -2) batch_symbol = first;
        if (first != batch_symbol) batch_symbol = -1;
    }
    /* The batch symbol may not size any other input dim: stacking rows must
     * not change another dim's size. */
    for (int i = 0; batch_symbol >= 0 && i < m->input_count; i++)
        for (int k = 1; k < m->inputs[i].rank; k++)
            if (m->inputs[i].symbols[k] == batch_symbol) batch_symbol = -1;
    m->batchable = batch_symbol >= 0;
    if (m->batchable) m->batch_max = g->symbols[batch_symbol].max;
    return NULL;
}

static porta_status *describe_outputs(serve_model *m) {
    const model_program *g = m->model->graph;
    int64_t *small = calloc((size_t)g->symbol_count + 1, sizeof *small);
    int64_t *large = calloc((size_t)g->symbol_count + 1, sizeof *large);
    serve_tensor *first = calloc((size_t)g->output_count + 1, sizeof *first);
    serve_tensor *second = calloc((size_t)g->output_count + 1, sizeof *second);
    m->outputs = calloc((size_t)g->output_count + 1, sizeof *m->outputs);
    porta_status *status = small && large && first && second && m->outputs
                               ? NULL
                               : porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    for (int s = 0; !status && s < g->symbol_count; s++) {
        small[s] = g->symbols[s].min > 1 ? g->symbols[s].min : 1;
        large[s] = small[s] + 1 <= g->symbols[s].max ? small[s] + 1 : small[s];
    }
    if (!status) m->output_count = g->output_count;
    if (!status) status = warm_up(m, small, first);
    if (!status && g->symbol_count) {
        status = warm_up(m, large, second);
        if (status) serve_tensors_clear(first, g->output_count);
    }
    if (status) goto done;
    for (int i = 0; i < g->output_count; i++) {
        serve_tensor_info *info = &m->outputs[i];
        const serve_tensor *a = &first[i], *b = g->symbol_count ? &second[i] : &first[i];
        info->name = first[i].name;
        first[i].name = NULL;
        info->dtype = a->dtype;
        info->rank = a->rank;
        for (int k = 0; k < a->rank; k++) {
            info->sizes[k] = b->rank == a->rank && b->sizes[k] == a->sizes[k] ? a->sizes[k] : -1;
            info->symbols[k] = -1;
        }
        /* Rows stacked must come back as rows: dim 0 of every output has
         * to follow the batch size. */
        if (m->batchable && (!a->rank || info->sizes[0] != -1 ||
                             a->sizes[0] != small[m->inputs[0].symbols[0]]))
            m->batchable = false;
    }
    serve_tensors_clear(first, g->output_count);
    if (g->symbol_count) serve_tensors_clear(second, g->output_count);
done:
    free(small);
    free(large);
    free(first);
    free(second);
    return status;
}

porta_status *serve_model_open(const char *path, porta_device *device, serve_model **out) {
    *out = NULL;
    serve_model *m = calloc(1, sizeof *m);
    if (!m) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    m->device = device;
    char *copy = strdup(path);
    if (copy) {
        char *base = basename(copy), *dot = strrchr(base, '.');
        if (dot && dot != base) *dot = '\0';
        m->name = strdup(base);
    }
    free(copy);
    m->version = strdup("1");
    porta_status *status = m->name && m->version
                               ? porta_model_load(path, &m->model)
                               : porta_error(PORTA_ERR_OUT_OF_MEMORY, "model: out of memory");
    if (!status) status = describe_inputs(m);
    if (!status) status = describe_outputs(m);
    if (status) {
        serve_model_free(m);
        return porta_error_context(status, "serving %s", path);
    }
    *out = m;
    return NULL;
}
