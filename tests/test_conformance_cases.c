/* The conformance table: every primitive kind, its ops and the dtypes it
 * takes, with broadcast and transposed operands. Where an op rejects a
 * dtype the CPU says so, and every other device must give the same error
 * code, so the table lists ops over all dtypes rather than restating each
 * op's dtype rules. Sizes are small and odd (not multiples of any tile) and
 * the variants per op few: each distinct kernel costs a device compiler run
 * on a cold cache. */
#include "test_conformance_cases.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static const porta_dtype every_dtype[] = {PORTA_BOOL, PORTA_U8,   PORTA_I8,  PORTA_I16,
                                          PORTA_I32,  PORTA_I64,  PORTA_F16, PORTA_BF16,
                                          PORTA_F32,  PORTA_F64};
static const porta_dtype float_dtypes[] = {PORTA_F32, PORTA_F64, PORTA_F16, PORTA_BF16};
static const porta_dtype int_dtypes[] = {PORTA_BOOL, PORTA_U8,  PORTA_I8,
                                         PORTA_I16,  PORTA_I32, PORTA_I64};
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

/* ---- the table under construction ---- */

static conf_case *table;
static int table_count, table_cap;

static void free_table(void) {
    free(table);
    table = NULL;
    table_count = table_cap = 0;
}

/* Float tolerance of one rounding of a dtype's result (the device may round
 * an intermediate differently): about an ulp and a half. */
double conf_tolerance(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_F16: return 1e-3;
    case PORTA_BF16: return 1e-2;
    case PORTA_F32: return 1e-5;
    case PORTA_F64: return 1e-12;
    default: return 0;
    }
}

/* A new case with the result dtype's tolerance (relative and absolute, the
 * latter for results near zero), named by the format. */
static conf_case *add(ir_prim_kind kind, int op, porta_dtype dtype, const char *fmt, ...) {
    if (table_count == table_cap) {
        table_cap = table_cap ? 2 * table_cap : 512;
        conf_case *grown = realloc(table, (size_t)table_cap * sizeof *table);
        if (!grown) {
            fprintf(stderr, "conformance table: out of memory\n");
            exit(2);
        }
        table = grown;
    }
    conf_case *c = &table[table_count];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->op = op;
    c->dtype = dtype;
    c->seed = 0x5eed0000u + (uint64_t)table_count;
    c->rtol_scale = c->atol_scale = 1;
    va_list args;
    va_start(args, fmt);
    vsnprintf(c->name, sizeof c->name, fmt, args);
    va_end(args);
    table_count++;
    return c;
}

static conf_input *input(conf_case *c, porta_dtype dtype, int rank, const int64_t *sizes,
                         conf_values values, double low, double high, bool transposed) {
    conf_input *in = &c->inputs[c->input_count++];
    in->dtype = dtype;
    in->rank = rank;
    for (int d = 0; d < rank; d++) in->sizes[d] = sizes[d];
    in->values = values;
    in->low = low;
    in->high = high;
    in->transposed = transposed;
    return in;
}

static const char *dt(porta_dtype dtype) { return porta_dtype_name(dtype); }

/* ---- elementwise ---- */

/* The domain on which a float unary op is finite and well conditioned. */
static void unary_domain(porta_unary_op op, double *low, double *high) {
    *low = -3, *high = 3;
    switch (op) {
    case PORTA_LOG: case PORTA_LOG2: case PORTA_SQRT: case PORTA_RSQRT: case PORTA_LGAMMA:
        *low = 0.1, *high = 10; break;
    case PORTA_LOG1P: *low = -0.9, *high = 10; break;
    case PORTA_ASIN: case PORTA_ACOS: case PORTA_ATANH: case PORTA_ERFINV:
        *low = -0.95, *high = 0.95; break;
    case PORTA_ACOSH: *low = 1.1, *high = 10; break;
    case PORTA_TAN: *low = -1.3, *high = 1.3; break;
    case PORTA_RECIPROCAL: *low = 0.25, *high = 4; break;
    default: break;
    }
}

/* Ops computed through the device's libm (exp, sin, erf, ...), which may
 * round differently from the CPU's: their float tolerance is loosened
 * fourfold. Exact ops (abs, floor, comparisons) keep the dtype's. */
static bool uses_libm(porta_unary_op op) {
    switch (op) {
    case PORTA_NEG: case PORTA_ABS: case PORTA_SIGN: case PORTA_FLOOR: case PORTA_CEIL:
    case PORTA_ROUND: case PORTA_TRUNC: case PORTA_ISNAN: case PORTA_ISINF:
    case PORTA_ISFINITE: case PORTA_LOGICAL_NOT: case PORTA_BITWISE_NOT: case PORTA_SQRT:
    case PORTA_RECIPROCAL:
        return false;
    default: return true;
    }
}

/* Unary ops defined on integers and bool too (the rest take floats). */
static bool takes_integers(porta_unary_op op) {
    return !uses_libm(op) && op != PORTA_SQRT && op != PORTA_RECIPROCAL;
}

static void unary_cases(void) {
    const int64_t shape[2] = {5, 7};
    for (int op = 0; op < PORTA_UNARY_OP_COUNT; op++) {
        double low, high;
        unary_domain(op, &low, &high);
        for (int t = 0; t < COUNT(float_dtypes); t++) {
            porta_dtype dtype = float_dtypes[t];
            conf_case *c = add(PRIM_UNARY, op, dtype, "unary.%s %s [5,7]",
                               porta_unary_op_name(op), dt(dtype));
            input(c, dtype, 2, shape, CONF_SPECIAL, low, high, false);
            if (uses_libm(op)) c->rtol_scale = c->atol_scale = 4;
        }
        /* A transposed operand, for a few ops (strides are the kernel's
         * parameters, the same for every op). */
        conf_case *c;
        if (op == PORTA_NEG || op == PORTA_EXP || op == PORTA_ISNAN || op == PORTA_FLOOR) {
            c = add(PRIM_UNARY, op, PORTA_F32, "unary.%s float32 [5,7] transposed",
                    porta_unary_op_name(op));
            input(c, PORTA_F32, 2, shape, CONF_RANGE, low, high, true);
            if (uses_libm(op)) c->rtol_scale = c->atol_scale = 4;
        }
        if (!takes_integers(op)) continue;
        for (int t = 0; t < COUNT(int_dtypes); t++) {
            porta_dtype dtype = int_dtypes[t];
            c = add(PRIM_UNARY, op, dtype, "unary.%s %s [5,7]", porta_unary_op_name(op),
                    dt(dtype));
            input(c, dtype, 2, shape, CONF_RANGE, -10, 10, false);
        }
    }
}

/* Operand ranges that keep an integer binary op defined: nonzero divisors,
 * small non-negative exponents and shifts. */
static void binary_ranges(porta_binary_op op, porta_dtype dtype, double a[2], double b[2],
                          conf_values *b_values) {
    bool floats = porta_dtype_is_float(dtype);
    bool unsigned_ = dtype == PORTA_U8 || dtype == PORTA_BOOL;
    a[0] = unsigned_ ? 0 : -10, a[1] = 10;
    b[0] = a[0], b[1] = a[1];
    *b_values = floats ? CONF_SPECIAL : CONF_RANGE;
    switch (op) {
    case PORTA_DIV: case PORTA_FLOOR_DIVIDE: case PORTA_REMAINDER: case PORTA_FMOD:
        if (!floats) b[0] = 1, b[1] = unsigned_ ? 1 : 6;
        break;
    case PORTA_POW:
        a[0] = floats ? 0.1 : a[0] / 3, a[1] = 3;
        b[0] = floats ? -2 : 0, b[1] = 3;
        break;
    case PORTA_SHIFT_LEFT: case PORTA_SHIFT_RIGHT: b[0] = 0, b[1] = unsigned_ ? 1 : 5; break;
    default: break;
    }
}

static void binary_cases(void) {
    const int64_t a_shape[2] = {4, 6}, row[1] = {6};
    for (int op = 0; op < PORTA_BINARY_OP_COUNT; op++) {
        for (int t = 0; t < COUNT(every_dtype); t++) {
            porta_dtype dtype = every_dtype[t];
            double a[2], b[2];
            conf_values b_values;
            binary_ranges(op, dtype, a, b, &b_values);
            /* b broadcast along the rows. */
            conf_case *c = add(PRIM_BINARY, op, dtype, "binary.%s %s [4,6] [6]",
                               porta_binary_op_name(op), dt(dtype));
            input(c, dtype, 2, a_shape, CONF_RANGE, a[0], a[1], false);
            input(c, dtype, 1, row, b_values, b[0], b[1], false);
            if (op == PORTA_POW || op == PORTA_ATAN2) c->rtol_scale = c->atol_scale = 4;
            if (dtype != PORTA_F32) continue;
            /* a transposed, b a [4,1] column broadcast along the columns. */
            const int64_t column[2] = {4, 1};
            c = add(PRIM_BINARY, op, dtype, "binary.%s %s [4,6]T [4,1]",
                    porta_binary_op_name(op), dt(dtype));
            input(c, dtype, 2, a_shape, CONF_SPECIAL, a[0], a[1], true);
            input(c, dtype, 2, column, b_values, b[0], b[1], false);
            if (op == PORTA_POW || op == PORTA_ATAN2) c->rtol_scale = c->atol_scale = 4;
        }
    }
}

static void ternary_cases(void) {
    const int64_t shape[2] = {4, 6}, row[1] = {6};
    for (int t = 0; t < COUNT(every_dtype); t++) {
        porta_dtype dtype = every_dtype[t];
        conf_case *c = add(PRIM_TERNARY, PORTA_WHERE, dtype, "ternary.where %s [4,6] [4,6]T [6]",
                           dt(dtype));
        input(c, PORTA_BOOL, 2, shape, CONF_RANGE, 0, 1, false);
        input(c, dtype, 2, shape, CONF_SPECIAL, -10, 10, true);
        input(c, dtype, 1, row, CONF_RANGE, -10, 10, false);
        c = add(PRIM_TERNARY, PORTA_FMA, dtype, "ternary.fma %s [4,6] [6] [4,6]T", dt(dtype));
        input(c, dtype, 2, shape, CONF_SPECIAL, -4, 4, false);
        input(c, dtype, 1, row, CONF_RANGE, -4, 4, false);
        input(c, dtype, 2, shape, CONF_RANGE, -4, 4, true);
    }
}

/* Every pair of dtypes, with values inside both ranges (fractions for
 * floats, so truncation is tested), and NaN/inf/-0.0 between floats. */
static void cast_cases(void) {
    const int64_t shape[2] = {5, 6};
    for (int s = 0; s < COUNT(every_dtype); s++) {
        for (int d = 0; d < COUNT(every_dtype); d++) {
            porta_dtype from = every_dtype[s], to = every_dtype[d];
            bool unsigned_ = from == PORTA_U8 || to == PORTA_U8 || from == PORTA_BOOL;
            bool floats = porta_dtype_is_float(from) && porta_dtype_is_float(to);
            double high = from == PORTA_BOOL ? 1 : 100;
            /* A cast rounds once, the same way everywhere: exact. */
            /* op: the source dtype, so each source and each target is
             * somewhere first (and goes through the compiler). */
            conf_case *c = add(PRIM_CAST, (int)from, to, "cast %s -> %s [5,6]", dt(from), dt(to));
            c->exact = true;
            input(c, from, 2, shape, floats ? CONF_SPECIAL : CONF_RANGE, unsigned_ ? 0 : -high,
                  high, s == d);
        }
    }
}

static void fill_cases(void) {
    const int64_t shape[2] = {3, 5};
    for (int t = 0; t < COUNT(every_dtype); t++) {
        conf_case *c = add(PRIM_FILL, 0, every_dtype[t], "fill %s [3,5] 2.75", dt(every_dtype[t]));
        c->rank = 2;
        memcpy(c->sizes, shape, sizeof shape);
        c->value = 2.75;
    }
}

/* ---- reductions ---- */

typedef struct axes_variant {
    const char *label;
    int axes[3], count;
    bool keepdim;
} axes_variant;

static void reduce_cases(void) {
    const int64_t shape[3] = {3, 4, 5};
    const axes_variant variants[] = {
        {"all", {0}, 0, false},          {"trailing {2}", {2}, 1, false},
        {"{0} keepdim", {0}, 1, true},   {"{1}", {1}, 1, false},
        {"{0,2}", {0, 2}, 2, false},     {"{-1,0,1} keepdim", {-1, 0, 1}, 3, true},
    };
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_I32, PORTA_F64, PORTA_F16,
                                  PORTA_BF16, PORTA_I64, PORTA_U8,  PORTA_BOOL};
    for (int op = 0; op < PORTA_REDUCE_OP_COUNT; op++) {
        bool arg = op == PORTA_REDUCE_ARGMAX || op == PORTA_REDUCE_ARGMIN;
        for (int t = 0; t < COUNT(dtypes); t++) {
            porta_dtype dtype = dtypes[t];
            /* Every axes variant for float32; two for the rest. */
            int variant_count = t == 0 ? COUNT(variants) : 2;
            for (int v = 0; v < variant_count; v++) {
                const axes_variant *variant = &variants[t == 0 ? v : 3 - 2 * v];
                if (arg && variant->count > 1) continue;
                conf_case *c = add(PRIM_REDUCE, op, dtype, "reduce.%s %s [3,4,5] axes %s",
                                   porta_reduce_op_name(op), dt(dtype), variant->label);
                bool prod = op == PORTA_REDUCE_PROD;
                /* Products of [0.5, 1.5) and of few distinct integers stay in
                 * range; ties and NaN test argmax/argmin's first-index rule. */
                input(c, dtype, 3, shape, arg ? CONF_TIES : CONF_SPECIAL, prod ? 0.5 : -3,
                      prod ? 1.5 : 3, v == 1);
                c->axis_count = variant->count;
                memcpy(c->axes, variant->axes, sizeof variant->axes);
                c->keepdim = variant->keepdim;
                /* Up to 60 terms summed in another order. */
                c->rtol_scale = 4;
                c->atol_scale = 16;
            }
        }
    }
}

/* ---- movement, indexing, linear algebra ---- */

static void pad_cases(void) {
    const int64_t shape[3] = {3, 4, 5};
    const int64_t grow[6] = {1, 2, 0, 1, 2, 0}, crop[6] = {-1, 0, 1, -2, 0, -1};
    for (int t = 0; t < COUNT(every_dtype); t++) {
        porta_dtype dtype = every_dtype[t];
        for (int k = 0; k < 2; k++) {
            conf_case *c = add(PRIM_PAD, 0, dtype, "pad %s [3,4,5]T %s", dt(dtype),
                               k ? "crop" : "grow");
            input(c, dtype, 3, shape, CONF_SPECIAL, -5, 5, true);
            memcpy(c->pads, k ? crop : grow, sizeof grow);
            c->value = 1.5;
            c->exact = true;
        }
    }
}

static void index_cases(void) {
    const int64_t x_shape[2] = {5, 6}, index_shape[2] = {4, 6}, select_shape[1] = {7};
    for (int t = 0; t < COUNT(every_dtype); t++) {
        porta_dtype dtype = every_dtype[t];
        conf_case *c = add(PRIM_GATHER, 0, dtype, "gather %s [5,6]T axis 0 index [4,6]", dt(dtype));
        input(c, dtype, 2, x_shape, CONF_SPECIAL, -5, 5, true);
        input(c, PORTA_I64, 2, index_shape, CONF_INDEX, 0, 4, false);
        c->exact = true;
        c = add(PRIM_INDEX_SELECT, 0, dtype, "index_select %s [5,6] axis 1 index [7]", dt(dtype));
        input(c, dtype, 2, x_shape, CONF_SPECIAL, -5, 5, false);
        input(c, PORTA_I64, 1, select_shape, CONF_INDEX, 0, 5, false);
        c->axis = 1;
        c->exact = true;
        /* Each reduce mode on a few dtypes, duplicates in the index. */
        bool every_mode = dtype == PORTA_F32 || dtype == PORTA_I64 || dtype == PORTA_F16 ||
                          dtype == PORTA_U8;
        for (int mode = PORTA_SCATTER_NONE; mode <= PORTA_SCATTER_AMIN; mode++) {
            if (!every_mode && mode > PORTA_SCATTER_ADD) break;
            c = add(PRIM_SCATTER, mode, dtype, "scatter mode %d %s [5,6] axis 0 index [4,6] src [4,6]T",
                    mode, dt(dtype));
            input(c, dtype, 2, x_shape, CONF_RANGE, -4, 4, false);
            input(c, PORTA_I64, 2, index_shape, CONF_INDEX, 0, 4, false);
            input(c, dtype, 2, index_shape, CONF_RANGE, -4, 4, true);
            c->exact = true; /* duplicates combine in the CPU's serial order */
        }
    }
}

typedef struct matmul_variant {
    const char *label;
    int a_rank, b_rank;
    int64_t a[4], b[4];
    bool a_t, b_t;
} matmul_variant;

static void matmul_cases(void) {
    const matmul_variant variants[] = {
        {"[2,5,7] @ [7,3] (b broadcast)", 3, 2, {2, 5, 7}, {7, 3}, false, false},
        {"[5,7]T @ [7,3]T", 2, 2, {5, 7}, {7, 3}, true, true},
        {"[2,4,6] @ [2,6,3]T", 3, 3, {2, 4, 6}, {2, 6, 3}, false, true},
        {"[2,1,4,5] @ [3,5,2] (batch broadcast)", 4, 3, {2, 1, 4, 5}, {3, 5, 2}, false, false},
    };
    for (int t = 0; t < COUNT(every_dtype); t++) {
        porta_dtype dtype = every_dtype[t];
        int variant_count = dtype == PORTA_F32 || dtype == PORTA_I32 ? COUNT(variants) : 2;
        for (int v = 0; v < variant_count; v++) {
            const matmul_variant *m = &variants[v];
            conf_case *c = add(PRIM_MATMUL, 0, dtype, "matmul %s %s", dt(dtype), m->label);
            input(c, dtype, m->a_rank, m->a, CONF_RANGE, -2, 2, m->a_t);
            input(c, dtype, m->b_rank, m->b, CONF_RANGE, -2, 2, m->b_t);
            c->rtol_scale = 4;
            c->atol_scale = 8; /* up to 7 products of |x| < 2, summed in another order */
        }
    }
}

typedef struct conv_variant {
    const char *label;
    int rank;
    int64_t x[5], w[5];
    int64_t stride[3], padding[3], dilation[3], groups;
    bool bias;
} conv_variant;

static void conv_cases(void) {
    const conv_variant variants[] = {
        {"1d groups 2 stride 2 padding 1 bias", 3, {2, 4, 9}, {6, 2, 3},
         {2}, {1}, {1}, 2, true},
        {"2d stride (1,2) padding (1,0) dilation (2,1)", 4, {2, 3, 7, 6}, {4, 3, 3, 2},
         {1, 2}, {1, 0}, {2, 1}, 1, false},
        {"2d depthwise groups 3 bias", 4, {1, 3, 6, 6}, {6, 1, 3, 3},
         {1, 1}, {1, 1}, {1, 1}, 3, true},
        {"3d padding (1,0,1) dilation (1,2,1) bias", 5, {1, 2, 5, 4, 4}, {3, 2, 2, 3, 2},
         {1, 1, 2}, {1, 0, 1}, {1, 2, 1}, 1, true},
    };
    for (int t = 0; t < COUNT(float_dtypes); t++) {
        porta_dtype dtype = float_dtypes[t];
        for (int v = 0; v < COUNT(variants); v++) {
            if (dtype != PORTA_F32 && v != 1 && v != 2) continue;
            const conv_variant *k = &variants[v];
            conf_case *c = add(PRIM_CONV, 0, dtype, "conv %s x %s", dt(dtype), k->label);
            input(c, dtype, k->rank, k->x, CONF_RANGE, -1, 1, false);
            input(c, dtype, k->rank, k->w, CONF_RANGE, -1, 1, false);
            if (k->bias) input(c, dtype, 1, k->w, CONF_RANGE, -1, 1, false);
            for (int d = 0; d < k->rank - 2; d++) {
                c->conv.stride[d] = k->stride[d];
                c->conv.padding[d] = k->padding[d];
                c->conv.dilation[d] = k->dilation[d];
            }
            c->conv.groups = k->groups;
            c->rtol_scale = 4;
            c->atol_scale = 8; /* up to 18 products of |x| < 1 */
        }
    }
    /* the weight and input gradients of the same convolutions, given the
     * gradient of conv(x, w)'s output (its shape worked out here) */
    for (int t = 0; t < COUNT(float_dtypes); t++) {
        porta_dtype dtype = float_dtypes[t];
        for (int v = 0; v < COUNT(variants); v++) {
            if (dtype != PORTA_F32 && v != 1 && v != 2) continue;
            const conv_variant *k = &variants[v];
            for (int input_grad = 0; input_grad < 2; input_grad++) {
                conf_case *c = add(input_grad ? PRIM_CONV_INPUT_GRAD : PRIM_CONV_WEIGHT_GRAD, 0,
                                   dtype, "%s %s x %s",
                                   input_grad ? "conv_input_grad" : "conv_weight_grad",
                                   dt(dtype), k->label);
                int64_t gy[5] = {k->x[0], k->w[0]};
                c->rank = k->rank - 2;
                for (int d = 0; d < k->rank - 2; d++) {
                    c->conv.stride[d] = k->stride[d];
                    c->conv.padding[d] = k->padding[d];
                    c->conv.dilation[d] = k->dilation[d];
                    c->sizes[d] = input_grad ? k->x[2 + d] : k->w[2 + d];
                    int64_t span = k->dilation[d] * (k->w[2 + d] - 1) + 1;
                    gy[2 + d] = (k->x[2 + d] + 2 * k->padding[d] - span) / k->stride[d] + 1;
                }
                c->conv.groups = k->groups;
                if (input_grad) {
                    input(c, dtype, k->rank, gy, CONF_RANGE, -1, 1, false);
                    input(c, dtype, k->rank, k->w, CONF_RANGE, -1, 1, false);
                } else {
                    input(c, dtype, k->rank, k->x, CONF_RANGE, -1, 1, false);
                    input(c, dtype, k->rank, gy, CONF_RANGE, -1, 1, false);
                }
                c->rtol_scale = 4;
                c->atol_scale = 16; /* up to ~50 products of |x| < 1 */
            }
        }
    }
}

/* ---- random, sort ---- */

static void random_cases(void) {
    const int64_t shape[2] = {37, 11};
    for (int t = 0; t < COUNT(float_dtypes); t++) {
        porta_dtype dtype = float_dtypes[t];
        for (int normal = 0; normal < 2; normal++) {
            conf_case *c = add(PRIM_RANDOM, 0, dtype, "random %s %s [37,11] offset 5",
                               normal ? "normal" : "uniform", dt(dtype));
            c->rank = 2;
            memcpy(c->sizes, shape, sizeof shape);
            c->normal = normal;
            c->seed = 0x1234567890abcdefULL;
            c->value = normal ? 0.5 : -1.5;
            c->value2 = normal ? 2.0 : 0.1;
            /* Uniform numbers are the same bits everywhere; normal ones go
             * through log and cos, so within the libm tolerance. */
            if (normal)
                c->rtol_scale = c->atol_scale = 4;
            else
                c->exact = true;
        }
    }
}

static void sort_cases(void) {
    const int64_t shape[2] = {5, 37};
    for (int t = 0; t < COUNT(every_dtype); t++) {
        porta_dtype dtype = every_dtype[t];
        for (int order = PORTA_SORT_ASCENDING; order <= PORTA_SORT_DESCENDING; order++) {
            conf_case *c = add(PRIM_SORT, order, dtype, "sort %s %s [5,37] axis 1 ties NaN",
                               order ? "descending" : "ascending", dt(dtype));
            input(c, dtype, 2, shape, CONF_TIES, -3, 3, false);
            c->axis = 1;
            c->exact = true;
            if (dtype != PORTA_F32) continue;
            c = add(PRIM_SORT, order, dtype, "sort %s %s [5,37]T axis 0 ties NaN",
                    order ? "descending" : "ascending", dt(dtype));
            input(c, dtype, 2, shape, CONF_TIES, -3, 3, true);
            c->axis = 0;
            c->exact = true;
        }
    }
}

/* ---- factorisations ---- */

/* Every factorisation on a batch, tall, wide and transposed (strided)
 * operands; the flags of triangular solve on a broadcast coefficient.
 * Random matrices are rarely positive-definite: Cholesky's zeroed columns
 * must agree too. The algorithms round alike on every device, not
 * identically: tolerances are loosened by the matrices' conditioning. */
static void factor_cases(void) {
    static const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    static const struct {
        porta_factor_op op;
        int rank;
        int64_t sizes[3];
        bool transposed;
    } shapes[] = {
        {PORTA_FACTOR_CHOLESKY, 3, {2, 4, 4}, false}, {PORTA_FACTOR_LU, 3, {2, 5, 3}, true},
        {PORTA_FACTOR_LU, 2, {3, 5}, false},          {PORTA_FACTOR_QR, 3, {2, 5, 3}, false},
        {PORTA_FACTOR_QR, 2, {3, 5}, true},           {PORTA_FACTOR_EIGH, 3, {2, 4, 4}, false},
        {PORTA_FACTOR_SVD, 3, {2, 5, 3}, true},       {PORTA_FACTOR_LDL, 3, {2, 4, 4}, true},
    };
    for (int t = 0; t < COUNT(dtypes); t++) {
        porta_dtype dtype = dtypes[t];
        for (int i = 0; i < COUNT(shapes); i++) {
            conf_case *c = add(PRIM_FACTOR, shapes[i].op, dtype, "factor.%s %s [%lld,%lld,%lld]%s",
                               porta_factor_op_name(shapes[i].op), dt(dtype),
                               (long long)shapes[i].sizes[0], (long long)shapes[i].sizes[1],
                               (long long)(shapes[i].rank == 3 ? shapes[i].sizes[2] : 0),
                               shapes[i].transposed ? "T" : "");
            input(c, dtype, shapes[i].rank, shapes[i].sizes, CONF_RANGE, -3, 3,
                  shapes[i].transposed);
            c->rtol_scale = c->atol_scale = 64;
        }
        for (int flags = 0; flags < 4; flags++) {
            conf_case *c = add(PRIM_FACTOR, PORTA_FACTOR_TRIANGULAR_SOLVE, dtype,
                               "factor.triangular_solve %s [4,4] [2,4,3] flags %d", dt(dtype),
                               flags);
            input(c, dtype, 2, (const int64_t[]){4, 4}, CONF_RANGE, 1, 2, flags & 1);
            input(c, dtype, 3, (const int64_t[]){2, 4, 3}, CONF_RANGE, -3, 3, false);
            c->axis = flags;
            c->rtol_scale = c->atol_scale = 16;
        }
    }
}

/* ---- Fourier transforms ---- */

/* Each kind on batches, strided (transposed) operands, two axes, odd and
 * Bluestein lengths (37 > the largest radix), each normalization. op is the
 * porta_fft_kind, axis the normalization, normal the backward C2C, sizes[0]
 * C2R's last length. */
static void fft_cases(void) {
    static const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    static const struct {
        porta_fft_kind kind;
        bool inverse;
        porta_fft_norm norm;
        int rank;
        int64_t sizes[3];
        bool transposed;
        int axis_count, axes[2];
        int64_t last_size;
    } shapes[] = {
        {PORTA_FFT_C2C, false, PORTA_FFT_NORM_NONE, 3, {3, 12, 2}, false, 1, {1}, 0},
        {PORTA_FFT_C2C, true, PORTA_FFT_NORM_BY_N, 3, {5, 6, 2}, true, 2, {1, 0}, 0},
        {PORTA_FFT_C2C, false, PORTA_FFT_NORM_BY_ROOT_N, 3, {2, 37, 2}, false, 1, {1}, 0},
        {PORTA_FFT_R2C, false, PORTA_FFT_NORM_BY_ROOT_N, 2, {4, 10}, true, 1, {1}, 0},
        {PORTA_FFT_R2C, false, PORTA_FFT_NORM_NONE, 2, {3, 74}, false, 2, {0, 1}, 0},
        {PORTA_FFT_C2R, false, PORTA_FFT_NORM_NONE, 3, {3, 6, 2}, false, 1, {1}, 10},
        {PORTA_FFT_C2R, false, PORTA_FFT_NORM_BY_N, 3, {4, 6, 2}, false, 2, {0, 1}, 11},
    };
    static const char *const kinds[] = {"c2c", "r2c", "c2r"};
    for (int t = 0; t < COUNT(dtypes); t++) {
        porta_dtype dtype = dtypes[t];
        for (int i = 0; i < COUNT(shapes); i++) {
            conf_case *c = add(PRIM_FFT, shapes[i].kind, dtype,
                               "fft.%s%s %s [%lld,%lld,%lld]%s axes %d norm %d",
                               kinds[shapes[i].kind], shapes[i].inverse ? " backward" : "",
                               dt(dtype), (long long)shapes[i].sizes[0],
                               (long long)shapes[i].sizes[1],
                               (long long)(shapes[i].rank == 3 ? shapes[i].sizes[2] : 0),
                               shapes[i].transposed ? "T" : "", shapes[i].axis_count,
                               shapes[i].norm);
            input(c, dtype, shapes[i].rank, shapes[i].sizes, CONF_RANGE, -3, 3,
                  shapes[i].transposed);
            c->normal = shapes[i].inverse;
            c->axis = shapes[i].norm;
            c->axis_count = shapes[i].axis_count;
            memcpy(c->axes, shapes[i].axes, sizeof shapes[i].axes);
            c->sizes[0] = shapes[i].last_size;
            c->rtol_scale = c->atol_scale = 64; /* sums of up to ~70 terms */
        }
    }
}

/* ---- max pooling ---- */

typedef struct pool_variant {
    const char *label;
    int rank;
    int64_t x[5], kernel[3], stride[3], padding[3], dilation[3];
    porta_pool_rounding rounding;
} pool_variant;

/* Ties and NaN (CONF_TIES) decide which index wins: every device must pick
 * the CPU's. */
static void pool_cases(void) {
    const pool_variant variants[] = {
        {"1d [2,3,11] kernel 3 stride 2 padding 1 ceil", 3, {2, 3, 11}, {3}, {2}, {1}, {1},
         PORTA_POOL_CEIL},
        {"2d [2,3,8,8] kernel 2", 4, {2, 3, 8, 8}, {2, 2}, {2, 2}, {0, 0}, {1, 1},
         PORTA_POOL_FLOOR},
        {"2d [1,2,7,9] kernel (3,2) stride (2,1) padding (1,1) dilation (2,1) ceil", 4,
         {1, 2, 7, 9}, {3, 2}, {2, 1}, {1, 1}, {2, 1}, PORTA_POOL_CEIL},
        {"3d [1,2,5,4,6] kernel (2,3,2) padding (1,1,0)", 5, {1, 2, 5, 4, 6}, {2, 3, 2},
         {2, 1, 2}, {1, 1, 0}, {1, 1, 1}, PORTA_POOL_FLOOR},
    };
    for (int t = 0; t < COUNT(every_dtype); t++) {
        porta_dtype dtype = every_dtype[t];
        if (dtype == PORTA_BOOL) continue; /* PyTorch does not max-pool bool */
        for (int v = 0; v < COUNT(variants); v++) {
            const pool_variant *k = &variants[v];
            if (dtype != PORTA_F32 && v != 2) continue;
            for (int transposed = 0; transposed < 2; transposed++) {
                if (transposed && dtype != PORTA_F32) continue;
                conf_case *c = add(PRIM_POOL_MAX, (int)k->rounding, dtype, "pool_max %s %s%s",
                                   dt(dtype), k->label, transposed ? " transposed" : "");
                input(c, dtype, k->rank, k->x, CONF_TIES, -3, 3, transposed);
                for (int d = 0; d < k->rank - 2; d++) {
                    c->sizes[d] = k->kernel[d];
                    c->conv.stride[d] = k->stride[d];
                    c->conv.padding[d] = k->padding[d];
                    c->conv.dilation[d] = k->dilation[d];
                }
                c->exact = true;
            }
        }
    }
}

/* Short rows side by side and a row longer than the CPU's cached path
 * (the online maximum and sum); the gradients' second input in the
 * forward results' range. */
static void softmax_cases(void) {
    static const int64_t shapes[][2] = {{5, 37}, {2, 40000}};
    for (int op = 0; op < PORTA_SOFTMAX_OP_COUNT; op++)
        for (int s = 0; s < COUNT(shapes); s++) {
            conf_case *c = add(PRIM_SOFTMAX, op, PORTA_F32, "softmax %d float32 [%lld,%lld]", op,
                               (long long)shapes[s][0], (long long)shapes[s][1]);
            input(c, PORTA_F32, 2, shapes[s], CONF_RANGE, -8, 8, false);
            if (op == PORTA_SOFTMAX_BACKWARD)
                input(c, PORTA_F32, 2, shapes[s], CONF_RANGE, 0, 1, false);
            if (op == PORTA_LOG_SOFTMAX_BACKWARD)
                input(c, PORTA_F32, 2, shapes[s], CONF_RANGE, -8, 0, false);
        }
}

const conf_case *conf_cases(int *count) {
    if (!table) {
        unary_cases();
        binary_cases();
        ternary_cases();
        cast_cases();
        fill_cases();
        reduce_cases();
        pad_cases();
        index_cases();
        matmul_cases();
        conv_cases();
        random_cases();
        sort_cases();
        pool_cases();
        factor_cases();
        fft_cases();
        softmax_cases();
        atexit(free_table);
    }
    *count = table_count;
    return table;
}

/* ---- inputs ---- */

double *conf_input_values(const conf_case *c, int i, int64_t *numel) {
    const conf_input *in = &c->inputs[i];
    int64_t n = 1;
    for (int d = 0; d < in->rank; d++) n *= in->sizes[d];
    double *values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
    if (!values) return NULL;
    test_rng rng = test_rng_make(c->seed * 8 + (uint64_t)i);
    bool floats = porta_dtype_is_float(in->dtype);
    const double special[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
    for (int64_t k = 0; k < n; k++) {
        double v;
        if (in->dtype == PORTA_BOOL && in->values != CONF_INDEX)
            v = (double)test_int(&rng, 0, 1);
        else if (in->values == CONF_INDEX)
            v = (double)test_int(&rng, 0, (int64_t)in->high);
        else if (in->values == CONF_TIES)
            v = (double)test_int(&rng, (int64_t)in->low, (int64_t)in->high);
        else if (floats)
            v = test_uniform(&rng, in->low, in->high);
        else
            v = (double)test_int(&rng, (int64_t)in->low, (int64_t)in->high);
        /* Every seventh element special, at a pseudo-random place. */
        if (floats && in->values == CONF_SPECIAL && k % 7 == 3)
            v = special[test_int(&rng, 0, COUNT(special) - 1)];
        if (floats && in->values == CONF_TIES && k % 11 == 5) v = k % 2 ? NAN : -0.0;
        values[k] = v;
    }
    *numel = n;
    return values;
}

