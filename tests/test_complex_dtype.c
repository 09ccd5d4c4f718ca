/* complex64 and complex128: names, sizes, promotion, casts' categories,
 * the pair views, and the copies, casts and fills that run on them. */
#include <string.h>

#include "test.h"

TEST(test_complex_dtype_names_and_sizes) {
    CHECK(!strcmp(porta_dtype_name(PORTA_C64), "complex64"));
    CHECK(!strcmp(porta_dtype_name(PORTA_C128), "complex128"));
    CHECK(porta_dtype_size(PORTA_C64) == 8 && porta_dtype_size(PORTA_C128) == 16);
    CHECK(PORTA_C64 == PORTA_F64 + 1); /* added last: the others keep their numbers */
    CHECK(porta_dtype_is_complex(PORTA_C64) && porta_dtype_is_complex(PORTA_C128));
    CHECK(!porta_dtype_is_complex(PORTA_F64) && !porta_dtype_is_float(PORTA_C64));
    CHECK(porta_dtype_real(PORTA_C64) == PORTA_F32 && porta_dtype_real(PORTA_C128) == PORTA_F64);
    CHECK(porta_dtype_complex(PORTA_F64) == PORTA_C128 && porta_dtype_complex(PORTA_F16) == PORTA_C64);
}

/* torch.promote_types and torch.can_cast. */
TEST(test_complex_dtype_promotion) {
    CHECK(porta_dtype_promote(PORTA_C64, PORTA_F32) == PORTA_C64);
    CHECK(porta_dtype_promote(PORTA_F64, PORTA_C64) == PORTA_C128);
    CHECK(porta_dtype_promote(PORTA_C64, PORTA_C128) == PORTA_C128);
    CHECK(porta_dtype_promote(PORTA_I64, PORTA_C64) == PORTA_C64);
    CHECK(porta_dtype_promote(PORTA_C64, PORTA_BOOL) == PORTA_C64);
    CHECK(porta_dtype_promote(PORTA_BF16, PORTA_C64) == PORTA_C64);
    CHECK(porta_dtype_can_cast(PORTA_F64, PORTA_C64));
    CHECK(porta_dtype_can_cast(PORTA_C128, PORTA_C64));
    CHECK(!porta_dtype_can_cast(PORTA_C64, PORTA_F64));
    CHECK(!porta_dtype_can_cast(PORTA_C64, PORTA_I64));
}

/* torch.result_type: complex is the highest category, and a lower-priority
 * complex operand keeps a float tensor's precision. */
TEST(test_complex_dtype_result_type) {
    porta_operand_type f64_and_scalar[2] = {{PORTA_F64, PORTA_OPERAND_TENSOR},
                                            {PORTA_C64, PORTA_OPERAND_SCALAR}};
    CHECK(porta_result_type(f64_and_scalar, 2) == PORTA_C128);
    porta_operand_type f32_and_zero_dim[2] = {{PORTA_F32, PORTA_OPERAND_TENSOR},
                                              {PORTA_C128, PORTA_OPERAND_ZERO_DIM}};
    CHECK(porta_result_type(f32_and_zero_dim, 2) == PORTA_C64);
    porta_operand_type int_and_zero_dim[2] = {{PORTA_I32, PORTA_OPERAND_TENSOR},
                                              {PORTA_C128, PORTA_OPERAND_ZERO_DIM}};
    CHECK(porta_result_type(int_and_zero_dim, 2) == PORTA_C128);
    porta_operand_type complex_and_f64_zero_dim[2] = {{PORTA_C64, PORTA_OPERAND_TENSOR},
                                                      {PORTA_F64, PORTA_OPERAND_ZERO_DIM}};
    CHECK(porta_result_type(complex_and_f64_zero_dim, 2) == PORTA_C64);
}

/* view_as_real doubles the layout; view_as_complex undoes it. */
TEST(test_complex_pair_views) {
    int64_t sizes[2] = {3, 4};
    porta_tensor *c = test_empty(PORTA_C64, 2, sizes);
    if (!c) return;
    porta_tensor *pairs = NULL, *back = NULL, *column = NULL;
    CHECK_OK(porta_view_as_real(c, &pairs));
    CHECK(porta_tensor_dtype(pairs) == PORTA_F32 && porta_tensor_rank(pairs) == 3);
    CHECK(porta_tensor_sizes(pairs)[2] == 2 && porta_tensor_strides(pairs)[2] == 1);
    CHECK(porta_tensor_strides(pairs)[0] == 8 && porta_tensor_strides(pairs)[1] == 2);
    CHECK_OK(porta_view_as_complex(pairs, &back));
    CHECK(porta_tensor_dtype(back) == PORTA_C64 && porta_tensor_rank(back) == 2);
    CHECK(porta_tensor_strides(back)[0] == 4 && porta_tensor_strides(back)[1] == 1);
    CHECK_ERR(porta_view_as_real(pairs, &column), PORTA_ERR_DTYPE,
              "only supported for complex tensors");
    int64_t odd_sizes[2] = {3, 2}, odd_strides[2] = {3, 1};
    porta_tensor *odd = test_view_on(pairs, 2, odd_sizes, odd_strides, 0);
    CHECK_ERR(porta_view_as_complex(odd, &column), PORTA_ERR_SHAPE, "stride divisible by 2");
    porta_tensor *f64 = test_empty(PORTA_F64, 2, (int64_t[]){5, 3});
    CHECK_ERR(porta_view_as_complex(f64, &column), PORTA_ERR_SHAPE, "last dimension of size 2");
    porta_tensor_release(f64);
    porta_tensor_release(odd);
    porta_tensor_release(back);
    porta_tensor_release(pairs);
    porta_tensor_release(c);
}

/* Reads a complex tensor's pairs as doubles. */
static void read_pairs(const porta_tensor *c, double *out, int count) {
    porta_tensor *as_f64 = NULL, *pairs = NULL;
    porta_status *status = porta_cast(c, PORTA_C128, &as_f64);
    if (!status) status = porta_view_as_real(as_f64, &pairs);
    if (!status) status = porta_tensor_to_host(pairs, out, (size_t)count * 2 * sizeof *out);
    CHECK_MSG(!status, "reading pairs: %s", porta_status_message(status));
    porta_status_free(status);
    porta_tensor_release(pairs);
    porta_tensor_release(as_f64);
}

/* Real to complex gives imaginary parts of 0, complex to real the real
 * part; complex64 <-> complex128 casts both parts; fills are value + 0i. */
TEST(test_complex_copies_and_casts) {
    int64_t n = 3;
    float values[3] = {1.5f, -2.0f, 4.25f};
    porta_tensor *real = NULL, *c = NULL, *back = NULL;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 1, &n, values, &real));
    CHECK_OK(porta_cast(real, PORTA_C128, &c));
    double pairs[6];
    read_pairs(c, pairs, 3);
    for (int i = 0; i < 3; i++)
        CHECK(pairs[2 * i] == values[i] && pairs[2 * i + 1] == 0.0);
    /* an imaginary part, then back to a real dtype: the real part stays */
    porta_tensor *parts = NULL;
    CHECK_OK(porta_view_as_real(c, &parts));
    porta_tensor *imag = test_view_on(parts, 1, &n, (int64_t[]){2}, 1);
    CHECK_OK(porta_fill(imag, 7.0));
    CHECK_OK(porta_cast(c, PORTA_I32, &back));
    int32_t ints[3];
    CHECK_OK(porta_tensor_to_host(back, ints, sizeof ints));
    CHECK(ints[0] == 1 && ints[1] == -2 && ints[2] == 4);
    porta_tensor *narrow = NULL;
    CHECK_OK(porta_cast(c, PORTA_C64, &narrow));
    read_pairs(narrow, pairs, 3);
    CHECK(pairs[1] == 7.0 && pairs[4] == 4.25);
    CHECK_OK(porta_fill(narrow, -3.0));
    read_pairs(narrow, pairs, 3);
    CHECK(pairs[4] == -3.0 && pairs[5] == 0.0);
    porta_tensor_release(narrow);
    porta_tensor_release(imag);
    porta_tensor_release(parts);
    porta_tensor_release(back);
    porta_tensor_release(c);
    porta_tensor_release(real);
}

/* Kernels never see complex tensors: a primitive refuses them. */
TEST(test_complex_primitives_refused) {
    int64_t n = 4;
    porta_tensor *c = test_empty(PORTA_C64, 1, &n);
    if (!c) return;
    CHECK_OK(porta_fill(c, 1.0));
    porta_tensor *out = NULL;
    CHECK_ERR(porta_binary(PORTA_ADD, c, c, &out), PORTA_ERR_DTYPE,
              "not implemented for complex64 on porta");
    CHECK(out == NULL);
    CHECK_ERR(porta_unary(PORTA_EXP, c, &out), PORTA_ERR_DTYPE,
              "not implemented for complex64 on porta");
    porta_tensor_release(c);
}
