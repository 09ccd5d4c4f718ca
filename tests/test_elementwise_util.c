/* Helpers for the elementwise tests: see test_elementwise.h. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "test_elementwise.h"

const porta_dtype ew_all_dtypes[TEST_REAL_DTYPE_COUNT] = {
    PORTA_BOOL, PORTA_U8, PORTA_I8, PORTA_I16, PORTA_I32,
    PORTA_I64,  PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64,
};

const int ew_shape_ranks[EW_SHAPE_COUNT] = {0, 1, 1, 2, 3, 4, 2, 3};
const int64_t ew_shape_sizes[EW_SHAPE_COUNT][4] = {
    {0}, {7}, {0}, {3, 5}, {2, 3, 4}, {3, 1, 2, 5}, {0, 4}, {1, 1, 1},
};

porta_tensor *ew_empty(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes,
                       ew_layout layout) {
    porta_tensor *t = NULL;
    porta_status *status = NULL;
    if (layout == EW_CONTIGUOUS) {
        status = porta_tensor_empty(test_cpu(), dtype, rank, sizes, &t);
    } else {
        /* Storage dims: a random permutation of the logical ones, each
         * stretched by a gap factor of 1 or 2. */
        int perm[PORTA_MAX_RANK];
        int64_t gap[PORTA_MAX_RANK], strides[PORTA_MAX_RANK], offset = 0;
        for (int d = 0; d < rank; d++) {
            perm[d] = d;
            gap[d] = test_int(rng, 1, 2);
        }
        test_shuffle(rng, perm, rank);
        int64_t stride = 1;
        for (int j = rank - 1; j >= 0; j--) {
            int d = perm[j];
            strides[d] = stride * gap[d];
            stride *= (sizes[d] > 0 ? sizes[d] : 1) * gap[d];
        }
        for (int d = 0; d < rank; d++) {
            if (test_int(rng, 0, 1) && sizes[d] > 0) { /* walk this dim backwards */
                offset += (sizes[d] - 1) * strides[d];
                strides[d] = -strides[d];
            }
        }
        porta_buffer *buffer;
        status = porta_buffer_alloc(test_cpu(), (size_t)stride * porta_dtype_size(dtype), &buffer);
        if (!status) {
            status = porta_tensor_view(buffer, dtype, rank, sizes, strides, offset, &t);
            porta_buffer_release(buffer);
        }
    }
    if (status) {
        test_fail(__FILE__, __LINE__, "ew_empty: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    return t;
}

void ew_write(porta_tensor *t, const double *values) {
    int64_t idx[PORTA_MAX_RANK] = {0};
    if (porta_tensor_numel(t) == 0) return;
    size_t elem = porta_dtype_size(t->dtype);
    char *base = core_tensor_data(t);
    int64_t i = 0;
    do {
        int64_t off = test_offset(t->rank, idx, t->strides);
        core_store_from_double(t->dtype, base + off * (int64_t)elem, values[i++]);
    } while (test_next_index(t->rank, t->sizes, idx));
}

porta_tensor *ew_tensor(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes,
                        ew_layout layout, double low, double high) {
    porta_tensor *t = ew_empty(rng, dtype, rank, sizes, layout);
    if (!t) return NULL;
    int64_t numel = porta_tensor_numel(t);
    double *values = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *values);
    double int_low = dtype == PORTA_U8 && low < 0 ? 0 : low;
    for (int64_t i = 0; i < numel; i++) {
        if (dtype == PORTA_BOOL)
            values[i] = (double)test_int(rng, 0, 1);
        else if (porta_dtype_is_float(dtype))
            values[i] = test_uniform(rng, low, high);
        else
            values[i] = (double)test_int(rng, (int64_t)int_low, (int64_t)high);
    }
    ew_write(t, values);
    free(values);
    return t;
}

int64_t ew_broadcast_position(int out_rank, const int64_t *idx, int rank, const int64_t *sizes) {
    int64_t pos = 0;
    for (int d = 0; d < rank; d++) {
        int64_t i = sizes[d] == 1 ? 0 : idx[out_rank - rank + d];
        pos = pos * sizes[d] + i;
    }
    return pos;
}

double ew_round_to(porta_dtype dtype, double v) {
    union {
        double f64;
        uint64_t bits;
    } slot;
    core_store_from_double(dtype, &slot, v);
    return core_load_as_double(dtype, &slot);
}

bool ew_check(const char *what, const porta_tensor *out, const double *want) {
    double *got = test_to_doubles(out);
    double rtol = test_rtol(out->dtype);
    bool ok = test_close(what, got, want, porta_tensor_numel(out), rtol, rtol);
    free(got);
    return ok;
}

const char *ew_describe(char *buf, size_t cap, porta_dtype dtype, int rank, const int64_t *sizes,
                        ew_layout layout) {
    char shape[CORE_SHAPE_STR_CAP];
    snprintf(buf, cap, "%s %s %s", porta_dtype_name(dtype),
             core_format_shape(shape, sizeof shape, rank, sizes),
             layout == EW_CONTIGUOUS ? "contiguous" : "scrambled");
    return buf;
}
