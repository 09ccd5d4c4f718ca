/* The shortcuts that keep small ops cheap must not change what they compute:
 * small CPU buffers (alignment, memory accounting, whole 64-byte lines
 * usable), one-element factories (the fill kernels' conversions), releasing
 * the last reference, the result type of one-dtype operands, aten calls with
 * and without numbers in tensor slots, 2-d matmuls that need no broadcast
 * views, and broadcast inputs viewed without a tensor handle. */
#include <stdint.h>
#include <string.h>

#include "runtime/tensor.h"
#include "test.h"

TEST(test_overhead_cpu_buffers_aligned_and_counted) {
    const size_t sizes[] = {0, 1, 3, 63, 64, 65, 1000, 4096 + 7};
    uint64_t base = porta_memory_allocated();
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        porta_buffer *buffer;
        CHECK_OK(porta_buffer_alloc(test_cpu(), sizes[i], &buffer));
        CHECK_MSG((uintptr_t)buffer->handle % 64 == 0, "%zu bytes: handle %p is not 64-aligned",
                  sizes[i], buffer->handle);
        CHECK(porta_memory_allocated() == base + sizes[i]);
        /* the usable size is whole 64-byte lines: the last one can be written */
        size_t lines = (sizes[i] + 63) / 64 * 64;
        if (lines) memset(buffer->handle, 0x5a, lines);
        porta_buffer_release(buffer);
        CHECK(porta_memory_allocated() == base);
    }
    porta_set_memory_limit(base + 100);
    porta_buffer *refused = NULL;
    CHECK_ERR(porta_buffer_alloc(test_cpu(), 101, &refused), PORTA_ERR_OUT_OF_MEMORY,
              "101 bytes for a CPU buffer");
    CHECK(refused == NULL);
    porta_set_memory_limit(0);
    CHECK(porta_memory_allocated() == base);
}

/* A one-element tensor_full is written directly; a two-element one runs
 * the fill kernel. Both must store the same bytes for every dtype. */
TEST(test_overhead_full_one_element_matches_fill_kernel) {
    const double values[] = {3.7, -2.5, 0.0, -0.0, NAN, INFINITY, -INFINITY, 1e10, -1e10,
                             65519.99, 65520.0, 1.0 / 3.0, 1e-40, 255.5, -129.0, 1.0};
    int64_t two[1] = {2};
    for (int d = 0; d < TEST_REAL_DTYPE_COUNT; d++) {
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            porta_tensor *one = NULL, *pair = NULL;
            CHECK_OK(porta_tensor_full(test_cpu(), (porta_dtype)d, 0, NULL, values[v], &one));
            CHECK_OK(porta_tensor_full(test_cpu(), (porta_dtype)d, 1, two, values[v], &pair));
            unsigned char a[8] = {0}, b[16] = {0};
            CHECK_OK(porta_tensor_to_host(one, a, sizeof a));
            CHECK_OK(porta_tensor_to_host(pair, b, sizeof b));
            size_t elem = porta_dtype_size((porta_dtype)d);
            CHECK_MSG(!memcmp(a, b, elem), "%s full(%g): direct write differs from the kernel",
                      porta_dtype_name((porta_dtype)d), values[v]);
            porta_tensor_release(one);
            porta_tensor_release(pair);
        }
    }
}

/* The last release frees without an atomic decrement; views must keep the
 * buffer alive past their base, in either order of release. */
TEST(test_overhead_release_orders) {
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t sizes[2] = {2, 3}, row[1] = {3}, stride[1] = {1};
    uint64_t base = porta_memory_allocated();
    for (int order = 0; order < 2; order++) {
        porta_tensor *t = NULL, *view = NULL;
        CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, sizes, data, &t));
        CHECK_OK(porta_tensor_view(porta_tensor_buffer(t), PORTA_F32, 1, row, stride, 3, &view));
        porta_tensor_retain(t);
        porta_tensor_release(t); /* not the last: the atomic path */
        porta_tensor_release(order ? view : t);
        porta_tensor *left = order ? t : view;
        float back[6];
        CHECK_OK(porta_tensor_to_host(left, back, sizeof back));
        CHECK(back[0] == (order ? 1.0f : 4.0f));
        porta_tensor_release(left);
        CHECK(porta_memory_allocated() == base);
    }
}

/* Operands of one dtype take a shortcut; it must agree with the category
 * rules, and scalars must not take it. */
TEST(test_overhead_result_type_one_dtype) {
    for (int d = 0; d < TEST_REAL_DTYPE_COUNT; d++) {
        porta_operand_type same[3] = {{(porta_dtype)d, PORTA_OPERAND_TENSOR},
                                      {(porta_dtype)d, PORTA_OPERAND_ZERO_DIM},
                                      {(porta_dtype)d, PORTA_OPERAND_TENSOR}};
        CHECK(porta_result_type(same, 3) == (porta_dtype)d);
        CHECK(porta_result_type(same + 1, 1) == (porta_dtype)d);
    }
    /* a Python float with float16 tensors stays float16; with int32 ones it
     * is the default float32; a Python int with int8 tensors stays int8 */
    porta_operand_type half[2] = {{PORTA_F16, PORTA_OPERAND_TENSOR},
                                  {PORTA_F16, PORTA_OPERAND_SCALAR}};
    CHECK(porta_result_type(half, 2) == PORTA_F16);
    porta_operand_type ints[2] = {{PORTA_I32, PORTA_OPERAND_TENSOR},
                                  {PORTA_F64, PORTA_OPERAND_SCALAR}};
    CHECK(porta_result_type(ints, 2) == PORTA_F32);
    porta_operand_type small[2] = {{PORTA_I8, PORTA_OPERAND_TENSOR},
                                   {PORTA_I64, PORTA_OPERAND_SCALAR}};
    CHECK(porta_result_type(small, 2) == PORTA_I8);
    /* a lone scalar takes its default dtype, not its own */
    porta_operand_type scalar[1] = {{PORTA_F64, PORTA_OPERAND_SCALAR}};
    CHECK(porta_result_type(scalar, 1) == PORTA_F32);
    CHECK(porta_result_type(NULL, 0) == PORTA_F32);
}

static porta_status *call(const char *name, const porta_value *args, int count,
                          porta_value **results, int *result_count) {
    return porta_aten_call(porta_aten_op_find(name), args, count, results, result_count);
}

/* Element 0 of a result of up to 16 elements, as a double. */
static double first_value(const porta_value *result) {
    double values[16] = {NAN};
    porta_tensor *as_double = NULL;
    porta_status *status = porta_cast(result->tensor, PORTA_F64, &as_double);
    if (!status) status = porta_tensor_to_host(as_double, values, sizeof values);
    porta_status_free(status);
    porta_tensor_release(as_double);
    return values[0];
}

/* Calls with only tensors skip making tensors for numbers; calls with a
 * number in a tensor slot still make one. Results and errors stay. */
TEST(test_overhead_aten_calls_with_and_without_numbers) {
    int64_t sizes[1] = {3};
    porta_tensor *x = NULL, *y = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_I32, 1, sizes, 2, &x));
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_I32, 1, sizes, 5, &y));
    porta_value tx = {.kind = PORTA_VALUE_TENSOR, .tensor = x};
    porta_value ty = {.kind = PORTA_VALUE_TENSOR, .tensor = y};
    porta_value one = {.kind = PORTA_VALUE_INT, .i = 1};
    porta_value half = {.kind = PORTA_VALUE_FLOAT, .f = 0.5};
    porta_value *r = NULL;
    int n = 0;

    porta_value tensors[3] = {tx, ty, one};
    CHECK_OK(call("add.Tensor", tensors, 3, &r, &n));
    CHECK(n == 1 && porta_tensor_dtype(r[0].tensor) == PORTA_I32 && first_value(&r[0]) == 7);
    CHECK(r[0].tensor != x && r[0].tensor != y);
    porta_aten_results_free(r, n);

    porta_value number[3] = {tx, half, one}; /* int32 tensor + Python float */
    CHECK_OK(call("add.Tensor", number, 3, &r, &n));
    CHECK(n == 1 && porta_tensor_dtype(r[0].tensor) == PORTA_F32 && first_value(&r[0]) == 2.5);
    porta_aten_results_free(r, n);

    porta_value inplace[3] = {tx, ty, one};
    CHECK_OK(call("add_.Tensor", inplace, 3, &r, &n));
    CHECK(n == 1 && r[0].tensor == x && first_value(&r[0]) == 7);
    porta_aten_results_free(r, n);

    porta_value missing[3] = {tx, {.kind = PORTA_VALUE_TENSOR, .tensor = NULL}, one};
    CHECK_ERR(call("add.Tensor", missing, 3, &r, &n), PORTA_ERR_INVALID_ARGUMENT,
              "argument 1 is a NULL tensor");
    porta_value wrong[3] = {tx, {.kind = PORTA_VALUE_STRING, .string = "x"}, one};
    CHECK_ERR(call("add.Tensor", wrong, 3, &r, &n), PORTA_ERR_INVALID_ARGUMENT,
              "argument 1 has kind str");
    CHECK_ERR(call("add.Tensor", tensors, 2, &r, &n), PORTA_ERR_INVALID_ARGUMENT,
              "expected 3 arguments, got 2");
    porta_tensor_release(x);
    porta_tensor_release(y);
}

/* 2-d operands are passed to the backend as they are (no broadcast views);
 * batched ones with a broadcast batch still get views. */
TEST(test_overhead_matmul_plain_and_batched) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {1, 0, 0, 1, 1, 1};
    int64_t sa[2] = {2, 3}, sb[2] = {3, 2}, sb3[3] = {1, 3, 2};
    porta_tensor *ta = NULL, *tb = NULL, *tb3 = NULL, *plain = NULL, *batched = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, sa, a, &ta));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, sb, b, &tb));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 3, sb3, b, &tb3));
    CHECK_OK(porta_matmul(ta, tb, &plain));
    CHECK_OK(porta_matmul(ta, tb3, &batched));
    float expected[4] = {4, 5, 10, 11}, got[4] = {0};
    CHECK_OK(porta_tensor_to_host(plain, got, sizeof got));
    CHECK(!memcmp(got, expected, sizeof got));
    CHECK(porta_tensor_rank(batched) == 3);
    CHECK_OK(porta_tensor_to_host(batched, got, sizeof got));
    CHECK(!memcmp(got, expected, sizeof got));
    /* out= aliasing an operand still computes through a temporary */
    int64_t sq[2] = {2, 2};
    float m[4] = {1, 2, 3, 4}, m2[4] = {7, 10, 15, 22};
    porta_tensor *tm = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, sq, m, &tm));
    porta_tensor *into = tm;
    CHECK_OK(porta_matmul(tm, tm, &into));
    CHECK_OK(porta_tensor_to_host(tm, got, sizeof got));
    CHECK(!memcmp(got, m2, sizeof got));
    porta_tensor_release(tm);
    porta_tensor_release(ta);
    porta_tensor_release(tb);
    porta_tensor_release(tb3);
    porta_tensor_release(plain);
    porta_tensor_release(batched);
}

/* Broadcast inputs are viewed without a tensor handle of their own: after
 * a conversion, and when the result is written over the tensor they view
 * (through a temporary, so row 0 is read before it is overwritten). */
TEST(test_overhead_broadcast_views_in_elementwise) {
    int32_t ints[6] = {1, 2, 3, 4, 5, 6};
    float row[3] = {0.5f, 1.5f, 2.5f};
    int64_t s23[2] = {2, 3}, s3[1] = {3}, unit[1] = {1};
    porta_tensor *a = NULL, *b = NULL, *sum = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_I32, 2, s23, ints, &a));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, s3, row, &b));
    CHECK_OK(porta_binary(PORTA_ADD, a, b, &sum));
    float got[6] = {0}, expected[6] = {1.5f, 3.5f, 5.5f, 4.5f, 6.5f, 8.5f};
    CHECK(porta_tensor_dtype(sum) == PORTA_F32);
    CHECK_OK(porta_tensor_to_host(sum, got, sizeof got));
    CHECK(!memcmp(got, expected, sizeof got));

    porta_tensor *first_row = NULL, *into = sum;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(sum), PORTA_F32, 1, s3, unit, 0, &first_row));
    CHECK_OK(porta_binary(PORTA_ADD, sum, first_row, &into));
    float doubled[6] = {3, 7, 11, 6, 10, 14};
    CHECK_OK(porta_tensor_to_host(sum, got, sizeof got));
    CHECK(!memcmp(got, doubled, sizeof got));

    int64_t s4[1] = {4};
    porta_tensor *wrong = NULL, *none = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 1, s4, 1, &wrong));
    CHECK_ERR(porta_binary(PORTA_ADD, a, wrong, &none), PORTA_ERR_SHAPE, "cannot be broadcast");
    CHECK(none == NULL);
    porta_tensor_release(wrong);
    porta_tensor_release(first_row);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(sum);
}
