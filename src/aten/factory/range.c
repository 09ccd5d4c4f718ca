/* Factory aten ops that lay out a sequence: arange, linspace, logspace,
 * eye. Values are computed as PyTorch's CPU kernels compute them (same
 * formula, same precision), so they match bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aten/factory/factory.h"
#include "aten/dispatch/op_reuse.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* ---- arange ---- */

/* torch.arange's dtype when none is given: int64 unless a bound or the step
 * is a float. */
static porta_dtype arange_dtype(const porta_value *dtype, const porta_value *start,
                                const porta_value *end, const porta_value *step) {
    if (dtype->kind == PORTA_VALUE_DTYPE) return dtype->dtype;
    bool floats = start->kind == PORTA_VALUE_FLOAT || end->kind == PORTA_VALUE_FLOAT ||
                  step->kind == PORTA_VALUE_FLOAT;
    return floats ? aten_default_dtype() : PORTA_I64;
}

static porta_status *make_arange(const porta_value *start_v, const porta_value *end_v,
                                 const porta_value *step_v, porta_dtype dtype,
                                 porta_device *device, porta_tensor **out) {
    double start = aten_number(start_v), end = aten_number(end_v), step = aten_number(step_v);
    if (dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"arange_cpu\" not implemented for 'Bool'");
    if (!porta_dtype_is_float(dtype)) { /* PyTorch takes the bounds as int64 */
        start = trunc(start);
        end = trunc(end);
        step = trunc(step);
    }
    if (step == 0) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "step must be nonzero");
    if (!isfinite(start) || !isfinite(end))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "unsupported range: %g -> %g", start, end);
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "upper bound and lower bound inconsistent with step sign");
    if (end == start) { /* porta_tensor_arange wants a non-empty range */
        int64_t zero = 0;
        return porta_tensor_empty(device, dtype, 1, &zero, out);
    }
    return porta_tensor_arange(device, dtype, start, end, step, out);
}

/* arange.start_step(start, end, step, dtype, layout, device, pin_memory) */
static porta_status *arange_start_step(const porta_value *args, aten_results *r) {
    porta_device *device;
    PORTA_TRY(aten_factory_device(&args[5], &device));
    porta_tensor *out = NULL;
    PORTA_TRY(make_arange(&args[0], &args[1], &args[2],
                          arange_dtype(&args[3], &args[0], &args[1], &args[2]), device, &out));
    return aten_push_tensor(r, out);
}

static const porta_value zero_value = {.kind = PORTA_VALUE_INT, .i = 0};
static const porta_value one_value = {.kind = PORTA_VALUE_INT, .i = 1};

/* arange.start(start, end, dtype, layout, device, pin_memory) */
static porta_status *arange_start(const porta_value *args, aten_results *r) {
    porta_value full[7] = {args[0], args[1], one_value, args[2], args[3], args[4], args[5]};
    return arange_start_step(full, r);
}

/* arange(end, dtype, layout, device, pin_memory) */
static porta_status *arange_end(const porta_value *args, aten_results *r) {
    porta_value full[7] = {zero_value, args[0], one_value, args[1], args[2], args[3], args[4]};
    return arange_start_step(full, r);
}

/* arange.start_out(start, end, step, out) */
static porta_status *arange_start_out(const porta_value *args, aten_results *r) {
    porta_tensor *out = args[3].tensor, *result = NULL;
    PORTA_TRY(make_arange(&args[0], &args[1], &args[2], out->dtype, out->buffer->device, &result));
    return aten_into_out(result, out, r);
}

/* arange.out(end, out) */
static porta_status *arange_out(const porta_value *args, aten_results *r) {
    porta_value full[4] = {zero_value, args[0], one_value, args[1]};
    return arange_start_out(full, r);
}

/* ---- linspace, logspace ---- */

/* Rounds to dtype's precision (values of integer dtypes truncate toward
 * zero, as a C++ cast does). */
static double round_to(porta_dtype dtype, double v) {
    switch (dtype) {
    case PORTA_F64: return v;
    case PORTA_F32: return (float)v;
    case PORTA_F16: return core_f16_to_f32(core_f32_to_f16((float)v));
    case PORTA_BF16: return core_bf16_to_f32(core_f32_to_bf16((float)v));
    default: return trunc(v);
    }
}

/* PyTorch's linspace kernel: step = (end - start) / (steps - 1) in the
 * dtype's own precision (double for integers), the first half counted up
 * from start and the second half down from end, every operation rounded to
 * that precision. Element i of `values` gets position i. */
static void linspace_values(porta_dtype dtype, double start_in, double end_in, int64_t steps,
                            double *values) {
    bool integral = !porta_dtype_is_float(dtype);
    porta_dtype step_dtype = integral ? PORTA_F64 : dtype;
    double start = round_to(dtype, start_in), end = round_to(dtype, end_in);
    double step = round_to(step_dtype, round_to(step_dtype, end - start) /
                                           round_to(step_dtype, (double)(steps - 1)));
    int64_t halfway = steps / 2;
    for (int64_t i = 0; i < steps; i++) {
        double v = i < halfway
                       ? round_to(step_dtype, start + round_to(step_dtype, step * (double)i))
                       : round_to(step_dtype,
                                  end - round_to(step_dtype, step * (double)(steps - i - 1)));
        values[i] = round_to(dtype, v);
    }
}

/* A new 1-D tensor of dtype from host doubles that dtype represents. */
static porta_status *from_doubles(porta_device *device, porta_dtype dtype, int64_t n,
                                  const double *values, porta_tensor **out) {
    porta_tensor *staged = NULL;
    PORTA_TRY(porta_tensor_from_host(device, PORTA_F64, 1, &n, values, &staged));
    porta_status *status = porta_cast(staged, dtype, out);
    porta_tensor_release(staged);
    return status;
}

/* linspace (log_base NULL) or logspace (base^linspace) of `steps` values. */
static porta_status *make_space(const porta_value *start, const porta_value *end, int64_t steps,
                                const double *log_base, porta_dtype dtype, porta_device *device,
                                porta_tensor **out) {
    if (steps < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "number of steps must be non-negative");
    double *values;
    PORTA_TRY(core_host_alloc((size_t)(steps ? steps : 1) * sizeof *values, "linspace staging",
                               (void **)&values));
    if (steps == 1) {
        values[0] = round_to(dtype, aten_number(start));
    } else {
        /* logspace's exponents are linspace's of the dtype, or of double for
         * integer dtypes. */
        porta_dtype exponent_dtype =
            log_base && !porta_dtype_is_float(dtype) ? PORTA_F64 : dtype;
        linspace_values(exponent_dtype, aten_number(start), aten_number(end), steps, values);
    }
    if (log_base)
        for (int64_t i = 0; i < steps; i++) values[i] = round_to(dtype, pow(*log_base, values[i]));
    porta_status *status = from_doubles(device, dtype, steps, values, out);
    core_host_free(values);
    return status;
}

/* linspace(start, end, steps, dtype, layout, device, pin_memory) */
static porta_status *linspace(const porta_value *args, aten_results *r) {
    porta_device *device;
    PORTA_TRY(aten_factory_device(&args[5], &device));
    porta_tensor *out = NULL;
    PORTA_TRY(make_space(&args[0], &args[1], args[2].i, NULL, aten_dtype_or_default(&args[3]),
                         device, &out));
    return aten_push_tensor(r, out);
}

/* linspace.out(start, end, steps, out) */
static porta_status *linspace_out(const porta_value *args, aten_results *r) {
    porta_tensor *out = args[3].tensor, *result = NULL;
    PORTA_TRY(make_space(&args[0], &args[1], args[2].i, NULL, out->dtype, out->buffer->device,
                         &result));
    return aten_into_out(result, out, r);
}

/* logspace(start, end, steps, base, dtype, layout, device, pin_memory) */
static porta_status *logspace(const porta_value *args, aten_results *r) {
    porta_device *device;
    PORTA_TRY(aten_factory_device(&args[6], &device));
    porta_tensor *out = NULL;
    double base = aten_number(&args[3]);
    PORTA_TRY(make_space(&args[0], &args[1], args[2].i, &base,
                         aten_dtype_or_default(&args[4]), device, &out));
    return aten_push_tensor(r, out);
}

/* ---- eye ---- */

/* An n x m identity of dtype: zeros, then ones along the diagonal (a view
 * with stride m + 1). */
static porta_status *make_eye(int64_t n, int64_t m, porta_dtype dtype, porta_device *device,
                              porta_tensor **out) {
    if (n < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "n must be greater or equal to 0, got %lld",
                           (long long)n);
    if (m < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "m must be greater or equal to 0, got %lld",
                           (long long)m);
    int64_t sizes[2] = {n, m}, diagonal = n < m ? n : m, stride = m + 1;
    porta_tensor *eye = NULL, *diag = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_tensor_full(device, dtype, 2, sizes, 0.0, &eye), done);
    if (diagonal) {
        CORE_TRY_GOTO(status,
                       porta_tensor_view(eye->buffer, dtype, 1, &diagonal, &stride, 0, &diag),
                       done);
        CORE_TRY_GOTO(status, porta_fill(diag, 1.0), done);
    }
    *out = eye;
    eye = NULL;
done:
    porta_tensor_release(diag);
    porta_tensor_release(eye);
    return status;
}

/* eye.m(n, m, dtype, layout, device, pin_memory) */
static porta_status *eye_m(const porta_value *args, aten_results *r) {
    porta_device *device;
    PORTA_TRY(aten_factory_device(&args[4], &device));
    porta_tensor *out = NULL;
    PORTA_TRY(make_eye(args[0].i, args[1].i, aten_dtype_or_default(&args[2]), device, &out));
    return aten_push_tensor(r, out);
}

/* eye(n, dtype, layout, device, pin_memory) */
static porta_status *eye(const porta_value *args, aten_results *r) {
    porta_value full[6] = {args[0], args[0], args[1], args[2], args[3], args[4]};
    return eye_m(full, r);
}

/* eye.m_out(n, m, out) */
static porta_status *eye_m_out(const porta_value *args, aten_results *r) {
    porta_tensor *out = args[2].tensor, *result = NULL;
    PORTA_TRY(make_eye(args[0].i, args[1].i, out->dtype, out->buffer->device, &result));
    return aten_into_out(result, out, r);
}

/* eye.out(n, out) */
static porta_status *eye_out(const porta_value *args, aten_results *r) {
    porta_value full[3] = {args[0], args[0], args[1]};
    return eye_m_out(full, r);
}

const aten_op aten_factory_range_ops[] = {
    {"arange", "sdxDx", arange_end},
    {"arange.start", "ssdxDx", arange_start},
    {"arange.start_step", "sssdxDx", arange_start_step},
    {"arange.out", "sT", arange_out},
    {"arange.start_out", "sssT", arange_start_out},
    {"linspace", "ssidxDx", linspace},
    {"linspace.out", "ssiT", linspace_out},
    {"logspace", "ssifdxDx", logspace},
    {"eye", "idxDx", eye},
    {"eye.m", "iidxDx", eye_m},
    {"eye.out", "iT", eye_out},
    {"eye.m_out", "iiT", eye_m_out},
    {NULL, NULL, NULL},
};
