/* Test data, reference and checker for the reduction tests. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/kernels_reduce.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "test_reduce.h"

static double random_value(test_rng *rng, porta_dtype dtype, reduce_fill fill) {
    bool is_float = porta_dtype_is_float(dtype);
    switch (fill) {
    case FILL_NEAR_ONE:
        if (is_float) return test_uniform(rng, 0.97, 1.03);
        break;
    case FILL_SPARSE:
        if (test_int(rng, 0, 9) < 7) return is_float && test_int(rng, 0, 1) ? -0.0 : 0.0;
        break;
    case FILL_FEW: {
        static const double few[] = {-1.0, 0.0, 0.5, 1.0};
        double v = few[test_int(rng, 0, 3)];
        return dtype == PORTA_BOOL || dtype == PORTA_U8 ? fabs(v) : v;
    }
    case FILL_NAN:
        if (is_float && test_int(rng, 0, 9) == 0) return NAN;
        break;
    case FILL_WIDE: break;
    }
    if (dtype == PORTA_BOOL) return (double)test_int(rng, 0, 1);
    if (is_float) return test_uniform(rng, -1.0, 1.0);
    if (dtype == PORTA_U8) return (double)test_int(rng, 0, 20);
    return (double)test_int(rng, -10, 10);
}

porta_tensor *reduce_random_tensor(test_rng *rng, porta_dtype dtype, int rank,
                                   const int64_t *sizes, reduce_fill fill) {
    porta_tensor *t = test_empty(dtype, rank, sizes);
    if (!t) return NULL;
    size_t elem = porta_dtype_size(dtype);
    char *data = core_tensor_data(t);
    for (int64_t i = 0; i < porta_tensor_numel(t); i++)
        core_store_from_double(dtype, data + (size_t)i * elem, random_value(rng, dtype, fill));
    return t;
}

porta_tensor *reduce_random_view(test_rng *rng, porta_dtype dtype, int rank,
                                 const int64_t *sizes, reduce_fill fill) {
    int order[PORTA_MAX_RANK]; /* order[k]: the logical axis stored as memory axis k */
    int64_t step[PORTA_MAX_RANK] = {0}, base_sizes[PORTA_MAX_RANK] = {0};
    int64_t base_strides[PORTA_MAX_RANK] = {0};
    for (int d = 0; d < rank; d++) {
        order[d] = d;
        static const int64_t steps[] = {1, 1, 2, -1, -2, 0};
        step[d] = steps[test_int(rng, 0, 5)];
    }
    test_shuffle(rng, order, rank);
    for (int k = 0; k < rank; k++) {
        int d = order[k];
        int64_t span = step[d] < 0 ? -step[d] : step[d];
        base_sizes[k] = step[d] == 0 || sizes[d] == 0 ? 1 : sizes[d] * span;
    }
    porta_tensor *base = reduce_random_tensor(rng, dtype, rank, base_sizes, fill);
    if (!base) return NULL;
    core_contiguous_strides(rank, base_sizes, base_strides);
    int64_t strides[PORTA_MAX_RANK], offset = 0;
    for (int k = 0; k < rank; k++) {
        int d = order[k];
        strides[d] = base_strides[k] * step[d];
        if (step[d] < 0) offset += (base_sizes[k] - 1) * base_strides[k];
    }
    porta_tensor *view = test_view_on(base, rank, sizes, strides, offset);
    porta_tensor_release(base);
    return view;
}

porta_dtype reduce_expected_dtype(porta_reduce_op op, porta_dtype x) {
    switch (op) {
    case PORTA_REDUCE_SUM:
    case PORTA_REDUCE_PROD: return porta_dtype_is_float(x) ? x : PORTA_I64;
    case PORTA_REDUCE_ARGMAX:
    case PORTA_REDUCE_ARGMIN: return PORTA_I64;
    case PORTA_REDUCE_ANY:
    case PORTA_REDUCE_ALL: return PORTA_BOOL;
    default: return x;
    }
}

/* The reference result: shape, values, and per output the sum of |x| that
 * bounds a float sum's rounding error. */
typedef struct reference {
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t count, reduced_count;
    double *values, *magnitude;
    bool empty_error; /* PyTorch rejects this reduction of no elements */
} reference;

static bool is_arg(porta_reduce_op op) {
    return op == PORTA_REDUCE_ARGMAX || op == PORTA_REDUCE_ARGMIN;
}

/* Folds v (the element at reduced position r) into output slot o. */
static void reference_step(porta_reduce_op op, bool is_float, double v, int64_t r, double *acc,
                           uint64_t *wrapped, double *best) {
    bool first = r == 0;
    switch (op) {
    case PORTA_REDUCE_SUM: *acc = first ? v : *acc + v; break;
    case PORTA_REDUCE_PROD:
        if (is_float)
            *acc = first ? v : *acc * v;
        else /* integer products wrap modulo 2^64, like int64 in PyTorch */
            *wrapped = (first ? 1u : *wrapped) * (uint64_t)(int64_t)v;
        break;
    case PORTA_REDUCE_MAX:
    case PORTA_REDUCE_MIN:
    case PORTA_REDUCE_ARGMAX:
    case PORTA_REDUCE_ARGMIN: {
        bool want_max = op == PORTA_REDUCE_MAX || op == PORTA_REDUCE_ARGMAX;
        /* The first NaN wins and stays; otherwise strictly better wins, so
         * ties keep the first index. */
        bool better = first || (!isnan(*best) && (isnan(v) || (want_max ? v > *best : v < *best)));
        if (better) {
            *best = v;
            *acc = is_arg(op) ? (double)r : v;
        }
        break;
    }
    case PORTA_REDUCE_ANY: *acc = (first ? 0 : *acc) || v != 0; break;
    case PORTA_REDUCE_ALL: *acc = (first ? 1 : *acc) && v != 0; break;
    case PORTA_REDUCE_OP_COUNT: break;
    }
}

static void compute_reference(porta_reduce_op op, const porta_tensor *x, const int *axes,
                              int axis_count, bool keepdim, reference *ref) {
    int rank = porta_tensor_rank(x);
    const int64_t *sizes = porta_tensor_sizes(x);
    bool reduced[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < axis_count; i++) reduced[(axes[i] + rank) % (rank ? rank : 1)] = true;
    if (axis_count == 0)
        for (int d = 0; d < rank; d++) reduced[d] = true;
    memset(ref, 0, sizeof *ref);
    ref->count = ref->reduced_count = 1;
    for (int d = 0; d < rank; d++) {
        if (reduced[d]) {
            ref->reduced_count *= sizes[d];
            if (sizes[d] == 0 && (op == PORTA_REDUCE_MAX || op == PORTA_REDUCE_MIN || is_arg(op)))
                ref->empty_error = true;
            if (keepdim) ref->sizes[ref->rank++] = 1;
        } else {
            ref->count *= sizes[d];
            ref->sizes[ref->rank++] = sizes[d];
        }
    }
    size_t slots = (size_t)(ref->count > 0 ? ref->count : 1);
    ref->values = calloc(slots, sizeof(double));
    ref->magnitude = calloc(slots, sizeof(double));
    uint64_t *wrapped = calloc(slots, sizeof(uint64_t));
    double *best = calloc(slots, sizeof(double));

    bool is_float = porta_dtype_is_float(porta_tensor_dtype(x));
    double *values = test_to_doubles(x);
    int64_t idx[PORTA_MAX_RANK] = {0};
    for (int64_t flat = 0; flat < porta_tensor_numel(x); flat++) {
        int64_t o = 0, r = 0;
        for (int d = 0; d < rank; d++) {
            if (reduced[d])
                r = r * sizes[d] + idx[d];
            else
                o = o * sizes[d] + idx[d];
        }
        reference_step(op, is_float, values[flat], r, &ref->values[o], &wrapped[o], &best[o]);
        ref->magnitude[o] += fabs(values[flat]);
        test_next_index(rank, sizes, idx);
    }
    if (ref->reduced_count == 0) { /* the identities PyTorch gives empty reductions */
        double identity = op == PORTA_REDUCE_PROD || op == PORTA_REDUCE_ALL ? 1.0 : 0.0;
        for (int64_t o = 0; o < ref->count; o++) ref->values[o] = identity;
    } else if (op == PORTA_REDUCE_PROD && !is_float) {
        for (int64_t o = 0; o < ref->count; o++) ref->values[o] = (double)(int64_t)wrapped[o];
    }
    free(values);
    free(wrapped);
    free(best);
}

/* Float sums may round by a few ulp of each term's magnitude, products by a
 * few ulp per factor; everything else is exact. */
static bool compare_values(porta_reduce_op op, porta_dtype x_dtype, const double *got,
                           const reference *ref, const char *what) {
    porta_dtype out_dtype = reduce_expected_dtype(op, x_dtype);
    if (!porta_dtype_is_float(out_dtype) || op == PORTA_REDUCE_MAX || op == PORTA_REDUCE_MIN)
        return test_close(what, got, ref->values, ref->count, 0.0, 0.0);
    double rtol = test_rtol(out_dtype);
    if (op == PORTA_REDUCE_PROD) {
        double factors = (double)ref->reduced_count / 64.0;
        return test_close(what, got, ref->values, ref->count, rtol * (factors > 1 ? factors : 1),
                          1e-300);
    }
    bool ok = true;
    for (int64_t o = 0; o < ref->count && ok; o++)
        ok = test_close(what, &got[o], &ref->values[o], 1, rtol, rtol * ref->magnitude[o]);
    return ok;
}

bool reduce_check_out(porta_reduce_op op, const porta_tensor *x, const int *axes,
                      int axis_count, bool keepdim, porta_tensor *out, const char *what) {
    reference ref;
    compute_reference(op, x, axes, axis_count, keepdim, &ref);
    porta_tensor *result = out;
    porta_status *status = porta_reduce(op, x, axes, axis_count, keepdim, &result);
    bool ok = true;
    if (ref.empty_error) {
        ok = porta_status_code(status) == PORTA_ERR_SHAPE;
        CHECK_MSG(ok, "%s: expected a shape error for an empty reduction, got '%s'", what,
                  porta_status_message(status));
        porta_status_free(status);
        if (!status && !out) porta_tensor_release(result);
    } else if (status) {
        test_fail(__FILE__, __LINE__, "%s: %s", what, porta_status_message(status));
        porta_status_free(status);
        ok = false;
    } else {
        porta_dtype want_dtype =
            out ? porta_tensor_dtype(out) : reduce_expected_dtype(op, porta_tensor_dtype(x));
        char got_shape[CORE_SHAPE_STR_CAP], want_shape[CORE_SHAPE_STR_CAP];
        core_format_shape(got_shape, sizeof got_shape, porta_tensor_rank(result),
                           porta_tensor_sizes(result));
        core_format_shape(want_shape, sizeof want_shape, ref.rank, ref.sizes);
        ok = porta_tensor_dtype(result) == want_dtype && strcmp(got_shape, want_shape) == 0;
        CHECK_MSG(ok, "%s: got %s (%s), expected %s (%s)", what,
                  porta_dtype_name(porta_tensor_dtype(result)), got_shape,
                  porta_dtype_name(want_dtype), want_shape);
        if (ok) {
            double *got = test_to_doubles(result);
            ok = compare_values(op, porta_tensor_dtype(x), got, &ref, what);
            free(got);
        }
        if (!out) porta_tensor_release(result);
    }
    free(ref.values);
    free(ref.magnitude);
    return ok;
}

bool reduce_check(porta_reduce_op op, const porta_tensor *x, const int *axes, int axis_count,
                  bool keepdim, const char *what) {
    return reduce_check_out(op, x, axes, axis_count, keepdim, NULL, what);
}

bool reduce_force_next_isa(int *isa) {
    for (++*isa; *isa < CPU_ISA_COUNT; ++*isa)
        if (cpu_reduce_isa_force((cpu_isa)*isa)) return true;
    cpu_reduce_isa_reset();
    return false;
}
