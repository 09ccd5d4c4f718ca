/* The factorisations on an OpenCL device (the kernel library's clk_factor):
 * every porta_factor_op, float32 and float64, on batched, strided and
 * broadcast operands and on failing matrices (not positive-definite,
 * singular, rank-deficient), run on the device itself (nothing placed on
 * the CPU) and equal to the CPU device's results to rounding: the kernels
 * make the CPU's algorithm choices in the same order.
 *
 * Without an OpenCL device the test passes with a note. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "porta_place.h"
#include "test.h"

static porta_device *find_opencl(void) {
    for (int i = 0; i < porta_device_count(); i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (strcmp(info.backend, "opencl") == 0) return device;
    }
    return NULL;
}

/* A tensor of `dtype` on `device` holding values (float64 on the host). */
static porta_tensor *on(porta_device *device, porta_dtype dtype, int rank, const int64_t *sizes,
                        const double *values) {
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sizes[d];
    float *narrow = malloc((size_t)n * sizeof *narrow);
    for (int64_t i = 0; i < n; i++) narrow[i] = (float)values[i];
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(
        device, dtype, rank, sizes, dtype == PORTA_F64 ? (const void *)values : narrow, &t);
    free(narrow);
    CHECK_MSG(!status, "from_host: %s", porta_status_message(status));
    porta_status_free(status);
    return t;
}

/* Random entries in [-3, 3), reproducibly. */
static void fill(double *values, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        values[i] = (double)(seed >> 8 & 0xffff) / 65536.0 * 6 - 3;
    }
}

/* The transposed view of a matrix of rank 2 or 3 (a strided operand). */
static porta_tensor *transposed(porta_tensor *t, int rank) {
    int dims[3] = {0, 2, 1};
    if (rank == 2) dims[0] = 1, dims[1] = 0;
    porta_tensor *view = NULL;
    porta_status *status = porta_permute(t, dims, &view);
    CHECK_MSG(!status, "permute: %s", porta_status_message(status));
    porta_status_free(status);
    porta_tensor_release(t);
    return view;
}

/* op on the device and on the CPU from the same values: the same packed
 * result to rounding, and no primitive placed on another device. */
static void check_op(porta_device *gpu, porta_factor_op op, int flags, porta_dtype dtype,
                     int rank, const int64_t *sizes, const double *a_values, bool transpose,
                     int b_rank, const int64_t *b_sizes, const double *b_values) {
    porta_tensor *a[2] = {NULL, NULL}, *b[2] = {NULL, NULL}, *out[2] = {NULL, NULL};
    porta_device *devices[2] = {test_cpu(), gpu};
    porta_placement_counts_reset();
    for (int d = 0; d < 2; d++) {
        a[d] = on(devices[d], dtype, rank, sizes, a_values);
        if (a[d] && transpose) a[d] = transposed(a[d], rank);
        if (b_values) b[d] = on(devices[d], dtype, b_rank, b_sizes, b_values);
        if (a[d]) CHECK_OK(porta_factor(op, flags, a[d], b[d], &out[d]));
    }
    CHECK_OK(porta_flush());
    porta_placement_count counts[4];
    int placed = porta_placement_counts(counts, 4);
    CHECK_MSG(placed == 0, "%s %s: %d primitives placed off the OpenCL device (first: %s)",
              porta_factor_op_name(op), porta_dtype_name(dtype), placed,
              placed ? counts[0].op : "");
    if (out[0] && out[1]) {
        CHECK(porta_tensor_device(out[1]) == gpu);
        int64_t n = porta_tensor_numel(out[0]);
        CHECK(porta_tensor_numel(out[1]) == n);
        double *want = test_to_doubles(out[0]), *got = test_to_doubles(out[1]);
        double tol = dtype == PORTA_F64 ? 1e-11 : 1e-5;
        char what[96];
        snprintf(what, sizeof what, "%s %s flags %d on OpenCL", porta_factor_op_name(op),
                 porta_dtype_name(dtype), flags);
        CHECK(test_close(what, got, want, n, tol, tol));
        free(want);
        free(got);
    }
    for (int d = 0; d < 2; d++) {
        porta_tensor_release(a[d]);
        porta_tensor_release(b[d]);
        porta_tensor_release(out[d]);
    }
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

TEST(factor_opencl_every_op_matches_the_cpu_on_the_device) {
    porta_device *gpu = find_opencl();
    if (!gpu) {
        fprintf(stderr, "    factor_opencl: no OpenCL device here\n");
        return;
    }
    porta_device_info info;
    CHECK_OK(porta_device_info_get(gpu, &info));
    double a[3 * 6 * 6], b[3 * 6 * 2], spd[3 * 4 * 4];
    fill(a, 3 * 6 * 6, 7);
    fill(b, 3 * 6 * 2, 11);
    /* two positive-definite matrices (A A^T + 4 I) and a third that fails
     * at its second column */
    for (int item = 0; item < 2; item++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                double s = i == j ? 4 : 0;
                for (int c = 0; c < 4; c++) s += a[item * 16 + i * 4 + c] * a[item * 16 + j * 4 + c];
                spd[item * 16 + i * 4 + j] = s;
            }
    static const double failing[16] = {1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    memcpy(spd + 32, failing, sizeof failing);
    /* rank-deficient: the third column the sum of the first two */
    double deficient[5 * 3];
    for (int i = 0; i < 5; i++) {
        deficient[i * 3] = a[i];
        deficient[i * 3 + 1] = a[10 + i];
        deficient[i * 3 + 2] = a[i] + a[10 + i];
    }
    static const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    for (int t = 0; t < 2; t++) {
        porta_dtype dtype = dtypes[t];
        if (dtype == PORTA_F64 && !(info.capabilities & PORTA_CAP_F64)) continue;
        check_op(gpu, PORTA_FACTOR_CHOLESKY, 0, dtype, 3, SHAPE(3, 4, 4), spd, false, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_LU, 0, dtype, 3, SHAPE(3, 5, 4), a, true, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_LU, 0, dtype, 2, SHAPE(3, 5), a, false, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_QR, 0, dtype, 3, SHAPE(2, 5, 3), a, false, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_QR, 0, dtype, 2, SHAPE(3, 5), a, true, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_EIGH, 0, dtype, 3, SHAPE(2, 5, 5), a, false, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_SVD, 0, dtype, 3, SHAPE(2, 4, 6), a, true, 0, NULL, NULL);
        check_op(gpu, PORTA_FACTOR_SVD, 0, dtype, 2, SHAPE(5, 3), deficient, false, 0, NULL,
                 NULL);
        check_op(gpu, PORTA_FACTOR_LDL, 0, dtype, 3, SHAPE(2, 6, 6), a, false, 0, NULL, NULL);
        for (int flags = 0; flags < 4; flags++) /* one coefficient for a batch of 3 */
            check_op(gpu, PORTA_FACTOR_TRIANGULAR_SOLVE, flags, dtype, 2, SHAPE(6, 6), spd,
                     flags & 1, 3, SHAPE(3, 6, 2), b);
        /* the solve reads LDL's packing: LD, then the pivots in row n */
        double ld[2 * 7 * 6];
        porta_tensor *x = on(test_cpu(), PORTA_F64, 3, SHAPE(2, 6, 6), a), *packed = NULL;
        CHECK_OK(porta_factor(PORTA_FACTOR_LDL, 0, x, NULL, &packed));
        CHECK_OK(porta_tensor_to_host(packed, ld, sizeof ld));
        check_op(gpu, PORTA_FACTOR_LDL_SOLVE, 0, dtype, 3, SHAPE(2, 7, 6), ld, false, 3,
                 SHAPE(2, 6, 2), b);
        porta_tensor_release(packed);
        porta_tensor_release(x);
    }
    porta_placement_counts_reset();
}
