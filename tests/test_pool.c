/* porta_max_pool_indices against PyTorch's CPU loop written out in double:
 * 1 to 3 spatial axes, padding, dilation, ceil mode, channels-last strides,
 * ties, NaN and -inf; a window wholly in the padding; bad arguments;
 * allocation failures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

typedef struct pool_case {
    int dims;
    int64_t x[5], kernel[3], stride[3], padding[3], dilation[3];
    porta_pool_rounding rounding;
} pool_case;

/* Sizes of the result, as PyTorch computes them. */
static int64_t reference_size(const pool_case *p, int i) {
    int64_t in = p->x[2 + i], k = p->kernel[i], s = p->stride[i], pad = p->padding[i],
            d = p->dilation[i];
    bool ceil_mode = p->rounding == PORTA_POOL_CEIL;
    int64_t span = in + 2 * pad - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = span / s + 1;
    if (ceil_mode && (out - 1) * s >= in + pad) out--;
    return out;
}

/* PyTorch's loop for one window: from its first tap inside the input, a
 * greater value or NaN takes the place of the best so far. `x` is one
 * [in...] plane, row-major; `at` the output position. */
static int64_t reference_index(const pool_case *p, const double *x, const int64_t *at) {
    int64_t first[3] = {0, 0, 0}, end[3] = {1, 1, 1}, in[3] = {1, 1, 1}, step[3] = {1, 1, 1};
    int lead = 3 - p->dims;
    for (int i = 0; i < p->dims; i++) {
        int64_t start = at[i] * p->stride[i] - p->padding[i];
        int64_t stop = start + (p->kernel[i] - 1) * p->dilation[i] + 1;
        while (start < 0) start += p->dilation[i];
        in[lead + i] = p->x[2 + i];
        first[lead + i] = start;
        end[lead + i] = stop < in[lead + i] ? stop : in[lead + i];
        step[lead + i] = p->dilation[i];
    }
    int64_t best_at = (first[0] * in[1] + first[1]) * in[2] + first[2];
    double best = -INFINITY;
    for (int64_t d = first[0]; d < end[0]; d += step[0])
        for (int64_t h = first[1]; h < end[1]; h += step[1])
            for (int64_t w = first[2]; w < end[2]; w += step[2]) {
                int64_t flat = (d * in[1] + h) * in[2] + w;
                if (x[flat] > best || isnan(x[flat])) {
                    best = x[flat];
                    best_at = flat;
                }
            }
    return best_at;
}

/* x in [N, C, in...] as float32 or int32, contiguous or channels-last (C
 * innermost in memory), from row-major values. */
static porta_tensor *make_input(const pool_case *p, porta_dtype dtype, bool channels_last,
                                const double *values, int64_t numel) {
    int rank = p->dims + 2;
    int64_t stored[5];
    int dims[5];
    for (int d = 0; d < rank; d++) stored[d] = p->x[d];
    if (channels_last) { /* stored [N, in..., C] */
        for (int d = 1; d < rank - 1; d++) stored[d] = p->x[d + 1];
        stored[rank - 1] = p->x[1];
        dims[0] = 0;
        dims[1] = rank - 1;
        for (int d = 2; d < rank; d++) dims[d] = d - 1;
    }
    int64_t plane = numel / (p->x[0] * p->x[1]);
    void *bytes = malloc((size_t)numel * 4);
    for (int64_t e = 0; e < numel; e++) {
        /* element e of the stored layout holds logical element `from` */
        int64_t from = e;
        if (channels_last) {
            int64_t c = e % p->x[1], rest = e / p->x[1];
            from = (rest / plane * p->x[1] + c) * plane + rest % plane;
        }
        if (dtype == PORTA_F32)
            ((float *)bytes)[e] = (float)values[from];
        else
            ((int32_t *)bytes)[e] = (int32_t)values[from];
    }
    porta_tensor *stored_tensor = NULL, *x = NULL;
    porta_status *status =
        porta_tensor_from_host(test_cpu(), dtype, rank, stored, bytes, &stored_tensor);
    free(bytes);
    if (!status && channels_last) status = porta_permute(stored_tensor, dims, &x);
    if (status) {
        CHECK_MSG(false, "input: %s", porta_status_message(status));
        porta_status_free(status);
        porta_tensor_release(stored_tensor);
        return NULL;
    }
    if (!channels_last) return stored_tensor;
    porta_tensor_release(stored_tensor);
    return x;
}

static void check_case(const pool_case *p, porta_dtype dtype, bool channels_last,
                       test_rng *rng) {
    static const double floats[] = {-1, 0, 2, 2, NAN, -INFINITY};
    int64_t numel = p->x[0] * p->x[1], out_numel = p->x[0] * p->x[1];
    int64_t out[3] = {1, 1, 1};
    for (int i = 0; i < p->dims; i++) {
        numel *= p->x[2 + i];
        out[i] = reference_size(p, i);
        out_numel *= out[i];
    }
    double *values = malloc((size_t)numel * sizeof *values);
    for (int64_t e = 0; e < numel; e++)
        values[e] = dtype == PORTA_F32 ? floats[test_int(rng, 0, 5)] : (double)test_int(rng, -2, 2);
    porta_tensor *x = make_input(p, dtype, channels_last, values, numel), *indices = NULL;
    int64_t *got = malloc((size_t)out_numel * sizeof *got);
    porta_status *status = x ? porta_max_pool_indices(x, p->kernel, p->stride, p->padding,
                                                      p->dilation, p->rounding, &indices)
                             : NULL;
    if (status) {
        CHECK_MSG(false, "max_pool_indices: %s", porta_status_message(status));
        porta_status_free(status);
    } else if (x) {
        CHECK(porta_tensor_dtype(indices) == PORTA_I64);
        CHECK(porta_tensor_rank(indices) == p->dims + 2);
        for (int i = 0; i < p->dims; i++) CHECK(porta_tensor_sizes(indices)[2 + i] == out[i]);
        CHECK_OK(porta_tensor_to_host(indices, got, (size_t)out_numel * sizeof *got));
        int64_t plane = numel / (p->x[0] * p->x[1]), out_plane = out_numel / (p->x[0] * p->x[1]);
        int mismatches = 0;
        for (int64_t e = 0; e < out_numel && mismatches < 3; e++) {
            int64_t o = e % out_plane, at[3] = {0, 0, 0};
            for (int i = p->dims - 1; i >= 0; i--) {
                at[i] = o % out[i];
                o /= out[i];
            }
            int64_t want = reference_index(p, values + e / out_plane * plane, at);
            if (got[e] != want) {
                mismatches++;
                CHECK_MSG(false, "%dd %s%s: output %lld: index %lld, expected %lld", p->dims,
                          porta_dtype_name(dtype), channels_last ? " channels-last" : "",
                          (long long)e, (long long)got[e], (long long)want);
            }
        }
    }
    free(got);
    free(values);
    porta_tensor_release(indices);
    porta_tensor_release(x);
}

TEST(test_max_pool_indices_match_reference) {
    const pool_case cases[] = {
        {2, {2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, PORTA_POOL_FLOOR},
        {2, {2, 3, 7, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, PORTA_POOL_CEIL},
        {2, {1, 2, 9, 7}, {3, 2}, {1, 2}, {1, 1}, {2, 2}, PORTA_POOL_FLOOR},
        {2, {1, 2, 20, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, PORTA_POOL_FLOOR},
        {1, {2, 3, 11}, {3}, {1}, {1}, {1}, PORTA_POOL_CEIL},
        {3, {1, 2, 4, 5, 3}, {2, 2, 2}, {1, 2, 1}, {1, 0, 1}, {1, 1, 1}, PORTA_POOL_FLOOR},
        /* 11 taps: more than the table of whole windows holds */
        {3, {1, 1, 5, 6, 7}, {3, 3, 3}, {2, 2, 2}, {1, 1, 0}, {1, 2, 1}, PORTA_POOL_CEIL},
        {2, {1, 1, 12, 12}, {9, 9}, {3, 3}, {4, 4}, {1, 1}, PORTA_POOL_FLOOR},
    };
    test_rng rng = test_rng_make(1717);
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (int layout = 0; layout < 2; layout++) {
            check_case(&cases[c], PORTA_F32, layout, &rng);
            check_case(&cases[c], PORTA_I32, layout, &rng);
        }
}

/* Dilation steps over the whole 2x2 input from the padding: PyTorch keeps
 * the index where the first tap would be, 2 * 2 + 2. */
TEST(test_max_pool_indices_window_in_padding) {
    porta_tensor *x = NULL, *indices = NULL;
    float values[4] = {1, 2, 3, 4};
    int64_t index = -1;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 4, SHAPE(1, 1, 2, 2), values, &x));
    CHECK_OK(porta_max_pool_indices(x, SHAPE(2, 2), SHAPE(2, 2), SHAPE(1, 1), SHAPE(3, 3),
                                    PORTA_POOL_FLOOR, &indices));
    CHECK_OK(porta_tensor_to_host(indices, &index, sizeof index));
    CHECK(index == 6);
    porta_tensor_release(indices);
    porta_tensor_release(x);
}

TEST(test_max_pool_indices_errors) {
    porta_tensor *x = test_empty(PORTA_F32, 4, SHAPE(1, 2, 4, 4)), *out = NULL;
    porta_tensor *flat = test_empty(PORTA_F32, 2, SHAPE(2, 4));
    porta_tensor *flags = test_empty(PORTA_BOOL, 4, SHAPE(1, 2, 4, 4));
    const int64_t *two = SHAPE(2, 2), *one = SHAPE(1, 1), *zero = SHAPE(0, 0);
    CHECK_ERR(porta_max_pool_indices(flat, two, two, zero, one, PORTA_POOL_FLOOR, &out),
              PORTA_ERR_SHAPE, "rank 3 to 5), got rank 2");
    CHECK_ERR(porta_max_pool_indices(flags, two, two, zero, one, PORTA_POOL_FLOOR, &out),
              PORTA_ERR_DTYPE, "got bool");
    CHECK_ERR(porta_max_pool_indices(x, two, two, SHAPE(2, 0), one, PORTA_POOL_FLOOR, &out),
              PORTA_ERR_INVALID_ARGUMENT, "padding in [0, kernel / 2] on axis 0, got kernel 2");
    CHECK_ERR(porta_max_pool_indices(x, two, SHAPE(1, 0), zero, one, PORTA_POOL_FLOOR, &out),
              PORTA_ERR_INVALID_ARGUMENT, "on axis 1, got kernel 2, stride 0");
    CHECK_ERR(porta_max_pool_indices(x, SHAPE(5, 5), one, zero, one, PORTA_POOL_FLOOR, &out),
              PORTA_ERR_SHAPE, "too small");
    CHECK_ERR(porta_max_pool_indices(x, two, two, zero, one, (porta_pool_rounding)2, &out),
              PORTA_ERR_INVALID_ARGUMENT, "rounding 0 (floor) or 1 (ceil), got 2");
    CHECK_ERR(porta_max_pool_indices(x, NULL, two, zero, one, PORTA_POOL_FLOOR, &out),
              PORTA_ERR_INVALID_ARGUMENT, "must not be NULL");
    CHECK(!out);
    porta_tensor_release(x);
    porta_tensor_release(flat);
    porta_tensor_release(flags);
}

/* Every allocation the pooling makes fails in turn, leaving nothing behind. */
TEST(test_max_pool_indices_allocation_failure) {
    porta_tensor *x = test_empty(PORTA_F32, 4, SHAPE(2, 3, 8, 8));
    if (!x) return;
    CHECK_OK(porta_fill(x, 1));
    bool succeeded = false;
    for (uint64_t extra = 0; !succeeded && extra < (1u << 20); extra += 256) {
        porta_tensor *indices = NULL;
        porta_set_memory_limit(porta_memory_allocated() + extra);
        porta_status *status = porta_max_pool_indices(x, SHAPE(2, 2), SHAPE(2, 2), SHAPE(0, 0),
                                                       SHAPE(1, 1), PORTA_POOL_FLOOR, &indices);
        porta_set_memory_limit(0);
        if (status) {
            CHECK(porta_status_code(status) == PORTA_ERR_OUT_OF_MEMORY);
            CHECK(!indices);
            porta_status_free(status);
            continue;
        }
        succeeded = true;
        porta_tensor_release(indices);
    }
    CHECK(succeeded);
    porta_tensor_release(x);
}
