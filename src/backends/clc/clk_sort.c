/* PRIM_SORT in OpenCL C: the stable sorting permutation of every row along
 * `axis`, any row length, by a bottom-up merge sort whose passes run one
 * item per element.
 *
 * Each element becomes an unsigned 64-bit key ordered as the element is
 * (sign bit flipped for signed integers; float bits ordered as integers,
 * -0.0 folded onto 0.0, every NaN onto the largest key; a descending sort
 * complements the keys), paired with its position in the row. A pass merges
 * neighbouring sorted runs of `width` pairs: an item finds its pair's place
 * in the merged run by a binary search of the other run (on equal keys the
 * left run goes first), so the passes are parallel, stable and
 * deterministic: the permutation equals the CPU's merge sort's. */
#include <stdio.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/status.h"

/* Layout: outer rank, row length, x's and out's strides along the axis;
 * then per other dim its size, x's stride and out's stride. */
#define SORT_OFFSETS_SOURCE                                                                  \
    CLK_SOURCE(inline void sort_row_offsets(long row, __global const long *L, long *x_off,   \
                                            long *out_off) {                                 \
        for (int d = (int)L[0] - 1; d >= 0; d--) {                                           \
            __global const long *dim = L + 4 + 3 * d;                                        \
            long at = row % dim[0];                                                          \
            row /= dim[0];                                                                   \
            *x_off += at * dim[1];                                                           \
            *out_off += at * dim[2];                                                         \
        }                                                                                    \
    }                                                                                        \
    inline ulong sort_float_key(float v) {                                                   \
        if (v != v) return ~(ulong)0;                                                        \
        uint bits = as_uint(v == 0.0f ? 0.0f : v);                                           \
        return (ulong)((bits >> 31) ? ~bits : bits | 0x80000000u);                          \
    }                                                                                        \
    /* double is float on devices without fp64 (the prelude), which only   \
     * float64 tensors, never sorted there, would need. */                  \
    inline ulong sort_double_key(double v) {                                                 \
        if (sizeof(double) < sizeof(ulong)) return sort_float_key((float)v);                 \
        if (v != v) return ~(ulong)0;                                                        \
        union {                                                                              \
            double value;                                                                    \
            ulong bits;                                                                      \
        } u;                                                                                 \
        u.bits = 0;                                                                          \
        u.value = v == 0 ? 0 : v;                                                            \
        return (u.bits >> 63) ? ~u.bits : u.bits | ((ulong)1 << 63);                         \
    }                                                                                        \
    /* Merges the runs of `width` pairs of each row (rows of n pairs). */                    \
    __kernel void sort_merge(__global ulong2 *dst, __global const ulong2 *src, long n,       \
                             long width, long count) {                                       \
        long e = get_global_id(0);                                                           \
        if (e >= count) return;                                                              \
        long row_start = e / n * n, pos = e - row_start;                                     \
        long lo = pos / (2 * width) * (2 * width);                                           \
        long mid = min(lo + width, n), hi = min(lo + 2 * width, n);                          \
        ulong key = src[e].x;                                                                \
        int left = pos < mid;                                                                \
        /* the other run, searched for the first key above (left: at or above) ours */      \
        long first = left ? mid : lo, last = left ? hi : mid;                                \
        while (first < last) {                                                               \
            long probe = first + (last - first) / 2;                                         \
            ulong other = src[row_start + probe].x;                                          \
            if (left ? other < key : other <= key)                                           \
                first = probe + 1;                                                           \
            else                                                                             \
                last = probe;                                                                \
        }                                                                                    \
        long before = left ? first - mid : first - lo;                                       \
        long own = left ? pos - lo : pos - mid;                                              \
        dst[row_start + lo + own + before] = src[e];                                         \
    }                                                                                        \
    __kernel void sort_store(__global long *out, long out_off, __global const ulong2 *pairs, \
                             __global const long *L, long count) {                           \
        long e = get_global_id(0);                                                           \
        if (e >= count) return;                                                              \
        long n = L[1], x_off = 0;                                                            \
        sort_row_offsets(e / n, L, &x_off, &out_off);                                        \
        out[out_off + e % n * L[3]] = (long)pairs[e].y;                                      \
    })

/* The keys of one dtype: KEY(value loaded from storage). */
#define SORT_KEY_KERNEL(SFX, T, KEY)                                                         \
    CLK_SOURCE(__kernel void sort_keys_##SFX(__global ulong2 *pairs, __global const T *x,    \
                                             long x_off, __global const long *L,             \
                                             int descending, long count) {                   \
        long e = get_global_id(0);                                                           \
        if (e >= count) return;                                                              \
        long n = L[1], pos = e % n, out_off = 0;                                             \
        sort_row_offsets(e / n, L, &x_off, &out_off);                                        \
        ulong key = KEY(x[x_off + pos * L[2]]);                                              \
        pairs[e] = (ulong2)(descending ? ~key : key, (ulong)pos);                            \
    })

#define SORT_UNSIGNED_KEY(v) ((ulong)(v))
#define SORT_SIGNED_KEY(v) ((ulong)(long)(v) ^ ((ulong)1 << 63))
#define SORT_F16_KEY(v) sort_float_key(kir_f16_to_f32(v))
#define SORT_BF16_KEY(v) sort_float_key(kir_bf16_to_f32(v))

static const char sort_source[] =
    CLK_COMMON_SOURCE SORT_OFFSETS_SOURCE SORT_KEY_KERNEL(b8, uchar, SORT_UNSIGNED_KEY)
    SORT_KEY_KERNEL(u8, uchar, SORT_UNSIGNED_KEY) SORT_KEY_KERNEL(i8, char, SORT_SIGNED_KEY)
    SORT_KEY_KERNEL(i16, short, SORT_SIGNED_KEY) SORT_KEY_KERNEL(i32, int, SORT_SIGNED_KEY)
    SORT_KEY_KERNEL(i64, long, SORT_SIGNED_KEY) SORT_KEY_KERNEL(f16, ushort, SORT_F16_KEY)
    SORT_KEY_KERNEL(bf16, ushort, SORT_BF16_KEY) SORT_KEY_KERNEL(f32, float, sort_float_key)
    SORT_KEY_KERNEL(f64, double, sort_double_key);

/* Its merge step builds an OpenCL vector literal, which CUDA C++ does not
 * parse: the one program that does not compile as CUDA (sorts on CUDA
 * devices are placed elsewhere). */
void clk_sort_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "sort", sort_source, false);
}

/* What one launch of the sort program takes. */
typedef struct sort_launch {
    enum { SORT_KEYS, SORT_MERGE, SORT_STORE } kind;
    const char *name;
    const porta_tensor *tensor; /* keys: x; store: out (the buffer and offset first) */
    clk_mem buffers[2];          /* keys: pairs; merge: dst, src; store: pairs */
    clk_mem layout;              /* keys and store */
    int64_t n, width;           /* merge */
    int descending;             /* keys */
    int64_t count;
} sort_launch;

static porta_status *run(const clk_launcher *launcher, porta_device *device, const sort_launch *l) {
    clk_args args;
    porta_status *status = clk_begin(launcher, device, sort_source, l->name, &args);
    if (!status) {
        switch (l->kind) {
        case SORT_MERGE:
            clk_arg_buffer(&args, l->buffers[0]);
            clk_arg_buffer(&args, l->buffers[1]);
            clk_arg_long(&args, l->n);
            clk_arg_long(&args, l->width);
            break;
        case SORT_KEYS:
            clk_arg_buffer(&args, l->buffers[0]);
            clk_arg_tensor(&args, l->tensor);
            clk_arg_buffer(&args, l->layout);
            clk_arg_value(&args, sizeof(int32_t), &(int32_t){l->descending});
            break;
        case SORT_STORE:
            clk_arg_tensor(&args, l->tensor);
            clk_arg_buffer(&args, l->buffers[0]);
            clk_arg_buffer(&args, l->layout);
            break;
        }
        clk_arg_long(&args, l->count);
        status = clk_launch(&args, l->count);
    }
    return status;
}

porta_status *clk_exec_sort(const clk_launcher *launcher, porta_device *device,
                            const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out) {
    if (input_count != 1 || out->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_INTERNAL,
                           "sort kernel: expected one input and an int64 out, got %d inputs "
                           "and %s",
                           input_count, porta_dtype_name(out->dtype));
    const porta_tensor *x = inputs[0];
    PORTA_TRY(clk_check_dtype(device, "sort", x->dtype));
    int64_t count = porta_tensor_numel(x);
    if (count == 0) return NULL;
    int axis = prim->axis;
    int64_t n = x->rank ? x->sizes[axis] : 1;
    clk_layout layout = {.count = 0};
    clk_push(&layout, x->rank ? x->rank - 1 : 0);
    clk_push(&layout, n);
    clk_push(&layout, x->rank ? x->strides[axis] : 0);
    clk_push(&layout, x->rank ? out->strides[axis] : 0);
    for (int d = 0; d < x->rank; d++) {
        if (d == axis) continue;
        clk_push(&layout, x->sizes[d]);
        clk_push(&layout, x->strides[d]);
        clk_push(&layout, out->strides[d]);
    }
    clk_mem layout_buffer = NULL, pairs[2] = {NULL, NULL};
    size_t pair_bytes = (size_t)count * 2 * sizeof(uint64_t);
    porta_status *status = clk_layout_buffer(device, &layout, &layout_buffer);
    for (int b = 0; b < 2 && !status; b++) status = clk_buffer(device, pair_bytes, NULL, &pairs[b]);
    char name[32];
    snprintf(name, sizeof name, "sort_keys_%s", clk_dtype_suffix(x->dtype));
    if (!status) {
        sort_launch keys = {.kind = SORT_KEYS, .name = name, .tensor = x, .buffers = {pairs[0]},
                            .layout = layout_buffer,
                            .descending = prim->op == PORTA_SORT_DESCENDING, .count = count};
        status = run(launcher, device, &keys);
    }
    int current = 0; /* the buffer holding the latest pass */
    for (int64_t width = 1; width < n && !status; width *= 2) {
        sort_launch merge = {.kind = SORT_MERGE,
                             .name = "sort_merge", .buffers = {pairs[1 - current], pairs[current]},
                             .n = n, .width = width, .count = count};
        status = run(launcher, device, &merge);
        current = 1 - current;
    }
    if (!status) {
        sort_launch store = {.kind = SORT_STORE, .name = "sort_store", .tensor = out, .buffers = {pairs[current]},
                             .layout = layout_buffer, .count = count};
        status = run(launcher, device, &store);
    }
    for (int b = 0; b < 2; b++) clk_release(device, pairs[b]);
    clk_release(device, layout_buffer);
    return status;
}
