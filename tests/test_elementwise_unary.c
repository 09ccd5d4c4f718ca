/* Unary elementwise ops against double-precision references, over every
 * dtype, layouts (contiguous, scrambled with negative strides), rank 0,
 * zero-size tensors, out= forms and the dtypes each op refuses. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "test_elementwise.h"

typedef enum accepts { ACCEPTS_ALL, ACCEPTS_NUMERIC, ACCEPTS_NOT_FLOAT } accepts;
typedef enum result_kind { RESULT_SAME, RESULT_FLOAT, RESULT_BOOL } result_kind;

typedef struct unary_case {
    porta_unary_op op;
    double (*ref)(double);
    double low, high; /* range of float inputs; integers come from [-10, 10] */
    accepts accepts;
    result_kind result;
} unary_case;

static double ref_neg(double x) { return -x; }
static double ref_sign(double x) { return (x > 0) - (x < 0); }
static double ref_rsqrt(double x) { return 1 / sqrt(x); }
static double ref_reciprocal(double x) { return 1 / x; }
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_lgamma(double x) {
    int sign;
    return lgamma_r(x, &sign);
}
/* Bisection on erf: slow, but independent of the library's method. */
static double ref_erfinv(double y) {
    if (y == 1) return INFINITY;
    if (y == -1) return -INFINITY;
    if (!(fabs(y) < 1)) return NAN;
    double low = -7, high = 7;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (low + high);
        if (erf(mid) < y)
            low = mid;
        else
            high = mid;
    }
    return 0.5 * (low + high);
}
static double ref_isnan(double x) { return isnan(x); }
static double ref_isinf(double x) { return isinf(x); }
static double ref_isfinite(double x) { return isfinite(x); }
static double ref_logical_not(double x) { return x == 0; }
static double ref_bitwise_not(double x) { return -x - 1; } /* ~x in two's complement */

static const unary_case cases[] = {
    {PORTA_NEG, ref_neg, -5, 5, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_ABS, fabs, -5, 5, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_SIGN, ref_sign, -5, 5, ACCEPTS_ALL, RESULT_SAME},
    {PORTA_EXP, exp, -8, 8, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_EXP2, exp2, -8, 8, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_EXPM1, expm1, -3, 3, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_LOG, log, 0.05, 20, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_LOG2, log2, 0.05, 20, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_LOG1P, log1p, -0.9, 20, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_SQRT, sqrt, 0, 20, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_RSQRT, ref_rsqrt, 0.05, 20, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_RECIPROCAL, ref_reciprocal, 0.1, 5, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_SIN, sin, -6, 6, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_COS, cos, -6, 6, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_TAN, tan, -1.4, 1.4, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ASIN, asin, -0.99, 0.99, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ACOS, acos, -0.99, 0.99, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ATAN, atan, -10, 10, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_SINH, sinh, -5, 5, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_COSH, cosh, -5, 5, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_TANH, tanh, -5, 5, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ASINH, asinh, -10, 10, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ACOSH, acosh, 1.01, 10, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ATANH, atanh, -0.99, 0.99, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_SIGMOID, ref_sigmoid, -10, 10, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ERF, erf, -3, 3, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ERFC, erfc, -3, 3, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_ERFINV, ref_erfinv, -0.999, 0.999, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_LGAMMA, ref_lgamma, 0.1, 10, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_FLOOR, floor, -5, 5, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_CEIL, ceil, -5, 5, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_ROUND, nearbyint, -5, 5, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_TRUNC, trunc, -5, 5, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_ISNAN, ref_isnan, -5, 5, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_ISINF, ref_isinf, -5, 5, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_ISFINITE, ref_isfinite, -5, 5, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_LOGICAL_NOT, ref_logical_not, -1, 1, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_BITWISE_NOT, ref_bitwise_not, 0, 0, ACCEPTS_NOT_FLOAT, RESULT_SAME},
};
#define CASE_COUNT ((int)(sizeof cases / sizeof cases[0]))

static bool accepts_dtype(const unary_case *c, porta_dtype dtype) {
    switch (c->accepts) {
    case ACCEPTS_NUMERIC: return dtype != PORTA_BOOL;
    case ACCEPTS_NOT_FLOAT: return !porta_dtype_is_float(dtype);
    default: return true;
    }
}

static porta_dtype result_dtype(const unary_case *c, porta_dtype dtype) {
    switch (c->result) {
    case RESULT_BOOL: return PORTA_BOOL;
    case RESULT_FLOAT: return porta_dtype_is_float(dtype) ? dtype : PORTA_F32;
    default: return dtype;
    }
}

/* The exact result, rounded to an integer result dtype (wrapping). */
static double reference(const unary_case *c, porta_dtype dtype, double x) {
    double want = c->op == PORTA_BITWISE_NOT && dtype == PORTA_BOOL ? x == 0 : c->ref(x);
    porta_dtype result = result_dtype(c, dtype);
    return porta_dtype_is_float(result) ? want : ew_round_to(result, want);
}

static porta_tensor *case_input(test_rng *rng, const unary_case *c, porta_dtype dtype, int rank,
                                const int64_t *sizes, ew_layout layout) {
    bool is_float = porta_dtype_is_float(dtype);
    return ew_tensor(rng, dtype, rank, sizes, layout, is_float ? c->low : -10,
                     is_float ? c->high : 10);
}

/* Checks out = op(x) against the reference computed from x's values. */
static void expect_result(const char *what, const unary_case *c, const porta_tensor *x,
                          const porta_tensor *out) {
    CHECK_MSG(out->dtype == result_dtype(c, x->dtype), "%s: result dtype %s", what,
              porta_dtype_name(out->dtype));
    CHECK_MSG(out->rank == x->rank && !memcmp(out->sizes, x->sizes, sizeof(int64_t) * (size_t)x->rank),
              "%s: result shape differs from the input's", what);
    int64_t n = porta_tensor_numel(x);
    double *xv = test_to_doubles(x), *want = malloc((size_t)(n > 0 ? n : 1) * sizeof *want);
    for (int64_t i = 0; i < n; i++) want[i] = reference(c, x->dtype, xv[i]);
    ew_check(what, out, want);
    free(xv);
    free(want);
}

static void check_case(test_rng *rng, const unary_case *c, porta_dtype dtype, int rank,
                       const int64_t *sizes, ew_layout layout) {
    char what[256], desc[200];
    snprintf(what, sizeof what, "%s of %s", porta_unary_op_name(c->op),
             ew_describe(desc, sizeof desc, dtype, rank, sizes, layout));
    porta_tensor *x = case_input(rng, c, dtype, rank, sizes, layout), *out = NULL;
    porta_status *status = porta_unary(c->op, x, &out);
    CHECK_MSG(!status, "%s: %s", what, porta_status_message(status));
    if (!status) expect_result(what, c, x, out);
    porta_status_free(status);
    porta_tensor_release(out);
    porta_tensor_release(x);
}

TEST(test_ew_unary_every_op_dtype_and_layout) {
    test_rng rng = test_rng_make(101);
    for (int k = 0; k < CASE_COUNT; k++)
        for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
            if (!accepts_dtype(&cases[k], ew_all_dtypes[t])) continue;
            for (int s = 0; s < EW_SHAPE_COUNT; s++)
                for (int layout = 0; layout < EW_LAYOUT_COUNT; layout++)
                    check_case(&rng, &cases[k], ew_all_dtypes[t], ew_shape_ranks[s],
                               ew_shape_sizes[s], (ew_layout)layout);
        }
}

TEST(test_ew_unary_refused_dtypes) {
    test_rng rng = test_rng_make(102);
    int64_t sizes[1] = {3};
    for (int k = 0; k < CASE_COUNT; k++)
        for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
            if (accepts_dtype(&cases[k], ew_all_dtypes[t])) continue;
            porta_tensor *x = ew_tensor(&rng, ew_all_dtypes[t], 1, sizes, EW_CONTIGUOUS, -1, 1);
            porta_tensor *out = NULL;
            CHECK_ERR(porta_unary(cases[k].op, x, &out), PORTA_ERR_DTYPE,
                      porta_dtype_name(ew_all_dtypes[t]));
            CHECK(out == NULL);
            porta_tensor_release(x);
        }
    porta_tensor *x = ew_tensor(&rng, PORTA_BOOL, 1, sizes, EW_CONTIGUOUS, 0, 1), *out = NULL;
    CHECK_ERR(porta_unary(PORTA_NEG, x, &out), PORTA_ERR_DTYPE, "logical_not");
    CHECK_ERR(porta_unary((porta_unary_op)PORTA_UNARY_OP_COUNT, x, &out),
              PORTA_ERR_INVALID_ARGUMENT, "out of range");
    CHECK_ERR(porta_unary((porta_unary_op)-1, x, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_unary(PORTA_EXP, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, "NULL");
    CHECK_ERR(porta_unary(PORTA_EXP, x, NULL), PORTA_ERR_INVALID_ARGUMENT, "NULL");
    porta_tensor_release(x);
}

/* The same op into a given out: scrambled, in place, a wider dtype. */
TEST(test_ew_unary_out_forms) {
    test_rng rng = test_rng_make(103);
    const unary_case *exp_case = &cases[3], *neg_case = &cases[0];
    CHECK(exp_case->op == PORTA_EXP && neg_case->op == PORTA_NEG);
    int64_t sizes[3] = {4, 3, 5};
    for (int layout = 0; layout < EW_LAYOUT_COUNT; layout++) {
        porta_tensor *x = case_input(&rng, exp_case, PORTA_F32, 3, sizes, (ew_layout)layout);
        porta_tensor *given = ew_empty(&rng, PORTA_F32, 3, sizes, EW_SCRAMBLED);
        porta_tensor *out = given;
        CHECK_OK(porta_unary(PORTA_EXP, x, &out));
        CHECK(out == given);
        expect_result("exp into a scrambled out", exp_case, x, out);

        /* float32 result into float64: computed in float32, then widened. */
        porta_tensor *wide = ew_empty(&rng, PORTA_F64, 3, sizes, (ew_layout)layout);
        out = wide;
        CHECK_OK(porta_unary(PORTA_EXP, x, &out));
        double *xv = test_to_doubles(x), want[60];
        for (int i = 0; i < 60; i++) want[i] = (double)expf((float)xv[i]);
        ew_check("exp into float64", wide, want);
        free(xv);

        /* In place: x is read just before each element is overwritten. */
        double *before = test_to_doubles(x);
        out = x;
        CHECK_OK(porta_unary(PORTA_NEG, x, &out));
        for (int i = 0; i < 60; i++) want[i] = -before[i];
        ew_check("neg in place", x, want);
        free(before);

        /* An integer from int32 input: exp gives float32, which int32 can't hold. */
        porta_tensor *ints = ew_tensor(&rng, PORTA_I32, 3, sizes, (ew_layout)layout, -3, 3);
        porta_tensor *int_out = ew_empty(&rng, PORTA_I32, 3, sizes, EW_CONTIGUOUS);
        out = int_out;
        CHECK_ERR(porta_unary(PORTA_EXP, ints, &out), PORTA_ERR_DTYPE, "float32");
        CHECK(out == int_out);

        porta_tensor *small = ew_empty(&rng, PORTA_F32, 2, sizes, EW_CONTIGUOUS);
        out = small;
        CHECK_ERR(porta_unary(PORTA_EXP, x, &out), PORTA_ERR_SHAPE, "[4, 3]");
        porta_tensor_release(small);
        porta_tensor_release(ints);
        porta_tensor_release(int_out);
        porta_tensor_release(wide);
        porta_tensor_release(given);
        porta_tensor_release(x);
    }
}

/* Values the random inputs never hit: NaN, infinities, signed zeros,
 * halfway cases and the most negative integers. */
TEST(test_ew_unary_special_values) {
    const float specials[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 0.5f, 1.5f, 2.5f,
                              -0.5f, -2.5f, 1.0f, -1.0f, 1e-40f};
    int64_t n = (int64_t)(sizeof specials / sizeof specials[0]);
    porta_tensor *x;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, specials, &x));
    static const struct {
        porta_unary_op op;
        float want[13];
    } expected[] = {
        {PORTA_ISNAN, {1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {PORTA_ISINF, {0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {PORTA_ISFINITE, {0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
        {PORTA_SIGN, {0, 1, -1, 0, 0, 1, 1, 1, -1, -1, 1, -1, 1}},
        {PORTA_ROUND, {NAN, INFINITY, -INFINITY, -0.0f, 0, 0, 2, 2, -0.0f, -2, 1, -1, 0}},
        {PORTA_ERFINV, {NAN, NAN, NAN, -0.0f, 0, 0.47693628f, NAN, NAN, -0.47693628f, NAN,
                        INFINITY, -INFINITY, 8.86226925e-41f}},
        {PORTA_LOGICAL_NOT, {0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0}},
    };
    for (size_t k = 0; k < sizeof expected / sizeof expected[0]; k++) {
        porta_tensor *out = NULL;
        CHECK_OK(porta_unary(expected[k].op, x, &out));
        double *got = test_to_doubles(out), want[13];
        for (int i = 0; i < 13; i++) want[i] = expected[k].want[i];
        test_close(porta_unary_op_name(expected[k].op), got, want, n, 1e-6, 0);
        if (expected[k].op == PORTA_ROUND) /* -0.5 rounds to -0, not +0 */
            CHECK(signbit(got[8]) && signbit(got[3]));
        free(got);
        porta_tensor_release(out);
    }
    porta_tensor_release(x);

    /* Integer negation and abs wrap at the most negative value, as in torch. */
    const int64_t ints[3] = {INT64_MIN, -7, INT64_MAX};
    int64_t three = 3;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, &three, ints, &x));
    porta_tensor *neg = NULL, *abs_out = NULL;
    CHECK_OK(porta_unary(PORTA_NEG, x, &neg));
    CHECK_OK(porta_unary(PORTA_ABS, x, &abs_out));
    const int64_t *nv = (const int64_t *)core_tensor_data(neg);
    const int64_t *av = (const int64_t *)core_tensor_data(abs_out);
    CHECK(nv[0] == INT64_MIN && nv[1] == 7 && nv[2] == -INT64_MAX);
    CHECK(av[0] == INT64_MIN && av[1] == 7 && av[2] == INT64_MAX);
    porta_tensor_release(neg);
    porta_tensor_release(abs_out);
    porta_tensor_release(x);

    const int8_t small[2] = {INT8_MIN, 5};
    int64_t two = 2;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I8, 1, &two, small, &x));
    neg = NULL;
    CHECK_OK(porta_unary(PORTA_NEG, x, &neg));
    const int8_t *sv = (const int8_t *)core_tensor_data(neg);
    CHECK(sv[0] == INT8_MIN && sv[1] == -5);
    porta_tensor_release(neg);
    porta_tensor_release(x);
}

/* Tensors past the grain run on the pool; scrambled layouts make tasks
 * start and end inside rows. */
TEST(test_ew_unary_threaded) {
    test_rng rng = test_rng_make(104);
    int64_t sizes[3] = {7, 131, 67};
    for (int k = 0; k < CASE_COUNT; k++) {
        porta_unary_op op = cases[k].op;
        if (op != PORTA_EXP && op != PORTA_NEG && op != PORTA_ISNAN && op != PORTA_BITWISE_NOT)
            continue;
        porta_dtype dtypes[3] = {PORTA_F32, PORTA_I32, PORTA_F16};
        for (int t = 0; t < 3; t++) {
            if (!accepts_dtype(&cases[k], dtypes[t])) continue;
            for (int layout = 0; layout < EW_LAYOUT_COUNT; layout++)
                check_case(&rng, &cases[k], dtypes[t], 3, sizes, (ew_layout)layout);
        }
    }
}

TEST(test_ew_unary_out_of_memory) {
    test_rng rng = test_rng_make(105);
    int64_t sizes[2] = {64, 64};
    porta_tensor *x = ew_tensor(&rng, PORTA_I32, 2, sizes, EW_SCRAMBLED, -5, 5), *out = NULL;
    uint64_t held = porta_memory_allocated();
    porta_set_memory_limit(held + 1024);
    /* exp of int32 needs a float32 copy of x and a result: neither fits. */
    CHECK_ERR(porta_unary(PORTA_EXP, x, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
    CHECK(out == NULL);
    porta_set_memory_limit(held + 64 * 64 * 4 + 512);
    /* the float32 copy fits, the result does not */
    CHECK_ERR(porta_unary(PORTA_EXP, x, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
    CHECK(out == NULL);
    porta_set_memory_limit(0);
    CHECK(porta_memory_allocated() == held);
    porta_tensor_release(x);
}
