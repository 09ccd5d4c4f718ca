/* PyTorch's FFT primitives, _fft_r2c, _fft_c2r and _fft_c2c, on the FFT
 * primitive: a complex tensor's (real, imaginary) pairs as a view
 * (view_as_real), transformed, and the result viewed back as complex.
 * torch.fft.* (fft, ifft, rfft, irfft, fftn, hfft, ihfft, ...), stft and
 * istft reach these three through PyTorch's own compositions, and autograd
 * through PyTorch's derivative formulas of them. */
#include <string.h>

#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"

static porta_tensor *scope_fft(aten_scope *s, const porta_tensor *x,
                               const porta_fft_params *params) {
    if (s->status || !x) return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_fft(x, params, &out); /* before out is read */
    return scope_hold(s, status, out);
}

static porta_tensor *scope_view_as_real(aten_scope *s, const porta_tensor *x) {
    if (s->status || !x) return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_view_as_real(x, &out);
    return scope_hold(s, status, out);
}

static porta_tensor *scope_view_as_complex(aten_scope *s, const porta_tensor *x) {
    if (s->status || !x) return NULL;
    porta_tensor *out = NULL;
    porta_status *status = porta_view_as_complex(x, &out);
    return scope_hold(s, status, out);
}

/* The params of an op's dim list and normalization, checked as PyTorch's
 * fft_norm_mode and dims are. */
static porta_status *params_of(const char *op, porta_fft_kind kind, const porta_value *dims,
                               int64_t norm, porta_fft_params *params) {
    memset(params, 0, sizeof *params);
    params->kind = kind;
    if (norm < 0 || norm >= PORTA_FFT_NORM_COUNT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected normalization 0 (none), 1 (by root n) or 2 (by n), got "
                           "%lld",
                           op, (long long)norm);
    params->norm = (porta_fft_norm)norm;
    if (dims->ints.count >= PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected at most %d dims, got %d",
                           op, PORTA_MAX_RANK - 1, dims->ints.count);
    params->axis_count = dims->ints.count;
    for (int i = 0; i < dims->ints.count; i++) params->axes[i] = (int)dims->ints.items[i];
    return NULL;
}

static porta_status *check_complex(const char *op, const porta_tensor *x) {
    if (!porta_dtype_is_complex(x->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: expected a complex input tensor, but got %s",
                           op, porta_dtype_name(x->dtype));
    return NULL;
}

/* x's pairs with the axis `axis` of the signal grown to `size` by zeros
 * (C2R reads size values; PyTorch may pass fewer). */
static porta_tensor *pairs_at_least(aten_scope *s, porta_tensor *pairs, int axis, int64_t size) {
    if (!pairs || axis < 0 || pairs->sizes[axis] >= size) return pairs;
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    pads[2 * axis + 1] = size - pairs->sizes[axis];
    return scope_pad(s, pairs, pads, 0);
}

/* _fft_c2c(self, dim, normalization, forward) */
static porta_status *fft_c2c(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(check_complex("_fft_c2c", x));
    porta_fft_params params;
    PORTA_TRY(params_of("_fft_c2c", PORTA_FFT_C2C, &args[1], args[2].i, &params));
    params.inverse = !args[3].b;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *pairs = scope_view_as_real(&s, x);
    porta_tensor *y = params.axis_count ? scope_fft(&s, pairs, &params)
                                        : scope_contiguous(&s, pairs);
    scope_push(&s, results, scope_view_as_complex(&s, y));
    return scope_end(&s);
}

/* _fft_r2c(self, dim, normalization, onesided): onesided halves the last
 * dim; otherwise the full spectrum, as C2C of the real values. */
static porta_status *fft_r2c(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    if (x->dtype != PORTA_F32 && x->dtype != PORTA_F64)
        return porta_error(PORTA_ERR_DTYPE,
                           "_fft_r2c: expected a float32 or float64 input tensor, but got %s",
                           porta_dtype_name(x->dtype));
    bool onesided = args[3].b;
    porta_fft_params params;
    PORTA_TRY(params_of("_fft_r2c", onesided ? PORTA_FFT_R2C : PORTA_FFT_C2C, &args[1],
                        args[2].i, &params));
    if (x->rank + 1 > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_SHAPE, "_fft_r2c: expected rank below %d, got %d",
                           PORTA_MAX_RANK, x->rank);
    aten_scope s;
    scope_begin(&s);
    const porta_tensor *input = x;
    if (!onesided) { /* (value, 0) pairs: a last axis of 1 padded by one zero */
        int64_t sizes[PORTA_MAX_RANK], pads[2 * PORTA_MAX_RANK] = {0};
        memcpy(sizes, x->sizes, (size_t)x->rank * sizeof sizes[0]);
        sizes[x->rank] = 1;
        pads[2 * x->rank + 1] = 1;
        input = scope_pad(&s, scope_reshape(&s, x, x->rank + 1, sizes), pads, 0);
    }
    porta_tensor *y = params.axis_count ? scope_fft(&s, input, &params) : NULL;
    if (!params.axis_count)
        scope_fail(&s, porta_error(PORTA_ERR_INVALID_ARGUMENT, "_fft_r2c: expected dims"));
    scope_push(&s, results, scope_view_as_complex(&s, y));
    return scope_end(&s);
}

/* _fft_c2r(self, dim, normalization, last_dim_size) */
static porta_status *fft_c2r(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    PORTA_TRY(check_complex("_fft_c2r", x));
    porta_fft_params params;
    PORTA_TRY(params_of("_fft_c2r", PORTA_FFT_C2R, &args[1], args[2].i, &params));
    if (!params.axis_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "_fft_c2r: expected dims");
    params.last_size = args[3].i;
    int last = params.axes[params.axis_count - 1];
    if (last < 0) last += x->rank;
    aten_scope s;
    scope_begin(&s);
    porta_tensor *pairs = scope_view_as_real(&s, x);
    if (params.last_size >= 1 && last >= 0 && last < x->rank)
        pairs = pairs_at_least(&s, pairs, last, params.last_size / 2 + 1);
    scope_push(&s, results, scope_fft(&s, pairs, &params));
    return scope_end(&s);
}

const aten_op aten_fft_ops[] = {
    {"_fft_c2c", "TIib", fft_c2c},
    {"_fft_r2c", "TIib", fft_r2c},
    {"_fft_c2r", "TIii", fft_c2r},
    {NULL, NULL, NULL},
};
