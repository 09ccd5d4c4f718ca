/* Collectives on porta tensors. A contiguous tensor on a device whose
 * buffers are host memory (the CPU) is handed to MPI in place; any other
 * tensor is staged: copied to host memory, sent, and the result written
 * back (through porta_copy when its layout is strided). */
#include "core/alloc.h"
#include "core/status.h"
#include "core/tensor.h"
#include "porta_dist.h"

typedef struct staged {
    void *host;     /* the elements, row-major */
    bool in_place;  /* host points into the tensor's own buffer */
    size_t bytes;
} staged;

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

/* Host memory holding t's elements; `read` copies them there when staged. */
static porta_status *stage_in(const porta_tensor *t, bool read, staged *out) {
    size_t bytes = (size_t)porta_tensor_numel(t) * porta_dtype_size(porta_tensor_dtype(t));
    if (on_host_memory(t) && porta_tensor_is_contiguous(t)) {
        PORTA_TRY(porta_buffer_host_access(porta_tensor_buffer(t)));
        *out = (staged){.host = bytes ? porta_tensor_data(t) : NULL, .in_place = true,
                        .bytes = bytes};
        return NULL;
    }
    void *host = NULL;
    PORTA_TRY(porta_host_alloc(bytes, "porta_dist staging", &host));
    if (read) {
        porta_status *status = porta_tensor_to_host(t, host, bytes);
        if (status) {
            porta_host_free(host);
            return status;
        }
    }
    *out = (staged){.host = host, .in_place = false, .bytes = bytes};
    return NULL;
}

/* Puts staged elements back into t (nothing to do when used in place). */
static porta_status *stage_out(const staged *s, porta_tensor *t) {
    if (s->in_place || s->bytes == 0)
        return NULL;
    if (porta_tensor_is_contiguous(t))
        return porta_buffer_write(porta_tensor_buffer(t),
                                  (size_t)porta_tensor_offset(t) *
                                      porta_dtype_size(porta_tensor_dtype(t)),
                                  s->host, s->bytes);
    porta_tensor *contiguous = NULL;
    PORTA_TRY(porta_tensor_from_host(porta_tensor_device(t), porta_tensor_dtype(t),
                                     porta_tensor_rank(t), porta_tensor_sizes(t), s->host,
                                     &contiguous));
    porta_status *status = porta_copy(contiguous, t);
    porta_tensor_release(contiguous);
    return status;
}

static void stage_free(staged *s) {
    if (!s->in_place)
        porta_host_free(s->host);
    s->host = NULL;
}

porta_status *porta_dist_all_reduce(porta_tensor *tensor, porta_dist_op op) {
    PORTA_TRY(check_tensor("all_reduce", "tensor", tensor));
    staged s;
    PORTA_TRY(stage_in(tensor, true, &s));
    porta_status *status = porta_dist_all_reduce_host(s.host, porta_tensor_numel(tensor),
                                                      porta_tensor_dtype(tensor), op);
    if (!status)
        status = stage_out(&s, tensor);
    stage_free(&s);
    return status;
}

porta_status *porta_dist_broadcast(porta_tensor *tensor, int root) {
    PORTA_TRY(check_tensor("broadcast", "tensor", tensor));
    staged s;
    PORTA_TRY(stage_in(tensor, true, &s));
    porta_status *status = porta_dist_broadcast_host(s.host, porta_tensor_numel(tensor),
                                                     porta_tensor_dtype(tensor), root);
    if (!status)
        status = stage_out(&s, tensor);
    stage_free(&s);
    return status;
}

/* `large` must hold world-size times `small`'s elements, of its dtype. */
static porta_status *check_blocks(const char *call, const porta_tensor *small,
                                  const char *small_name, const porta_tensor *large,
                                  const char *large_name) {
    int size = porta_dist_size();
    if (size < 0)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist: %s before porta_dist_init (no MPI world joined)", call);
    if (porta_tensor_dtype(small) != porta_tensor_dtype(large))
        return porta_error(PORTA_ERR_DTYPE, "porta_dist_%s: %s is %s but %s is %s", call,
                           large_name, porta_dtype_name(porta_tensor_dtype(large)), small_name,
                           porta_dtype_name(porta_tensor_dtype(small)));
    if (porta_tensor_numel(large) != porta_tensor_numel(small) * size)
        return porta_error(PORTA_ERR_SHAPE,
                           "porta_dist_%s: %s must hold %d (world size) x %lld elements, "
                           "given %lld",
                           call, large_name, size, (long long)porta_tensor_numel(small),
                           (long long)porta_tensor_numel(large));
    return NULL;
}

porta_status *porta_dist_all_gather(const porta_tensor *in, porta_tensor *out) {
    PORTA_TRY(check_tensor("all_gather", "in", in));
    PORTA_TRY(check_tensor("all_gather", "out", out));
    PORTA_TRY(check_blocks("all_gather", in, "in", out, "out"));
    staged from, to;
    PORTA_TRY(stage_in(in, true, &from));
    porta_status *status = stage_in(out, false, &to);
    if (status) {
        stage_free(&from);
        return status;
    }
    status = porta_dist_all_gather_host(from.host, to.host, porta_tensor_numel(in),
                                        porta_tensor_dtype(in));
    if (!status)
        status = stage_out(&to, out);
    stage_free(&from);
    stage_free(&to);
    return status;
}

porta_status *porta_dist_reduce_scatter(const porta_tensor *in, porta_tensor *out,
                                        porta_dist_op op) {
    PORTA_TRY(check_tensor("reduce_scatter", "in", in));
    PORTA_TRY(check_tensor("reduce_scatter", "out", out));
    PORTA_TRY(check_blocks("reduce_scatter", out, "out", in, "in"));
    staged from, to;
    PORTA_TRY(stage_in(in, true, &from));
    porta_status *status = stage_in(out, false, &to);
    if (status) {
        stage_free(&from);
        return status;
    }
    status = porta_dist_reduce_scatter_host(from.host, to.host, porta_tensor_numel(out),
                                            porta_tensor_dtype(out), op);
    if (!status)
        status = stage_out(&to, out);
    stage_free(&from);
    stage_free(&to);
    return status;
}

porta_status *porta_dist_send(const porta_tensor *tensor, int dst, int tag) {
    PORTA_TRY(check_tensor("send", "tensor", tensor));
    staged s;
    PORTA_TRY(stage_in(tensor, true, &s));
    porta_status *status = porta_dist_send_host(s.host, porta_tensor_numel(tensor),
                                                porta_tensor_dtype(tensor), dst, tag);
    stage_free(&s);
    return status;
}

porta_status *porta_dist_recv(porta_tensor *tensor, int src, int tag) {
    PORTA_TRY(check_tensor("recv", "tensor", tensor));
    staged s;
    PORTA_TRY(stage_in(tensor, false, &s));
    porta_status *status = porta_dist_recv_host(s.host, porta_tensor_numel(tensor),
                                                porta_tensor_dtype(tensor), src, tag);
    if (!status)
        status = stage_out(&s, tensor);
    stage_free(&s);
    return status;
}
