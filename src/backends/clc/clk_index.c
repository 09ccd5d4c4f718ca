/* PRIM_GATHER, PRIM_INDEX_SELECT and PRIM_SCATTER in OpenCL C.
 *
 * Index values are checked first, by a kernel that raises a flag; when it is
 * raised the host reads the index back and reports the first bad value in
 * row-major order, as the CPU does, and out is left as it was.
 *
 * Gather and index_select: one item per output element, moving elements as
 * unsigned integers of the dtype's width (index_select is a gather whose
 * index runs along `axis` and is repeated over the other dims).
 *
 * Scatter: out = x, then one item per index position along the non-axis
 * dims, walking the axis in order. Updates that meet at one out element come
 * from positions differing only along the axis, so each out element is
 * written by one item, in the CPU's serial order: the result is
 * deterministic and equal to the CPU's (integers wrap, floats combine in
 * their arithmetic type and round once, NaN wins amax/amin). */
#include <stdio.h>

#include "backends/clc/clk_kernels.h"
#include "backends/clc/clk_source.h"
#include "core/alloc.h"
#include "core/status.h"

/* Layouts: rank, then per dim its size and three strides (operands in the
 * kernel's order); scatter puts the axis length and its three strides
 * first. */
#define IX_OFFSETS_SOURCE                                                                    \
    CLK_SOURCE(inline void ix_offsets(long i, int rank, __global const long *dims, long *o0,  \
                                      long *o1, long *o2) {                                  \
        long a = 0, b = 0, c = 0;                                                            \
        for (int d = rank - 1; d >= 0; d--) {                                                \
            __global const long *dim = dims + 4 * d;                                         \
            long at = i % dim[0];                                                            \
            i /= dim[0];                                                                     \
            a += at * dim[1];                                                                \
            b += at * dim[2];                                                                \
            c += at * dim[3];                                                                \
        }                                                                                    \
        *o0 += a;                                                                            \
        *o1 += b;                                                                            \
        *o2 += c;                                                                            \
    }                                                                                        \
    __kernel void ix_check(__global const long *index, long index_off, __global const long *L, \
                           long limit, __global int *flag, long count) {                     \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        long unused0 = 0, unused1 = 0;                                                       \
        ix_offsets(i, (int)L[0], L + 1, &index_off, &unused0, &unused1);                     \
        if ((ulong)index[index_off] >= (ulong)limit) *flag = 1;                              \
    })

/* out[i] = x[i with axis replaced by index[i]]: operands out, x (axis
 * stride 0), index. */
#define IX_MOVE_KERNELS(W, T)                                                                \
    CLK_SOURCE(__kernel void ix_gather_##W(__global T *out, long out_off, __global const T *x, \
                                           long x_off, __global const long *index,           \
                                           long index_off, __global const long *L,           \
                                           long x_axis_stride, long count) {                 \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        ix_offsets(i, (int)L[0], L + 1, &out_off, &x_off, &index_off);                       \
        out[out_off] = x[x_off + index[index_off] * x_axis_stride];                          \
    }                                                                                        \
    __kernel void ix_copy_##W(__global T *out, long out_off, __global const T *x, long x_off, \
                              __global const long *L, long count) {                          \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        long unused = 0;                                                                     \
        ix_offsets(i, (int)L[0], L + 1, &out_off, &x_off, &unused);                          \
        out[out_off] = x[x_off];                                                             \
    })

/* Combining an out element with a src element, in the arithmetic type. */
#define IX_COMBINE_SOURCE                                                                    \
    CLK_SOURCE(inline long ix_combine_long(int op, long a, long b) {                         \
        if (op == 1) return (long)((ulong)a + (ulong)b);                                     \
        if (op == 2) return (long)((ulong)a * (ulong)b);                                     \
        if (op == 3) return a < b ? b : a;                                                   \
        return b < a ? b : a;                                                                \
    }                                                                                        \
    inline float ix_combine_float(int op, float a, float b) {                                \
        if (op == 1) return a + b;                                                           \
        if (op == 2) return a * b;                                                           \
        if (op == 3) return b != b || a < b ? b : a;                                         \
        return b != b || b < a ? b : a;                                                      \
    }                                                                                        \
    inline double ix_combine_double(int op, double a, double b) {                            \
        if (op == 1) return a + b;                                                           \
        if (op == 2) return a * b;                                                           \
        if (op == 3) return b != b || a < b ? b : a;                                         \
        return b != b || b < a ? b : a;                                                      \
    })

/* Operands: out, index, src. op 0 assigns (the storage as it is), 1..4
 * add, multiply, amax, amin. */
#define IX_SCATTER_KERNEL(SFX, T, ACC)                                                       \
    CLK_SOURCE(__kernel void ix_scatter_##SFX(                                               \
        __global T *out, long out_off, __global const long *index, long index_off,           \
        __global const T *src, long src_off, __global const long *L, int op, long count) {   \
        long i = get_global_id(0);                                                           \
        if (i >= count) return;                                                              \
        long length = L[1], out_axis = L[2], index_axis = L[3], src_axis = L[4];             \
        ix_offsets(i, (int)L[0], L + 5, &out_off, &index_off, &src_off);                     \
        for (long j = 0; j < length; j++) {                                                  \
            long at = out_off + index[index_off + j * index_axis] * out_axis;                \
            long from = src_off + j * src_axis;                                              \
            if (op == 0)                                                                     \
                out[at] = src[from];                                                         \
            else                                                                             \
                clk_st_##SFX(out, at, ix_combine_##ACC(op, clk_ld_##SFX(out, at),            \
                                                       clk_ld_##SFX(src, from)));            \
        }                                                                                    \
    })

/* The checks and moves in one program; scatter in one per dtype. */
static const char move_source[] =
    CLK_COMMON_SOURCE IX_OFFSETS_SOURCE IX_MOVE_KERNELS(1, uchar) IX_MOVE_KERNELS(2, ushort)
    IX_MOVE_KERNELS(4, uint) IX_MOVE_KERNELS(8, ulong);
#define IX_SCATTER_PROGRAM(SFX, T, ACC)                                                      \
    [CLK_DTYPE_##SFX] = CLK_COMMON_SOURCE IX_OFFSETS_SOURCE IX_COMBINE_SOURCE                \
        IX_SCATTER_KERNEL(SFX, T, ACC),
static const char *const scatter_sources[PORTA_DTYPE_COUNT] = {
    CLK_FOR_EACH_DTYPE(IX_SCATTER_PROGRAM)};

void clk_index_programs(clk_program_visit visit, void *ctx) {
    visit(ctx, "index moves", move_source, true);
    for (int d = 0; d < PORTA_DTYPE_COUNT; d++)
        if (scatter_sources[d]) visit(ctx, "scatter", scatter_sources[d], true);
}

/* The dims of an iteration over `sizes` with up to three operands' strides
 * (NULL: zeros), into the layout. */
static void push_loop(clk_layout *layout, int rank, const int64_t *sizes, const int64_t *s0,
                      const int64_t *s1, const int64_t *s2) {
    for (int d = 0; d < rank; d++) {
        clk_push(layout, sizes[d]);
        clk_push(layout, s0 ? s0[d] : 0);
        clk_push(layout, s1 ? s1[d] : 0);
        clk_push(layout, s2 ? s2[d] : 0);
    }
}

/* One launch: kernel `name` of `source` and the arguments it takes. */
typedef struct launch {
    const char *source;
    const char *name;
    const porta_tensor *tensors[3]; /* passed first, in order, when not NULL */
    clk_mem layout;
    bool has_axis_stride;
    int64_t axis_stride;
    clk_mem flag; /* check only */
    int64_t limit;
    bool has_op;
    int op;
    int64_t count;
} launch;

static porta_status *run(const clk_launcher *launcher, porta_device *device, const launch *l) {
    clk_args args;
    porta_status *status = clk_begin(launcher, device, l->source, l->name, &args);
    if (!status) {
        for (int t = 0; t < 3; t++)
            if (l->tensors[t]) clk_arg_tensor(&args, l->tensors[t]);
        clk_arg_buffer(&args, l->layout);
        if (l->flag) {
            clk_arg_long(&args, l->limit);
            clk_arg_buffer(&args, l->flag);
        }
        if (l->has_axis_stride) clk_arg_long(&args, l->axis_stride);
        if (l->has_op) clk_arg_value(&args, sizeof(int32_t), &(int32_t){l->op});
        clk_arg_long(&args, l->count);
        status = clk_launch(&args, l->count);
    }
    return status;
}

/* The first index value outside [0, limit) in row-major order, read back
 * from the device (only after the check kernel found one). */
static porta_status *report_bad_index(porta_device *device, const char *op,
                                      const porta_tensor *index, int axis, int64_t limit) {
    int64_t lo = index->offset, hi = index->offset;
    for (int d = 0; d < index->rank; d++) {
        int64_t reach = (index->sizes[d] - 1) * index->strides[d];
        if (reach < 0) lo += reach;
        else hi += reach;
    }
    size_t count = (size_t)(hi - lo + 1);
    int64_t *values;
    PORTA_TRY(core_host_alloc(count * sizeof *values, "the index read back", (void **)&values));
    porta_status *status =
        clk_read(device, index->buffer->handle, (size_t)lo * sizeof *values, count * sizeof *values,
                 values);
    int64_t idx[PORTA_MAX_RANK] = {0};
    int64_t bad = 0;
    bool found = false;
    for (bool more = !status; more && !found;) {
        int64_t at = index->offset - lo;
        for (int d = 0; d < index->rank; d++) at += idx[d] * index->strides[d];
        if ((uint64_t)values[at] >= (uint64_t)limit) {
            bad = values[at];
            found = true;
        }
        more = false;
        for (int d = index->rank - 1; d >= 0 && !more; d--) {
            if (++idx[d] < index->sizes[d]) more = true;
            else idx[d] = 0;
        }
    }
    core_host_free(values);
    if (status) return status;
    return porta_error(PORTA_ERR_OUT_OF_RANGE,
                       "%s: index %lld is out of bounds for dimension %d with size %lld", op,
                       (long long)bad, axis, (long long)limit);
}

/* Every index value must lie in [0, limit). */
static porta_status *check_index(const clk_launcher *launcher, porta_device *device, const char *op,
                                 const porta_tensor *index, int axis, int64_t limit) {
    int64_t count = porta_tensor_numel(index);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    clk_push(&layout, index->rank);
    push_loop(&layout, index->rank, index->sizes, index->strides, NULL, NULL);
    clk_mem layout_buffer = NULL, flag = NULL;
    int32_t raised = 0;
    porta_status *status = clk_layout_buffer(device, &layout, &layout_buffer);
    if (!status) status = clk_buffer(device, sizeof raised, &raised, &flag);
    if (!status) {
        launch l = {.source = move_source, .name = "ix_check", .tensors = {index}, .layout = layout_buffer,
                    .flag = flag, .limit = limit, .count = count};
        status = run(launcher, device, &l);
    }
    if (!status) status = clk_read(device, flag, 0, sizeof raised, &raised);
    clk_release(device, flag);
    clk_release(device, layout_buffer);
    if (!status && raised) status = report_bad_index(device, op, index, axis, limit);
    return status;
}

static const char *move_kernel(const char *what, porta_dtype dtype, char *name, size_t cap) {
    snprintf(name, cap, "ix_%s_%zu", what, porta_dtype_size(dtype));
    return name;
}

/* out[i] = x[i with axis replaced by index[i]], index laid over out's shape
 * with index_strides. */
static porta_status *gather(const clk_launcher *launcher, porta_device *device,
                            const porta_tensor *x, const porta_tensor *index,
                            const int64_t *index_strides, int axis, porta_tensor *out) {
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    int64_t x_strides[PORTA_MAX_RANK];
    for (int d = 0; d < out->rank; d++) x_strides[d] = d == axis ? 0 : x->strides[d];
    clk_layout layout = {.count = 0};
    clk_push(&layout, out->rank);
    push_loop(&layout, out->rank, out->sizes, out->strides, x_strides, index_strides);
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[32];
    launch l = {.source = move_source, .name = move_kernel("gather", out->dtype, name, sizeof name),
                .tensors = {out, x, index}, .layout = layout_buffer, .has_axis_stride = true,
                .axis_stride = x->rank ? x->strides[axis] : 0, .count = count};
    porta_status *status = run(launcher, device, &l);
    clk_release(device, layout_buffer);
    return status;
}

/* out = x (same shape and dtype). */
static porta_status *copy(const clk_launcher *launcher, porta_device *device, const porta_tensor *x,
                          porta_tensor *out) {
    int64_t count = porta_tensor_numel(out);
    if (count == 0) return NULL;
    clk_layout layout = {.count = 0};
    clk_push(&layout, out->rank);
    push_loop(&layout, out->rank, out->sizes, out->strides, x->strides, NULL);
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[32];
    launch l = {.source = move_source, .name = move_kernel("copy", out->dtype, name, sizeof name),
                .tensors = {out, x}, .layout = layout_buffer, .count = count};
    porta_status *status = run(launcher, device, &l);
    clk_release(device, layout_buffer);
    return status;
}

static porta_status *scatter(const clk_launcher *launcher, porta_device *device,
                             const ir_prim *prim, const porta_tensor *const *inputs,
                             porta_tensor *out) {
    const porta_tensor *x = inputs[0], *index = inputs[1], *src = inputs[2];
    PORTA_TRY(copy(launcher, device, x, out));
    int64_t numel = porta_tensor_numel(index);
    if (numel == 0) return NULL;
    int axis = index->rank ? prim->axis : -1;
    clk_layout layout = {.count = 0};
    clk_push(&layout, index->rank ? index->rank - 1 : 0);
    clk_push(&layout, axis >= 0 ? index->sizes[axis] : 1);
    clk_push(&layout, axis >= 0 ? out->strides[axis] : 0);
    clk_push(&layout, axis >= 0 ? index->strides[axis] : 0);
    clk_push(&layout, axis >= 0 ? src->strides[axis] : 0);
    for (int d = 0; d < index->rank; d++) {
        if (d == axis) continue;
        clk_push(&layout, index->sizes[d]);
        clk_push(&layout, out->strides[d]);
        clk_push(&layout, index->strides[d]);
        clk_push(&layout, src->strides[d]);
    }
    clk_mem layout_buffer;
    PORTA_TRY(clk_layout_buffer(device, &layout, &layout_buffer));
    char name[32];
    snprintf(name, sizeof name, "ix_scatter_%s", clk_dtype_suffix(out->dtype));
    launch l = {.source = scatter_sources[out->dtype], .name = name,
                .tensors = {out, index, src}, .layout = layout_buffer,
                .has_op = true, .op = prim->op,
                .count = numel / (axis >= 0 ? index->sizes[axis] : 1)};
    porta_status *status = run(launcher, device, &l);
    clk_release(device, layout_buffer);
    return status;
}

porta_status *clk_exec_index(const clk_launcher *launcher, porta_device *device,
                             const ir_prim *prim, const porta_tensor *const *inputs,
                             int input_count, porta_tensor *out) {
    int expected = prim->kind == PRIM_SCATTER ? 3 : 2;
    if (input_count != expected)
        return porta_error(PORTA_ERR_INTERNAL, "opencl %s: expected %d inputs, got %d",
                           ir_prim_name(prim), expected, input_count);
    const porta_tensor *x = inputs[0], *index = inputs[1];
    if (index->dtype != PORTA_I64)
        return porta_error(PORTA_ERR_DTYPE, "opencl %s: index must be int64, got %s",
                           ir_prim_name(prim), porta_dtype_name(index->dtype));
    PORTA_TRY(clk_check_dtype(device, ir_prim_name(prim), out->dtype));
    int axis = prim->axis;
    int64_t limit = x->rank ? x->sizes[axis] : 1;
    porta_status *status = check_index(launcher, device, ir_prim_name(prim), index, axis, limit);
    if (status) return status;
    switch (prim->kind) {
    case PRIM_GATHER: return gather(launcher, device, x, index, index->strides, axis, out);
    case PRIM_SCATTER: return scatter(launcher, device, prim, inputs, out);
    default: break;
    }
    /* index_select: the 1-D index runs along axis, repeated over the rest. */
    int64_t index_strides[PORTA_MAX_RANK] = {0};
    if (out->rank && index->rank) index_strides[axis] = index->strides[0];
    return gather(launcher, device, x, index, index_strides, axis, out);
}
