/* Random programs of elementwise ops, reductions, views, casts, in-place
 * writes and matrix products, run eagerly and then fused: every tensor the
 * program still holds must come out the same. This is the scheduler's
 * safety net: whatever it fuses, each element must see its reads and
 * writes in program order. */
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define POOL 10
#define STEPS 14
#define PROGRAMS 60

typedef struct program_state {
    porta_tensor *pool[POOL];
    int count;
} program_state;

static void drop(program_state *s, int i) {
    porta_tensor_release(s->pool[i]);
    s->pool[i] = s->pool[--s->count];
}

static void keep(program_state *s, porta_tensor *t) {
    if (!t) return;
    if (s->count == POOL) drop(s, 0);
    s->pool[s->count++] = t;
}

static bool same_shape(const porta_tensor *a, const porta_tensor *b) {
    return porta_tensor_rank(a) == porta_tensor_rank(b) &&
           !memcmp(porta_tensor_sizes(a), porta_tensor_sizes(b),
                   (size_t)porta_tensor_rank(a) * sizeof(int64_t));
}

/* One random step; errors (shapes that do not broadcast) are skipped alike
 * in both runs, since the same choices are made from the same seed. */
static void step(program_state *s, test_rng *rng) {
    int choice = (int)test_int(rng, 0, 13);
    porta_tensor *a = s->pool[test_int(rng, 0, s->count - 1)];
    porta_tensor *b = s->pool[test_int(rng, 0, s->count - 1)];
    porta_tensor *out = NULL;
    porta_status *status = NULL;
    static const porta_unary_op unary[] = {PORTA_EXP, PORTA_TANH, PORTA_NEG, PORTA_SIGMOID,
                                           PORTA_ABS, PORTA_SQRT};
    static const porta_binary_op binary[] = {PORTA_ADD, PORTA_MUL, PORTA_MAXIMUM, PORTA_SUB,
                                             PORTA_MINIMUM};
    switch (choice) {
    case 0: case 1: {
        porta_unary_op op = unary[test_int(rng, 0, 5)];
        porta_tensor *x = a;
        porta_tensor *absolute = NULL;
        if (op == PORTA_SQRT) status = porta_unary(PORTA_ABS, a, &absolute), x = absolute;
        if (op == PORTA_EXP) status = porta_unary(PORTA_TANH, a, &absolute), x = absolute;
        if (!status) status = porta_unary(op, x, &out);
        porta_tensor_release(absolute);
        break;
    }
    case 2: case 3: case 4: {
        porta_binary_op op = binary[test_int(rng, 0, 4)];
        bool in_place = test_int(rng, 0, 2) == 0 && porta_tensor_dtype(a) == PORTA_F32;
        if (in_place) {
            porta_tensor *target = a;
            status = porta_binary(op, a, b, &target);
            if (!status && target != a) porta_tensor_release(target);
        } else {
            status = porta_binary(op, a, b, &out);
        }
        break;
    }
    case 5: {
        int rank = porta_tensor_rank(a);
        if (rank == 0) break;
        const int axis[] = {rank - 1};
        porta_reduce_op op = test_int(rng, 0, 1) ? PORTA_REDUCE_SUM : PORTA_REDUCE_MAX;
        status = porta_reduce(op, a, axis, 1, test_int(rng, 0, 1), &out);
        break;
    }
    case 6:
        if (porta_tensor_rank(a) == 2) status = porta_permute(a, (const int[]){1, 0}, &out);
        break;
    case 7: {
        static const porta_dtype dtypes[] = {PORTA_F16, PORTA_F64, PORTA_F32};
        status = porta_cast(a, dtypes[test_int(rng, 0, 2)], &out);
        break;
    }
    case 8: {
        porta_tensor *cond = NULL;
        status = porta_binary(PORTA_GT, a, b, &cond);
        if (!status) status = porta_ternary(PORTA_WHERE, cond, a, b, &out);
        porta_tensor_release(cond);
        break;
    }
    case 9:
        if (s->count > 3) drop(s, (int)test_int(rng, 0, s->count - 1));
        break;
    case 10:
        if (porta_tensor_dtype(a) == PORTA_F32) status = porta_fill(a, 0.75);
        break;
    case 11:
        if (porta_tensor_rank(a) == 2 && porta_tensor_sizes(a)[0] >= 5)
            status = porta_slice(a, 0, 1, 5, 2, &out);
        break;
    case 12:
        status = porta_matmul(a, b, &out);
        break;
    case 13:
        if (porta_tensor_rank(a) == 2)
            status = porta_reduce(PORTA_REDUCE_SUM, a, (const int[]){0}, 1, false, &out);
        break;
    }
    if (status) {
        porta_status_free(status);
        porta_tensor_release(out);
        return;
    }
    (void)same_shape;
    keep(s, out);
}

static void start(program_state *s, uint64_t seed) {
    test_rng rng = test_rng_make(seed);
    static const int64_t shapes[][2] = {{6, 10}, {6, 1}, {1, 10}, {10, 6}, {6, 10}};
    s->count = 0;
    for (int i = 0; i < 5; i++)
        keep(s, test_random_tensor(&rng, PORTA_F32, 2, shapes[i], 0.5, 1.5));
    keep(s, test_random_tensor(&rng, PORTA_F32, 1, (const int64_t[]){10}, 0.5, 1.5));
}

static void run_program(program_state *s, uint64_t seed) {
    start(s, seed);
    test_rng rng = test_rng_make(seed * 7919 + 1);
    for (int i = 0; i < STEPS; i++) step(s, &rng);
}

/* Values of t as doubles (contiguous copy through an eager cast). */
static double *values(const porta_tensor *t, int64_t *n) {
    porta_tensor *wide = NULL;
    *n = porta_tensor_numel(t);
    double *host = malloc((size_t)(*n ? *n : 1) * sizeof *host);
    porta_status *status = porta_cast(t, PORTA_F64, &wide);
    if (!status) status = porta_tensor_to_host(wide, host, (size_t)*n * sizeof *host);
    porta_tensor_release(wide);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        free(host);
        return NULL;
    }
    return host;
}

TEST(test_fusion_random_programs_match_eager) {
    test_cache_begin();
    porta_compiler_stats_reset();
    for (int p = 0; p < PROGRAMS; p++) {
        program_state eager = {0}, fused = {0};
        run_program(&eager, (uint64_t)p + 1);
        CHECK_OK(porta_set_fusion(true));
        run_program(&fused, (uint64_t)p + 1);
        porta_status *status = porta_set_fusion(false); /* flushes */
        if (status) {
            test_fail(__FILE__, __LINE__, "program %d: %s", p, porta_status_message(status));
            porta_status_free(status);
        }
        CHECK_MSG(eager.count == fused.count, "program %d: pool sizes differ", p);
        for (int i = 0; i < eager.count && i < fused.count; i++) {
            int64_t n, m;
            double *x = values(eager.pool[i], &n), *y = values(fused.pool[i], &m);
            bool half = porta_tensor_dtype(eager.pool[i]) == PORTA_F16;
            for (int64_t k = 0; x && y && k < n && k < m; k++) {
                double tolerance = (half ? 1e-2 : 1e-5) * (1 + fabs(x[k]));
                if (!(fabs(x[k] - y[k]) <= tolerance) && !(isnan(x[k]) && isnan(y[k]))) {
                    test_fail(__FILE__, __LINE__, "program %d tensor %d element %lld: %g vs %g",
                              p, i, (long long)k, x[k], y[k]);
                    break;
                }
            }
            free(x);
            free(y);
        }
        while (eager.count) drop(&eager, 0);
        while (fused.count) drop(&fused, 0);
    }
    porta_compiler_stats stats;
    porta_compiler_stats_get(&stats);
    CHECK_MSG(stats.kernels_run > PROGRAMS, "only %llu fused kernels ran",
              (unsigned long long)stats.kernels_run);
    printf("    %llu fused kernels over %llu primitives, %llu primitives alone\n",
           (unsigned long long)stats.kernels_run, (unsigned long long)stats.prims_fused,
           (unsigned long long)stats.prims_alone);
    test_cache_end();
}
