/* The conformance suite's cases: one table, built once, that every device
 * runs and compares with the CPU device. A case names a primitive, the
 * inputs it gets (generated on the host from the case's seed) and the
 * parameters of the public call that runs it. Adding a backend adds no
 * cases. */
#ifndef PORTA_TEST_CONFORMANCE_CASES_H
#define PORTA_TEST_CONFORMANCE_CASES_H

#include "ir/prim.h"
#include "porta.h"

#define CONF_MAX_INPUTS 3

/* How an input's values are drawn. */
typedef enum conf_values {
    CONF_RANGE = 0, /* uniform in [low, high) for floats, integers in it otherwise */
    CONF_SPECIAL,   /* like RANGE, with NaN, +-inf, -0.0 and 0.0 mixed in (floats) */
    CONF_INDEX,     /* integers in [0, high]: indices into another input */
    CONF_TIES       /* few distinct integers in [low, high], NaN mixed in for floats */
} conf_values;

typedef struct conf_input {
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    conf_values values;
    double low, high;
    /* Stored with its last two axes swapped and handed to the op as the
     * transposed view: a strided operand. */
    bool transposed;
} conf_input;

typedef struct conf_case {
    char name[160];      /* unique: "binary.add float32 [3,4] [4]" */
    ir_prim_kind kind;
    int op; /* the porta_*_op, porta_scatter_reduce, porta_sort_order, porta_pool_rounding,
             * porta_factor_op, porta_fft_kind;
             * CAST: the source dtype */
    porta_dtype dtype;   /* CAST: the target; FILL, RANDOM: the result's */
    int input_count;
    conf_input inputs[CONF_MAX_INPUTS];
    int rank;                     /* FILL, RANDOM: the result's shape; CONV_*_GRAD: the kernel's, the input's */
    int64_t sizes[PORTA_MAX_RANK]; /* POOL_MAX: the kernel */
    int axis;                     /* GATHER, SCATTER, INDEX_SELECT, SORT; FACTOR: its flags;
                                   * FFT: the normalization */
    int axes[PORTA_MAX_RANK];     /* REDUCE, FFT */
    int axis_count;
    bool keepdim;
    int64_t pads[2 * PORTA_MAX_RANK];
    double value, value2;         /* FILL, PAD: value; RANDOM: low/mean, high/std */
    bool normal;                  /* RANDOM */
    uint64_t seed;                /* RANDOM's seed; also seeds the inputs */
    porta_conv_params conv;       /* CONV; with a bias when input_count is 3. POOL_MAX: its
                                   * stride, padding and dilation */
    /* Float results agree within rtol * |want| + atol, where rtol and atol
     * are the result dtype's tolerance (conf_tolerance) times these scales;
     * integers and bool, and every result of an exact case, exactly. */
    double rtol_scale, atol_scale;
    bool exact;
} conf_case;

/* The whole table (built on first use, freed at exit). */
const conf_case *conf_cases(int *count);

/* Row-major values of input `i` as it is stored on the host (transposed
 * inputs: in their stored, swapped layout); malloc'ed, numel elements. */
double *conf_input_values(const conf_case *c, int i, int64_t *numel);

/* The tolerance of one rounding in a float dtype (0 for the others). */
double conf_tolerance(porta_dtype dtype);

#endif
