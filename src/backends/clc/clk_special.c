/* The elementwise ops and reductions the kernel IR leaves to hand-written
 * kernels, with the CPU's semantics:
 *  - integer FLOOR_DIVIDE, REMAINDER, FMOD and POW: results wrap to the
 *    dtype's width; division by zero and negative powers raise a flag the
 *    host reads after the kernel and reports with the CPU's messages;
 *  - ERFINV of float dtypes: the CPU's closed-form start and two Halley
 *    steps, in double (float where the device has no fp64);
 *  - REDUCE ARGMAX/ARGMIN over any axes: one item per output, scanning the
 *    reduced elements in row-major order; NaN is the extreme and the first
 *    extreme wins. */
#include <stdio.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"
#include "ir/prim.h"

/* Faults, as the CPU's elementwise kernels name them. */
/* The integer ops, as the kernels number them. */
enum { SP_FLOOR_DIVIDE, SP_REMAINDER, SP_FMOD, SP_POW };

/* Elementwise layout: rank, then per dim of out its size and the strides of
 * out and the (one or two) inputs, broadcast ones 0. */
#define SP_OFFSETS_SOURCE                                                                    \
    CLK_SOURCE(inline void sp_offsets(long i, __global const long *L, long *o0, long *o1,     \
                                      long *o2) {                                            \
        for (int d = (int)L[0] - 1; d >= 0; d--) {                                           \
            __global const long *dim = L + 1 + 4 * d;                                        \
            long at = i % dim[0];                                                            \
            i /= dim[0];                                                                     \
            *o0 += at * dim[1];                                                              \
            *o1 += at * dim[2];                                                              \
            *o2 += at * dim[3];                                                              \
        }                                                                                    \
    })

#define SP_INTEGER_SOURCE                                                                    \
    CLK_SOURCE(/* x op y for integers widened to long; returns the fault bits. */            \
               inline int sp_integer_op(int op, long x, long y, long *r) {                   \
                   *r = 0;                                                                   \
                   if (op == 3) {                                                            \
                       if (y < 0) return 2;                                                  \
                       ulong result = 1, base = (ulong)x;                                    \
                       for (ulong e = (ulong)y; e; e >>= 1) {                                \
                           if (e & 1) result *= base;                                        \
                           base *= base;                                                     \
                       }                                                                     \
                       *r = (long)result;                                                    \
                       return 0;                                                             \
                   }                                                                         \
                   if (y == 0) return 1;                                                     \
                   if (y == -1) {                                                            \
                       *r = op == 0 ? (long)((ulong)0 - (ulong)x) : 0;                       \
                       return 0;                                                             \
                   }                                                                         \
                   long q = x / y, rem = x % y;                                              \
                   int adjust = rem != 0 && (rem < 0) != (y < 0);                            \
                   *r = op == 0 ? (adjust ? q - 1 : q) : op == 1 ? (adjust ? rem + y : rem) : rem; \
                   return 0;                                                                 \
               })

#define SP_INTEGER_KERNEL(SFX, T, ACC)                                                       \
    CLK_SOURCE(__kernel void sp_integer_##SFX(                                               \
        __global T *out, long out_off, __global const T *a, long a_off, __global const T *b,  \
        long b_off, __global const long *L, int op, __global int *flag, long count) {        \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        sp_offsets(i, L, &out_off, &a_off, &b_off);                                          \
        long r;                                                                              \
        int fault = sp_integer_op(op, clk_ld_##SFX(a, a_off), clk_ld_##SFX(b, b_off), &r);   \
        if (fault) atomic_or(flag, fault);                                                   \
        clk_st_##SFX(out, out_off, r);                                                       \
    })

#define SP_ERFINV_SOURCE                                                                     \
    CLK_SOURCE(inline double sp_erfinv(double y) {                                           \
        if (!(y > -1.0 && y < 1.0)) {                                                        \
            if (y == 1.0) return 1.0 / 0.0;                                                  \
            if (y == -1.0) return -1.0 / 0.0;                                                \
            return 0.0 / 0.0;                                                                \
        }                                                                                    \
        if (y == 0.0) return y;                                                              \
        double a = 0.147, two_over_pi_a = 2.0 / (3.14159265358979323846 * a);               \
        double ln = log1p(-y * y), t = two_over_pi_a + 0.5 * ln;                             \
        double x = copysign(sqrt(sqrt(t * t - ln / a) - t), y);                              \
        int tail = fabs(y) > 0.5;                                                            \
        double target = tail ? 1.0 - fabs(y) : y;                                            \
        for (int step = 0; step < 2; step++) {                                               \
            double ax = tail ? fabs(x) : x;                                                  \
            double f = tail ? erfc(ax) - target : erf(ax) - target;                          \
            double df = (tail ? -1.1283791670955126 : 1.1283791670955126) * exp(-ax * ax);   \
            ax -= f / (df + ax * f);                                                         \
            x = tail ? copysign(ax, y) : ax;                                                 \
        }                                                                                    \
        return x;                                                                            \
    })

#define SP_ERFINV_KERNEL(SFX, T, ACC)                                                        \
    CLK_SOURCE(__kernel void sp_erfinv_##SFX(__global T *out, long out_off,                  \
                                             __global const T *x, long x_off,                \
                                             __global const long *L, long count) {           \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        long unused = 0;                                                                     \
        sp_offsets(i, L, &out_off, &x_off, &unused);                                         \
        clk_st_##SFX(out, out_off, (ACC)sp_erfinv((double)clk_ld_##SFX(x, x_off)));          \
    })

/* Arg layout: kept rank, reduced rank, reduced count; per kept dim its
 * size, x's stride and out's stride; per reduced dim its size and x's
 * stride (logical order, which the returned index counts in). */
#define SP_ARG_KERNEL(SFX, T, ACC)                                                           \
    CLK_SOURCE(__kernel void sp_arg_##SFX(__global long *out, long out_off,                  \
                                          __global const T *x, long x_off,                   \
                                          __global const long *L, int largest, long count) { \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        int kept = (int)L[0], reduced = (int)L[1];                                           \
        long total = L[2];                                                                   \
        for (int d = kept - 1; d >= 0; d--) {                                                \
            __global const long *dim = L + 3 + 3 * d;                                        \
            long at = i % dim[0];                                                            \
            i /= dim[0];                                                                     \
            x_off += at * dim[1];                                                            \
            out_off += at * dim[2];                                                          \
        }                                                                                    \
        __global const long *red = L + 3 + 3 * kept;                                         \
        ACC best = 0;                                                                        \
        long best_at = 0;                                                                    \
        for (long r = 0; r < total; r++) {                                                   \
            long rest = r, at = x_off;                                                       \
            for (int d = reduced - 1; d >= 0; d--) {                                         \
                at += rest % red[2 * d] * red[2 * d + 1];                                    \
                rest /= red[2 * d];                                                          \
            }                                                                                \
            ACC v = clk_ld_##SFX(x, at);                                                     \
            if (r == 0 || (!SP_NAN_##SFX(best) && (SP_NAN_##SFX(v) || (largest ? v > best : v < best)))) { \
                best = v;                                                                    \
                best_at = r;                                                                 \
            }                                                                                \
        }                                                                                    \
        out[out_off] = best_at;                                                              \
    })

static const char integer_source[] = CLK_COMMON_SOURCE SP_OFFSETS_SOURCE SP_INTEGER_SOURCE
    CLK_FOR_EACH_INTEGER(SP_INTEGER_KERNEL);
static const char erfinv_source[] =
    CLK_COMMON_SOURCE SP_OFFSETS_SOURCE SP_ERFINV_SOURCE CLK_FOR_EACH_FLOAT(SP_ERFINV_KERNEL);
/* Whether a value of the arithmetic type is NaN (integers never are). */
#define SP_NAN_FLOAT(v) ((v) != (v))
#define SP_NAN_INT(v) 0
#define SP_NAN_b8 SP_NAN_INT
#define SP_NAN_u8 SP_NAN_INT
#define SP_NAN_i8 SP_NAN_INT
#define SP_NAN_i16 SP_NAN_INT
#define SP_NAN_i32 SP_NAN_INT
#define SP_NAN_i64 SP_NAN_INT
#define SP_NAN_f16 SP_NAN_FLOAT
#define SP_NAN_bf16 SP_NAN_FLOAT
#define SP_NAN_f32 SP_NAN_FLOAT
#define SP_NAN_f64 SP_NAN_FLOAT

static const char arg_source[] = CLK_COMMON_SOURCE CLK_FOR_EACH_DTYPE(SP_ARG_KERNEL);

void clk_special_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "integer division and power", integer_source, true);
    visit(ctx, "erfinv", erfinv_source, true);
    visit(ctx, "argmax/argmin", arg_source, true);
}

/* What one launch takes: tensors (buffer and offset each, in order), the
 * layout, then the kernel's own integer argument and flag when it has them. */
typedef struct sp_launch {
    const char *source;
    char name[32];
    const porta_tensor *tensors[3];
    int tensor_count;
    clk_mem layout;
    bool has_op;
    int op;
    clk_mem flag;
    int64_t count;
} sp_launch;

static porta_status *run(const clk_launcher *launcher, porta_device *device, const sp_launch *l) {
    clk_args args;
    porta_status *status = clk_begin(launcher, device, l->source, l->name, &args);
    if (!status) {
        for (int t = 0; t < l->tensor_count; t++) clk_arg_tensor(&args, l->tensors[t]);
        clk_arg_buffer(&args, l->layout);
        if (l->has_op) clk_arg_value(&args, sizeof(int32_t), &(int32_t){l->op});
        if (l->flag) clk_arg_buffer(&args, l->flag);
        clk_arg_long(&args, l->count);
        status = clk_launch(&args, l->count);
    }
    return status;
}

/* Strides of `t` over out's dims, right-aligned; 0 where it broadcasts. */
static int64_t broadcast_stride(const porta_tensor *t, const porta_tensor *out, int d) {
    int src = d - (out->rank - t->rank);
    return src < 0 || t->sizes[src] != out->sizes[d] ? 0 : t->strides[src];
}

static void push_elementwise(clk_layout *layout, const porta_tensor *out,
                             const porta_tensor *a, const porta_tensor *b) {
    clk_push(layout, out->rank);
    for (int d = 0; d < out->rank; d++) {
        clk_push(layout, out->sizes[d]);
        clk_push(layout, out->strides[d]);
        clk_push(layout, broadcast_stride(a, out, d));
        clk_push(layout, b ? broadcast_stride(b, out, d) : 0);
    }
}

static porta_status *integer_binary(const clk_launcher *launcher, porta_device *device,
                                    const ir_prim *prim, const porta_tensor *const *inputs,
                                    porta_tensor *out, int op) {
    const char *name = ir_prim_name(prim);
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    push_elementwise(&layout, out, inputs[0], inputs[1]);
    clk_mem layout_buffer = NULL, flag = NULL;
    int32_t faults = 0;
    porta_status *status = clk_layout_buffer(device, &layout, &layout_buffer);
    if (!status) status = clk_buffer(device, sizeof faults, &faults, &flag);
    if (!status) {
        sp_launch l = {.source = integer_source, .tensors = {out, inputs[0], inputs[1]},
                       .tensor_count = 3, .layout = layout_buffer, .has_op = true, .op = op,
                       .flag = flag, .count = count};
        snprintf(l.name, sizeof l.name, "sp_integer_%s", clk_dtype_suffix(out->dtype));
        status = run(launcher, device, &l);
    }
    if (!status) status = clk_read(device, flag, 0, sizeof faults, &faults);
    clk_release(device, flag);
    clk_release(device, layout_buffer);
    if (status) return status;
    return ir_integer_fault_error(name, faults);
}

static porta_status *erfinv(const clk_launcher *launcher, porta_device *device,
                            const porta_tensor *x, porta_tensor *out) {
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    push_elementwise(&layout, out, x, NULL);
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    sp_launch l = {.source = erfinv_source, .tensors = {out, x}, .tensor_count = 2,
                   .layout = layout_buffer, .count = count};
    snprintf(l.name, sizeof l.name, "sp_erfinv_%s", clk_dtype_suffix(out->dtype));
    porta_status *status = run(launcher, device, &l);
    clk_release(device, layout_buffer);
    return status;
}

static porta_status *arg_reduce(const clk_launcher *launcher, porta_device *device,
                                const ir_prim *prim, const porta_tensor *x, porta_tensor *out) {
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    bool reduced[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < prim->axis_count; i++) reduced[prim->axes[i]] = true;
    for (int axis = 0; axis < x->rank && prim->axis_count == 0; axis++) reduced[axis] = true;
    int64_t kept_dims[3 * PORTA_MAX_RANK], red_dims[2 * PORTA_MAX_RANK];
    int kept = 0, red = 0, out_axis = 0;
    int64_t total = 1;
    for (int axis = 0; axis < x->rank; axis++) {
        int64_t out_stride = 0;
        if (!reduced[axis] || prim->keepdim) out_stride = out->strides[out_axis++];
        if (reduced[axis]) {
            red_dims[2 * red] = x->sizes[axis];
            red_dims[2 * red + 1] = x->strides[axis];
            red++;
            total *= x->sizes[axis];
        } else {
            kept_dims[3 * kept] = x->sizes[axis];
            kept_dims[3 * kept + 1] = x->strides[axis];
            kept_dims[3 * kept + 2] = out_stride;
            kept++;
        }
    }
    if (total == 0)
        return porta_error(PORTA_ERR_INTERNAL, "opencl: %s over no elements",
                           ir_prim_name(prim));
    clk_layout layout = {.count = 0};
    clk_push(&layout, kept);
    clk_push(&layout, red);
    clk_push(&layout, total);
    for (int i = 0; i < 3 * kept; i++) clk_push(&layout, kept_dims[i]);
    for (int i = 0; i < 2 * red; i++) clk_push(&layout, red_dims[i]);
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    sp_launch l = {.source = arg_source, .tensors = {out, x}, .tensor_count = 2,
                   .layout = layout_buffer, .has_op = true,
                   .op = prim->op == PORTA_REDUCE_ARGMAX, .count = count};
    snprintf(l.name, sizeof l.name, "sp_arg_%s", clk_dtype_suffix(x->dtype));
    porta_status *status = run(launcher, device, &l);
    clk_release(device, layout_buffer);
    return status;
}

static int integer_op(int binary_op) {
    switch (binary_op) {
    case PORTA_FLOOR_DIVIDE: return SP_FLOOR_DIVIDE;
    case PORTA_REMAINDER: return SP_REMAINDER;
    case PORTA_FMOD: return SP_FMOD;
    case PORTA_POW: return SP_POW;
    default: return -1;
    }
}

porta_status *clk_exec_special(const clk_launcher *launcher, porta_device *device,
                               const ir_prim *prim, const porta_tensor *const *inputs,
                               int input_count, porta_tensor *out) {
    porta_dtype dtype = input_count ? inputs[0]->dtype : out->dtype;
    PORTA_TRY(clk_check_dtype(device, ir_prim_name(prim), dtype));
    bool integer = dtype >= PORTA_U8 && dtype <= PORTA_I64;
    if (prim->kind == PRIM_BINARY && input_count == 2 && integer && out->dtype == dtype &&
        inputs[1]->dtype == dtype && integer_op(prim->op) >= 0)
        return integer_binary(launcher, device, prim, inputs, out, integer_op(prim->op));
    if (prim->kind == PRIM_UNARY && prim->op == PORTA_ERFINV && input_count == 1 &&
        porta_dtype_is_float(dtype) && out->dtype == dtype)
        return erfinv(launcher, device, inputs[0], out);
    if (prim->kind == PRIM_REDUCE && input_count == 1 && out->dtype == PORTA_I64 &&
        (prim->op == PORTA_REDUCE_ARGMAX || prim->op == PORTA_REDUCE_ARGMIN))
        return arg_reduce(launcher, device, prim, inputs[0], out);
    return porta_error(PORTA_ERR_UNSUPPORTED, "opencl: no kernel for %s from %s to %s",
                       ir_prim_name(prim), porta_dtype_name(dtype),
                       porta_dtype_name(out->dtype));
}
