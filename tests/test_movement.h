/* Helpers shared by the movement and index tests (test_movement*.c,
 * test_index*.c): tensors with scrambled layouts and reference indexing. */
#ifndef PORTA_TEST_MOVEMENT_H
#define PORTA_TEST_MOVEMENT_H

#include "test.h"

/* Every dtype, for loops over all of them. */
extern const porta_dtype test_move_dtypes[TEST_REAL_DTYPE_COUNT];

/* Random sizes in [low, high] for `rank` dims. */
void test_move_random_shape(test_rng *rng, int rank, int64_t low, int64_t high, int64_t *sizes);

/* A tensor of random values (as test_random_tensor) laid out anything but
 * contiguously: dims stored in a random order, some walking backwards
 * (negative strides), with gaps between elements. */
porta_tensor *test_move_scrambled(test_rng *rng, porta_dtype dtype, int rank,
                                  const int64_t *sizes);
/* Contiguous or scrambled, at random. */
porta_tensor *test_move_input(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes);

/* Writes row-major `values` into a CPU tensor of any layout. */
void test_move_fill(porta_tensor *t, const double *values);
/* A contiguous or scrambled (at random) integer tensor with values drawn
 * from [low, high]. */
porta_tensor *test_move_int_tensor(test_rng *rng, porta_dtype dtype, int rank,
                                   const int64_t *sizes, int64_t low, int64_t high);

/* The row-major position of multi-index idx in a tensor of `sizes`. */
int64_t test_move_position(int rank, const int64_t *sizes, const int64_t *idx);
/* Maps an index of out to the index of x it must hold; false when out's
 * element is padding instead. */
typedef bool (*test_move_map)(const void *ctx, const int64_t *out_idx, int64_t *x_idx);
/* Checks every element of out against x through `map` (exactly: both hold
 * the same dtype), padding against `fill` rounded to out's dtype. Records
 * failures under `what`; returns whether all matched. */
bool test_move_check_map(const char *what, const porta_tensor *x, const porta_tensor *out,
                         test_move_map map, const void *ctx, double fill);

/* Whether two tensors share a buffer (one is a view of the other). */
bool test_move_same_buffer(const porta_tensor *a, const porta_tensor *b);

#endif
