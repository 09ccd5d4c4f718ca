/* Helpers shared by the elementwise tests (test_elementwise*.c): tensors in
 * scrambled layouts, broadcasting positions and dtype-aware comparisons. */
#ifndef PORTA_TEST_ELEMENTWISE_H
#define PORTA_TEST_ELEMENTWISE_H

#include "test.h"

extern const porta_dtype ew_all_dtypes[TEST_REAL_DTYPE_COUNT];

typedef enum ew_layout {
    EW_CONTIGUOUS = 0,
    EW_SCRAMBLED, /* dims stored in a random order, some reversed, some with gaps */
    EW_LAYOUT_COUNT
} ew_layout;

/* Shapes every test walks: rank 0, zero-size, vectors, and higher ranks
 * with size-1 dims. */
#define EW_SHAPE_COUNT 8
extern const int ew_shape_ranks[EW_SHAPE_COUNT];
extern const int64_t ew_shape_sizes[EW_SHAPE_COUNT][4];

/* A CPU tensor of `sizes` in `layout` holding random values: floats drawn
 * from [low, high) and rounded to dtype, integers whole numbers from
 * [low, high] clamped to the dtype, bool 0/1. */
porta_tensor *ew_tensor(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes,
                        ew_layout layout, double low, double high);
/* An uninitialized tensor in `layout` (scrambled ones are views). */
porta_tensor *ew_empty(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes,
                       ew_layout layout);
/* Writes row-major values into t, whatever its layout. */
void ew_write(porta_tensor *t, const double *values);

/* Row-major position, in a tensor of (rank, sizes) broadcast to out's
 * shape, of the element out's multi-index idx reads. */
int64_t ew_broadcast_position(int out_rank, const int64_t *idx, int rank, const int64_t *sizes);
/* v as dtype holds it: rounded for floats, wrapped for integers. */
double ew_round_to(porta_dtype dtype, double v);
/* Compares out with the reference want: exact for integers and bool,
 * within test_rtol (relative and absolute) for floats. */
bool ew_check(const char *what, const porta_tensor *out, const double *want);
/* "float32 [2, 3] scrambled" for messages. */
const char *ew_describe(char *buf, size_t cap, porta_dtype dtype, int rank, const int64_t *sizes,
                        ew_layout layout);

#endif
