/* Random fills: Philox known answers, the element-to-counter mapping,
 * determinism, split fills, statistics, strided destinations, errors. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/philox.h"
#include "runtime/tensor.h"
#include "ops/run.h"
#include "test.h"

static const porta_dtype float_dtypes[] = {PORTA_F16, PORTA_BF16, PORTA_F32, PORTA_F64};
#define FLOAT_DTYPE_COUNT 4

/* A fresh contiguous tensor filled by uniform (normal == false) or normal. */
static porta_tensor *filled(porta_dtype dtype, int64_t n, bool normal, uint64_t seed,
                            uint64_t offset, double a, double b) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_empty(test_cpu(), dtype, 1, &n, &t);
    if (!status)
        status = normal ? porta_random_normal(t, seed, offset, a, b)
                        : porta_random_uniform(t, seed, offset, a, b);
    if (status) {
        test_fail(__FILE__, __LINE__, "fill failed: %s", porta_status_message(status));
        porta_status_free(status);
        porta_tensor_release(t);
        return NULL;
    }
    return t;
}

/* Random123's published known-answer vectors for philox4x32_10. */
TEST(test_random_philox_known_answers) {
    const struct {
        uint32_t counter[4], key[2], want[4];
    } cases[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
         {0xffffffff, 0xffffffff},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
         {0xa4093822, 0x299f31d0},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        core_philox_words counter;
        memcpy(counter.x, cases[c].counter, sizeof counter.x);
        core_philox_words got = core_philox4x32_10(counter, cases[c].key[0], cases[c].key[1]);
        for (int i = 0; i < 4; i++)
            CHECK_MSG(got.x[i] == cases[c].want[i], "case %zu word %d: 0x%08x, expected 0x%08x",
                      c, i, got.x[i], cases[c].want[i]);
    }
    /* Block b's counter is {lo32(b), hi32(b), 0, 0}, its key the seed. */
    core_philox_words counter = {{0x89abcdefu, 0x01234567u, 0, 0}};
    core_philox_words direct = core_philox4x32_10(counter, 0x9abcdef0u, 0x12345678u);
    core_philox_words block = core_philox_block(0x123456789abcdef0ull, 0x0123456789abcdefull);
    CHECK(memcmp(&direct, &block, sizeof direct) == 0);
}

/* Element i equals the documented formula at stream position offset + i. */
TEST(test_random_follows_documented_mapping) {
    const uint64_t seed = 0xfeedbeefcafe1234ull, offset = 4 * 0x123456789ull + 3;
    const int64_t n = 37;
    porta_tensor *u = filled(PORTA_F32, n, false, seed, offset, -1.0, 3.0);
    porta_tensor *z = filled(PORTA_F32, n, true, seed, offset, 0.5, 2.0);
    porta_tensor *z64 = filled(PORTA_F64, n, true, seed, offset, 0.5, 2.0);
    if (!u || !z || !z64) goto done;
    const float *uf = (const float *)core_tensor_data(u), *zf = (const float *)core_tensor_data(z);
    const double *zd = (const double *)core_tensor_data(z64);
    for (int64_t i = 0; i < n; i++) {
        uint64_t position = offset + (uint64_t)i;
        core_philox_words w = core_philox_block(seed, position / 4);
        unsigned lane = (unsigned)(position % 4), even = lane & ~1u;
        float want_u = -1.0f + 4.0f * ((float)(w.x[lane] >> 8) * 0x1p-24f);
        CHECK_MSG(uf[i] == want_u, "uniform %lld: %.9g vs %.9g", (long long)i, uf[i], want_u);
        float z0, z1;
        core_philox_box_muller_f32(w.x[even], w.x[even + 1], &z0, &z1);
        float want_z = 0.5f + 2.0f * (lane & 1 ? z1 : z0);
        CHECK_MSG(zf[i] == want_z, "normal %lld: %.9g vs %.9g", (long long)i, zf[i], want_z);
        double d0, d1;
        core_philox_box_muller_f64(w.x[even], w.x[even + 1], &d0, &d1);
        double want_d = 0.5 + 2.0 * (lane & 1 ? d1 : d0);
        CHECK_MSG(zd[i] == want_d, "normal f64 %lld: %.17g vs %.17g", (long long)i, zd[i],
                  want_d);
        /* Box-Muller: the radius comes from (word >> 8) + 1, never 0. */
        CHECK(core_philox_unit_nonzero(0) > 0.0f && core_philox_unit_nonzero(~0u) == 1.0f);
    }
done:
    porta_tensor_release(u);
    porta_tensor_release(z);
    porta_tensor_release(z64);
}

TEST(test_random_is_deterministic) {
    for (int d = 0; d < FLOAT_DTYPE_COUNT; d++) {
        for (int normal = 0; normal < 2; normal++) {
            porta_tensor *a = filled(float_dtypes[d], 1000, normal, 42, 7, 0.0, 1.0);
            porta_tensor *b = filled(float_dtypes[d], 1000, normal, 42, 7, 0.0, 1.0);
            porta_tensor *c = filled(float_dtypes[d], 1000, normal, 43, 7, 0.0, 1.0);
            if (a && b && c) {
                size_t bytes = 1000 * porta_dtype_size(float_dtypes[d]);
                CHECK(memcmp(core_tensor_data(a), core_tensor_data(b), bytes) == 0);
                CHECK(memcmp(core_tensor_data(a), core_tensor_data(c), bytes) != 0);
            }
            porta_tensor_release(a);
            porta_tensor_release(b);
            porta_tensor_release(c);
        }
    }
}

/* Filling n elements at offset o and m at o + n equals n + m at o, wherever
 * the split falls relative to Philox blocks and Box-Muller pairs. */
TEST(test_random_split_fills_concatenate) {
    const int64_t splits[] = {0, 1, 3, 4, 7, 10, 20};
    for (int d = 0; d < FLOAT_DTYPE_COUNT; d++) {
        porta_dtype dtype = float_dtypes[d];
        size_t elem = porta_dtype_size(dtype);
        for (int normal = 0; normal < 2; normal++) {
            for (uint64_t offset = 0; offset < 3; offset++) {
                porta_tensor *whole = filled(dtype, 20, normal, 99, offset, -2.0, 5.0);
                for (size_t s = 0; s < sizeof splits / sizeof splits[0] && whole; s++) {
                    int64_t k = splits[s];
                    porta_tensor *head = filled(dtype, k, normal, 99, offset, -2.0, 5.0);
                    porta_tensor *tail =
                        filled(dtype, 20 - k, normal, 99, offset + (uint64_t)k, -2.0, 5.0);
                    if (head && tail) {
                        const char *w = core_tensor_data(whole);
                        CHECK_MSG(memcmp(w, core_tensor_data(head), (size_t)k * elem) == 0 &&
                                      memcmp(w + (size_t)k * elem, core_tensor_data(tail),
                                             (size_t)(20 - k) * elem) == 0,
                                  "%s %s split at %lld, offset %llu",
                                  porta_dtype_name(dtype), normal ? "normal" : "uniform",
                                  (long long)k, (unsigned long long)offset);
                    }
                    porta_tensor_release(head);
                    porta_tensor_release(tail);
                }
                porta_tensor_release(whole);
            }
        }
    }
}

/* Stream positions wrap modulo 2^64: a fill across the end continues at 0. */
TEST(test_random_offset_wraps_around) {
    for (int normal = 0; normal < 2; normal++) {
        porta_tensor *across = filled(PORTA_F32, 12, normal, 3, UINT64_MAX - 5, 0.0, 1.0);
        porta_tensor *before = filled(PORTA_F32, 6, normal, 3, UINT64_MAX - 5, 0.0, 1.0);
        porta_tensor *after = filled(PORTA_F32, 6, normal, 3, 0, 0.0, 1.0);
        if (across && before && after) {
            const char *a = core_tensor_data(across);
            CHECK(memcmp(a, core_tensor_data(before), 6 * sizeof(float)) == 0);
            CHECK(memcmp(a + 6 * sizeof(float), core_tensor_data(after), 6 * sizeof(float)) ==
                  0);
        }
        porta_tensor_release(across);
        porta_tensor_release(before);
        porta_tensor_release(after);
    }
}

static void moments(const porta_tensor *t, double *mean, double *var, double *lo, double *hi) {
    double *v = test_to_doubles(t);
    int64_t n = porta_tensor_numel(t);
    double sum = 0.0, sq = 0.0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        sum += v[i];
        if (v[i] < *lo) *lo = v[i];
        if (v[i] > *hi) *hi = v[i];
    }
    *mean = sum / (double)n;
    for (int64_t i = 0; i < n; i++) sq += (v[i] - *mean) * (v[i] - *mean);
    *var = sq / (double)(n - 1);
    free(v);
}

TEST(test_random_statistics_of_a_million_samples) {
    const int64_t n = 1000000;
    for (int d = 0; d < FLOAT_DTYPE_COUNT; d++) {
        porta_dtype dtype = float_dtypes[d];
        double mean, var, lo, hi;
        /* U[-2, 3): mean 0.5, variance 25/12; the mean's standard error is
         * 0.0014, so 0.01 is a > 7 sigma bound. */
        porta_tensor *u = filled(dtype, n, false, 2024, 12345, -2.0, 3.0);
        if (u) {
            moments(u, &mean, &var, &lo, &hi);
            CHECK_MSG(fabs(mean - 0.5) < 0.01, "%s uniform mean %g", porta_dtype_name(dtype),
                      mean);
            CHECK_MSG(fabs(var - 25.0 / 12.0) < 0.02, "%s uniform variance %g",
                      porta_dtype_name(dtype), var);
            CHECK_MSG(lo >= -2.0 && hi < 3.0, "%s uniform range [%g, %g]",
                      porta_dtype_name(dtype), lo, hi);
        }
        porta_tensor_release(u);
        /* N(1.5, 2^2) */
        porta_tensor *z = filled(dtype, n, true, 2024, 12345, 1.5, 2.0);
        if (z) {
            moments(z, &mean, &var, &lo, &hi);
            CHECK_MSG(fabs(mean - 1.5) < 0.02, "%s normal mean %g", porta_dtype_name(dtype),
                      mean);
            CHECK_MSG(fabs(var - 4.0) < 0.06, "%s normal variance %g", porta_dtype_name(dtype),
                      var);
            CHECK_MSG(lo < 1.5 - 8.0 && hi > 1.5 + 8.0, "%s normal tails [%g, %g]",
                      porta_dtype_name(dtype), lo, hi);
        }
        porta_tensor_release(z);
    }
}

/* Rounding to a narrow dtype must not produce `high`. */
TEST(test_random_uniform_stays_below_high) {
    for (int d = 0; d < FLOAT_DTYPE_COUNT; d++) {
        porta_tensor *u = filled(float_dtypes[d], 200000, false, 5, 0, 0.0, 1.0);
        porta_tensor *v = filled(float_dtypes[d], 200000, false, 5, 0, 2.0, 2.0);
        if (u && v) {
            double mean, var, lo, hi;
            moments(u, &mean, &var, &lo, &hi);
            CHECK_MSG(lo >= 0.0 && hi < 1.0, "%s: [%g, %g]", porta_dtype_name(float_dtypes[d]),
                      lo, hi);
            moments(v, &mean, &var, &lo, &hi); /* low == high gives low */
            CHECK(lo == 2.0 && hi == 2.0);
        }
        porta_tensor_release(u);
        porta_tensor_release(v);
    }
}

/* Element i of a strided destination, in row-major logical order, gets the
 * same value as element i of a contiguous one. */
TEST(test_random_strided_destination) {
    for (int d = 0; d < FLOAT_DTYPE_COUNT; d++) {
        porta_dtype dtype = float_dtypes[d];
        for (int normal = 0; normal < 2; normal++) {
            int64_t sizes[3] = {5, 6, 7};
            porta_tensor *base = NULL, *permuted = NULL, *view = NULL, *flat = NULL;
            CHECK_OK(porta_tensor_empty(test_cpu(), dtype, 3, sizes, &base));
            /* A [6, 7, 5] view: permuted, then every other row walked
             * backwards: strides neither contiguous nor positive. */
            int dims[3] = {1, 2, 0};
            porta_status *status = porta_permute(base, dims, &permuted);
            if (!status) status = porta_slice(permuted, 0, 5, -100, -2, &view);
            if (!status)
                status = normal ? porta_random_normal(view, 17, 3, 0.0, 1.0)
                                : porta_random_uniform(view, 17, 3, 0.0, 1.0);
            int64_t n = view ? porta_tensor_numel(view) : 0;
            if (!status) flat = filled(dtype, n, normal, 17, 3, 0.0, 1.0);
            if (status) {
                test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
                porta_status_free(status);
            } else if (flat) {
                CHECK(porta_tensor_strides(view)[0] < 0);
                double *got = test_to_doubles(view), *want = test_to_doubles(flat);
                CHECK(test_close("strided random", got, want, n, 0.0, 0.0));
                free(got);
                free(want);
            }
            porta_tensor_release(flat);
            porta_tensor_release(view);
            porta_tensor_release(permuted);
            porta_tensor_release(base);
        }
    }
}

/* Large enough to be split over threads, with each thread's share starting
 * mid-row of a transposed destination. */
TEST(test_random_large_transposed_destination) {
    int64_t sizes[2] = {301, 203};
    for (int normal = 0; normal < 2; normal++) {
        porta_tensor *base = NULL, *view = NULL;
        CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 2, sizes, &base));
        int dims[2] = {1, 0};
        CHECK_OK(porta_permute(base, dims, &view));
        porta_status *status = normal ? porta_random_normal(view, 77, 5, 1.0, 3.0)
                                      : porta_random_uniform(view, 77, 5, 1.0, 3.0);
        porta_tensor *flat = filled(PORTA_F32, 301 * 203, normal, 77, 5, 1.0, 3.0);
        if (status) {
            test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
            porta_status_free(status);
        } else if (flat) {
            double *got = test_to_doubles(view), *want = test_to_doubles(flat);
            CHECK(test_close("transposed random", got, want, 301 * 203, 0.0, 0.0));
            free(got);
            free(want);
        }
        porta_tensor_release(flat);
        porta_tensor_release(view);
        porta_tensor_release(base);
    }
}

TEST(test_random_scalar_and_empty) {
    porta_tensor *scalar = NULL, *empty = NULL;
    int64_t sizes[2] = {3, 0};
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 0, NULL, &scalar));
    CHECK_OK(porta_random_uniform(scalar, 1, 6, 0.0, 1.0));
    porta_tensor *ref = filled(PORTA_F32, 1, false, 1, 6, 0.0, 1.0);
    if (ref) CHECK(*(float *)core_tensor_data(scalar) == *(float *)core_tensor_data(ref));
    porta_tensor_release(ref);
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F64, 2, sizes, &empty));
    CHECK_OK(porta_random_normal(empty, 1, 0, 0.0, 1.0));
    porta_tensor_release(empty);
    porta_tensor_release(scalar);
}

/* A graph node and a prim run without a destination both produce the
 * documented stream. */
TEST(test_random_graph_and_prim) {
    porta_graph *graph = NULL;
    CHECK_OK(porta_graph_create(&graph));
    int64_t sizes[2] = {4, 5};
    porta_node node;
    porta_status *status = porta_graph_random(graph, PORTA_BF16, 2, sizes, true, 8, 9, &node);
    if (!status) status = porta_graph_output(graph, node);
    porta_tensor *from_graph = NULL;
    if (!status) status = porta_graph_run(graph, test_cpu(), NULL, 0, &from_graph, 1);
    porta_tensor *fresh = NULL;
    if (!status) {
        ir_prim prim;
        memset(&prim, 0, sizeof prim);
        prim.kind = PRIM_RANDOM;
        prim.normal = true;
        prim.dtype = PORTA_BF16;
        prim.rank = 2;
        memcpy(prim.sizes, sizes, sizeof sizes);
        prim.seed = 8;
        prim.offset = 9;
        prim.value2 = 1.0;
        status = ops_prim_run(&prim, NULL, 0, &fresh);
    }
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    } else {
        porta_tensor *want = filled(PORTA_BF16, 20, true, 8, 9, 0.0, 1.0);
        if (want) {
            double *a = test_to_doubles(from_graph), *b = test_to_doubles(fresh);
            double *w = test_to_doubles(want);
            CHECK(test_close("graph random", a, w, 20, 0.0, 0.0));
            CHECK(test_close("prim random", b, w, 20, 0.0, 0.0));
            free(a);
            free(b);
            free(w);
        }
        porta_tensor_release(want);
    }
    porta_tensor_release(from_graph);
    porta_tensor_release(fresh);
    porta_node bad;
    CHECK_ERR(porta_graph_random(graph, PORTA_I32, 2, sizes, false, 0, 0, &bad), PORTA_ERR_DTYPE,
              "floating-point");
    porta_graph_free(graph);
}

TEST(test_random_errors) {
    porta_tensor *ints = NULL, *floats = NULL;
    int64_t sizes[1] = {4};
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_I32, 1, sizes, &ints));
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 1, sizes, &floats));
    CHECK_ERR(porta_random_uniform(ints, 0, 0, 0.0, 1.0), PORTA_ERR_DTYPE,
              "random.uniform: expected a floating-point dtype");
    CHECK_ERR(porta_random_normal(ints, 0, 0, 0.0, 1.0), PORTA_ERR_DTYPE, "int32");
    CHECK_ERR(porta_random_uniform(floats, 0, 0, 2.0, 1.0), PORTA_ERR_INVALID_ARGUMENT,
              "low <= high");
    CHECK_ERR(porta_random_uniform(floats, 0, 0, 0.0, INFINITY), PORTA_ERR_INVALID_ARGUMENT,
              "finite");
    CHECK_ERR(porta_random_uniform(floats, 0, 0, -1e308, 1e308), PORTA_ERR_INVALID_ARGUMENT,
              "too wide");
    CHECK_ERR(porta_random_normal(floats, 0, 0, 0.0, -1.0), PORTA_ERR_INVALID_ARGUMENT,
              "std >= 0");
    CHECK_ERR(porta_random_normal(floats, 0, 0, 0.0, NAN), PORTA_ERR_INVALID_ARGUMENT, "std");
    CHECK_ERR(porta_random_normal(floats, 0, 0, NAN, 1.0), PORTA_ERR_INVALID_ARGUMENT, "mean");
    CHECK_ERR(porta_random_uniform(NULL, 0, 0, 0.0, 1.0), PORTA_ERR_INVALID_ARGUMENT, "dst");
    porta_tensor_release(ints);
    porta_tensor_release(floats);
}

TEST(test_random_out_of_memory) {
    ir_prim prim;
    memset(&prim, 0, sizeof prim);
    prim.kind = PRIM_RANDOM;
    prim.dtype = PORTA_F32;
    prim.rank = 1;
    prim.sizes[0] = 1000;
    prim.value2 = 1.0;
    porta_tensor *out = NULL;
    porta_set_memory_limit(porta_memory_allocated() + 64);
    CHECK_ERR(ops_prim_run(&prim, NULL, 0, &out), PORTA_ERR_OUT_OF_MEMORY, NULL);
    porta_set_memory_limit(0);
    CHECK(out == NULL);
}
