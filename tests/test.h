/* A small test framework: TEST(name) registers a test at load time; CHECK*
 * record failures with file and line and let the test continue. Each test
 * must release everything it allocates: the runner fails a test that leaves
 * libporta memory allocated. */
#ifndef PORTA_TEST_H
#define PORTA_TEST_H

#include <math.h>
#include <stdio.h>

#include "porta.h"

/* The real dtypes (bool .. float64), the ones primitives and kernels take:
 * complex tensors reach no kernel but copies, the aten layer composing
 * complex ops from real ones on their (real, imag) pair views. */
#define TEST_REAL_DTYPE_COUNT (PORTA_F64 + 1)

typedef void (*test_fn)(void);
void test_register(const char *name, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define TEST(name)                                                          \
    static void name(void);                                                 \
    __attribute__((constructor)) static void register_##name(void) {        \
        test_register(#name, name);                                         \
    }                                                                       \
    static void name(void)

#define CHECK(cond)                                                         \
    do {                                                                    \
        if (!(cond)) test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond);     \
    } while (0)

#define CHECK_MSG(cond, ...)                                                \
    do {                                                                    \
        if (!(cond)) test_fail(__FILE__, __LINE__, __VA_ARGS__);            \
    } while (0)

/* Expects success; on error prints the status and returns from the test. */
#define CHECK_OK(expr)                                                      \
    do {                                                                    \
        porta_status *check_status_ = (expr);                               \
        if (check_status_) {                                                \
            test_fail(__FILE__, __LINE__, "%s failed: %s", #expr,           \
                      porta_status_message(check_status_));                 \
            porta_status_free(check_status_);                               \
            return;                                                         \
        }                                                                   \
    } while (0)

/* Expects an error with `code` and a message containing `needle` (or NULL). */
#define CHECK_ERR(expr, code, needle)                                       \
    do {                                                                    \
        porta_status *check_status_ = (expr);                               \
        test_check_error(__FILE__, __LINE__, #expr, check_status_, (code),  \
                         (needle));                                         \
    } while (0)

void test_check_error(const char *file, int line, const char *expr, porta_status *status,
                      porta_code code, const char *needle);

/* ---- helpers shared by the tests ---- */

/* The CPU device (porta:0 in every build). */
porta_device *test_cpu(void);
/* The first device of `backend` ("pjrt", "cuda"), or NULL after saying on
 * stderr why `test` did not run (the backend's reason it is unavailable, or
 * PORTA_VISIBLE_DEVICES hides it); with PORTA_REQUIRE_<BACKEND> set and
 * the devices not hidden, a missing one fails `test`. */
porta_device *test_backend_device(const char *backend, const char *test);
/* Runs a shell command line with stderr joined to stdout, the output (cut
 * to cap - 1 bytes) in `output`; returns its exit code, -1 when it did not
 * exit normally. */
int test_run_command(const char *line, char *output, size_t cap);
/* Deterministic pseudo-random doubles for test data. */
typedef struct test_rng { uint64_t state; } test_rng;
test_rng test_rng_make(uint64_t seed);
double test_uniform(test_rng *rng, double low, double high);
int64_t test_int(test_rng *rng, int64_t low, int64_t high); /* inclusive */
/* A contiguous tensor of random values suited to dtype (small integers for
 * integer dtypes, 0/1 for bool, [low, high) for floats). */
porta_tensor *test_random_tensor(test_rng *rng, porta_dtype dtype, int rank,
                                 const int64_t *sizes, double low, double high);
/* A new contiguous tensor, uninitialised; NULL, with the failure recorded,
 * when it cannot be made. */
porta_tensor *test_empty(porta_dtype dtype, int rank, const int64_t *sizes);
/* A view of `sizes` with `strides` and `offset` on the buffer of `storage`
 * (not consumed); NULL, with the failure recorded, when the view is invalid
 * or storage is NULL (a failed allocation the caller has reported). */
porta_tensor *test_view_on(const porta_tensor *storage, int rank, const int64_t *sizes,
                           const int64_t *strides, int64_t offset);
/* A fresh directory for compiled kernels in $PORTA_CACHE_DIR, so tests
 * never write to the user's cache; test_cache_end removes it (and what the
 * tests left in it) and unsets the variable. Returns the directory. */
const char *test_cache_begin(void);
void test_cache_end(void);
/* Removes a directory tree (files and directories only). */
void test_remove_tree(const char *path);
/* The entries of directory `dir` (not below it), -1 when it cannot be read. */
int test_count_entries(const char *dir);
/* Puts order[0..n) in a random order (Fisher-Yates). */
void test_shuffle(test_rng *rng, int *order, int n);
/* Every element of t, in row-major order of its logical shape, as doubles.
 * Returns a malloc'ed array (free it) of porta_tensor_numel(t) values. */
double *test_to_doubles(const porta_tensor *t);
/* Offset in elements of the element at multi-index idx under strides. */
int64_t test_offset(int rank, const int64_t *idx, const int64_t *strides);
/* Advances a row-major multi-index; returns false after the last one. */
bool test_next_index(int rank, const int64_t *sizes, int64_t *idx);
/* Compares within atol + rtol * |want|; NaNs must match. Records failures
 * (at most a few lines) and returns whether all matched. */
bool test_close(const char *what, const double *got, const double *want, int64_t n,
                double rtol, double atol);
/* Tolerances for comparing a dtype's results with a double reference. */
double test_rtol(porta_dtype dtype);

#endif
