/* where and fma against references: three-way broadcasting, promotion,
 * scrambled layouts, the pool, and refused dtypes. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "test_elementwise.h"

typedef struct shape_triple {
    int ranks[3];
    int64_t sizes[3][4];
} shape_triple;

static const shape_triple triples[] = {
    {{2, 2, 2}, {{3, 4}, {3, 4}, {3, 4}}},
    {{3, 2, 0}, {{2, 1, 4}, {3, 1}, {0}}},
    {{0, 1, 2}, {{0}, {5}, {2, 1}}},
    {{0, 0, 0}, {{0}, {0}, {0}}},
    {{2, 1, 2}, {{0, 3}, {1}, {1, 3}}},
    {{2, 2, 0}, {{3, 70}, {3, 70}, {0}}}, /* a contiguous, c one value */
    {{2, 0, 2}, {{3, 70}, {0}, {3, 70}}}, /* b one value, c contiguous */
    {{3, 3, 3}, {{5, 41, 67}, {5, 41, 67}, {1, 41, 1}}}, /* past the grain */
};
#define TRIPLE_COUNT ((int)(sizeof triples / sizeof triples[0]))

/* out's multi-index idx, read from each operand with broadcasting. */
static void gather3(const porta_tensor *const *t, double *const *values, const porta_tensor *out,
                    const int64_t *idx, double *got) {
    for (int k = 0; k < 3; k++)
        got[k] = values[k][ew_broadcast_position(out->rank, idx, t[k]->rank, t[k]->sizes)];
}

static void check_ternary(test_rng *rng, porta_ternary_op op, const porta_dtype *dtypes,
                          const shape_triple *s, int layouts) {
    porta_tensor *t[3];
    double low = op == PORTA_FMA ? -4 : -100, high = op == PORTA_FMA ? 4 : 100;
    for (int k = 0; k < 3; k++)
        t[k] = ew_tensor(rng, dtypes[k], s->ranks[k], s->sizes[k], (ew_layout)((layouts >> k) & 1),
                         low, high);
    int first = op == PORTA_WHERE ? 1 : 0;
    porta_operand_type types[3];
    for (int k = first; k < 3; k++)
        types[k - first] = (porta_operand_type){
            dtypes[k], s->ranks[k] ? PORTA_OPERAND_TENSOR : PORTA_OPERAND_ZERO_DIM};
    porta_dtype want_dtype = porta_result_type(types, 3 - first);

    char what[160];
    snprintf(what, sizeof what, "%s of %s, %s, %s (layouts %d)", porta_ternary_op_name(op),
             porta_dtype_name(dtypes[0]), porta_dtype_name(dtypes[1]), porta_dtype_name(dtypes[2]),
             layouts);
    porta_tensor *out = NULL;
    porta_status *status = porta_ternary(op, t[0], t[1], t[2], &out);
    CHECK_MSG(!status, "%s: %s", what, porta_status_message(status));
    if (!status) {
        CHECK_MSG(out->dtype == want_dtype, "%s: gave %s", what, porta_dtype_name(out->dtype));
        int64_t n = porta_tensor_numel(out), idx[PORTA_MAX_RANK] = {0};
        double *values[3] = {test_to_doubles(t[0]), test_to_doubles(t[1]), test_to_doubles(t[2])};
        double *want = malloc((size_t)(n > 0 ? n : 1) * sizeof *want), v[3];
        for (int64_t i = 0; i < n; i++) {
            gather3((const porta_tensor *const *)t, values, out, idx, v);
            for (int k = first; k < 3; k++) v[k] = ew_round_to(want_dtype, v[k]);
            double w = op == PORTA_WHERE ? (v[0] != 0 ? v[1] : v[2]) : v[0] * v[1] + v[2];
            want[i] = ew_round_to(want_dtype, w);
            test_next_index(out->rank, out->sizes, idx);
        }
        ew_check(what, out, want);
        for (int k = 0; k < 3; k++) free(values[k]);
        free(want);
    }
    porta_status_free(status);
    porta_tensor_release(out);
    for (int k = 0; k < 3; k++) porta_tensor_release(t[k]);
}

TEST(test_ew_ternary_where) {
    test_rng rng = test_rng_make(301);
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++)
        for (int s = 0; s < TRIPLE_COUNT; s++)
            for (int layouts = 0; layouts < 8; layouts += s == TRIPLE_COUNT - 1 ? 7 : 1) {
                porta_dtype dtypes[3] = {PORTA_BOOL, ew_all_dtypes[t], ew_all_dtypes[t]};
                check_ternary(&rng, PORTA_WHERE, dtypes, &triples[s], layouts);
            }
    /* where(cond, int32, float64 rank 0) keeps int32 -> float64 rules. */
    porta_dtype mixed[][3] = {{PORTA_BOOL, PORTA_I32, PORTA_F32},
                              {PORTA_BOOL, PORTA_U8, PORTA_I8},
                              {PORTA_BOOL, PORTA_F16, PORTA_BF16}};
    for (int m = 0; m < 3; m++)
        for (int s = 0; s < 3; s++) check_ternary(&rng, PORTA_WHERE, mixed[m], &triples[s], 5);
}

TEST(test_ew_ternary_fma) {
    test_rng rng = test_rng_make(302);
    for (int t = 1; t < TEST_REAL_DTYPE_COUNT; t++) /* every dtype but bool */
        for (int s = 0; s < TRIPLE_COUNT; s++)
            for (int layouts = 0; layouts < 8; layouts += s == TRIPLE_COUNT - 1 ? 7 : 3) {
                porta_dtype dtypes[3] = {ew_all_dtypes[t], ew_all_dtypes[t], ew_all_dtypes[t]};
                check_ternary(&rng, PORTA_FMA, dtypes, &triples[s], layouts);
            }
    porta_dtype mixed[3] = {PORTA_I16, PORTA_F16, PORTA_BOOL};
    check_ternary(&rng, PORTA_FMA, mixed, &triples[1], 2);

    /* Integer fma wraps like PyTorch's integer arithmetic. */
    int64_t one = 1;
    const int8_t a = 100, b = 3, c = 10;
    porta_tensor *ta, *tb, *tc, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I8, 1, &one, &a, &ta));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I8, 1, &one, &b, &tb));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I8, 1, &one, &c, &tc));
    CHECK_OK(porta_ternary(PORTA_FMA, ta, tb, tc, &out));
    CHECK(*(const int8_t *)core_tensor_data(out) == (int8_t)(310 - 256));
    porta_tensor_release(out);
    porta_tensor_release(ta);
    porta_tensor_release(tb);
    porta_tensor_release(tc);
}

TEST(test_ew_ternary_errors) {
    test_rng rng = test_rng_make(303);
    int64_t sizes[2] = {2, 3}, other[2] = {4, 3};
    porta_tensor *f = ew_tensor(&rng, PORTA_F32, 2, sizes, EW_CONTIGUOUS, 0, 1);
    porta_tensor *flags = ew_tensor(&rng, PORTA_BOOL, 2, sizes, EW_CONTIGUOUS, 0, 1);
    porta_tensor *wide = ew_tensor(&rng, PORTA_F32, 2, other, EW_CONTIGUOUS, 0, 1), *out = NULL;
    CHECK_ERR(porta_ternary(PORTA_WHERE, f, f, f, &out), PORTA_ERR_DTYPE, "bool condition");
    CHECK_ERR(porta_ternary(PORTA_WHERE, flags, f, wide, &out), PORTA_ERR_SHAPE,
              "cannot be broadcast");
    CHECK_ERR(porta_ternary(PORTA_FMA, flags, flags, flags, &out), PORTA_ERR_DTYPE, "bool");
    CHECK_ERR(porta_ternary((porta_ternary_op)7, f, f, f, &out), PORTA_ERR_INVALID_ARGUMENT,
              "out of range");
    CHECK_ERR(porta_ternary(PORTA_FMA, f, NULL, f, &out), PORTA_ERR_INVALID_ARGUMENT, "input 1");
    CHECK(out == NULL);

    /* fma in place into its addend, and out of memory on the way. */
    double *fv = test_to_doubles(f), want[6];
    out = f;
    CHECK_OK(porta_ternary(PORTA_FMA, f, f, f, &out));
    for (int i = 0; i < 6; i++) want[i] = (double)((float)fv[i] * (float)fv[i] + (float)fv[i]);
    ew_check("fma in place", f, want);
    free(fv);
    porta_tensor *ints = ew_tensor(&rng, PORTA_I32, 2, sizes, EW_CONTIGUOUS, 0, 5);
    uint64_t held = porta_memory_allocated();
    porta_set_memory_limit(held + 30); /* the float32 copy of ints needs 24 bytes, out 24 more */
    out = NULL;
    CHECK_ERR(porta_ternary(PORTA_WHERE, flags, ints, f, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
    porta_set_memory_limit(0);
    CHECK(out == NULL && porta_memory_allocated() == held);
    porta_tensor_release(ints);
    porta_tensor_release(f);
    porta_tensor_release(flags);
    porta_tensor_release(wide);
}
