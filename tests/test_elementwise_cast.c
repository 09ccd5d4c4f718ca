/* cast, copy and fill: every dtype pair with PyTorch's conversion rules
 * (truncation toward zero, wrapping, NaN -> 0, nonzero -> true, round to
 * nearest even for halves), broadcasting copies, overlapping copies, and
 * fills of any layout. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "backends/cpu/kernels_elementwise.h"
#include "ops/run.h"
#include "test_elementwise.h"

/* Values chosen to cross every conversion rule; each is first rounded to
 * the source dtype. */
static const double specials[] = {
    0.0,   -0.0,  1.0,    -1.0,   2.5,   -3.7,  127.9, 128.0, 255.9, 256.0, -129.5, 1e-8,
    65519, 65520, 1e10,   -1e10,  3e9,   -3e9,  NAN,   INFINITY, -INFINITY, 0.1, 1.5, 100000,
};
#define SPECIAL_COUNT ((int64_t)(sizeof specials / sizeof specials[0]))

/* The conversion PyTorch defines (and core_store_from_double follows). */
static void expect_cast(const char *what, const porta_tensor *x, const porta_tensor *out) {
    int64_t n = porta_tensor_numel(x);
    double *xv = test_to_doubles(x), *got = test_to_doubles(out);
    double *want = malloc((size_t)(n > 0 ? n : 1) * sizeof *want);
    for (int64_t i = 0; i < n; i++) want[i] = ew_round_to(out->dtype, xv[i]);
    test_close(what, got, want, n, 0, 0);
    free(xv);
    free(got);
    free(want);
}

TEST(test_ew_cast_every_dtype_pair) {
    test_rng rng = test_rng_make(401);
    for (int i = 0; i < TEST_REAL_DTYPE_COUNT; i++)
        for (int j = 0; j < TEST_REAL_DTYPE_COUNT; j++) {
            porta_dtype from = ew_all_dtypes[i], to = ew_all_dtypes[j];
            char what[96];
            snprintf(what, sizeof what, "cast %s to %s", porta_dtype_name(from), porta_dtype_name(to));
            /* the special values, in a scrambled layout */
            porta_tensor *x = ew_empty(&rng, from, 1, &(int64_t){SPECIAL_COUNT}, EW_SCRAMBLED), *out = NULL;
            ew_write(x, specials);
            CHECK_OK(porta_cast(x, to, &out));
            CHECK(out->dtype == to && out->rank == 1 && out->sizes[0] == SPECIAL_COUNT);
            expect_cast(what, x, out);
            porta_tensor_release(out);
            porta_tensor_release(x);
            /* random values over every shape and layout */
            for (int s = 0; s < EW_SHAPE_COUNT; s++)
                for (int layout = 0; layout < EW_LAYOUT_COUNT; layout++) {
                    x = ew_tensor(&rng, from, ew_shape_ranks[s], ew_shape_sizes[s],
                                  (ew_layout)layout, -300, 300);
                    out = ew_empty(&rng, to, ew_shape_ranks[s], ew_shape_sizes[s], EW_SCRAMBLED);
                    porta_tensor *given = out;
                    CHECK_OK(porta_copy(x, out));
                    CHECK(out == given);
                    expect_cast(what, x, out);
                    porta_tensor_release(out);
                    porta_tensor_release(x);
                }
        }
}

TEST(test_ew_cast_rules) {
    int64_t n = 6;
    const float values[6] = {-3.7f, 3.7f, -0.5f, 300.0f, NAN, 65520.0f};
    porta_tensor *x, *out = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, values, &x));
    CHECK_OK(porta_cast(x, PORTA_U8, &out));
    const uint8_t *u = (const uint8_t *)core_tensor_data(out);
    CHECK(u[0] == 253 && u[1] == 3 && u[2] == 0 && u[3] == 44 && u[4] == 0);
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_cast(x, PORTA_BOOL, &out));
    const uint8_t *b = (const uint8_t *)core_tensor_data(out);
    CHECK(b[0] == 1 && b[2] == 1 && b[4] == 1); /* NaN is nonzero */
    porta_tensor_release(out);
    out = NULL;
    CHECK_OK(porta_cast(x, PORTA_F16, &out));
    const uint16_t *h = (const uint16_t *)core_tensor_data(out);
    CHECK(h[5] == 0x7c00); /* 65520 rounds up to infinity */
    CHECK((h[4] & 0x7c00) == 0x7c00 && (h[4] & 0x3ff) != 0);
    porta_tensor_release(out);

    /* out= of another dtype: cast to float32, then widened into float64. */
    porta_tensor *wide;
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F64, 1, &n, &wide));
    out = wide;
    CHECK_OK(porta_cast(x, PORTA_F32, &out));
    CHECK(out == wide && ((const double *)core_tensor_data(wide))[0] == (double)-3.7f);
    /* ...but not narrowed from float into an integer out. */
    porta_tensor *ints;
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_I32, 1, &n, &ints));
    out = ints;
    CHECK_ERR(porta_cast(x, PORTA_F32, &out), PORTA_ERR_DTYPE, "int32");
    out = NULL;
    CHECK_ERR(porta_cast(x, (porta_dtype)99, &out), PORTA_ERR_DTYPE, "99");
    CHECK_ERR(porta_cast(NULL, PORTA_F32, &out), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK(out == NULL);
    porta_tensor_release(ints);
    porta_tensor_release(wide);
    porta_tensor_release(x);
}

TEST(test_ew_copy_broadcast_and_overlap) {
    test_rng rng = test_rng_make(402);
    int64_t src_sizes[2] = {3, 1}, dst_sizes[3] = {2, 3, 4};
    porta_tensor *src = ew_tensor(&rng, PORTA_F64, 2, src_sizes, EW_SCRAMBLED, -50, 50);
    porta_tensor *dst = ew_empty(&rng, PORTA_I16, 3, dst_sizes, EW_SCRAMBLED);
    CHECK_OK(porta_copy(src, dst));
    double *sv = test_to_doubles(src), want[24];
    int64_t idx[3] = {0};
    for (int i = 0; i < 24; i++) {
        want[i] = ew_round_to(PORTA_I16, sv[ew_broadcast_position(3, idx, 2, src_sizes)]);
        test_next_index(3, dst_sizes, idx);
    }
    ew_check("copy [3, 1] float64 into [2, 3, 4] int16", dst, want);
    free(sv);

    int64_t wrong[2] = {4, 1};
    porta_tensor *bad = ew_tensor(&rng, PORTA_F64, 2, wrong, EW_CONTIGUOUS, 0, 1);
    CHECK_ERR(porta_copy(bad, dst), PORTA_ERR_SHAPE, "copy");
    CHECK_ERR(porta_copy(dst, src), PORTA_ERR_SHAPE, "copy"); /* rank 3 into rank 2 */
    CHECK_ERR(porta_copy(NULL, dst), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_copy(src, NULL), PORTA_ERR_INVALID_ARGUMENT, NULL);
    porta_tensor_release(bad);

    /* x[1:] = x[:-1] on one buffer: every element moves one place. */
    int64_t total = 50, n = 49, step = 1;
    porta_tensor *base = ew_tensor(&rng, PORTA_I32, 1, &total, EW_CONTIGUOUS, -100, 100);
    porta_tensor *head, *tail;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(base), PORTA_I32, 1, &n, &step, 0, &head));
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(base), PORTA_I32, 1, &n, &step, 1, &tail));
    double *before = test_to_doubles(base);
    CHECK_OK(porta_copy(head, tail));
    ew_check("overlapping copy", tail, before);
    CHECK_OK(porta_copy(tail, tail)); /* onto itself: nothing changes */
    ew_check("copy onto itself", tail, before);
    free(before);

    /* Copies into an expanded tensor would write one element many times. */
    int64_t zero_stride = 0;
    porta_tensor *expanded;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(base), PORTA_I32, 1, &n, &zero_stride, 0, &expanded));
    CHECK_ERR(porta_copy(head, expanded), PORTA_ERR_INVALID_ARGUMENT, "stride 0");
    porta_tensor_release(expanded);
    porta_tensor_release(head);
    porta_tensor_release(tail);
    porta_tensor_release(base);
    porta_tensor_release(src);
    porta_tensor_release(dst);
}

TEST(test_ew_fill_every_dtype_and_layout) {
    test_rng rng = test_rng_make(403);
    const double values[] = {3.7, -1.0, NAN, 1e10, 0.0, -0.0, 65520};
    for (int t = 0; t < TEST_REAL_DTYPE_COUNT; t++)
        for (int s = 0; s < EW_SHAPE_COUNT; s++)
            for (int layout = 0; layout < EW_LAYOUT_COUNT; layout++)
                for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
                    porta_dtype dtype = ew_all_dtypes[t];
                    porta_tensor *dst =
                        ew_empty(&rng, dtype, ew_shape_ranks[s], ew_shape_sizes[s], (ew_layout)layout);
                    CHECK_OK(porta_fill(dst, values[v]));
                    int64_t count = porta_tensor_numel(dst);
                    double *got = test_to_doubles(dst), want = ew_round_to(dtype, values[v]);
                    for (int64_t i = 0; i < count; i++)
                        CHECK_MSG(got[i] == want || (isnan(got[i]) && isnan(want)),
                                  "fill %s with %g: got %g", porta_dtype_name(dtype), values[v], got[i]);
                    free(got);
                    porta_tensor_release(dst);
                }
    /* Large enough for the pool, through a reversed view. */
    int64_t sizes[2] = {301, 257};
    porta_tensor *big = ew_empty(&rng, PORTA_F32, 2, sizes, EW_SCRAMBLED);
    CHECK_OK(porta_fill(big, 0.25));
    double *got = test_to_doubles(big);
    int64_t wrong = 0;
    for (int64_t i = 0; i < 301 * 257; i++) wrong += got[i] != 0.25;
    CHECK(wrong == 0);
    free(got);
    porta_tensor_release(big);

    CHECK_ERR(porta_fill(NULL, 1), PORTA_ERR_INVALID_ARGUMENT, "dst");
}

/* The primitive path the graph executor takes: a fill with no out. */
TEST(test_ew_fill_primitive_without_out) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_FILL;
    prim.dtype = PORTA_I16;
    prim.rank = 2;
    prim.sizes[0] = 3;
    prim.sizes[1] = 2;
    prim.value = -7;
    porta_tensor *out = NULL;
    CHECK_OK(ops_prim_run(&prim, NULL, 0, &out));
    CHECK(out->dtype == PORTA_I16 && out->rank == 2 && out->sizes[0] == 3 && out->sizes[1] == 2);
    const int16_t *v = (const int16_t *)core_tensor_data(out);
    for (int i = 0; i < 6; i++) CHECK(v[i] == -7);
    porta_tensor_release(out);
    out = NULL;
    prim.sizes[1] = -2;
    CHECK_ERR(ops_prim_run(&prim, NULL, 0, &out), PORTA_ERR_SHAPE, "negative");
    prim.sizes[1] = 2;
    prim.dtype = (porta_dtype)-3;
    CHECK_ERR(ops_prim_run(&prim, NULL, 0, &out), PORTA_ERR_DTYPE, NULL);
    CHECK(out == NULL);
}

/* The vectorized float <-> half stage conversions agree bit for bit with
 * core/dtype.h's scalar ones (NaNs only need to stay NaN): every half value
 * widened, and float bit patterns around every rounding boundary narrowed. */
static void check_half_stages(void);

TEST(test_ew_cast_half_stages_match_scalar) {
    check_half_stages(); /* the CPU's best conversions */
    ew_half_force_portable(true);
    check_half_stages();
    ew_half_force_portable(false);
}

static void check_half_stages(void) {
    test_rng rng = test_rng_make(404);
    int64_t all = 65536, count = 1 << 20;
    uint16_t *halves = malloc((size_t)all * sizeof *halves);
    uint32_t *bits = malloc((size_t)count * sizeof *bits);
    for (int64_t i = 0; i < all; i++) halves[i] = (uint16_t)i;
    for (int64_t i = 0; i < count; i++) {
        /* random patterns, and dropped bits at or next to a float16 tie
         * (13 bits) or a bfloat16 tie (16 bits) */
        uint32_t r = (uint32_t)test_int(&rng, 0, 0xffffffffLL);
        if (i % 3 == 1) r = (r & 0xffffe000u) | (uint32_t)test_int(&rng, 0x0ffe, 0x1002);
        if (i % 3 == 2) r = (r & 0xffff0000u) | (uint32_t)test_int(&rng, 0x7ffe, 0x8002);
        bits[i] = r;
    }
    porta_dtype halves_dtypes[2] = {PORTA_F16, PORTA_BF16};
    for (int h = 0; h < 2; h++) {
        porta_dtype half = halves_dtypes[h];
        porta_tensor *x, *wide = NULL, *f, *narrow = NULL;
        CHECK_OK(porta_tensor_from_host(test_cpu(), half, 1, &all, halves, &x));
        CHECK_OK(porta_cast(x, PORTA_F32, &wide));
        const float *w = (const float *)core_tensor_data(wide);
        int64_t wrong = 0;
        for (int64_t i = 0; i < all; i++) {
            float want = half == PORTA_F16 ? core_f16_to_f32(halves[i]) : core_bf16_to_f32(halves[i]);
            wrong += isnan(want) ? !isnan(w[i]) : memcmp(&want, &w[i], 4) != 0;
        }
        CHECK_MSG(wrong == 0, "%s -> float32: %lld values differ", porta_dtype_name(half), (long long)wrong);

        CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &count, bits, &f));
        CHECK_OK(porta_cast(f, half, &narrow));
        const uint16_t *nv = (const uint16_t *)core_tensor_data(narrow);
        const float *fv = (const float *)core_tensor_data(f);
        wrong = 0;
        for (int64_t i = 0; i < count; i++) {
            uint16_t want = half == PORTA_F16 ? core_f32_to_f16(fv[i]) : core_f32_to_bf16(fv[i]);
            bool nan = isnan(fv[i]);
            bool got_nan = half == PORTA_F16 ? (nv[i] & 0x7c00) == 0x7c00 && (nv[i] & 0x3ff)
                                             : (nv[i] & 0x7f80) == 0x7f80 && (nv[i] & 0x7f);
            wrong += nan ? !got_nan : nv[i] != want;
        }
        CHECK_MSG(wrong == 0, "float32 -> %s: %lld values differ", porta_dtype_name(half), (long long)wrong);
        porta_tensor_release(x);
        porta_tensor_release(wide);
        porta_tensor_release(f);
        porta_tensor_release(narrow);
    }
    free(halves);
    free(bits);
}
