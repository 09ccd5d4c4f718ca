/* Collectives on porta tensors. A contiguous tensor on a device whose
 * buffers are host memory (the CPU) is handed to MPI in place; any other
 * tensor is staged: copied to host memory on the issuing thread, and the
 * result written back (through porta_copy when its layout is strided) by
 * porta_dist_work_wait on the waiting thread. Reading a tensor's host memory
 * runs its pending work first, so what is sent is what the program computed
 * before the call. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "dist/staging.h"
#include "dist/world.h"
#include "runtime/tensor.h"
#include "porta_dist.h"

static porta_status *check_tensor(const char *call, const char *arg, const porta_tensor *t) {
    if (!t)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: %s is NULL", call, arg);
    return NULL;
}

static bool on_host_memory(const porta_tensor *t) {
    porta_device_info info;
    porta_status *status = porta_device_info_get(porta_tensor_device(t), &info);
    porta_status_free(status);
    return !status && (info.capabilities & PORTA_CAP_HOST_MEMORY);
}

static size_t tensor_bytes(const porta_tensor *t) {
    return (size_t)porta_tensor_numel(t) * porta_dtype_size(porta_tensor_dtype(t));
}

porta_status *dist_stage(porta_tensor *t, bool read, bool write_back, dist_staged *out) {
    size_t bytes = tensor_bytes(t);
    if (on_host_memory(t) && porta_tensor_is_contiguous(t)) {
        /* Host access runs what is recorded on the buffer (fused mode). */
        PORTA_TRY(rt_buffer_host_access(porta_tensor_buffer(t)));
        porta_tensor_retain(t);
        *out = (dist_staged){.tensor = t, .host = bytes ? core_tensor_data(t) : NULL,
                             .in_place = true, .write_back = write_back};
        return NULL;
    }
    void *host = NULL;
    PORTA_TRY(core_host_alloc(bytes, "porta_dist staging", &host));
    if (read) {
        porta_status *status = porta_tensor_to_host(t, host, bytes);
        if (status) {
            core_host_free(host);
            return status;
        }
    }
    porta_tensor_retain(t);
    *out = (dist_staged){.tensor = t, .host = host, .in_place = false, .write_back = write_back};
    return NULL;
}

porta_status *dist_staged_write_back(dist_staged *s) {
    if (!s->tensor || !s->write_back || s->in_place)
        return NULL;
    porta_tensor *t = s->tensor;
    size_t bytes = tensor_bytes(t);
    if (bytes == 0)
        return NULL;
    if (porta_tensor_is_contiguous(t))
        return porta_buffer_write(porta_tensor_buffer(t),
                                  (size_t)porta_tensor_offset(t) *
                                      porta_dtype_size(porta_tensor_dtype(t)),
                                  s->host, bytes);
    porta_tensor *contiguous = NULL;
    PORTA_TRY(porta_tensor_from_host(porta_tensor_device(t), porta_tensor_dtype(t),
                                     porta_tensor_rank(t), porta_tensor_sizes(t), s->host,
                                     &contiguous));
    porta_status *status = porta_copy(contiguous, t);
    porta_tensor_release(contiguous);
    return status;
}

void dist_staged_release(dist_staged *s) {
    if (!s->in_place)
        core_host_free(s->host);
    porta_tensor_release(s->tensor);
    memset(s, 0, sizeof *s);
}

/* Checks call (with the staged memory's addresses), then queues it. The
 * staging is released on error. */
static porta_status *start_staged(dist_call *call, dist_staged staged[2],
                                  porta_dist_work **work) {
    porta_status *status = dist_check_call(call);
    if (status) {
        free(call->counts);
        dist_staged_release(&staged[0]);
        dist_staged_release(&staged[1]);
        return status;
    }
    return dist_start(call, staged, work);
}

/* Whether the world is joined is checked with the staged addresses
 * (dist_check_call), so a refused call still stages and releases. */
static porta_status *check_start(const char *call, porta_dist_work **work) {
    if (!work)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: work is NULL", call);
    return NULL;
}

/* One tensor read and written in place of the call (all_reduce, broadcast,
 * send, recv). */
static porta_status *start_one(dist_call *call, porta_tensor *t, bool read, bool write,
                               porta_dist_work **work) {
    PORTA_TRY(check_tensor(call->name, "tensor", t));
    PORTA_TRY(check_start(call->name, work));
    dist_staged staged[2] = {{0}, {0}};
    PORTA_TRY(dist_stage(t, read, write, &staged[write ? 1 : 0]));
    call->in = read ? staged[write ? 1 : 0].host : NULL;
    call->out = write ? staged[1].host : NULL;
    call->count = porta_tensor_numel(t);
    call->dtype = porta_tensor_dtype(t);
    return start_staged(call, staged, work);
}

/* `large` must hold group-size times `small`'s elements, of its dtype. */
static porta_status *check_blocks(const char *call, porta_dist_group *group,
                                  const porta_tensor *small, const char *small_name,
                                  const porta_tensor *large, const char *large_name) {
    int size = group ? porta_dist_group_size(group) : porta_dist_size();
    if (size < 0)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist: %s before porta_dist_init (no MPI world joined)", call);
    if (porta_tensor_dtype(small) != porta_tensor_dtype(large))
        return porta_error(PORTA_ERR_DTYPE, "porta_dist_%s: %s is %s but %s is %s", call,
                           large_name, porta_dtype_name(porta_tensor_dtype(large)), small_name,
                           porta_dtype_name(porta_tensor_dtype(small)));
    if (porta_tensor_numel(large) != porta_tensor_numel(small) * size)
        return porta_error(PORTA_ERR_SHAPE,
                           "porta_dist_%s: %s must hold %d (group size) x %lld elements, "
                           "given %lld",
                           call, large_name, size, (long long)porta_tensor_numel(small),
                           (long long)porta_tensor_numel(large));
    return NULL;
}

/* An input read and an output written (all_gather, reduce_scatter,
 * all_to_all). */
static porta_status *start_two(dist_call *call, const porta_tensor *in, porta_tensor *out,
                               porta_dist_work **work) {
    dist_staged staged[2] = {{0}, {0}};
    PORTA_TRY(dist_stage((porta_tensor *)in, true, false, &staged[0]));
    porta_status *status = dist_stage(out, false, true, &staged[1]);
    if (status) {
        dist_staged_release(&staged[0]);
        free(call->counts);
        return status;
    }
    call->in = staged[0].host;
    call->out = staged[1].host;
    call->dtype = porta_tensor_dtype(in);
    return start_staged(call, staged, work);
}

porta_status *porta_dist_all_reduce_start(porta_dist_group *group, porta_tensor *tensor,
                                          porta_dist_op op, porta_dist_work **work) {
    dist_call call = {.kind = DIST_ALL_REDUCE, .name = "all_reduce", .group = group, .op = op};
    return start_one(&call, tensor, true, true, work);
}

porta_status *porta_dist_broadcast_start(porta_dist_group *group, porta_tensor *tensor,
                                         int root, porta_dist_work **work) {
    dist_call call = {.kind = DIST_BROADCAST, .name = "broadcast", .group = group,
                      .peer = root};
    return start_one(&call, tensor, true, true, work);
}

porta_status *porta_dist_send_start(porta_dist_group *group, const porta_tensor *tensor,
                                    int dst, int tag, porta_dist_work **work) {
    dist_call call = {.kind = DIST_SEND, .name = "send", .group = group, .peer = dst,
                      .tag = tag};
    return start_one(&call, (porta_tensor *)tensor, true, false, work);
}

porta_status *porta_dist_recv_start(porta_dist_group *group, porta_tensor *tensor, int src,
                                    int tag, porta_dist_work **work) {
    dist_call call = {.kind = DIST_RECV, .name = "recv", .group = group, .peer = src,
                      .tag = tag};
    return start_one(&call, tensor, false, true, work);
}

porta_status *porta_dist_all_gather_start(porta_dist_group *group, const porta_tensor *in,
                                          porta_tensor *out, porta_dist_work **work) {
    PORTA_TRY(check_tensor("all_gather", "in", in));
    PORTA_TRY(check_tensor("all_gather", "out", out));
    PORTA_TRY(check_start("all_gather", work));
    PORTA_TRY(check_blocks("all_gather", group, in, "in", out, "out"));
    dist_call call = {.kind = DIST_ALL_GATHER, .name = "all_gather", .group = group,
                      .count = porta_tensor_numel(in)};
    return start_two(&call, in, out, work);
}

porta_status *porta_dist_reduce_scatter_start(porta_dist_group *group, const porta_tensor *in,
                                              porta_tensor *out, porta_dist_op op,
                                              porta_dist_work **work) {
    PORTA_TRY(check_tensor("reduce_scatter", "in", in));
    PORTA_TRY(check_tensor("reduce_scatter", "out", out));
    PORTA_TRY(check_start("reduce_scatter", work));
    PORTA_TRY(check_blocks("reduce_scatter", group, out, "out", in, "in"));
    dist_call call = {.kind = DIST_REDUCE_SCATTER, .name = "reduce_scatter", .group = group,
                      .count = porta_tensor_numel(out), .op = op};
    return start_two(&call, in, out, work);
}

porta_status *porta_dist_all_to_all_start(porta_dist_group *group, const porta_tensor *in,
                                          const int64_t *send_counts, porta_tensor *out,
                                          const int64_t *recv_counts, porta_dist_work **work) {
    PORTA_TRY(check_tensor("all_to_all", "in", in));
    PORTA_TRY(check_tensor("all_to_all", "out", out));
    PORTA_TRY(check_start("all_to_all", work));
    if (porta_tensor_dtype(in) != porta_tensor_dtype(out))
        return porta_error(PORTA_ERR_DTYPE, "porta_dist_all_to_all: out is %s but in is %s",
                           porta_dtype_name(porta_tensor_dtype(out)),
                           porta_dtype_name(porta_tensor_dtype(in)));
    dist_call call = {.kind = DIST_ALL_TO_ALL, .name = "all_to_all", .group = group};
    PORTA_TRY(dist_all_to_all_counts(&call, send_counts, porta_tensor_numel(in), recv_counts,
                                     porta_tensor_numel(out)));
    return start_two(&call, in, out, work);
}

/* ---- the synchronous forms, on the world ---- */

porta_status *porta_dist_all_reduce(porta_tensor *tensor, porta_dist_op op) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_all_reduce_start(NULL, tensor, op, &work), &work);
}

porta_status *porta_dist_broadcast(porta_tensor *tensor, int root) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_broadcast_start(NULL, tensor, root, &work), &work);
}

porta_status *porta_dist_all_gather(const porta_tensor *in, porta_tensor *out) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_all_gather_start(NULL, in, out, &work), &work);
}

porta_status *porta_dist_reduce_scatter(const porta_tensor *in, porta_tensor *out,
                                        porta_dist_op op) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_reduce_scatter_start(NULL, in, out, op, &work), &work);
}

porta_status *porta_dist_all_to_all(const porta_tensor *in, const int64_t *send_counts,
                                    porta_tensor *out, const int64_t *recv_counts) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_all_to_all_start(NULL, in, send_counts, out, recv_counts,
                                                   &work), &work);
}

porta_status *porta_dist_send(const porta_tensor *tensor, int dst, int tag) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_send_start(NULL, tensor, dst, tag, &work), &work);
}

porta_status *porta_dist_recv(porta_tensor *tensor, int src, int tag) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_recv_start(NULL, tensor, src, tag, &work), &work);
}
