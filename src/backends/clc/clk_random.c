/* PRIM_RANDOM in OpenCL C: one item per element; element i (row-major over
 * out's logical shape) takes stream position offset + i of the Philox
 * 4x32-10 stream core/philox.h defines, so uniform values are bit for bit
 * the CPU's and normal values agree to a few ulp (the device's log, sqrt,
 * sin and cos). Each item recomputes its block's four words: ten rounds of
 * integer multiplies, cheaper than sharing them between items. */
#include <math.h>
#include <stdio.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/philox.h"
#include "core/status.h"

#define RANDOM_PHILOX_SOURCE                                                                 \
    CLK_SOURCE(inline uint rnd_word(ulong seed, ulong position) {                            \
        ulong block = position >> 2;                                                         \
        uint c0 = (uint)block, c1 = (uint)(block >> 32), c2 = 0, c3 = 0;                     \
        uint key0 = (uint)seed, key1 = (uint)(seed >> 32);                                   \
        for (int round = 0; round < 10; round++) {                                           \
            uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;                      \
            uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;                      \
            c0 = hi1 ^ c1 ^ key0;                                                            \
            c1 = lo1;                                                                        \
            c2 = hi0 ^ c3 ^ key1;                                                            \
            c3 = lo0;                                                                        \
            key0 += 0x9E3779B9u;                                                             \
            key1 += 0xBB67AE85u;                                                             \
        }                                                                                    \
        uint lane = (uint)(position & 3);                                                    \
        return lane == 0 ? c0 : lane == 1 ? c1 : lane == 2 ? c2 : c3;                        \
    }                                                                                        \
    inline float rnd_unit(uint word) { return (float)(word >> 8) * 5.9604644775390625e-8f; } \
    inline float rnd_unit_nonzero(uint word) {                                               \
        return (float)((word >> 8) + 1) * 5.9604644775390625e-8f;                            \
    }                                                                                        \
    /* The standard normal of a position: Box-Muller over its lane pair. */                  \
    inline float rnd_normal_float(ulong seed, ulong position) {                              \
        ulong even = position & ~(ulong)1;                                                   \
        float r = sqrt(-2.0f * log(rnd_unit_nonzero(rnd_word(seed, even))));                 \
        float theta = 6.2831853071795864769f * rnd_unit(rnd_word(seed, even + 1));           \
        return (position & 1) ? r * sin(theta) : r * cos(theta);                             \
    }                                                                                        \
    inline double rnd_normal_double(ulong seed, ulong position) {                            \
        ulong even = position & ~(ulong)1;                                                   \
        double r = sqrt(-2.0 * log((double)rnd_unit_nonzero(rnd_word(seed, even))));         \
        double theta = 6.2831853071795864769 * (double)rnd_unit(rnd_word(seed, even + 1));   \
        return (position & 1) ? r * sin(theta) : r * cos(theta);                             \
    })

/* float32 and the 16-bit floats: lo and range (high - low) in float; a
 * uniform result rounded to the dtype that reaches `limit` (the smallest
 * float not below high) becomes lo. ROUND rounds a float to the dtype. */
#define RANDOM_FLOAT_KERNELS(SFX, T, ROUND)                                                  \
    CLK_SOURCE(__kernel void rnd_uniform_##SFX(__global T *out, long out_off,                \
                                               __global const long *L, ulong seed,           \
                                               ulong offset, float lo, float range,          \
                                               float limit, long count) {                    \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        float v = ROUND(lo + range * rnd_unit(rnd_word(seed, offset + (ulong)i)));           \
        clk_st_##SFX(out, out_off + clk_offset(i, (int)L[0], L + 1), v >= limit ? lo : v);   \
    }                                                                                        \
    __kernel void rnd_normal_##SFX(__global T *out, long out_off, __global const long *L,    \
                                   ulong seed, ulong offset, float mean, float std,          \
                                   float unused, long count) {                               \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        float v = mean + std * rnd_normal_float(seed, offset + (ulong)i);                    \
        clk_st_##SFX(out, out_off + clk_offset(i, (int)L[0], L + 1), v);                     \
    })

#define RANDOM_SAME(v) (v)
#define RANDOM_TO_F16(v) kir_f16_to_f32(kir_f32_to_f16(v))
#define RANDOM_TO_BF16(v) kir_bf16_to_f32(kir_f32_to_bf16(v))

/* float64: everything in double. */
#define RANDOM_DOUBLE_KERNELS                                                                \
    CLK_SOURCE(__kernel void rnd_uniform_f64(__global double *out, long out_off,             \
                                             __global const long *L, ulong seed,             \
                                             ulong offset, double lo, double hi, long count) { \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        double u = lo + (hi - lo) * (double)rnd_unit(rnd_word(seed, offset + (ulong)i));     \
        out[out_off + clk_offset(i, (int)L[0], L + 1)] = u >= hi ? lo : u;                   \
    }                                                                                        \
    __kernel void rnd_normal_f64(__global double *out, long out_off, __global const long *L, \
                                 ulong seed, ulong offset, double mean, double std,          \
                                 long count) {                                               \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        out[out_off + clk_offset(i, (int)L[0], L + 1)] =                                     \
            mean + std * rnd_normal_double(seed, offset + (ulong)i);                         \
    })

static const char random_source[] =
    CLK_COMMON_SOURCE RANDOM_PHILOX_SOURCE RANDOM_FLOAT_KERNELS(f32, float, RANDOM_SAME)
    RANDOM_FLOAT_KERNELS(f16, ushort, RANDOM_TO_F16)
    RANDOM_FLOAT_KERNELS(bf16, ushort, RANDOM_TO_BF16) RANDOM_DOUBLE_KERNELS;

void clk_random_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "random", random_source, true);
}

/* The smallest float v with (double)v >= high: v >= limit exactly when the
 * CPU's (double)v >= high holds. */
static float float_limit(double high) {
    float limit = (float)high;
    if ((double)limit < high) limit = nextafterf(limit, INFINITY);
    return limit;
}

porta_status *clk_exec_random(const clk_launcher *launcher, porta_device *device,
                              const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    (void)inputs;
    if (input_count != 0 || !porta_dtype_is_float(out->dtype))
        return porta_error(PORTA_ERR_INTERNAL,
                           "random kernel: expected no inputs and a float out, got %d inputs "
                           "and %s",
                           input_count, porta_dtype_name(out->dtype));
    PORTA_TRY(clk_check_dtype(device, "random", out->dtype));
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    clk_push(&layout, out->rank);
    clk_push_dims(&layout, out->rank, out->sizes, out->strides);
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[32];
    snprintf(name, sizeof name, "rnd_%s_%s", prim->normal ? "normal" : "uniform",
             clk_dtype_suffix(out->dtype));
    clk_args args;
    porta_status *status = clk_begin(launcher, device, random_source, name, &args);
    if (!status) {
        clk_arg_tensor(&args, out);
        clk_arg_buffer(&args, layout_buffer);
        clk_arg_value(&args, sizeof prim->seed, &prim->seed);
        clk_arg_value(&args, sizeof prim->offset, &prim->offset);
        if (out->dtype == PORTA_F64) {
            clk_arg_value(&args, sizeof prim->value, &prim->value);
            clk_arg_value(&args, sizeof prim->value2, &prim->value2);
        } else {
            float lo = (float)prim->value, hi = (float)prim->value2;
            /* uniform: low and high - low; normal: mean and std */
            float second = prim->normal ? hi : hi - lo;
            float limit = float_limit(prim->value2);
            clk_arg_value(&args, sizeof lo, &lo);
            clk_arg_value(&args, sizeof second, &second);
            clk_arg_value(&args, sizeof limit, &limit);
        }
        clk_arg_long(&args, count);
        status = clk_launch(&args, count);
    }
    clk_release(device, layout_buffer);
    return status;
}
