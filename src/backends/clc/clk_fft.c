/* PRIM_FFT in OpenCL C: correct for every length rather than fast. A
 * multi-axis transform is one pass per axis in the CPU's order (R2C's
 * halved axis first, C2R's last); a pass runs one work item per output
 * value, the direct sum over its line in the tensor's precision with each
 * root of unity from the exactly reduced index j k mod n, reading any
 * strides and writing a contiguous temporary or the result. The
 * normalization is applied by the last pass. */
#include <stdio.h>
#include <string.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

enum { FFT_PASS_C2C = 0, FFT_PASS_R2C = 1, FFT_PASS_C2R = 2 };

/* Layout: signal rank, axis, n, mode, sign, src and dst pair strides, the
 * values kept along the axis, normalization, its point count; then per
 * signal axis the dst size, src stride and dst stride. */
#define FFT_KERNEL(SFX, T)                                                                   \
    CLK_SOURCE(__kernel void fft_dft_##SFX(__global T *dst, long dst_off,                    \
                                           __global const T *src, long src_off,              \
                                           __global const long *L, long count) {             \
        long item = get_global_id(0);                                                        \
        if (item >= count) return;                                                           \
        int rank = (int)L[0], axis = (int)L[1], mode = (int)L[3];                            \
        long n = L[2], sp = L[5], dp = L[6], kept = L[7];                                    \
        T direction = (T)L[4];                                                               \
        __global const long *dims = L + 10;                                                  \
        long k = item % kept, line = item / kept, so = src_off, doff = dst_off;              \
        for (int d = rank - 1; d >= 0; d--) {                                                \
            if (d == axis) continue;                                                         \
            long at = line % dims[3 * d];                                                    \
            line /= dims[3 * d];                                                             \
            so += at * dims[3 * d + 1];                                                      \
            doff += at * dims[3 * d + 2];                                                    \
        }                                                                                    \
        long ss = dims[3 * axis + 1], ds = dims[3 * axis + 2], held = n / 2 + 1;             \
        T re = 0, im = 0;                                                                    \
        long e = 0;                                                                          \
        for (long j = 0; j < n; j++) {                                                       \
            T xr, xi;                                                                        \
            if (mode == 1) {                                                                 \
                xr = src[so + j * ss];                                                       \
                xi = 0;                                                                      \
            } else if (mode == 2) {                                                          \
                long t = j < held ? j : n - j;                                               \
                xr = src[so + t * ss];                                                       \
                xi = j < held ? src[so + t * ss + sp] : -src[so + t * ss + sp];              \
            } else {                                                                         \
                xr = src[so + j * ss];                                                       \
                xi = src[so + j * ss + sp];                                                  \
            }                                                                                \
            T angle = (T)6.283185307179586476925 * ((T)e / (T)n);                            \
            T c = cos(angle), s = direction * sin(angle);                                    \
            re += xr * c - xi * s;                                                           \
            im += xr * s + xi * c;                                                           \
            e += k;                                                                          \
            if (e >= n) e -= n;                                                              \
        }                                                                                    \
        T scale = L[8] == 1 ? (T)1 / sqrt((T)L[9]) : L[8] == 2 ? (T)1 / (T)L[9] : (T)1;      \
        dst[doff + k * ds] = re * scale;                                                     \
        if (mode != 2) dst[doff + k * ds + dp] = im * scale;                                 \
    })

static const char fft_source[] =
    CLK_COMMON_SOURCE FFT_KERNEL(f32, float) FFT_KERNEL(f64, double);

void clk_fft_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "fft", fft_source, true);
}

/* A strided signal on the device: a tensor's or a temporary's. */
typedef struct fft_side {
    const porta_tensor *tensor; /* NULL for a temporary */
    clk_mem buffer;
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK], pair_stride;
} fft_side;

static fft_side tensor_side(const porta_tensor *t, bool pairs) {
    fft_side s;
    memset(&s, 0, sizeof s);
    s.tensor = t;
    for (int d = 0; d < t->rank - (pairs ? 1 : 0); d++)
        s.sizes[d] = t->sizes[d], s.strides[d] = t->strides[d];
    s.pair_stride = pairs ? t->strides[t->rank - 1] : 0;
    return s;
}

static void arg_side(clk_args *args, const fft_side *s) {
    if (s->tensor) {
        clk_arg_tensor(args, s->tensor);
    } else {
        clk_arg_buffer(args, s->buffer);
        clk_arg_long(args, 0);
    }
}

typedef struct fft_pass {
    int rank, axis, mode, sign, norm;
    int64_t n, points;
} fft_pass;

static porta_status *run_pass(const clk_launcher *launcher, porta_device *device,
                              porta_dtype dtype, const fft_pass *p, const fft_side *src,
                              const fft_side *dst) {
    int64_t kept = dst->sizes[p->axis], items = 1;
    for (int d = 0; d < p->rank; d++) items *= dst->sizes[d];
    if (items == 0) return NULL;
    clk_layout layout = {.count = 0};
    int64_t head[] = {p->rank, p->axis, p->n, p->mode, p->sign,
                      src->pair_stride, dst->pair_stride, kept, p->norm, p->points};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) clk_push(&layout, head[i]);
    for (int d = 0; d < p->rank; d++) {
        clk_push(&layout, dst->sizes[d]);
        clk_push(&layout, src->strides[d]);
        clk_push(&layout, dst->strides[d]);
    }
    clk_mem layout_buffer = NULL;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[32];
    snprintf(name, sizeof name, "fft_dft_%s", clk_dtype_suffix(dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, fft_source, name, &args);
    if (!status) {
        arg_side(&args, dst);
        arg_side(&args, src);
        clk_arg_buffer(&args, layout_buffer);
        clk_arg_long(&args, items);
        status = clk_launch(&args, items);
    }
    clk_release(device, layout_buffer);
    return status;
}

porta_status *clk_exec_fft(const clk_launcher *launcher, porta_device *device,
                           const ir_prim *prim, const porta_tensor *const *inputs,
                           int input_count, porta_tensor *out) {
    (void)input_count;
    const porta_tensor *x = inputs[0];
    if (out->dtype != x->dtype || (x->dtype != PORTA_F32 && x->dtype != PORTA_F64))
        return porta_error(PORTA_ERR_INTERNAL,
                           "fft kernel: expected float32 or float64 x and out of one dtype");
    PORTA_TRY(clk_check_dtype(device, "fft", out->dtype));
    if (porta_tensor_numel(out) == 0) return NULL;
    porta_fft_kind kind = (porta_fft_kind)prim->op;
    int count = prim->axis_count, last = prim->axes[count - 1];
    fft_side result = tensor_side(out, kind != PORTA_FFT_C2R);
    fft_side source = tensor_side(x, kind != PORTA_FFT_R2C);
    fft_pass p = {.rank = out->rank - (kind != PORTA_FFT_C2R ? 1 : 0),
                  .sign = prim->value > 0 ? 1 : -1};
    p.points = 1;
    for (int i = 0; i < count; i++)
        p.points *= (kind == PORTA_FFT_C2R ? out : x)->sizes[prim->axes[i]];
    int order[PORTA_MAX_RANK];
    for (int i = 0; i < count; i++) order[i] = prim->axes[i];
    if (kind == PORTA_FFT_R2C) {
        for (int i = count - 1; i > 0; i--) order[i] = order[i - 1];
        order[0] = last;
    }
    /* the complex signal between passes: the result's shape, or for C2R x's
     * with the last axis cut to last_size / 2 + 1 */
    int64_t between[PORTA_MAX_RANK];
    for (int d = 0; d < p.rank; d++) between[d] = (kind == PORTA_FFT_R2C ? out : x)->sizes[d];
    if (kind == PORTA_FFT_C2R) between[last] = out->sizes[last] / 2 + 1;
    if (kind == PORTA_FFT_R2C) between[last] = out->sizes[last];
    size_t elem = porta_dtype_size(x->dtype);
    porta_status *status = NULL;
    clk_mem previous = NULL;
    for (int i = 0; i < count && !status; i++) {
        bool final = i == count - 1;
        p.axis = order[i];
        p.mode = kind == PORTA_FFT_R2C && i == 0   ? FFT_PASS_R2C
                 : kind == PORTA_FFT_C2R && final ? FFT_PASS_C2R
                                                  : FFT_PASS_C2C;
        p.n = p.mode == FFT_PASS_C2R ? out->sizes[p.axis] : source.sizes[p.axis];
        p.norm = final ? prim->axis : PORTA_FFT_NORM_NONE;
        fft_side target = result;
        if (!final) {
            memset(&target, 0, sizeof target);
            int64_t stride = 2;
            for (int d = p.rank - 1; d >= 0; d--)
                target.sizes[d] = between[d], target.strides[d] = stride, stride *= between[d];
            target.pair_stride = 1;
            status = clk_buffer(device, (size_t)stride * elem, NULL, &target.buffer);
            if (status) break;
        }
        status = run_pass(launcher, device, x->dtype, &p, &source, &target);
        clk_release(device, previous);
        previous = target.buffer;
        source = target;
    }
    clk_release(device, previous);
    return status;
}
