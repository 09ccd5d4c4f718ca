/* Placement of primitives a device cannot run (devices/placement.h): the
 * choice of the fallback device, the copies there and back, and the
 * counters of porta_place.h. */
#include "devices/placement.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "porta_place.h"

/* ---- counters ---- */

#define MAX_PLACEMENT_COUNTS 128

static porta_placement_count counts[MAX_PLACEMENT_COUNTS];
static int count_used;
static pthread_mutex_t counts_lock = PTHREAD_MUTEX_INITIALIZER;

static void count_placement(const char *op, int from, int to, uint64_t bytes_in,
                            uint64_t bytes_out) {
    pthread_mutex_lock(&counts_lock);
    porta_placement_count *entry = NULL;
    for (int i = 0; i < count_used && !entry; i++)
        if (counts[i].from == from && counts[i].to == to && !strcmp(counts[i].op, op))
            entry = &counts[i];
    if (!entry && count_used < MAX_PLACEMENT_COUNTS) {
        entry = &counts[count_used++];
        memset(entry, 0, sizeof *entry);
        /* op names are short ("reduce.sum"); a longer one is cut, not lost */
        strncpy(entry->op, op, sizeof entry->op - 1);
        entry->from = from;
        entry->to = to;
    }
    if (!entry) entry = &counts[MAX_PLACEMENT_COUNTS - 1]; /* full: the last one absorbs */
    entry->count++;
    entry->bytes_in += bytes_in;
    entry->bytes_out += bytes_out;
    pthread_mutex_unlock(&counts_lock);
}

int porta_placement_counts(porta_placement_count *out, int cap) {
    pthread_mutex_lock(&counts_lock);
    int used = count_used;
    for (int i = 0; out && i < cap && i < used; i++) out[i] = counts[i];
    pthread_mutex_unlock(&counts_lock);
    return used;
}

void porta_placement_counts_reset(void) {
    pthread_mutex_lock(&counts_lock);
    count_used = 0;
    pthread_mutex_unlock(&counts_lock);
}

/* ---- choice of device ---- */

bool dev_runs(porta_device *device, const ir_prim *prim,
                       const porta_tensor *const *inputs, int input_count) {
    return !device->ops->supports || device->ops->supports(device, prim, inputs, input_count);
}

static bool host_memory(const porta_device *device) {
    return device->info.capabilities & PORTA_CAP_HOST_MEMORY;
}

/* A device that is neither `device` nor skipped, has host memory or not as
 * asked, and runs prim. */
static bool can_take(porta_device *candidate, porta_device *device, bool host,
                     const ir_prim *prim, const porta_tensor *const *inputs, int input_count) {
    return candidate != device && host_memory(candidate) == host &&
           dev_runs(candidate, prim, inputs, input_count);
}

porta_device *dev_placement_find(porta_device *device, const ir_prim *prim,
                                   const porta_tensor *const *inputs, int input_count) {
    int count = porta_device_count();
    /* The host first: every copy between devices stages through host
     * memory, so a host-memory device is reached with one copy each way
     * where another accelerator needs two. */
    for (int host = 1; host >= 0; host--)
        for (int i = 0; i < count; i++) {
            porta_device *candidate;
            porta_status *status = porta_device_get(i, &candidate);
            if (status) {
                porta_status_free(status);
                continue;
            }
            if (can_take(candidate, device, host, prim, inputs, input_count)) return candidate;
        }
    for (int host = 1; host >= 0; host--) {
        porta_device *candidate;
        for (int i = 0; (candidate = dev_hidden_device(i)); i++)
            if (can_take(candidate, device, host, prim, inputs, input_count)) return candidate;
    }
    return NULL;
}

/* ---- copies ---- */

/* The elements [lo, hi) of t's buffer its view covers. */
static void view_span(const porta_tensor *t, int64_t *lo, int64_t *hi) {
    *lo = *hi = t->offset;
    if (porta_tensor_numel(t) == 0) return;
    for (int d = 0; d < t->rank; d++) {
        int64_t extent = t->strides[d] * (t->sizes[d] - 1);
        if (extent < 0)
            *lo += extent;
        else
            *hi += extent;
    }
    *hi += 1;
}

/* Copies `bytes` from (from, from_handle + from_offset) to (to, to_handle).
 * A host-memory side is read or written in place; otherwise the bytes go
 * through a host block. */
static porta_status *copy_bytes(porta_device *from, void *from_handle, size_t from_offset,
                                porta_device *to, void *to_handle, size_t to_offset,
                                size_t bytes) {
    if (!bytes) return NULL;
    if (host_memory(to))
        return from->ops->buffer_read(from, from_handle, from_offset,
                                      (char *)to_handle + to_offset, bytes);
    if (host_memory(from))
        return to->ops->buffer_write(to, to_handle, to_offset,
                                     (const char *)from_handle + from_offset, bytes);
    void *host;
    PORTA_TRY(core_host_alloc(bytes, "a placement's copy", &host));
    porta_status *status = from->ops->buffer_read(from, from_handle, from_offset, host, bytes);
    if (!status) status = to->ops->buffer_write(to, to_handle, to_offset, host, bytes);
    core_host_free(host);
    return status;
}

/* A tensor on `to` with t's sizes, strides and dtype over a copy of the
 * span of t's buffer it covers (copied only when `fill`). */
static porta_status *mirror(const porta_tensor *t, porta_device *to, bool fill,
                            porta_tensor **out, uint64_t *bytes_copied) {
    int64_t lo, hi;
    view_span(t, &lo, &hi);
    size_t elem = porta_dtype_size(t->dtype);
    size_t bytes = (size_t)(hi - lo) * elem;
    porta_buffer *buffer;
    PORTA_TRY(porta_buffer_alloc(to, bytes, &buffer));
    porta_status *status = rt_buffer_materialize(buffer);
    if (!status && fill) {
        status = copy_bytes(t->buffer->device, t->buffer->handle, (size_t)lo * elem, to,
                            buffer->handle, 0, bytes);
        if (!status) *bytes_copied += bytes;
    }
    if (!status)
        status = rt_tensor_wrap(buffer, t->dtype, t->rank, t->sizes, t->strides,
                                   t->offset - lo, out);
    porta_buffer_release(buffer); /* the tensor holds its own reference */
    return status;
}

/* Whether t's view covers every element of its span: then the result
 * overwrites the whole span and nothing need be copied there first. */
static bool dense(const porta_tensor *t) {
    int64_t lo, hi;
    view_span(t, &lo, &hi);
    return hi - lo == porta_tensor_numel(t);
}

#define MAX_PLACED_INPUTS 8

/* "porta:N (backend)", or "the hidden cpu device" for one
 * PORTA_VISIBLE_DEVICES leaves out. */
static const char *device_label(const porta_device *device, char *text, size_t cap) {
    if (device->info.index < 0)
        snprintf(text, cap, "the %s device PORTA_VISIBLE_DEVICES hides", device->info.backend);
    else
        snprintf(text, cap, "porta:%d (%s)", device->info.index, device->info.backend);
    return text;
}

porta_status *dev_placement_run(const ir_prim *prim, const porta_tensor *const *inputs,
                                  int input_count, porta_tensor *out) {
    porta_device *from = out->buffer->device;
    porta_device *to = dev_placement_find(from, prim, inputs, input_count);
    char label[96];
    if (!to)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "%s is not supported on porta:%d (%s), nor on any other device",
                           ir_prim_name(prim), from->info.index, from->info.backend);
    if (input_count > MAX_PLACED_INPUTS)
        return porta_error(PORTA_ERR_INTERNAL, "placing %s: %d inputs, at most %d expected",
                           ir_prim_name(prim), input_count, MAX_PLACED_INPUTS);
    if (porta_tensor_numel(out) == 0) return NULL; /* nothing to compute or copy */
    porta_tensor *moved[MAX_PLACED_INPUTS] = {NULL};
    porta_tensor *result = NULL;
    uint64_t bytes_in = 0;
    porta_status *status = NULL;
    for (int i = 0; i < input_count && !status; i++)
        status = mirror(inputs[i], to, true, &moved[i], &bytes_in);
    if (!status) status = mirror(out, to, !dense(out), &result, &bytes_in);
    if (!status)
        status = to->ops->execute(to, prim, (const porta_tensor *const *)moved, input_count,
                                  result);
    if (!status) {
        int64_t lo, hi;
        view_span(out, &lo, &hi);
        size_t elem = porta_dtype_size(out->dtype);
        size_t bytes = (size_t)(hi - lo) * elem;
        status = copy_bytes(to, result->buffer->handle, 0, from, out->buffer->handle,
                            (size_t)lo * elem, bytes);
        if (!status)
            count_placement(ir_prim_name(prim), from->info.index, to->info.index, bytes_in,
                            bytes);
    }
    for (int i = 0; i < input_count; i++) porta_tensor_release(moved[i]);
    porta_tensor_release(result);
    if (status)
        return porta_error_context(status, "%s placed on %s from porta:%d (%s)",
                                   ir_prim_name(prim), device_label(to, label, sizeof label),
                                   from->info.index, from->info.backend);
    return NULL;
}
