/* Collectives on contiguous host memory: dtypes mapped to MPI's, float16
 * and bfloat16 reduced in float32, and the average as a sum then a scaling.
 * The tensor collectives (tensor_collectives.c) stage into these. */
#include <limits.h>
#include <string.h>

#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"
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
    if (!porta_dtype_is_valid((int)dtype))
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
        dst[i] = dtype == PORTA_F16 ? porta_f16_to_f32(h[i]) : porta_bf16_to_f32(h[i]);
}

static void f32_to_half(porta_dtype dtype, const float *src, void *dst, int64_t count) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < count; i++)
        h[i] = dtype == PORTA_F16 ? porta_f32_to_f16(src[i]) : porta_f32_to_bf16(src[i]);
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
    PORTA_TRY(porta_host_alloc((size_t)count * sizeof(float), "porta_dist float32 staging",
                               &wide));
    if (data)
        half_to_f32(dtype, data, wide, count);
    *out = wide;
    return NULL;
}

static porta_status *start_all_reduce(const dist_world *w, void *data, int64_t count,
                                      porta_dtype dtype, porta_dist_op op) {
    float *wide = NULL;
    PORTA_TRY(widen(dtype, data, count, &wide));
    mpi_datatype type;
    mpi_op reduce;
    reducing_type(w->mpi, dtype, op, &type, &reduce);
    void *target = wide ? (void *)wide : data;
    mpi_request request = NULL;
    porta_status *status = dist_check(w->mpi->Iallreduce(MPI_IN_PLACE_VALUE, target, (int)count,
                                                         type, reduce, w->comm, &request),
                                      "MPI_Iallreduce");
    if (!status)
        status = dist_wait(&request, -1);
    if (!status && op == PORTA_DIST_AVG)
        scale_average(target, wide ? PORTA_F32 : dtype, count, w->size);
    if (!status && wide)
        f32_to_half(dtype, wide, data, count);
    porta_host_free(wide);
    return status;
}

porta_status *porta_dist_all_reduce_host(void *data, int64_t count, porta_dtype dtype,
                                         porta_dist_op op) {
    PORTA_TRY(check_buffer("all_reduce", "data", data, count, dtype));
    PORTA_TRY(check_op("all_reduce", op, dtype));
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("all_reduce", true, &w));
    porta_status *status = start_all_reduce(w, data, count, dtype, op);
    dist_leave();
    return status ? porta_error_context(status, "all_reduce(%s) of %lld %s", op_name(op),
                                        (long long)count, porta_dtype_name(dtype))
                  : NULL;
}

porta_status *porta_dist_all_gather_host(const void *in, void *out, int64_t count,
                                         porta_dtype dtype) {
    PORTA_TRY(check_buffer("all_gather", "in", in, count, dtype));
    PORTA_TRY(check_buffer("all_gather", "out", out, count, dtype));
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("all_gather", true, &w));
    mpi_datatype type = moving_type(w->mpi, dtype);
    mpi_request request = NULL;
    porta_status *status =
        dist_check(w->mpi->Iallgather(in, (int)count, type, out, (int)count, type, w->comm,
                                      &request),
                   "MPI_Iallgather");
    if (!status)
        status = dist_wait(&request, -1);
    dist_leave();
    return status;
}

static porta_status *reduce_scatter(const dist_world *w, const void *in, void *out,
                                    int64_t count, porta_dtype dtype, porta_dist_op op) {
    float *wide_in = NULL;
    float *wide_out = NULL;
    porta_status *status = widen(dtype, in, count * w->size, &wide_in);
    if (!status)
        status = widen(dtype, NULL, count, &wide_out);
    if (status) {
        porta_host_free(wide_in);
        return status;
    }
    mpi_datatype type;
    mpi_op reduce;
    reducing_type(w->mpi, dtype, op, &type, &reduce);
    void *target = wide_out ? (void *)wide_out : out;
    mpi_request request = NULL;
    status = dist_check(w->mpi->Ireduce_scatter_block(wide_in ? (const void *)wide_in : in,
                                                      target, (int)count, type, reduce,
                                                      w->comm, &request),
                        "MPI_Ireduce_scatter_block");
    if (!status)
        status = dist_wait(&request, -1);
    if (!status && op == PORTA_DIST_AVG)
        scale_average(target, wide_out ? PORTA_F32 : dtype, count, w->size);
    if (!status && wide_out)
        f32_to_half(dtype, wide_out, out, count);
    porta_host_free(wide_in);
    porta_host_free(wide_out);
    return status;
}

porta_status *porta_dist_reduce_scatter_host(const void *in, void *out, int64_t count,
                                             porta_dtype dtype, porta_dist_op op) {
    PORTA_TRY(check_buffer("reduce_scatter", "out", out, count, dtype));
    PORTA_TRY(check_op("reduce_scatter", op, dtype));
    if (!in && count > 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_reduce_scatter: in is NULL");
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("reduce_scatter", true, &w));
    porta_status *status = NULL;
    if (count * (int64_t)w->size > INT_MAX)
        status = porta_error(PORTA_ERR_OUT_OF_RANGE,
                             "porta_dist_reduce_scatter: %lld elements per rank times %d "
                             "ranks is over %d",
                             (long long)count, w->size, INT_MAX);
    else
        status = reduce_scatter(w, in, out, count, dtype, op);
    dist_leave();
    return status;
}

static porta_status *check_rank(const char *call, const char *arg, int rank, int size) {
    if (rank < 0 || rank >= size)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "porta_dist_%s: %s must be a rank in [0, %d), given %d", call, arg,
                           size, rank);
    return NULL;
}

porta_status *porta_dist_broadcast_host(void *data, int64_t count, porta_dtype dtype,
                                        int root) {
    PORTA_TRY(check_buffer("broadcast", "data", data, count, dtype));
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("broadcast", true, &w));
    porta_status *status = check_rank("broadcast", "root", root, w->size);
    mpi_request request = NULL;
    if (!status)
        status = dist_check(w->mpi->Ibcast(data, (int)count, moving_type(w->mpi, dtype), root,
                                           w->comm, &request),
                            "MPI_Ibcast");
    if (!status)
        status = dist_wait(&request, -1);
    dist_leave();
    return status;
}

porta_status *porta_dist_barrier(void) {
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("barrier", true, &w));
    mpi_request request = NULL;
    porta_status *status = dist_check(w->mpi->Ibarrier(w->comm, &request), "MPI_Ibarrier");
    if (!status)
        status = dist_wait(&request, -1);
    dist_leave();
    return status;
}

static porta_status *check_peer(const char *call, const dist_world *w, int peer, int tag) {
    PORTA_TRY(check_rank(call, call[0] == 's' ? "dst" : "src", peer, w->size));
    if (peer == w->rank)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_%s: peer is this process's own rank %d", call, peer);
    if (tag < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_%s: tag must be >= 0, given %d", call, tag);
    return NULL;
}

porta_status *porta_dist_send_host(const void *data, int64_t count, porta_dtype dtype, int dst,
                                   int tag) {
    PORTA_TRY(check_buffer("send", "data", data, count, dtype));
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("send", false, &w));
    porta_status *status = check_peer("send", w, dst, tag);
    mpi_request request = NULL;
    if (!status)
        status = dist_check(w->mpi->Isend(data, (int)count, moving_type(w->mpi, dtype), dst,
                                          tag, w->comm, &request),
                            "MPI_Isend");
    if (!status)
        status = dist_wait(&request, dst);
    dist_leave();
    return status;
}

porta_status *porta_dist_recv_host(void *data, int64_t count, porta_dtype dtype, int src,
                                   int tag) {
    PORTA_TRY(check_buffer("recv", "data", data, count, dtype));
    const dist_world *w = NULL;
    PORTA_TRY(dist_enter("recv", false, &w));
    porta_status *status = check_peer("recv", w, src, tag);
    mpi_request request = NULL;
    if (!status)
        status = dist_check(w->mpi->Irecv(data, (int)count, moving_type(w->mpi, dtype), src,
                                          tag, w->comm, &request),
                            "MPI_Irecv");
    if (!status)
        status = dist_wait(&request, src);
    dist_leave();
    return status;
}
