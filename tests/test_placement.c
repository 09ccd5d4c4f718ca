/* Placement (devices/placement.h, porta_place.h): primitives a device cannot
 * run go to another device with their operands copied there and the result
 * copied back. The device here is made by the test: its buffers are host
 * memory behind a table of its own (it does not claim PORTA_CAP_HOST_MEMORY,
 * so every copy goes through its buffer reads and writes), it runs what it
 * supports with the CPU's kernels, and it lacks what real devices lack:
 * float64 and a matrix multiply. It is not registered, so the fallback is
 * the CPU device, and results must equal the CPU's bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "porta_place.h"
#include "runtime/device.h"
#include "test.h"

/* ---- the device that lacks float64 and matmul ---- */

static porta_status *lacking_alloc(porta_device *device, size_t bytes, void **handle) {
    return core_host_alloc(bytes ? bytes : 1, "a test device's buffer", handle);
}

static void lacking_free(porta_device *device, void *handle) { core_host_free(handle); }

static porta_status *lacking_write(porta_device *device, void *handle, size_t offset,
                                   const void *src, size_t bytes) {
    memcpy((char *)handle + offset, src, bytes);
    return NULL;
}

static porta_status *lacking_read(porta_device *device, void *handle, size_t offset, void *dst,
                                  size_t bytes) {
    memcpy(dst, (const char *)handle + offset, bytes);
    return NULL;
}

static bool lacking_supports(porta_device *device, const ir_prim *prim,
                             const porta_tensor *const *inputs, int input_count) {
    if (prim->kind <= PRIM_CONSTANT || prim->kind >= PRIM_RESHAPE || prim->kind == PRIM_MATMUL)
        return false;
    for (int i = 0; i < input_count; i++)
        if (inputs[i]->dtype == PORTA_F64) return false;
    bool typed = prim->kind == PRIM_CAST || prim->kind == PRIM_FILL || prim->kind == PRIM_RANDOM;
    return !typed || prim->dtype != PORTA_F64;
}

static int lacking_executed; /* primitives the device ran itself */

static porta_status *lacking_execute(porta_device *device, const ir_prim *prim,
                                     const porta_tensor *const *inputs, int input_count,
                                     porta_tensor *out) {
    if (!lacking_supports(device, prim, inputs, input_count))
        return porta_error(PORTA_ERR_INTERNAL, "the test device was asked to run %s",
                           ir_prim_name(prim));
    lacking_executed++;
    porta_device *cpu = test_cpu(); /* its buffers are host memory: the CPU's kernels run */
    return cpu->ops->execute(cpu, prim, inputs, input_count, out);
}

static const rt_backend_ops lacking_ops = {
    .buffer_alloc = lacking_alloc,
    .buffer_free = lacking_free,
    .buffer_write = lacking_write,
    .buffer_read = lacking_read,
    .supports = lacking_supports,
    .execute = lacking_execute,
};

#define LACKING_INDEX 42

static porta_device lacking = {
    .ops = &lacking_ops,
    .info = {.backend = "test", .name = "a device without float64 or matmul",
             .index = LACKING_INDEX},
};

/* ---- helpers ---- */

static porta_tensor *from_host(porta_device *device, porta_dtype dtype, int rank,
                               const int64_t *sizes, const void *data) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(device, dtype, rank, sizes, data, &t);
    CHECK_MSG(!status, "from_host: %s", porta_status_message(status));
    porta_status_free(status);
    return t;
}

static const porta_placement_count *find_count(const porta_placement_count *counts, int n,
                                               const char *op) {
    for (int i = 0; i < n; i++)
        if (!strcmp(counts[i].op, op)) return &counts[i];
    return NULL;
}

/* The program: float32 work the device runs, float64 work and a matmul it
 * cannot, interleaved, with a broadcast operand and a transposed one:
 *   r = sum(exp(cast64(x * 2) + yrow), axis 1) -> float32, + 1
 *   m = x @ x^T                                                          */
typedef struct program_out {
    porta_tensor *r, *m;
} program_out;

static porta_status *program(porta_device *device, const float *x_data, const double *y_data,
                             program_out *out) {
    int64_t sizes[2] = {3, 5}, row[1] = {5};
    porta_tensor *x = NULL, *yrow = NULL, *two = NULL, *one = NULL, *a = NULL, *b = NULL,
                 *c = NULL, *d = NULL, *e = NULL, *f = NULL, *xt = NULL;
    porta_status *status = porta_tensor_from_host(device, PORTA_F32, 2, sizes, x_data, &x);
    if (!status) status = porta_tensor_from_host(device, PORTA_F64, 1, row, y_data, &yrow);
    if (!status) status = porta_tensor_full(device, PORTA_F32, 0, NULL, 2.0, &two);
    if (!status) status = porta_tensor_full(device, PORTA_F32, 0, NULL, 1.0, &one);
    if (!status) status = porta_binary(PORTA_MUL, x, two, &a);
    if (!status) status = porta_cast(a, PORTA_F64, &b);
    if (!status) status = porta_binary(PORTA_ADD, b, yrow, &c);
    if (!status) status = porta_unary(PORTA_EXP, c, &d);
    int axis = 1;
    if (!status) status = porta_reduce(PORTA_REDUCE_SUM, d, &axis, 1, false, &e);
    if (!status) status = porta_cast(e, PORTA_F32, &f);
    if (!status) status = porta_binary(PORTA_ADD, f, one, &out->r);
    int dims[2] = {1, 0};
    if (!status) status = porta_permute(x, dims, &xt);
    if (!status) status = porta_matmul(x, xt, &out->m);
    porta_tensor *all[] = {x, yrow, two, one, a, b, c, d, e, f, xt};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) porta_tensor_release(all[i]);
    return status;
}

static void release_out(program_out *out) {
    porta_tensor_release(out->r);
    porta_tensor_release(out->m);
    *out = (program_out){0};
}

static const float x_data[15] = {0.5f, -1.25f, 2.0f, 0.125f, -0.75f, 1.5f, -2.0f, 0.25f,
                                 0.375f, -0.5f, 1.0f, 0.0f, -1.5f, 0.625f, 0.875f};
static const double y_data[5] = {0.1, -0.2, 0.3, -0.4, 0.5};

/* Runs the program on the test device (fusion on or off) and on the CPU
 * and compares the results bitwise. */
static void compare_program(bool fused) {
    program_out want = {0}, got = {0};
    CHECK_OK(program(test_cpu(), x_data, y_data, &want));
    CHECK_OK(porta_set_fusion(fused));
    porta_status *status = program(&lacking, x_data, y_data, &got);
    if (!status) status = porta_flush();
    porta_status *off = porta_set_fusion(false);
    CHECK_MSG(!status, "the program on the test device%s: %s", fused ? " (fused)" : "",
              porta_status_message(status));
    porta_status_free(status);
    CHECK_OK(off);
    if (got.r && got.m && want.r && want.m) {
        float r_want[3], r_got[3], m_want[9], m_got[9];
        CHECK_OK(porta_tensor_to_host(want.r, r_want, sizeof r_want));
        CHECK_OK(porta_tensor_to_host(got.r, r_got, sizeof r_got));
        CHECK_OK(porta_tensor_to_host(want.m, m_want, sizeof m_want));
        CHECK_OK(porta_tensor_to_host(got.m, m_got, sizeof m_got));
        CHECK(porta_tensor_device(got.r) == &lacking && porta_tensor_device(got.m) == &lacking);
        CHECK_MSG(!memcmp(r_want, r_got, sizeof r_want), "r: %g %g %g, the CPU gives %g %g %g",
                  r_got[0], r_got[1], r_got[2], r_want[0], r_want[1], r_want[2]);
        CHECK_MSG(!memcmp(m_want, m_got, sizeof m_want), "m differs from the CPU's");
    }
    release_out(&want);
    release_out(&got);
}

/* ---- tests ---- */

TEST(placement_runs_what_a_device_lacks_on_the_cpu_eagerly) {
    porta_placement_counts_reset();
    lacking_executed = 0;
    compare_program(false);
    porta_placement_count counts[16];
    int n = porta_placement_counts(counts, 16);
    CHECK_MSG(n == 5, "expected 5 (op, from, to) entries (cast, binary.add, unary.exp, reduce.sum, matmul), "
                      "got %d", n);
    int cpu = 0;
    porta_device_info info;
    CHECK_OK(porta_device_info_get(test_cpu(), &info));
    cpu = info.index;
    for (int i = 0; i < n && i < 16; i++)
        CHECK_MSG(counts[i].from == LACKING_INDEX && counts[i].to == cpu,
                  "%s placed from porta:%d to porta:%d, expected %d to %d", counts[i].op,
                  counts[i].from, counts[i].to, LACKING_INDEX, cpu);
    const porta_placement_count *cast = find_count(counts, n, "cast");
    const porta_placement_count *add = find_count(counts, n, "binary.add");
    const porta_placement_count *sum = find_count(counts, n, "reduce.sum");
    const porta_placement_count *mm = find_count(counts, n, "matmul");
    CHECK(cast && cast->count == 2); /* to float64 and back */
    /* the add's operands: [3, 5] float64, and a [5] row broadcast (stride 0):
     * only the row's 5 elements cross */
    CHECK_MSG(add && add->count == 1 && add->bytes_in == 15 * 8 + 5 * 8 && add->bytes_out == 15 * 8,
              "add: %llu placed, %llu bytes in, %llu out; expected 1, 160, 120",
              add ? (unsigned long long)add->count : 0ULL,
              add ? (unsigned long long)add->bytes_in : 0ULL,
              add ? (unsigned long long)add->bytes_out : 0ULL);
    CHECK(sum && sum->count == 1 && sum->bytes_in == 15 * 8 && sum->bytes_out == 3 * 8);
    /* x and its transpose: the same 15 floats each */
    CHECK(mm && mm->count == 1 && mm->bytes_in == 2 * 15 * 4 && mm->bytes_out == 9 * 4);
    /* the float32 work stayed on the device: x * 2 and f + 1 (fills and the
     * host copies are not primitives it executes here) */
    CHECK_MSG(lacking_executed >= 2, "the device ran %d primitives itself", lacking_executed);
    porta_placement_counts_reset();
    CHECK(porta_placement_counts(NULL, 0) == 0);
}

TEST(placement_splits_a_fused_trace_across_devices) {
    porta_placement_counts_reset();
    compare_program(true);
    porta_placement_count counts[16];
    int n = porta_placement_counts(counts, 16);
    const porta_placement_count *add = find_count(counts, n, "binary.add");
    const porta_placement_count *mm = find_count(counts, n, "matmul");
    CHECK_MSG(n == 5 && add && add->count == 1 && mm && mm->count == 1,
              "fused: %d entries placed, expected 5 with one add and one matmul", n);
    porta_placement_counts_reset();
}

/* An output with gaps between its elements (a column slice) gets the
 * result, and the gaps keep their values. */
TEST(placement_keeps_the_gaps_of_a_strided_output) {
    int64_t big_sizes[2] = {4, 6}, sizes[2] = {3, 5};
    porta_tensor *big = NULL, *view = NULL, *a = NULL;
    CHECK_OK(porta_tensor_full(&lacking, PORTA_F64, 2, big_sizes, 7.0, &big));
    int64_t strides[2] = {6, 1};
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(big), PORTA_F64, 2, sizes, strides, 7, &view));
    double a_data[15];
    for (int i = 0; i < 15; i++) a_data[i] = i * 0.5 - 3;
    a = from_host(&lacking, PORTA_F64, 2, sizes, a_data);
    porta_placement_counts_reset();
    porta_tensor *target = view;
    if (a) CHECK_OK(porta_unary(PORTA_NEG, a, &target));
    double back[24];
    CHECK_OK(porta_tensor_to_host(big, back, sizeof back));
    for (int r = 0; r < 4; r++)
        for (int col = 0; col < 6; col++) {
            bool inside = r >= 1 && col >= 1;
            double want = inside ? -a_data[(r - 1) * 5 + (col - 1)] : 7.0;
            CHECK_MSG(back[r * 6 + col] == want, "element [%d, %d]: %g, expected %g", r, col,
                      back[r * 6 + col], want);
        }
    porta_placement_count count;
    CHECK(porta_placement_counts(&count, 1) == 1);
    /* the output's span (rows 1..3 from column 1: 3 * 6 - 1 elements) went
     * there first, for its gaps, and came back */
    CHECK_MSG(count.bytes_in == 15 * 8 + 17 * 8 && count.bytes_out == 17 * 8,
              "neg into a slice: %llu bytes in, %llu out; expected %d and %d",
              (unsigned long long)count.bytes_in, (unsigned long long)count.bytes_out,
              32 * 8, 17 * 8);
    porta_placement_counts_reset();
    porta_tensor_release(a);
    porta_tensor_release(view);
    porta_tensor_release(big);
}

/* Out of memory at any allocation of a placement: an error, nothing
 * leaked, and the output's device memory untouched. */
TEST(placement_fails_cleanly_out_of_memory) {
    int64_t sizes[1] = {64};
    porta_tensor *a = NULL, *b = NULL;
    CHECK_OK(porta_tensor_full(&lacking, PORTA_F64, 1, sizes, 1.5, &a));
    CHECK_OK(porta_tensor_full(&lacking, PORTA_F64, 1, sizes, 2.0, &b));
    bool succeeded = false;
    for (uint64_t extra = 0; extra <= 4096 && !succeeded; extra += 64) {
        uint64_t base = porta_memory_allocated();
        uint64_t previous = porta_set_memory_limit(base + extra);
        porta_tensor *sum = NULL;
        porta_status *status = porta_binary(PORTA_ADD, a, b, &sum);
        porta_set_memory_limit(previous);
        if (status) {
            CHECK_MSG(porta_status_code(status) == PORTA_ERR_OUT_OF_MEMORY,
                      "with %llu bytes to spare: %s", (unsigned long long)extra,
                      porta_status_message(status));
            CHECK(sum == NULL);
            porta_status_free(status);
            CHECK_MSG(porta_memory_allocated() == base, "a failed placement leaked %llu bytes",
                      (unsigned long long)(porta_memory_allocated() - base));
            continue;
        }
        succeeded = true;
        double back[64];
        CHECK_OK(porta_tensor_to_host(sum, back, sizeof back));
        CHECK(back[0] == 3.5 && back[63] == 3.5);
        porta_tensor_release(sum);
    }
    CHECK_MSG(succeeded, "the placed add never fit in 4 KiB more memory");
    porta_placement_counts_reset();
    porta_tensor_release(a);
    porta_tensor_release(b);
}
