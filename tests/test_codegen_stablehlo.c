/* The StableHLO renderer at the level of its text (no plugin needed): the
 * signature over byte buffers, each view's path (reshape, broadcast,
 * dynamic_slice, gather) and store's (whole, dynamic_update_slice,
 * scatter), reductions, float16 rounding, offsets and parameters kept out
 * of the text, matmul, the supported set equal to the C renderer's, and
 * errors on bad layouts. What the modules compute is checked on a PJRT
 * device by the conformance suite. */
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_c.h"
#include "codegen/codegen_c_internal.h"
#include "codegen/codegen_stablehlo.h"
#include "test.h"

typedef struct built {
    kir_kernel k;
    shlo_layout l;
} built;

static built *built_new(int rank, int outer_rank, const int64_t *sizes) {
    built *b = calloc(1, sizeof *b);
    b->k.rank = rank;
    b->k.outer_rank = outer_rank;
    memcpy(b->l.sizes, sizes, (size_t)rank * sizeof *sizes);
    return b;
}

static int value(built *b, kir_value v) {
    b->k.values[b->k.value_count] = v;
    return b->k.value_count++;
}

/* An access on buffer `buffer` of `bytes`, walked with strides. */
static int access(built *b, porta_dtype dtype, kir_space space, int buffer, int64_t bytes,
                  const int64_t *strides, int rank) {
    int a = b->k.access_count++;
    b->k.accesses[a] = (kir_access){.dtype = dtype, .space = space};
    memcpy(b->l.strides[a], strides, (size_t)rank * sizeof *strides);
    b->l.buffer[a] = buffer;
    b->l.buffer_bytes[buffer] = bytes;
    if (buffer >= b->l.buffer_count) b->l.buffer_count = buffer + 1;
    return a;
}

static int load(built *b, porta_dtype dtype, kir_space space, int buffer, int64_t bytes,
                const int64_t *strides, int rank) {
    int a = access(b, dtype, space, buffer, bytes, strides, rank);
    return value(b, (kir_value){.kind = KIR_LOAD, .dtype = dtype, .space = space, .access = a});
}

static void store(built *b, int v, kir_space space, int buffer, int64_t bytes,
                  const int64_t *strides, int rank) {
    int a = access(b, b->k.values[v].dtype, space, buffer, bytes, strides, rank);
    b->k.accesses[a].store = true;
    b->k.accesses[a].value = v;
}

static int binary(built *b, int op, porta_dtype dtype, int x, int y) {
    return value(b, (kir_value){.kind = KIR_BINARY, .op = op, .dtype = dtype, .args = {x, y}});
}

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

static char *render(const built *b) {
    char *text = NULL;
    porta_status *status = kir_render_stablehlo(&b->k, &b->l, &text, NULL);
    if (status) {
        test_fail(__FILE__, __LINE__, "render: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return text;
}

static const int64_t unit[1] = {1}, rows4[2] = {4, 1};

TEST(stablehlo_contiguous_add_takes_and_returns_whole_buffers) {
    const int64_t sizes[1] = {8};
    built *b = built_new(1, 1, sizes);
    int x = load(b, PORTA_F32, KIR_FULL, 0, 32, unit, 1);
    int y = load(b, PORTA_F32, KIR_FULL, 1, 32, unit, 1);
    store(b, binary(b, PORTA_ADD, PORTA_F32, x, y), KIR_FULL, 2, 32, unit, 1);
    char *t = render(b);
    if (t) {
        /* whole buffers read no offset: no scalar buffer */
        CHECK(strstr(t, "@main(%1: tensor<32xui8>, %2: tensor<32xui8>, %3: tensor<32xui8>) "
                        "-> (tensor<32xui8>)"));
        CHECK(count(t, "(tensor<8x4xui8>) -> tensor<8xf32>") == 2); /* bytes to floats */
        CHECK(strstr(t, "\"stablehlo.add\""));
        CHECK(!strstr(t, "gather") && !strstr(t, "dynamic") && !strstr(t, "scatter"));
    }
    free(t);
    free(b);
}

TEST(stablehlo_views_pick_broadcast_slice_transpose_or_gather) {
    const int64_t sizes[2] = {3, 4};
    const int64_t bcast[2] = {0, 1}, transposed[2] = {1, 3}, gaps[2] = {8, 2};
    built *b = built_new(2, 2, sizes);
    int row = load(b, PORTA_F32, KIR_FULL, 0, 16, bcast, 2);        /* [4] along dim 1 */
    int part = load(b, PORTA_F32, KIR_FULL, 1, 80, rows4, 2);       /* 12 of 20 floats */
    int flip = load(b, PORTA_F32, KIR_FULL, 2, 48, transposed, 2);  /* x.T */
    int odd = load(b, PORTA_F32, KIR_FULL, 3, 96, gaps, 2);         /* x[:, ::2] */
    int s = binary(b, PORTA_ADD, PORTA_F32, binary(b, PORTA_ADD, PORTA_F32, row, part), flip);
    s = binary(b, PORTA_ADD, PORTA_F32, s, odd);
    store(b, s, KIR_FULL, 1, 80, rows4, 2); /* in place, into part of buffer 1 */
    char *t = render(b);
    if (t) {
        CHECK(strstr(t, "\"stablehlo.broadcast_in_dim\"") &&
              strstr(t, "broadcast_dimensions = array<i64: 1>"));
        CHECK(count(t, "\"stablehlo.dynamic_slice\"") == 1);
        CHECK(count(t, "\"stablehlo.transpose\"") == 1 &&
              strstr(t, "permutation = array<i64: 1, 0>"));
        CHECK(count(t, "\"stablehlo.gather\"") == 1);
        CHECK(count(t, "\"stablehlo.dynamic_update_slice\"") == 1);
        /* four buffers and the scalars in, the one stored back out */
        CHECK(strstr(t, "%5: tensor<384xui8>) -> (tensor<80xui8>)"));
    }
    free(t);
    free(b);
}

TEST(stablehlo_strided_store_scatters) {
    const int64_t sizes[1] = {4}, every_other[1] = {2};
    built *b = built_new(1, 1, sizes);
    int x = load(b, PORTA_I32, KIR_FULL, 0, 16, unit, 1);
    store(b, x, KIR_FULL, 1, 32, every_other, 1);
    char *t = render(b);
    if (t) {
        CHECK(count(t, "\"stablehlo.scatter\"") == 1);
        CHECK(strstr(t, "\"stablehlo.iota\""));
    }
    free(t);
    free(b);
}

/* softmax's shape: max per row, broadcast back to the row's elements. */
TEST(stablehlo_reduction_broadcasts_outer_values_back) {
    const int64_t sizes[2] = {3, 4}, outer[1] = {1};
    built *b = built_new(2, 1, sizes);
    int x = load(b, PORTA_F32, KIR_FULL, 0, 48, rows4, 2);
    int m = value(b, (kir_value){.kind = KIR_REDUCE, .op = PORTA_REDUCE_MAX,
                                 .dtype = PORTA_F32, .space = KIR_OUTER, .args = {x}});
    int sum = value(b, (kir_value){.kind = KIR_REDUCE, .op = PORTA_REDUCE_SUM,
                                   .dtype = PORTA_F32, .space = KIR_OUTER, .args = {x}});
    store(b, binary(b, PORTA_SUB, PORTA_F32, x, m), KIR_FULL, 1, 48, rows4, 2);
    store(b, sum, KIR_OUTER, 2, 12, outer, 1);
    char *t = render(b);
    if (t) {
        CHECK(count(t, "\"stablehlo.reduce\"") == 2);
        CHECK(count(t, "dimensions = array<i64: 1>}") == 2);
        /* the max folds NaN in; the sum accumulates in double */
        CHECK(strstr(t, "comparison_direction NE"));
        CHECK(strstr(t, "-> tensor<3x4xf64>"));
        CHECK(strstr(t, "(tensor<3xf32>) -> tensor<3x4xf32>"));
    }
    free(t);
    free(b);
}

TEST(stablehlo_half_values_round_once_each) {
    const int64_t sizes[1] = {4};
    built *b = built_new(1, 1, sizes);
    int x = load(b, PORTA_F16, KIR_FULL, 0, 8, unit, 1);
    int y = binary(b, PORTA_MUL, PORTA_F16, x, x);
    store(b, binary(b, PORTA_ADD, PORTA_F16, y, x), KIR_FULL, 1, 8, unit, 1);
    char *t = render(b);
    if (t) {
        /* loaded once (f16 -> f32), two values rounded (f32 -> f16 -> f32),
         * the stored one narrowed again */
        CHECK(count(t, "(tensor<4xf32>) -> tensor<4xf16>") == 3);
        CHECK(count(t, "(tensor<4xf16>) -> tensor<4xf32>") == 3);
    }
    free(t);
    free(b);
}

/* Offsets and parameters live in the scalar buffer: a view at another
 * offset or a new learning rate renders the same module. */
TEST(stablehlo_offsets_and_parameters_stay_out_of_the_text) {
    const int64_t sizes[1] = {5};
    built *b = built_new(1, 1, sizes);
    int x = load(b, PORTA_F32, KIR_FULL, 0, 64, unit, 1);
    int lr = value(b, (kir_value){.kind = KIR_PARAM, .dtype = PORTA_F32, .param = 0});
    store(b, binary(b, PORTA_MUL, PORTA_F32, x, lr), KIR_FULL, 0, 64, unit, 1);
    char *first = render(b), *second = render(b);
    if (first && second) {
        CHECK(strcmp(first, second) == 0);
        CHECK(strstr(first, "\"stablehlo.dynamic_slice\""));
        CHECK(strstr(first, "start_indices = array<i64: 32>")); /* parameter 0's slot */
    }
    int64_t slots[SHLO_SCALAR_SLOTS];
    const int64_t offsets[2] = {7, 9};
    double params[KIR_MAX_PARAMS] = {0.5};
    shlo_pack_scalars(offsets, 2, params, slots);
    double p0;
    memcpy(&p0, &slots[KIR_MAX_ACCESSES], sizeof p0);
    CHECK(slots[0] == 7 && slots[1] == 9 && slots[2] == 0 && p0 == 0.5);
    free(first);
    free(second);
    free(b);
}

TEST(stablehlo_matmul_is_a_batched_dot_general) {
    shlo_matmul m;
    memset(&m, 0, sizeof m);
    m.dtype = PORTA_F32;
    m.rank = 3;
    const int64_t a[3] = {2, 3, 4}, bs[3] = {2, 4, 5}, out[3] = {2, 3, 5};
    const int64_t sa[3] = {12, 4, 1}, sb[3] = {0, 1, 4}, so[3] = {15, 5, 1};
    memcpy(m.a_sizes, a, sizeof a);
    memcpy(m.b_sizes, bs, sizeof bs);
    memcpy(m.out_sizes, out, sizeof out);
    memcpy(m.layout.strides[0], sa, sizeof sa);
    memcpy(m.layout.strides[1], sb, sizeof sb);
    memcpy(m.layout.strides[2], so, sizeof so);
    m.layout.buffer_count = 3;
    for (int i = 0; i < 3; i++) m.layout.buffer[i] = i;
    m.layout.buffer_bytes[0] = 96;
    m.layout.buffer_bytes[1] = 80;
    m.layout.buffer_bytes[2] = 120;
    char *t = NULL;
    CHECK_OK(shlo_render_matmul(&m, &t, NULL));
    CHECK(strstr(t, "lhs_batching_dimensions = [0], rhs_batching_dimensions = [0], "
                    "lhs_contracting_dimensions = [2], rhs_contracting_dimensions = [1]"));
    CHECK(strstr(t, "(tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>"));
    /* b: a transposed block at an offset, broadcast over the batch */
    CHECK(count(t, "\"stablehlo.transpose\"") == 1 && !strstr(t, "gather"));
    free(t);
    /* an empty K reads nothing: the product is zeros */
    m.a_sizes[2] = m.b_sizes[1] = 0;
    m.layout.buffer_bytes[0] = m.layout.buffer_bytes[1] = 0;
    CHECK_OK(shlo_render_matmul(&m, &t, NULL));
    CHECK(!strstr(t, "gather") && !strstr(t, "tensor<0xf32>") &&
          strstr(t, "{value = dense<0x00000000> : tensor<2x3x0xf32>}"));
    free(t);
    m.dtype = PORTA_I32;
    CHECK_ERR(shlo_render_matmul(&m, &t, NULL), PORTA_ERR_UNSUPPORTED, "float dtype");
}

/* relu(a @ b + bias) as one module: the epilogue reads the product. */
TEST(stablehlo_matmul_epilogue_reads_the_product) {
    const int64_t sizes[2] = {3, 5}, rows5[2] = {5, 1}, bias_strides[2] = {0, 1};
    built *e = built_new(2, 2, sizes);
    /* buffers: 0 a, 1 b, 2 out, 3 bias */
    int product = load(e, PORTA_F32, KIR_FULL, 2, 60, rows5, 2);
    int bias = load(e, PORTA_F32, KIR_FULL, 3, 20, bias_strides, 2);
    int zero = value(e, (kir_value){.kind = KIR_CONST, .dtype = PORTA_F32, .constant = 0});
    int sum = binary(e, PORTA_ADD, PORTA_F32, product, bias);
    store(e, binary(e, PORTA_MAXIMUM, PORTA_F32, sum, zero), KIR_FULL, 2, 60, rows5, 2);
    e->l.buffer_count = 4;
    e->l.buffer_bytes[0] = 48;
    e->l.buffer_bytes[1] = 80;
    shlo_matmul m;
    memset(&m, 0, sizeof m);
    m.dtype = PORTA_F32;
    m.rank = 2;
    const int64_t a[2] = {3, 4}, bs[2] = {4, 5}, sa[2] = {4, 1};
    memcpy(m.a_sizes, a, sizeof a);
    memcpy(m.b_sizes, bs, sizeof bs);
    memcpy(m.out_sizes, sizes, sizeof sizes);
    memcpy(m.layout.strides[0], sa, sizeof sa);
    memcpy(m.layout.strides[1], rows5, sizeof rows5);
    memcpy(m.layout.strides[2], rows5, sizeof rows5);
    for (int i = 0; i < 3; i++) m.layout.buffer[i] = i;
    m.layout.buffer_count = 4;
    memcpy(m.layout.buffer_bytes, e->l.buffer_bytes, sizeof e->l.buffer_bytes);
    m.epilogue = &e->k;
    m.epilogue_layout = e->l;
    char *t = NULL;
    bool scalars = true;
    CHECK_OK(shlo_render_matmul(&m, &t, &scalars));
    CHECK(!scalars); /* every view is its whole buffer */
    CHECK(count(t, "\"stablehlo.dot_general\"") == 1);
    CHECK(strstr(t, "@main(%1: tensor<48xui8>, %2: tensor<80xui8>, %3: tensor<60xui8>, "
                    "%4: tensor<20xui8>) -> (tensor<60xui8>)"));
    /* out's given bytes are never read: the epilogue loads the product */
    CHECK(!strstr(t, "(%3)"));
    free(t);
    free(e);
}

/* Every op and dtype the C renderer spells has a StableHLO spelling, and
 * nothing else does. */
TEST(stablehlo_supports_what_the_c_renderer_spells) {
    const int counts[] = {[KIR_UNARY] = PORTA_UNARY_OP_COUNT, [KIR_BINARY] = PORTA_BINARY_OP_COUNT,
                          [KIR_TERNARY] = PORTA_TERNARY_OP_COUNT, [KIR_CAST] = 1,
                          [KIR_REDUCE] = PORTA_REDUCE_OP_COUNT};
    const kir_value_kind kinds[] = {KIR_UNARY, KIR_BINARY, KIR_TERNARY, KIR_CAST, KIR_REDUCE};
    int supported = 0;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        for (int op = 0; op < counts[kinds[i]]; op++)
            for (int out = 0; out < TEST_REAL_DTYPE_COUNT; out++)
                for (int in = 0; in < TEST_REAL_DTYPE_COUNT; in++) {
                    kir_value v = {.kind = kinds[i], .op = op, .dtype = (porta_dtype)out};
                    /* the special functions the C renderer calls on the host
                     * (kir_c_calls_runtime) are no StableHLO: placed on the CPU */
                    bool c = kir_c_supports(&v, (porta_dtype)in) && !kir_c_calls_runtime(&v);
                    bool s = shlo_supports(&v, (porta_dtype)in);
                    CHECK_MSG(c == s, "kind %d op %d %s from %s: C %d, StableHLO %d",
                              (int)kinds[i], op, porta_dtype_name((porta_dtype)out),
                              porta_dtype_name((porta_dtype)in), c, s);
                    supported += s;
                }
    CHECK(supported > 500);
}

TEST(stablehlo_bad_layouts_are_errors) {
    const int64_t sizes[1] = {3};
    built *b = built_new(1, 1, sizes);
    int x = load(b, PORTA_F32, KIR_FULL, 0, 10, unit, 1); /* 10 bytes: not whole floats */
    store(b, x, KIR_FULL, 1, 12, unit, 1);
    char *t = NULL;
    CHECK_ERR(kir_render_stablehlo(&b->k, &b->l, &t, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "not a whole number of float32 elements");
    b->l.buffer[1] = 5;
    CHECK_ERR(kir_render_stablehlo(&b->k, &b->l, &t, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "access 1 uses buffer 5; expected 0..1");
    b->l.buffer[1] = 1;
    b->k.values[0].dtype = PORTA_F64; /* disagrees with its access */
    CHECK_ERR(kir_render_stablehlo(&b->k, &b->l, &t, NULL), PORTA_ERR_INVALID_ARGUMENT, "dtype");
    free(b);
}
