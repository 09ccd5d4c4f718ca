/* Collectives on contiguous host memory: the checks on the issuing thread,
 * and the MPI calls on the communication thread (dtypes mapped to MPI's,
 * float16 and bfloat16 reduced in float32, the average as a sum then a
 * scaling). The tensor collectives (tensor_collectives.c) stage into these. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"
#include "dist/work.h"
#include "dist/world.h"
#include "porta_dist.h"

static const char *op_name(porta_dist_op op) {
    switch (op) {
    case PORTA_DIST_SUM: return "sum";
    case PORTA_DIST_AVG: return "avg";
    case PORTA_DIST_MAX: return "max";
    case PORTA_DIST_MIN: return "min";
    }
    return "?";
}

static porta_status *check_op(const char *call, porta_dist_op op, porta_dtype dtype) {
    if ((int)op < PORTA_DIST_SUM || (int)op > PORTA_DIST_MIN)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_%s: op must be sum, avg, max or min, given %d", call,
                           (int)op);
    if (op == PORTA_DIST_AVG && !porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "porta_dist_%s: avg needs a floating dtype, given %s", call,
                           porta_dtype_name(dtype));
    return NULL;
}

static porta_status *check_buffer(const char *call, const char *arg, const void *data,
                                  int64_t count, porta_dtype dtype) {
    if (!core_dtype_is_valid((int)dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: invalid dtype %d",
                           call, (int)dtype);
    if (count < 0 || count > INT_MAX)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "porta_dist_%s: %s count must be in [0, %d], given %lld", call,
                           arg, INT_MAX, (long long)count);
    if (!data && count > 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: %s is NULL", call, arg);
    return NULL;
}

/* The MPI type moving elements of dtype unchanged (no arithmetic). */
static mpi_datatype moving_type(const mpi_api *mpi, porta_dtype dtype) {
    switch (dtype) {
    case PORTA_BOOL:
    case PORTA_U8: return mpi->u8;
    case PORTA_I8: return mpi->i8;
    case PORTA_I16:
    case PORTA_F16:
    case PORTA_BF16: return mpi->i16;
    case PORTA_I32: return mpi->i32;
    case PORTA_I64: return mpi->i64;
    case PORTA_F32: return mpi->f32;
    case PORTA_F64: return mpi->f64;
    default: return mpi->u8;
    }
}

/* The MPI type and op reducing elements of dtype (float16 and bfloat16 are
 * reduced as float32 by the caller). bool reduces as logic: sum and max are
 * or, min is and, as torch's reductions on bool. */
static void reducing_type(const mpi_api *mpi, porta_dtype dtype, porta_dist_op op,
                          mpi_datatype *type, mpi_op *mpi_op_out) {
    if (dtype == PORTA_BOOL) {
        *type = mpi->c_bool;
        *mpi_op_out = op == PORTA_DIST_MIN ? mpi->land : mpi->lor;
        return;
    }
    *type = dtype == PORTA_F16 || dtype == PORTA_BF16 ? mpi->f32 : moving_type(mpi, dtype);
    *mpi_op_out = op == PORTA_DIST_MAX ? mpi->max : op == PORTA_DIST_MIN ? mpi->min : mpi->sum;
}

static bool is_half(porta_dtype dtype) { return dtype == PORTA_F16 || dtype == PORTA_BF16; }

static void half_to_f32(porta_dtype dtype, const void *src, float *dst, int64_t count) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < count; i++)
        dst[i] = dtype == PORTA_F16 ? core_f16_to_f32(h[i]) : core_bf16_to_f32(h[i]);
}

static void f32_to_half(porta_dtype dtype, const float *src, void *dst, int64_t count) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < count; i++)
        h[i] = dtype == PORTA_F16 ? core_f32_to_f16(src[i]) : core_f32_to_bf16(src[i]);
}

/* Divides `count` floats of the reduced dtype by the world size. */
static void scale_average(void *data, porta_dtype reduced, int64_t count, int size) {
    if (reduced == PORTA_F64) {
        double *d = data;
        for (int64_t i = 0; i < count; i++) d[i] /= size;
    } else {
        float *f = data;
        for (int64_t i = 0; i < count; i++) f[i] /= (float)size;
    }
}

/* A float32 copy of half data for a reduction (NULL for other dtypes). */
static porta_status *widen(porta_dtype dtype, const void *data, int64_t count, float **out) {
    *out = NULL;
    if (!is_half(dtype))
        return NULL;
    void *wide = NULL;
    PORTA_TRY(core_host_alloc((size_t)count * sizeof(float), "porta_dist float32 staging",
                               &wide));
    if (data)
        half_to_f32(dtype, data, wide, count);
    *out = wide;
    return NULL;
}


/* ---- on the communication thread ---- */

/* The end of a reduction started (status NULL) into wide, the float copy of
 * half data, or else into c->out: waits for it, divides an average by the
 * group's size and narrows wide back into c->out. */
static porta_status *finish_reduce(porta_status *status, mpi_request *request,
                                   const porta_dist_group *g, const dist_call *c, float *wide) {
    void *target = wide ? (void *)wide : c->out;
    if (!status)
        status = dist_wait(request, -1);
    if (!status && c->op == PORTA_DIST_AVG)
        scale_average(target, wide ? PORTA_F32 : c->dtype, c->count, g->size);
    if (!status && wide)
        f32_to_half(c->dtype, wide, c->out, c->count);
    return status;
}

static porta_status *run_all_reduce(const dist_world *w, const porta_dist_group *g,
                                    const dist_call *c) {
    float *wide = NULL;
    PORTA_TRY(widen(c->dtype, c->out, c->count, &wide));
    mpi_datatype type;
    mpi_op reduce;
    reducing_type(w->mpi, c->dtype, c->op, &type, &reduce);
    void *target = wide ? (void *)wide : c->out;
    mpi_request request = NULL;
    porta_status *status = dist_check(w->mpi->Iallreduce(MPI_IN_PLACE_VALUE, target,
                                                         (int)c->count, type, reduce, g->comm,
                                                         &request),
                                      "MPI_Iallreduce");
    status = finish_reduce(status, &request, g, c, wide);
    core_host_free(wide);
    return status ? porta_error_context(status, "all_reduce(%s) of %lld %s", op_name(c->op),
                                        (long long)c->count, porta_dtype_name(c->dtype))
                  : NULL;
}

static porta_status *run_reduce_scatter(const dist_world *w, const porta_dist_group *g,
                                        const dist_call *c) {
    float *wide_in = NULL;
    float *wide_out = NULL;
    porta_status *status = widen(c->dtype, c->in, c->count * g->size, &wide_in);
    if (!status)
        status = widen(c->dtype, NULL, c->count, &wide_out);
    if (status) {
        core_host_free(wide_in);
        return status;
    }
    mpi_datatype type;
    mpi_op reduce;
    reducing_type(w->mpi, c->dtype, c->op, &type, &reduce);
    void *target = wide_out ? (void *)wide_out : c->out;
    mpi_request request = NULL;
    status = dist_check(w->mpi->Ireduce_scatter_block(wide_in ? (const void *)wide_in : c->in,
                                                      target, (int)c->count, type, reduce,
                                                      g->comm, &request),
                        "MPI_Ireduce_scatter_block");
    status = finish_reduce(status, &request, g, c, wide_out);
    core_host_free(wide_in);
    core_host_free(wide_out);
    return status;
}

static porta_status *run_call(const dist_world *w, const porta_dist_group *g,
                              const dist_call *c) {
    const mpi_api *mpi = w->mpi;
    mpi_datatype type = moving_type(mpi, c->dtype);
    mpi_request request = NULL;
    int code = MPI_OK;
    const char *what = "";
    int peer = -1;
    switch (c->kind) {
    case DIST_ALL_REDUCE: return run_all_reduce(w, g, c);
    case DIST_REDUCE_SCATTER: return run_reduce_scatter(w, g, c);
    case DIST_ALL_GATHER:
        what = "MPI_Iallgather";
        code = mpi->Iallgather(c->in, (int)c->count, type, c->out, (int)c->count, type, g->comm,
                               &request);
        break;
    case DIST_ALL_TO_ALL: {
        int n = g->size;
        what = "MPI_Ialltoallv";
        code = mpi->Ialltoallv(c->in, c->counts, c->counts + n, type, c->out, c->counts + 2 * n,
                               c->counts + 3 * n, type, g->comm, &request);
        break;
    }
    case DIST_BROADCAST:
        what = "MPI_Ibcast";
        code = mpi->Ibcast(c->out, (int)c->count, type, c->peer, g->comm, &request);
        break;
    case DIST_BARRIER:
        what = "MPI_Ibarrier";
        code = mpi->Ibarrier(g->comm, &request);
        break;
    case DIST_SEND:
        what = "MPI_Isend";
        peer = c->peer;
        code = mpi->Isend(c->in, (int)c->count, type, c->peer, c->tag, g->comm, &request);
        break;
    case DIST_RECV:
        what = "MPI_Irecv";
        peer = c->peer;
        code = mpi->Irecv(c->out, (int)c->count, type, c->peer, c->tag, g->comm, &request);
        break;
    default:
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist: unknown call kind %d",
                           (int)c->kind);
    }
    PORTA_TRY(dist_check(code, what));
    return dist_wait(&request, peer);
}

porta_status *dist_execute_collective(dist_call *call) {
    const dist_world *w = NULL;
    porta_dist_group *g = NULL;
    bool collective = call->kind != DIST_SEND && call->kind != DIST_RECV;
    PORTA_TRY(dist_begin(call->name, call->group, collective, &w, &g));
    porta_status *status = run_call(w, g, call);
    dist_end();
    return status;
}

/* ---- on the issuing thread: checks, then the call is queued ---- */

/* This process's rank and the size of group (NULL: the world). */
static porta_status *group_shape(const char *call, const porta_dist_group *group, int *rank,
                                 int *size) {
    if (group) {
        *rank = group->rank;
        *size = group->size;
        return NULL;
    }
    *rank = porta_dist_rank();
    *size = porta_dist_size();
    if (*size < 0)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist: %s before porta_dist_init (no MPI world joined)", call);
    return NULL;
}

static porta_status *check_rank(const char *call, const char *arg, int rank, int size) {
    if (rank < 0 || rank >= size)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "porta_dist_%s: %s must be a rank in [0, %d), given %d", call, arg,
                           size, rank);
    return NULL;
}

static porta_status *check_peer(const char *call, int me, int size, int peer, int tag) {
    PORTA_TRY(check_rank(call, call[0] == 's' ? "dst" : "src", peer, size));
    if (peer == me)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_%s: peer is this process's own rank %d", call, peer);
    if (tag < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_%s: tag must be >= 0, given %d", call, tag);
    return NULL;
}

porta_status *dist_check_call(dist_call *c) {
    const char *name = c->name;
    int me = 0, size = 0;
    switch (c->kind) {
    case DIST_ALL_REDUCE:
        PORTA_TRY(check_buffer(name, "data", c->out, c->count, c->dtype));
        PORTA_TRY(check_op(name, c->op, c->dtype));
        break;
    case DIST_REDUCE_SCATTER:
        PORTA_TRY(check_buffer(name, "out", c->out, c->count, c->dtype));
        PORTA_TRY(check_op(name, c->op, c->dtype));
        if (!c->in && c->count > 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: in is NULL", name);
        break;
    case DIST_ALL_GATHER:
        PORTA_TRY(check_buffer(name, "in", c->in, c->count, c->dtype));
        PORTA_TRY(check_buffer(name, "out", c->out, c->count, c->dtype));
        break;
    case DIST_BROADCAST:
    case DIST_RECV: PORTA_TRY(check_buffer(name, "data", c->out, c->count, c->dtype)); break;
    case DIST_SEND: PORTA_TRY(check_buffer(name, "data", c->in, c->count, c->dtype)); break;
    case DIST_ALL_TO_ALL:
        if (!core_dtype_is_valid((int)c->dtype))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: invalid dtype %d",
                               name, (int)c->dtype);
        break;
    default: break;
    }
    PORTA_TRY(group_shape(name, c->group, &me, &size));
    switch (c->kind) {
    case DIST_REDUCE_SCATTER:
    case DIST_ALL_GATHER:
        if (c->count * (int64_t)size > INT_MAX)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "porta_dist_%s: %lld elements per rank times %d ranks is over "
                               "%d",
                               name, (long long)c->count, size, INT_MAX);
        break;
    case DIST_BROADCAST: PORTA_TRY(check_rank(name, "root", c->peer, size)); break;
    case DIST_SEND:
    case DIST_RECV: PORTA_TRY(check_peer(name, me, size, c->peer, c->tag)); break;
    default: break;
    }
    return NULL;
}

/* MPI's counts and displacements for all_to_all from per-rank element
 * counts, checked against the elements in and out hold; into call->counts. */
porta_status *dist_all_to_all_counts(dist_call *call, const int64_t *send_counts,
                                     int64_t in_count, const int64_t *recv_counts,
                                     int64_t out_count) {
    int me = 0, size = 0;
    PORTA_TRY(group_shape(call->name, call->group, &me, &size));
    int *counts = calloc((size_t)size * 4, sizeof *counts);
    if (!counts)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_dist_all_to_all: out of memory");
    const int64_t *given[2] = {send_counts, recv_counts};
    const int64_t totals[2] = {in_count, out_count};
    const char *names[2] = {"send", "recv"};
    for (int side = 0; side < 2; side++) {
        int *count = counts + 2 * side * size;
        int *displacement = count + size;
        int64_t at = 0;
        for (int r = 0; r < size; r++) {
            int64_t n = given[side] ? given[side][r] : totals[side] / size;
            if (n < 0 || n > INT_MAX || at > INT_MAX) {
                free(counts);
                return porta_error(PORTA_ERR_OUT_OF_RANGE,
                                   "porta_dist_all_to_all: %s count for rank %d must be in "
                                   "[0, %d] at an offset below %d, given %lld at %lld",
                                   names[side], r, INT_MAX, INT_MAX, (long long)n,
                                   (long long)at);
            }
            count[r] = (int)n;
            displacement[r] = (int)at;
            at += n;
        }
        if (totals[side] >= 0 && at != totals[side]) {
            free(counts);
            return porta_error(PORTA_ERR_SHAPE,
                               given[side] ? "porta_dist_all_to_all: %s counts add up to %lld "
                                             "elements but the tensor holds %lld"
                                           : "porta_dist_all_to_all: %s: %lld elements in "
                                             "equal blocks need a multiple of the group "
                                             "size, given %lld",
                               names[side], (long long)at, (long long)totals[side]);
        }
    }
    call->counts = counts;
    return NULL;
}

static porta_status *start_host(dist_call *call, porta_dist_work **work) {
    if (!work)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_%s: work is NULL",
                           call->name);
    porta_status *status = dist_check_call(call);
    if (status) {
        free(call->counts);
        return status;
    }
    return dist_start(call, NULL, work);
}

porta_status *porta_dist_all_reduce_host_start(porta_dist_group *group, void *data,
                                               int64_t count, porta_dtype dtype,
                                               porta_dist_op op, porta_dist_work **work) {
    dist_call call = {.kind = DIST_ALL_REDUCE, .name = "all_reduce", .group = group,
                      .out = data, .count = count, .dtype = dtype, .op = op};
    return start_host(&call, work);
}

porta_status *porta_dist_all_gather_host_start(porta_dist_group *group, const void *in,
                                               void *out, int64_t count, porta_dtype dtype,
                                               porta_dist_work **work) {
    dist_call call = {.kind = DIST_ALL_GATHER, .name = "all_gather", .group = group, .in = in,
                      .out = out, .count = count, .dtype = dtype};
    return start_host(&call, work);
}

porta_status *porta_dist_reduce_scatter_host_start(porta_dist_group *group, const void *in,
                                                   void *out, int64_t count, porta_dtype dtype,
                                                   porta_dist_op op, porta_dist_work **work) {
    dist_call call = {.kind = DIST_REDUCE_SCATTER, .name = "reduce_scatter", .group = group,
                      .in = in, .out = out, .count = count, .dtype = dtype, .op = op};
    return start_host(&call, work);
}

porta_status *porta_dist_all_to_all_host_start(porta_dist_group *group, const void *in,
                                               const int64_t *send_counts, void *out,
                                               const int64_t *recv_counts, porta_dtype dtype,
                                               porta_dist_work **work) {
    dist_call call = {.kind = DIST_ALL_TO_ALL, .name = "all_to_all", .group = group, .in = in,
                      .out = out, .dtype = dtype};
    if (!send_counts || !recv_counts)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_all_to_all_host: send_counts and recv_counts are "
                           "needed (host memory has no size to split equally)");
    PORTA_TRY(dist_check_call(&call));
    PORTA_TRY(dist_all_to_all_counts(&call, send_counts, -1, recv_counts, -1));
    int size = call.group ? call.group->size : porta_dist_size();
    bool sends = false, receives = false;
    for (int r = 0; r < size; r++) {
        sends |= call.counts[r] > 0;
        receives |= call.counts[2 * size + r] > 0;
    }
    if ((sends && !in) || (receives && !out)) {
        free(call.counts);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_all_to_all: %s is NULL",
                           sends && !in ? "in" : "out");
    }
    return dist_start(&call, NULL, work);
}

porta_status *porta_dist_broadcast_host_start(porta_dist_group *group, void *data,
                                              int64_t count, porta_dtype dtype, int root,
                                              porta_dist_work **work) {
    dist_call call = {.kind = DIST_BROADCAST, .name = "broadcast", .group = group, .out = data,
                      .count = count, .dtype = dtype, .peer = root};
    return start_host(&call, work);
}

porta_status *porta_dist_barrier_start(porta_dist_group *group, porta_dist_work **work) {
    dist_call call = {.kind = DIST_BARRIER, .name = "barrier", .group = group,
                      .dtype = PORTA_U8};
    return start_host(&call, work);
}

porta_status *porta_dist_send_host_start(porta_dist_group *group, const void *data,
                                         int64_t count, porta_dtype dtype, int dst, int tag,
                                         porta_dist_work **work) {
    dist_call call = {.kind = DIST_SEND, .name = "send", .group = group, .in = data,
                      .count = count, .dtype = dtype, .peer = dst, .tag = tag};
    return start_host(&call, work);
}

porta_status *porta_dist_recv_host_start(porta_dist_group *group, void *data, int64_t count,
                                         porta_dtype dtype, int src, int tag,
                                         porta_dist_work **work) {
    dist_call call = {.kind = DIST_RECV, .name = "recv", .group = group, .out = data,
                      .count = count, .dtype = dtype, .peer = src, .tag = tag};
    return start_host(&call, work);
}

/* ---- the synchronous forms: start, then wait ---- */

porta_status *dist_finish(porta_status *started, porta_dist_work **work) {
    if (started)
        return started;
    porta_status *status = porta_dist_work_wait(*work);
    porta_dist_work_free(*work);
    return status;
}

porta_status *porta_dist_all_reduce_host(void *data, int64_t count, porta_dtype dtype,
                                         porta_dist_op op) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_all_reduce_host_start(NULL, data, count, dtype, op, &work),
                       &work);
}

porta_status *porta_dist_all_gather_host(const void *in, void *out, int64_t count,
                                         porta_dtype dtype) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_all_gather_host_start(NULL, in, out, count, dtype, &work), &work);
}

porta_status *porta_dist_reduce_scatter_host(const void *in, void *out, int64_t count,
                                             porta_dtype dtype, porta_dist_op op) {
    porta_dist_work *work = NULL;
    return dist_finish(
        porta_dist_reduce_scatter_host_start(NULL, in, out, count, dtype, op, &work), &work);
}

porta_status *porta_dist_all_to_all_host(const void *in, const int64_t *send_counts, void *out,
                                         const int64_t *recv_counts, porta_dtype dtype) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_all_to_all_host_start(NULL, in, send_counts, out,
                                                        recv_counts, dtype, &work), &work);
}

porta_status *porta_dist_broadcast_host(void *data, int64_t count, porta_dtype dtype,
                                        int root) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_broadcast_host_start(NULL, data, count, dtype, root, &work),
                       &work);
}

porta_status *porta_dist_barrier(void) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_barrier_start(NULL, &work), &work);
}

porta_status *porta_dist_send_host(const void *data, int64_t count, porta_dtype dtype, int dst,
                                   int tag) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_send_host_start(NULL, data, count, dtype, dst, tag, &work),
                       &work);
}

porta_status *porta_dist_recv_host(void *data, int64_t count, porta_dtype dtype, int src,
                                   int tag) {
    porta_dist_work *work = NULL;
    return dist_finish(porta_dist_recv_host_start(NULL, data, count, dtype, src, tag, &work),
                       &work);
}
