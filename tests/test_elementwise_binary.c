/* Binary elementwise ops against double-precision references: every op and
 * dtype, broadcasting (rank 0, size-1 dims, zero-size), scrambled layouts
 * with negative strides, and the pool on large tensors. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "backends/cpu/kernels_elementwise.h"
#include "runtime/tensor.h"
#include "test_elementwise.h"

typedef enum accepts {
    ACCEPTS_ALL,
    ACCEPTS_NUMERIC,  /* not bool */
    ACCEPTS_INT_BOOL, /* not float */
    ACCEPTS_INT       /* integers only */
} accepts;
typedef enum result_kind { RESULT_SAME, RESULT_FLOAT, RESULT_BOOL } result_kind;

typedef double (*binary_ref)(porta_dtype compute, double a, double b);

typedef struct binary_case {
    porta_binary_op op;
    binary_ref ref;
    double a_low, a_high, b_low, b_high;    /* float inputs */
    double ia_low, ia_high, ib_low, ib_high; /* integer inputs */
    bool nonzero_b;                         /* b must keep clear of 0 */
    accepts accepts;
    result_kind result;
} binary_case;

static double ref_add(porta_dtype t, double a, double b) { return (void)t, a + b; }
static double ref_sub(porta_dtype t, double a, double b) { return (void)t, a - b; }
static double ref_mul(porta_dtype t, double a, double b) { return (void)t, a * b; }
static double ref_div(porta_dtype t, double a, double b) { return (void)t, a / b; }
/* Python's floor division and modulo. */
static double ref_floor_divide(porta_dtype t, double a, double b) {
    if (!porta_dtype_is_float(t)) return floor(a / b);
    if (b == 0) return a / b;
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysign(0, a / b);
    double floored = floor(div);
    return div - floored > 0.5 ? floored + 1 : floored;
}
static double ref_remainder(porta_dtype t, double a, double b) {
    double mod = fmod(a, b);
    return (void)t, mod != 0 && (b < 0) != (mod < 0) ? mod + b : mod;
}
static double ref_fmod(porta_dtype t, double a, double b) { return (void)t, fmod(a, b); }
static double ref_pow(porta_dtype t, double a, double b) { return (void)t, pow(a, b); }
static double ref_atan2(porta_dtype t, double a, double b) { return (void)t, atan2(a, b); }
static double ref_maximum(porta_dtype t, double a, double b) {
    return (void)t, isnan(a) || isnan(b) ? NAN : a > b ? a : b;
}
static double ref_minimum(porta_dtype t, double a, double b) {
    return (void)t, isnan(a) || isnan(b) ? NAN : a < b ? a : b;
}
static double ref_and(porta_dtype t, double a, double b) {
    return (void)t, (double)((int64_t)a & (int64_t)b);
}
static double ref_or(porta_dtype t, double a, double b) {
    return (void)t, (double)((int64_t)a | (int64_t)b);
}
static double ref_xor(porta_dtype t, double a, double b) {
    return (void)t, (double)((int64_t)a ^ (int64_t)b);
}
static int bits_of(porta_dtype t) { return (int)porta_dtype_size(t) * 8; }
/* Shifts past the width: 0 to the left, the sign to the right (torch). */
static double ref_shift_left(porta_dtype t, double a, double b) {
    if (b < 0 || b >= bits_of(t)) return 0;
    return (double)(int64_t)((uint64_t)(int64_t)a << (int)b);
}
static double ref_shift_right(porta_dtype t, double a, double b) {
    int widest = bits_of(t) - (t != PORTA_U8);
    return (double)((int64_t)a >> (b < 0 || b >= widest ? widest : (int)b));
}
static double ref_logical_and(porta_dtype t, double a, double b) { return (void)t, a != 0 && b != 0; }
static double ref_logical_or(porta_dtype t, double a, double b) { return (void)t, a != 0 || b != 0; }
static double ref_logical_xor(porta_dtype t, double a, double b) { return (void)t, (a != 0) != (b != 0); }
static double ref_eq(porta_dtype t, double a, double b) { return (void)t, a == b; }
static double ref_ne(porta_dtype t, double a, double b) { return (void)t, a != b; }
static double ref_lt(porta_dtype t, double a, double b) { return (void)t, a < b; }
static double ref_le(porta_dtype t, double a, double b) { return (void)t, a <= b; }
static double ref_gt(porta_dtype t, double a, double b) { return (void)t, a > b; }
static double ref_ge(porta_dtype t, double a, double b) { return (void)t, a >= b; }

/* Comparisons draw from small ranges so equal pairs occur. */
static const binary_case cases[] = {
    {PORTA_ADD, ref_add, -5, 5, -5, 5, -10, 10, -10, 10, false, ACCEPTS_ALL, RESULT_SAME},
    {PORTA_SUB, ref_sub, -5, 5, -5, 5, -10, 10, -10, 10, false, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_MUL, ref_mul, -5, 5, -5, 5, -12, 12, -12, 12, false, ACCEPTS_ALL, RESULT_SAME},
    {PORTA_DIV, ref_div, -5, 5, -4, 4, -10, 10, -10, 10, true, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_FLOOR_DIVIDE, ref_floor_divide, -20, 20, -4, 4, -20, 20, -6, 6, true, ACCEPTS_NUMERIC,
     RESULT_SAME},
    {PORTA_REMAINDER, ref_remainder, -20, 20, -4, 4, -20, 20, -6, 6, true, ACCEPTS_NUMERIC,
     RESULT_SAME},
    {PORTA_FMOD, ref_fmod, -20, 20, -4, 4, -20, 20, -6, 6, true, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_POW, ref_pow, 0.1, 3, -3, 3, -10, 10, 0, 5, false, ACCEPTS_NUMERIC, RESULT_SAME},
    {PORTA_ATAN2, ref_atan2, -5, 5, -5, 5, -10, 10, -10, 10, false, ACCEPTS_ALL, RESULT_FLOAT},
    {PORTA_MAXIMUM, ref_maximum, -5, 5, -5, 5, -10, 10, -10, 10, false, ACCEPTS_ALL, RESULT_SAME},
    {PORTA_MINIMUM, ref_minimum, -5, 5, -5, 5, -10, 10, -10, 10, false, ACCEPTS_ALL, RESULT_SAME},
    {PORTA_BITWISE_AND, ref_and, 0, 0, 0, 0, -100, 100, -100, 100, false, ACCEPTS_INT_BOOL, RESULT_SAME},
    {PORTA_BITWISE_OR, ref_or, 0, 0, 0, 0, -100, 100, -100, 100, false, ACCEPTS_INT_BOOL, RESULT_SAME},
    {PORTA_BITWISE_XOR, ref_xor, 0, 0, 0, 0, -100, 100, -100, 100, false, ACCEPTS_INT_BOOL, RESULT_SAME},
    {PORTA_SHIFT_LEFT, ref_shift_left, 0, 0, 0, 0, -10, 10, -2, 34, false, ACCEPTS_INT, RESULT_SAME},
    {PORTA_SHIFT_RIGHT, ref_shift_right, 0, 0, 0, 0, -100, 100, -2, 34, false, ACCEPTS_INT, RESULT_SAME},
    {PORTA_LOGICAL_AND, ref_logical_and, -1, 1, -1, 1, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_LOGICAL_OR, ref_logical_or, -1, 1, -1, 1, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_LOGICAL_XOR, ref_logical_xor, -1, 1, -1, 1, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_EQ, ref_eq, -2, 2, -2, 2, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_NE, ref_ne, -2, 2, -2, 2, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_LT, ref_lt, -2, 2, -2, 2, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_LE, ref_le, -2, 2, -2, 2, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_GT, ref_gt, -2, 2, -2, 2, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
    {PORTA_GE, ref_ge, -2, 2, -2, 2, -2, 2, -2, 2, false, ACCEPTS_ALL, RESULT_BOOL},
};
#define CASE_COUNT ((int)(sizeof cases / sizeof cases[0]))

static const binary_case *find_case(porta_binary_op op) {
    for (int k = 0; k < CASE_COUNT; k++)
        if (cases[k].op == op) return &cases[k];
    return NULL;
}

static bool accepts_dtype(const binary_case *c, porta_dtype dtype) {
    switch (c->accepts) {
    case ACCEPTS_NUMERIC: return dtype != PORTA_BOOL;
    case ACCEPTS_INT_BOOL: return !porta_dtype_is_float(dtype);
    case ACCEPTS_INT: return !porta_dtype_is_float(dtype) && dtype != PORTA_BOOL;
    default: return true;
    }
}

static porta_dtype result_dtype(const binary_case *c, porta_dtype common) {
    switch (c->result) {
    case RESULT_BOOL: return PORTA_BOOL;
    case RESULT_FLOAT: return porta_dtype_is_float(common) ? common : PORTA_F32;
    default: return common;
    }
}

/* An operand for c with values from its ranges; b avoids integer zeros. */
static porta_tensor *operand(test_rng *rng, const binary_case *c, bool second, porta_dtype dtype,
                             int rank, const int64_t *sizes, ew_layout layout) {
    bool is_float = porta_dtype_is_float(dtype);
    double low = is_float ? (second ? c->b_low : c->a_low) : (second ? c->ib_low : c->ia_low);
    double high = is_float ? (second ? c->b_high : c->a_high) : (second ? c->ib_high : c->ia_high);
    porta_tensor *t = ew_tensor(rng, dtype, rank, sizes, layout, low, high);
    if (t && second && c->nonzero_b) {
        /* Floats keep clear of 0 too, so quotients stay inside float16. */
        double *values = test_to_doubles(t);
        for (int64_t i = 0; i < porta_tensor_numel(t); i++) {
            if (is_float && fabs(values[i]) < 0.25)
                values[i] = values[i] < 0 ? -0.5 : 0.5;
            else if (values[i] == 0)
                values[i] = dtype == PORTA_U8 || test_int(rng, 0, 1) ? 3 : -3;
        }
        ew_write(t, values);
        free(values);
    }
    return t;
}

/* Checks out = op(a, b) elementwise, the reference computed in double from
 * the inputs' values broadcast to out's shape. */
static void expect_result(const char *what, const binary_case *c, const porta_tensor *a,
                          const porta_tensor *b, const porta_tensor *out, porta_dtype compute) {
    int64_t n = porta_tensor_numel(out);
    double *av = test_to_doubles(a), *bv = test_to_doubles(b);
    double *want = malloc((size_t)(n > 0 ? n : 1) * sizeof *want);
    int64_t idx[PORTA_MAX_RANK] = {0};
    for (int64_t i = 0; i < n; i++) {
        double x = av[ew_broadcast_position(out->rank, idx, a->rank, a->sizes)];
        double y = bv[ew_broadcast_position(out->rank, idx, b->rank, b->sizes)];
        double w = c->ref(compute, ew_round_to(compute, x), ew_round_to(compute, y));
        want[i] = porta_dtype_is_float(out->dtype) ? w : ew_round_to(out->dtype, w);
        test_next_index(out->rank, out->sizes, idx);
    }
    ew_check(what, out, want);
    free(av);
    free(bv);
    free(want);
}

typedef struct shape_pair {
    int rank_a, rank_b;
    int64_t a[4], b[4];
} shape_pair;

/* Equal shapes, broadcasting both ways, rank 0 either side, zero-size. */
static const shape_pair pairs[] = {
    {2, 2, {3, 5}, {3, 5}},  {3, 2, {3, 1, 5}, {4, 5}}, {1, 0, {9}, {0}},
    {0, 2, {0}, {2, 3}},     {0, 0, {0}, {0}},          {2, 2, {0, 3}, {1, 3}},
    {4, 1, {2, 1, 3, 4}, {1}}, {2, 3, {4, 1}, {2, 1, 6}},
    /* Longer than a loop block, so the vectorized contiguous paths run. */
    {2, 2, {3, 45}, {3, 45}}, {2, 0, {2, 40}, {0}},  {0, 2, {0}, {2, 40}},
};
#define PAIR_COUNT ((int)(sizeof pairs / sizeof pairs[0]))

static void check_case(test_rng *rng, const binary_case *c, porta_dtype dtype,
                       const shape_pair *p, ew_layout layout_a, ew_layout layout_b) {
    char what[512], da[200], db[200];
    snprintf(what, sizeof what, "%s of %s and %s", porta_binary_op_name(c->op),
             ew_describe(da, sizeof da, dtype, p->rank_a, p->a, layout_a),
             ew_describe(db, sizeof db, dtype, p->rank_b, p->b, layout_b));
    porta_tensor *a = operand(rng, c, false, dtype, p->rank_a, p->a, layout_a);
    porta_tensor *b = operand(rng, c, true, dtype, p->rank_b, p->b, layout_b), *out = NULL;
    porta_status *status = porta_binary(c->op, a, b, &out);
    CHECK_MSG(!status, "%s: %s", what, porta_status_message(status));
    if (!status) {
        CHECK_MSG(out->dtype == result_dtype(c, dtype), "%s: result dtype %s", what,
                  porta_dtype_name(out->dtype));
        expect_result(what, c, a, b, out, result_dtype(c, dtype) == PORTA_BOOL ? dtype : out->dtype);
    }
    porta_status_free(status);
    porta_tensor_release(out);
    porta_tensor_release(a);
    porta_tensor_release(b);
}

/* Steps *isa (start at -1) to the next instruction set this CPU has and
 * makes the binary loops use it; false, with the default restored, after
 * the last. */
static bool force_next_isa(int *isa) {
    for (++*isa; *isa < CPU_ISA_COUNT; ++*isa)
        if (ew_binary_isa_force((cpu_isa)*isa)) return true;
    ew_binary_isa_reset();
    return false;
}

TEST(test_ew_binary_every_op_dtype_and_shape) {
    test_rng rng = test_rng_make(201);
    for (int isa = -1; force_next_isa(&isa);)
        for (int k = 0; k < CASE_COUNT; k++)
            for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
                if (!accepts_dtype(&cases[k], ew_all_dtypes[t])) continue;
                for (int p = 0; p < PAIR_COUNT; p++)
                    for (int layouts = 0; layouts < 4; layouts++)
                        check_case(&rng, &cases[k], ew_all_dtypes[t], &pairs[p],
                                   (ew_layout)(layouts & 1), (ew_layout)(layouts >> 1));
            }
}

TEST(test_ew_binary_refused_dtypes) {
    test_rng rng = test_rng_make(202);
    int64_t sizes[1] = {4};
    for (int k = 0; k < CASE_COUNT; k++)
        for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++) {
            if (accepts_dtype(&cases[k], ew_all_dtypes[t])) continue;
            porta_tensor *a = ew_tensor(&rng, ew_all_dtypes[t], 1, sizes, EW_CONTIGUOUS, 1, 2);
            porta_tensor *out = NULL;
            CHECK_ERR(porta_binary(cases[k].op, a, a, &out), PORTA_ERR_DTYPE,
                      porta_dtype_name(ew_all_dtypes[t]));
            CHECK(out == NULL);
            porta_tensor_release(a);
        }
    /* Subtraction refuses a bool operand even when the other is not bool. */
    porta_tensor *flags = ew_tensor(&rng, PORTA_BOOL, 1, sizes, EW_CONTIGUOUS, 0, 1);
    porta_tensor *floats = ew_tensor(&rng, PORTA_F32, 1, sizes, EW_CONTIGUOUS, 0, 1), *out = NULL;
    CHECK_ERR(porta_binary(PORTA_SUB, floats, flags, &out), PORTA_ERR_DTYPE, "bool");
    /* Bitwise ops decide on the promoted dtype: int & float is float. */
    porta_tensor *ints = ew_tensor(&rng, PORTA_I32, 1, sizes, EW_CONTIGUOUS, 0, 5);
    CHECK_ERR(porta_binary(PORTA_BITWISE_AND, ints, floats, &out), PORTA_ERR_DTYPE,
              "int32 and float32");
    CHECK_ERR(porta_binary(PORTA_SHIFT_LEFT, ints, floats, &out), PORTA_ERR_DTYPE, NULL);
    CHECK_OK(porta_binary(PORTA_SHIFT_LEFT, flags, ints, &out)); /* promotes to int32 */
    CHECK(out->dtype == PORTA_I32);
    porta_tensor_release(out);
    out = NULL;
    CHECK_ERR(porta_binary((porta_binary_op)PORTA_BINARY_OP_COUNT, ints, ints, &out),
              PORTA_ERR_INVALID_ARGUMENT, "out of range");
    CHECK_ERR(porta_binary(PORTA_ADD, ints, NULL, &out), PORTA_ERR_INVALID_ARGUMENT, "input 1");
    CHECK_ERR(porta_binary(PORTA_ADD, ints, ints, NULL), PORTA_ERR_INVALID_ARGUMENT, "NULL");
    porta_tensor_release(ints);
    porta_tensor_release(flags);
    porta_tensor_release(floats);
}

TEST(test_ew_binary_broadcast_errors) {
    test_rng rng = test_rng_make(203);
    int64_t sa[2] = {2, 3}, sb[2] = {4, 3}, sc[3] = {2, 2, 3};
    porta_tensor *a = ew_tensor(&rng, PORTA_F32, 2, sa, EW_CONTIGUOUS, 0, 1);
    porta_tensor *b = ew_tensor(&rng, PORTA_F32, 2, sb, EW_CONTIGUOUS, 0, 1), *out = NULL;
    CHECK_ERR(porta_binary(PORTA_ADD, a, b, &out), PORTA_ERR_SHAPE, "binary.add: shapes [2, 3] and [4, 3]");
    CHECK(out == NULL);
    /* out= must have the broadcast shape exactly, not just broadcast to it. */
    porta_tensor *wrong = ew_empty(&rng, PORTA_F32, 3, sc, EW_CONTIGUOUS);
    out = wrong;
    CHECK_ERR(porta_binary(PORTA_ADD, a, a, &out), PORTA_ERR_SHAPE, "[2, 2, 3]");
    CHECK(out == wrong);
    porta_tensor_release(wrong);
    porta_tensor_release(a);
    porta_tensor_release(b);
}

/* torch.result_type, rank-0 tensors promoting like zero-dim tensors. */
TEST(test_ew_binary_type_promotion) {
    test_rng rng = test_rng_make(204);
    int64_t sizes[2] = {3, 4};
    for (int i = 0; i < TEST_REAL_DTYPE_COUNT; i++)
        for (int j = 0; j < TEST_REAL_DTYPE_COUNT; j++)
            for (int zero_dim = 0; zero_dim < 2; zero_dim++) {
                porta_dtype ta = ew_all_dtypes[i], tb = ew_all_dtypes[j];
                porta_tensor *a = ew_tensor(&rng, ta, 2, sizes, EW_SCRAMBLED, -3, 3);
                porta_tensor *b = ew_tensor(&rng, tb, zero_dim ? 0 : 2, sizes, EW_CONTIGUOUS, 1, 3);
                porta_operand_type types[2] = {
                    {ta, PORTA_OPERAND_TENSOR},
                    {tb, zero_dim ? PORTA_OPERAND_ZERO_DIM : PORTA_OPERAND_TENSOR}};
                porta_dtype common = porta_result_type(types, 2);
                porta_tensor *out = NULL;
                CHECK_OK(porta_binary(PORTA_MUL, a, b, &out));
                char what[128];
                snprintf(what, sizeof what, "mul of %s and %s%s", porta_dtype_name(ta),
                         porta_dtype_name(tb), zero_dim ? " (rank 0)" : "");
                CHECK_MSG(out->dtype == common, "%s gave %s", what, porta_dtype_name(out->dtype));
                expect_result(what, find_case(PORTA_MUL), a, b, out, common);
                porta_tensor_release(out);
                out = NULL;
                CHECK_OK(porta_binary(PORTA_LT, b, a, &out));
                CHECK(out->dtype == PORTA_BOOL);
                expect_result(what, find_case(PORTA_LT), b, a, out, common);
                porta_tensor_release(out);
                porta_tensor_release(a);
                porta_tensor_release(b);
            }
    /* The examples torch documents. */
    const struct {
        porta_dtype a;
        int rank_b; /* 0: a zero-dim tensor */
        porta_dtype b, want;
    } examples[] = {
        {PORTA_I32, 0, PORTA_F64, PORTA_F64}, {PORTA_F32, 0, PORTA_F64, PORTA_F32},
        {PORTA_I32, 0, PORTA_I64, PORTA_I32}, {PORTA_U8, 2, PORTA_I8, PORTA_I16},
        {PORTA_BOOL, 2, PORTA_F16, PORTA_F16}, {PORTA_F16, 2, PORTA_BF16, PORTA_F32},
        {PORTA_BOOL, 0, PORTA_I8, PORTA_I8},   {PORTA_F16, 0, PORTA_F64, PORTA_F16},
    };
    for (size_t k = 0; k < sizeof examples / sizeof examples[0]; k++) {
        porta_tensor *a = ew_tensor(&rng, examples[k].a, 2, sizes, EW_CONTIGUOUS, 0, 2);
        porta_tensor *b = ew_tensor(&rng, examples[k].b, examples[k].rank_b, sizes, EW_CONTIGUOUS, 0, 2);
        porta_tensor *out = NULL;
        CHECK_OK(porta_binary(PORTA_ADD, a, b, &out));
        CHECK_MSG(out->dtype == examples[k].want, "%s + %s: got %s", porta_dtype_name(examples[k].a),
                  porta_dtype_name(examples[k].b), porta_dtype_name(out->dtype));
        porta_tensor_release(out);
        porta_tensor_release(a);
        porta_tensor_release(b);
    }
}

/* Integer division by zero and negative integer powers are errors; float
 * division by zero gives IEEE results. */
TEST(test_ew_binary_integer_faults) {
    int64_t four = 4;
    const int32_t a_values[4] = {7, -7, 3, 0}, b_values[4] = {2, 0, -1, 5};
    porta_tensor *a, *b, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 1, &four, a_values, &a));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 1, &four, b_values, &b));
    porta_binary_op dividing[3] = {PORTA_FLOOR_DIVIDE, PORTA_REMAINDER, PORTA_FMOD};
    for (int k = 0; k < 3; k++) {
        CHECK_ERR(porta_binary(dividing[k], a, b, &out), PORTA_ERR_INVALID_ARGUMENT,
                  "division by zero");
        CHECK(out == NULL);
    }
    const int32_t exps[4] = {2, 0, -1, 3};
    porta_tensor *e;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 1, &four, exps, &e));
    CHECK_ERR(porta_binary(PORTA_POW, a, e, &out), PORTA_ERR_INVALID_ARGUMENT,
              "negative integer powers");
    CHECK(out == NULL);
    /* True division of integers is float division: x / 0 is inf or nan. */
    CHECK_OK(porta_binary(PORTA_DIV, a, b, &out));
    const float *q = (const float *)core_tensor_data(out);
    CHECK(out->dtype == PORTA_F32 && q[0] == 3.5f && isinf(q[1]) && q[1] < 0 && q[2] == -3.0f);
    porta_tensor_release(out);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(e);
}

/* Results at the edges of the integer ranges and of IEEE arithmetic. */
TEST(test_ew_binary_edge_values) {
    int64_t n = 4;
    const int32_t a32[4] = {INT32_MIN, INT32_MIN, INT32_MAX, -7};
    const int32_t b32[4] = {-1, 1, 1, -1};
    porta_tensor *a, *b, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 1, &n, a32, &a));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 1, &n, b32, &b));
    CHECK_OK(porta_binary(PORTA_FLOOR_DIVIDE, a, b, &out));
    const int32_t *q = (const int32_t *)core_tensor_data(out);
    CHECK(q[0] == INT32_MIN && q[1] == INT32_MIN && q[2] == INT32_MAX && q[3] == 7);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_binary(PORTA_REMAINDER, a, b, &out));
    q = (const int32_t *)core_tensor_data(out);
    CHECK(q[0] == 0 && q[1] == 0 && q[3] == 0);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_binary(PORTA_ADD, a, b, &out)); /* wraps */
    q = (const int32_t *)core_tensor_data(out);
    CHECK(q[0] == INT32_MAX && q[2] == INT32_MIN);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_binary(PORTA_MUL, a, a, &out));
    q = (const int32_t *)core_tensor_data(out);
    CHECK(q[0] == 0 && q[2] == 1 && q[3] == 49);
    porta_tensor_release(out);
    porta_tensor_release(a);
    porta_tensor_release(b);

    /* int64 shifts at and past the width. */
    const int64_t a64[4] = {-5, 3, -5, 1}, b64[4] = {64, 63, 100, 70};
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, &n, a64, &a));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I64, 1, &n, b64, &b));
    out = NULL;
    CHECK_OK(porta_binary(PORTA_SHIFT_LEFT, a, b, &out));
    const int64_t *s = (const int64_t *)core_tensor_data(out);
    CHECK(s[0] == 0 && s[1] == INT64_MIN && s[2] == 0 && s[3] == 0);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_binary(PORTA_SHIFT_RIGHT, a, b, &out));
    s = (const int64_t *)core_tensor_data(out);
    CHECK(s[0] == -1 && s[1] == 0 && s[2] == -1 && s[3] == 0);
    porta_tensor_release(out);
    porta_tensor_release(a);
    porta_tensor_release(b);

    /* NaN propagation, signed zeros and division by zero in floats. */
    const double fa[4] = {NAN, 1.0, 0.0, -0.5}, fb[4] = {1.0, NAN, -3.0, 0.0};
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F64, 1, &n, fa, &a));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F64, 1, &n, fb, &b));
    porta_binary_op nan_ops[2] = {PORTA_MAXIMUM, PORTA_MINIMUM};
    for (int k = 0; k < 2; k++) {
        out = NULL;
        CHECK_OK(porta_binary(nan_ops[k], a, b, &out));
        const double *m = (const double *)core_tensor_data(out);
        CHECK(isnan(m[0]) && isnan(m[1]));
        porta_tensor_release(out);
    }
    out = NULL;
    CHECK_OK(porta_binary(PORTA_FLOOR_DIVIDE, a, b, &out));
    const double *f = (const double *)core_tensor_data(out);
    CHECK(isnan(f[0]) && isnan(f[1]) && f[2] == 0 && signbit(f[2]) && isinf(f[3]) && f[3] < 0);
    porta_tensor_release(out);
    porta_tensor_release(a);
    porta_tensor_release(b);
}

static porta_tensor *view_of(porta_tensor *base, int64_t offset, int64_t n) {
    porta_tensor *v = NULL;
    int64_t stride = 1;
    porta_status *status =
        porta_tensor_view(porta_tensor_buffer(base), porta_tensor_dtype(base), 1, &n, &stride,
                          offset, &v);
    CHECK_MSG(!status, "view: %s", porta_status_message(status));
    porta_status_free(status);
    return v;
}

/* out= aliasing an input: exactly (in place), partially (a shifted view)
 * and through a broadcast read of an element being written. */
TEST(test_ew_binary_in_place_and_overlap) {
    test_rng rng = test_rng_make(205);
    int64_t total = 101, n = 100;
    porta_tensor *base = ew_tensor(&rng, PORTA_F32, 1, &total, EW_CONTIGUOUS, -5, 5);
    porta_tensor *b = ew_tensor(&rng, PORTA_F32, 1, &n, EW_CONTIGUOUS, -5, 5);
    porta_tensor *a = view_of(base, 0, n), *shifted = view_of(base, 1, n);
    double *av = test_to_doubles(a), *bv = test_to_doubles(b), want[100];

    /* shifted = a + b, where shifted[i] is a[i + 1]: a must be read first. */
    porta_tensor *out = shifted;
    CHECK_OK(porta_binary(PORTA_ADD, a, b, &out));
    for (int i = 0; i < n; i++) want[i] = (double)((float)av[i] + (float)bv[i]);
    ew_check("add into a shifted view of an input", shifted, want);

    /* a = a - b in place. */
    free(av);
    av = test_to_doubles(a);
    out = a;
    CHECK_OK(porta_binary(PORTA_SUB, a, b, &out));
    for (int i = 0; i < n; i++) want[i] = (double)((float)av[i] - (float)bv[i]);
    ew_check("sub in place", a, want);

    /* b = b * b[0], b[0] broadcast while b is written. */
    porta_tensor *first = NULL;
    int64_t one = 1, zero_stride = 0;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(b), PORTA_F32, 0, &one, &zero_stride, 0, &first));
    out = b;
    CHECK_OK(porta_binary(PORTA_MUL, b, first, &out));
    for (int i = 0; i < n; i++) want[i] = (double)((float)bv[i] * (float)bv[0]);
    ew_check("mul by a broadcast element of out", b, want);

    /* Writes through an expanded view would race: refused like torch. */
    porta_tensor *expanded = NULL;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(b), PORTA_F32, 1, &n, &zero_stride, 0, &expanded));
    out = expanded;
    CHECK_ERR(porta_binary(PORTA_ADD, a, a, &out), PORTA_ERR_INVALID_ARGUMENT, "stride 0");
    porta_tensor_release(expanded);
    porta_tensor_release(first);
    free(av);
    free(bv);
    porta_tensor_release(a);
    porta_tensor_release(shifted);
    porta_tensor_release(b);
    porta_tensor_release(base);
}

TEST(test_ew_binary_threaded) {
    test_rng rng = test_rng_make(206);
    for (int portable = 0; portable < 2; portable++) { /* half conversions of both kinds */
        ew_half_force_portable(portable);
        check_case(&rng, find_case(PORTA_DIV), PORTA_F16, &(shape_pair){1, 0, {70001}, {0}},
                   EW_CONTIGUOUS, EW_CONTIGUOUS);
        check_case(&rng, find_case(PORTA_SUB), PORTA_BF16, &(shape_pair){1, 1, {70001}, {70001}},
                   EW_CONTIGUOUS, EW_CONTIGUOUS);
    }
    ew_half_force_portable(false);
    const shape_pair big[] = {
        {3, 3, {7, 131, 67}, {7, 131, 67}},
        {3, 2, {7, 131, 67}, {131, 1}},
        {1, 0, {100003}, {0}},
        {0, 1, {0}, {100003}},
    };
    porta_binary_op ops[4] = {PORTA_ADD, PORTA_MUL, PORTA_POW, PORTA_GE};
    porta_dtype dtypes[3] = {PORTA_F32, PORTA_I64, PORTA_BF16};
    for (int k = 0; k < 4; k++)
        for (int t = 0; t < 3; t++)
            for (int p = 0; p < 4; p++)
                for (int layouts = 0; layouts < 4; layouts += 3)
                    check_case(&rng, find_case(ops[k]), dtypes[t], &big[p],
                               (ew_layout)(layouts & 1), (ew_layout)(layouts >> 1));
}

TEST(test_ew_binary_out_of_memory) {
    test_rng rng = test_rng_make(207);
    int64_t sizes[2] = {32, 32};
    porta_tensor *a = ew_tensor(&rng, PORTA_I16, 2, sizes, EW_SCRAMBLED, -5, 5);
    porta_tensor *b = ew_tensor(&rng, PORTA_F32, 2, sizes, EW_CONTIGUOUS, -5, 5), *out = NULL;
    uint64_t held = porta_memory_allocated();
    for (uint64_t room = 0; room <= 2 * 32 * 32 * 4; room += 2048) {
        porta_set_memory_limit(held + room + 1);
        porta_status *status = porta_binary(PORTA_ADD, a, b, &out);
        porta_set_memory_limit(0);
        if (room < 2 * 32 * 32 * 4) {
            CHECK_MSG(status && porta_status_code(status) == PORTA_ERR_OUT_OF_MEMORY,
                      "with %llu bytes free: %s", (unsigned long long)room,
                      porta_status_message(status));
            CHECK(out == NULL);
        } else {
            CHECK_MSG(!status, "with room for both: %s", porta_status_message(status));
        }
        porta_status_free(status);
        CHECK(porta_memory_allocated() == held + (out ? 32 * 32 * 4 : 0));
        porta_tensor_release(out);
        out = NULL;
    }
    porta_tensor_release(a);
    porta_tensor_release(b);
}

/* Transposed inputs take the iterator's tiled walk: 2-D and 3-D
 * permutations, sizes that are not multiples of the tile, past the grain. */
TEST(test_ew_binary_transposed_tiles) {
    test_rng rng = test_rng_make(208);
    const struct {
        int rank;
        int64_t sizes[3], strides[3]; /* a view of a contiguous buffer */
    } views[] = {
        {2, {300, 257}, {1, 300}, },
        {2, {5, 1000}, {1, 5}, },
        {3, {3, 70, 130}, {70, 1, 210}, },  /* compact dim outermost of the two outer */
        {3, {130, 3, 70}, {1, 130 * 70, 130}, },
    };
    porta_dtype dtypes[2] = {PORTA_F32, PORTA_I8};
    for (size_t v = 0; v < sizeof views / sizeof views[0]; v++)
        for (int t = 0; t < 2; t++) {
            int rank = views[v].rank;
            int64_t numel = 1;
            for (int d = 0; d < rank; d++) numel *= views[v].sizes[d];
            porta_tensor *base = ew_tensor(&rng, dtypes[t], 1, &numel, EW_CONTIGUOUS, -50, 50);
            porta_tensor *x, *y = ew_tensor(&rng, dtypes[t], rank, views[v].sizes, EW_CONTIGUOUS, -50, 50);
            CHECK_OK(porta_tensor_view(porta_tensor_buffer(base), dtypes[t], rank, views[v].sizes,
                                       views[v].strides, 0, &x));
            porta_tensor *out = NULL;
            CHECK_OK(porta_binary(PORTA_SUB, x, y, &out));
            char what[64];
            snprintf(what, sizeof what, "transposed view %zu minus contiguous, %s", v,
                     porta_dtype_name(dtypes[t]));
            expect_result(what, find_case(PORTA_SUB), x, y, out, dtypes[t]);
            porta_tensor_release(out);
            porta_tensor_release(x);
            porta_tensor_release(y);
            porta_tensor_release(base);
        }
}

/* Special values through the vectorized contiguous loops of every build:
 * each pair of NaN, infinities, signed zeros, a subnormal and plain numbers,
 * bit for bit against the scalar definitions (NaN-propagating maximum and
 * minimum that keep a when a == b, IEEE arithmetic in float). */
static float special_ref_f32(porta_binary_op op, float a, float b) {
    switch (op) {
    case PORTA_ADD: return a + b;
    case PORTA_SUB: return a - b;
    case PORTA_MUL: return a * b;
    case PORTA_DIV: return a / b;
    case PORTA_MAXIMUM: return isnan(a) ? a : isnan(b) ? b : a < b ? b : a;
    default: return isnan(a) ? a : isnan(b) ? b : b < a ? b : a; /* PORTA_MINIMUM */
    }
}

TEST(test_ew_binary_special_values_vectorized) {
    const float specials[8] = {NAN, -0.0f, 0.0f, INFINITY, -INFINITY, 1.5f, -2.0f, 1e-40f};
    enum { N = 64 };
    float av[N], bv[N];
    for (int i = 0; i < N; i++) {
        av[i] = specials[i % 8];
        bv[i] = specials[i / 8];
    }
    int64_t n = N;
    porta_tensor *a = NULL, *b = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, av, &a));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, bv, &b));
    const porta_binary_op ops[] = {PORTA_ADD,     PORTA_SUB,    PORTA_MUL,
                                   PORTA_DIV,     PORTA_MAXIMUM, PORTA_MINIMUM};
    for (int isa = -1; force_next_isa(&isa);)
        for (int k = 0; k < (int)(sizeof ops / sizeof ops[0]); k++) {
            porta_tensor *out = NULL;
            CHECK_OK(porta_binary(ops[k], a, b, &out));
            if (!out) continue;
            const float *got = (const float *)core_tensor_data(out);
            for (int i = 0; i < N; i++) {
                float want = special_ref_f32(ops[k], av[i], bv[i]);
                bool same = isnan(want) ? isnan(got[i]) : memcmp(&want, &got[i], sizeof want) == 0;
                CHECK_MSG(same, "%s (%s) of %g and %g: %g, want %g", porta_binary_op_name(ops[k]),
                          cpu_isa_name((cpu_isa)isa), (double)av[i], (double)bv[i],
                          (double)got[i], (double)want);
            }
            porta_tensor_release(out);
        }
    porta_tensor_release(a);
    porta_tensor_release(b);
}
