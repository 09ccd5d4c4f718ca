/* Core: version, statuses, dtypes and promotion, buffers, tensors, devices,
 * the memory limit and the thread pool. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/threadpool.h"
#include "core/dtype.h"
#include "core/status.h"
#include "runtime/tensor.h"
#include "test.h"

TEST(test_core_version) {
    CHECK(porta_version() == PORTA_VERSION_NUMBER);
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", PORTA_VERSION_MAJOR, PORTA_VERSION_MINOR,
             PORTA_VERSION_PATCH);
    CHECK(strcmp(porta_version_string(), expected) == 0);
}

TEST(test_core_status) {
    porta_status *s = porta_error(PORTA_ERR_SHAPE, "shape %s vs %s", "[2, 3]", "[4, 3]");
    CHECK(porta_status_code(s) == PORTA_ERR_SHAPE);
    CHECK(strcmp(porta_status_message(s), "shape [2, 3] vs [4, 3]") == 0);
    s = porta_error_context(s, "in %s", "matmul");
    CHECK(strcmp(porta_status_message(s), "in matmul: shape [2, 3] vs [4, 3]") == 0);
    porta_status_free(s);
    CHECK(porta_status_code(NULL) == PORTA_OK);
    porta_status_free(NULL);
    char buf[CORE_SHAPE_STR_CAP];
    int64_t sizes[3] = {2, 0, 7};
    CHECK(strcmp(core_format_shape(buf, sizeof buf, 3, sizes), "[2, 0, 7]") == 0);
    CHECK(strcmp(core_format_shape(buf, sizeof buf, 0, sizes), "[]") == 0);
}

TEST(test_core_dtype_basics) {
    CHECK(porta_dtype_size(PORTA_BF16) == 2 && porta_dtype_size(PORTA_I64) == 8);
    CHECK(strcmp(porta_dtype_name(PORTA_F16), "float16") == 0);
    CHECK(porta_dtype_is_float(PORTA_BF16) && !porta_dtype_is_float(PORTA_I32));
    CHECK(!porta_dtype_is_signed(PORTA_U8) && porta_dtype_is_signed(PORTA_I8));
}

/* Expected values are torch.promote_types on each pair. */
TEST(test_core_dtype_promotion_matches_torch) {
    const struct { porta_dtype a, b, want; } cases[] = {
        {PORTA_BOOL, PORTA_BOOL, PORTA_BOOL}, {PORTA_BOOL, PORTA_U8, PORTA_U8},
        {PORTA_U8, PORTA_I8, PORTA_I16},      {PORTA_U8, PORTA_I16, PORTA_I16},
        {PORTA_I8, PORTA_I64, PORTA_I64},     {PORTA_I32, PORTA_F16, PORTA_F16},
        {PORTA_F16, PORTA_BF16, PORTA_F32},   {PORTA_BF16, PORTA_F64, PORTA_F64},
        {PORTA_I64, PORTA_BF16, PORTA_BF16},  {PORTA_F32, PORTA_F16, PORTA_F32},
        {PORTA_BOOL, PORTA_F16, PORTA_F16},   {PORTA_U8, PORTA_U8, PORTA_U8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_MSG(porta_dtype_promote(cases[i].a, cases[i].b) == cases[i].want,
                  "promote(%s, %s) = %s", porta_dtype_name(cases[i].a),
                  porta_dtype_name(cases[i].b),
                  porta_dtype_name(porta_dtype_promote(cases[i].a, cases[i].b)));
        CHECK(porta_dtype_promote(cases[i].b, cases[i].a) == cases[i].want);
    }
    CHECK(!porta_dtype_can_cast(PORTA_F32, PORTA_I64));
    CHECK(!porta_dtype_can_cast(PORTA_I32, PORTA_BOOL));
    CHECK(porta_dtype_can_cast(PORTA_I64, PORTA_F16) && porta_dtype_can_cast(PORTA_BOOL, PORTA_U8));
}

static porta_dtype result2(porta_dtype a, porta_operand_kind ka, porta_dtype b,
                           porta_operand_kind kb) {
    porta_operand_type ops[2] = {{a, ka}, {b, kb}};
    return porta_result_type(ops, 2);
}

/* Expected values are torch.result_type with the same operand kinds. */
TEST(test_core_result_type_matches_torch) {
    const porta_operand_kind T = PORTA_OPERAND_TENSOR, Z = PORTA_OPERAND_ZERO_DIM,
                             S = PORTA_OPERAND_SCALAR;
    CHECK(result2(PORTA_I32, T, PORTA_F64, Z) == PORTA_F64); /* category raise takes the 0-dim's dtype */
    CHECK(result2(PORTA_F32, T, PORTA_F64, Z) == PORTA_F32);
    CHECK(result2(PORTA_I32, T, PORTA_F64, S) == PORTA_F32); /* python float -> default dtype */
    CHECK(result2(PORTA_U8, T, PORTA_I64, S) == PORTA_U8);
    CHECK(result2(PORTA_BOOL, T, PORTA_I64, S) == PORTA_I64);
    CHECK(result2(PORTA_F16, T, PORTA_F64, S) == PORTA_F16);
    CHECK(result2(PORTA_I8, Z, PORTA_I64, S) == PORTA_I8);
    CHECK(result2(PORTA_I8, Z, PORTA_I16, Z) == PORTA_I16);
    CHECK(result2(PORTA_BOOL, T, PORTA_BOOL, S) == PORTA_BOOL);
    CHECK(result2(PORTA_I16, T, PORTA_I64, Z) == PORTA_I16);
}

TEST(test_core_half_conversions) {
    const float exact[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604644775390625e-08f};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        CHECK(core_f16_to_f32(core_f32_to_f16(exact[i])) == exact[i]);
    CHECK(core_f32_to_f16(65520.0f) == 0x7c00);            /* rounds to inf */
    CHECK(core_f32_to_f16(1.0f + 0x1.0p-11f) == 0x3c00);   /* tie to even */
    CHECK(core_f32_to_f16(1.0f + 0x1.8p-11f) == 0x3c01);
    CHECK(isnan(core_f16_to_f32(core_f32_to_f16(NAN))));
    CHECK(core_bf16_to_f32(core_f32_to_bf16(3.0f)) == 3.0f);
    CHECK(core_f32_to_bf16(1.0f + 0x1.0p-8f) == 0x3f80);   /* tie to even */
    CHECK(isnan(core_bf16_to_f32(core_f32_to_bf16(NAN))));
    /* Every half value survives a round trip through float. */
    int mismatches = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = core_f16_to_f32((uint16_t)h);
        if (f == f && core_f32_to_f16(f) != h) mismatches++;
    }
    CHECK_MSG(mismatches == 0, "%d half values do not round-trip", mismatches);
}

TEST(test_core_devices) {
    CHECK(porta_device_count() >= 1);
    porta_device *device;
    CHECK_OK(porta_device_get(0, &device));
    porta_device_info info;
    CHECK_OK(porta_device_info_get(device, &info));
    CHECK(info.index == 0 && strcmp(info.backend, "cpu") == 0);
    CHECK(info.compute_units >= 1 && info.memory_bytes > 0 && info.name[0]);
    CHECK(info.capabilities & PORTA_CAP_HOST_MEMORY);
    CHECK_ERR(porta_device_get(99, &device), PORTA_ERR_OUT_OF_RANGE, "device index 99");
    CHECK_ERR(porta_device_get(-1, &device), PORTA_ERR_OUT_OF_RANGE, NULL);
    CHECK_OK(porta_device_synchronize(device));
}

TEST(test_core_buffers) {
    porta_buffer *buffer;
    CHECK_OK(porta_buffer_alloc(test_cpu(), 64, &buffer));
    CHECK(porta_buffer_size(buffer) == 64 && porta_buffer_device(buffer) == test_cpu());
    const char text[] = "porta";
    CHECK_OK(porta_buffer_write(buffer, 10, text, sizeof text));
    char back[sizeof text];
    CHECK_OK(porta_buffer_read(buffer, 10, back, sizeof back));
    CHECK(memcmp(back, text, sizeof text) == 0);
    CHECK_ERR(porta_buffer_write(buffer, 60, text, sizeof text), PORTA_ERR_OUT_OF_RANGE, "64 bytes");
    CHECK_ERR(porta_buffer_read(buffer, 65, back, 0), PORTA_ERR_OUT_OF_RANGE, NULL);
    porta_buffer_retain(buffer);
    porta_buffer_release(buffer);
    CHECK(porta_memory_allocated() >= 64);
    porta_buffer_release(buffer);
}

TEST(test_core_memory_limit) {
    uint64_t base = porta_memory_allocated();
    porta_set_memory_limit(base + 1000);
    porta_tensor *t = NULL;
    int64_t small[1] = {100}, big[1] = {1000};
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_F32, 1, small, &t));
    porta_tensor *u = NULL;
    CHECK_ERR(porta_tensor_empty(test_cpu(), PORTA_F32, 1, big, &u), PORTA_ERR_OUT_OF_MEMORY,
              "memory limit");
    CHECK(u == NULL);
    porta_tensor_release(t);
    porta_set_memory_limit(0);
    CHECK(porta_memory_allocated() == base);
    CHECK(porta_memory_peak() >= base + 400);
}

/* A single request larger than the device's memory is refused, naming both
 * sizes, before any attempt; the next allocation works. */
TEST(test_core_buffer_larger_than_the_device) {
    porta_device_info info;
    CHECK_OK(porta_device_info_get(test_cpu(), &info));
    uint64_t allocated = porta_memory_allocated();
    size_t bytes = (size_t)info.memory_bytes + 1;
    char requested[32], available[32];
    snprintf(requested, sizeof requested, "%zu bytes", bytes);
    snprintf(available, sizeof available, "%llu bytes", (unsigned long long)info.memory_bytes);
    porta_buffer *buffer = NULL;
    CHECK_ERR(porta_buffer_alloc(test_cpu(), bytes, &buffer), PORTA_ERR_OUT_OF_MEMORY, requested);
    CHECK_ERR(porta_buffer_alloc(test_cpu(), bytes, &buffer), PORTA_ERR_OUT_OF_MEMORY, available);
    CHECK(buffer == NULL && porta_memory_allocated() == allocated);
    int64_t sizes[1] = {(int64_t)(info.memory_bytes / 4 + 1)};
    porta_tensor *tensor = NULL;
    CHECK_ERR(porta_tensor_empty(test_cpu(), PORTA_F32, 1, sizes, &tensor),
              PORTA_ERR_OUT_OF_MEMORY, "bytes of memory");
    CHECK_OK(porta_buffer_alloc(test_cpu(), 64, &buffer));
    porta_buffer_release(buffer);
}

TEST(test_core_tensor_empty_and_host_copies) {
    int64_t sizes[3] = {2, 3, 4};
    float data[24];
    for (int i = 0; i < 24; i++) data[i] = (float)i;
    porta_tensor *t;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 3, sizes, data, &t));
    CHECK(porta_tensor_rank(t) == 3 && porta_tensor_numel(t) == 24);
    CHECK(porta_tensor_strides(t)[0] == 12 && porta_tensor_strides(t)[2] == 1);
    CHECK(porta_tensor_is_contiguous(t) && porta_tensor_dtype(t) == PORTA_F32);
    /* A transposed view read back in logical order. */
    int64_t vs[2] = {4, 3}, vst[2] = {1, 4};
    porta_tensor *v;
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(t), PORTA_F32, 2, vs, vst, 12, &v));
    CHECK(!porta_tensor_is_contiguous(v));
    float back[12];
    CHECK_OK(porta_tensor_to_host(v, back, sizeof back));
    CHECK(back[0] == 12 && back[1] == 16 && back[3] == 13);
    CHECK_ERR(porta_tensor_to_host(v, back, 8), PORTA_ERR_INVALID_ARGUMENT, "48 bytes");
    porta_tensor_release(v);
    /* A negative-stride view walks backwards. */
    int64_t rs[1] = {24}, rst[1] = {-1};
    CHECK_OK(porta_tensor_view(porta_tensor_buffer(t), PORTA_F32, 1, rs, rst, 23, &v));
    float rev[24];
    CHECK_OK(porta_tensor_to_host(v, rev, sizeof rev));
    CHECK(rev[0] == 23 && rev[23] == 0);
    porta_tensor_release(v);
    porta_tensor_release(t);
}

TEST(test_core_tensor_view_bounds) {
    porta_buffer *buffer;
    CHECK_OK(porta_buffer_alloc(test_cpu(), 40, &buffer)); /* 10 floats */
    porta_tensor *v = NULL;
    int64_t sizes[2] = {2, 5}, strides[2] = {5, 1};
    CHECK_OK(porta_tensor_view(buffer, PORTA_F32, 2, sizes, strides, 0, &v));
    porta_tensor_release(v);
    v = NULL;
    CHECK_ERR(porta_tensor_view(buffer, PORTA_F32, 2, sizes, strides, 1, &v),
              PORTA_ERR_OUT_OF_RANGE, "elements 1..10");
    int64_t neg[2] = {-5, 1};
    CHECK_ERR(porta_tensor_view(buffer, PORTA_F32, 2, sizes, neg, 0, &v), PORTA_ERR_OUT_OF_RANGE, NULL);
    CHECK_OK(porta_tensor_view(buffer, PORTA_F32, 2, sizes, neg, 5, &v));
    porta_tensor_release(v);
    v = NULL;
    int64_t zero_sizes[2] = {0, 100};
    CHECK_OK(porta_tensor_view(buffer, PORTA_F32, 2, zero_sizes, strides, 1000, &v));
    porta_tensor_release(v);
    v = NULL;
    int64_t bad[1] = {-1}, one[1] = {1};
    CHECK_ERR(porta_tensor_view(buffer, PORTA_F32, 1, bad, one, 0, &v), PORTA_ERR_SHAPE, "negative");
    CHECK_ERR(porta_tensor_view(buffer, PORTA_F32, PORTA_MAX_RANK + 1, sizes, strides, 0, &v),
              PORTA_ERR_INVALID_ARGUMENT, "rank");
    CHECK_ERR(porta_tensor_view(buffer, (porta_dtype)42, 1, one, one, 0, &v), PORTA_ERR_DTYPE, NULL);
    int64_t huge[1] = {INT64_MAX / 2}, big_stride[1] = {4};
    CHECK_ERR(porta_tensor_view(buffer, PORTA_F32, 1, huge, big_stride, 0, &v), PORTA_ERR_OUT_OF_RANGE,
              "overflow");
    CHECK(v == NULL);
    porta_buffer_release(buffer);
}

TEST(test_core_tensor_rank0_and_zero_size) {
    porta_tensor *s;
    double value = 3.5;
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F64, 0, NULL, &value, &s));
    CHECK(porta_tensor_rank(s) == 0 && porta_tensor_numel(s) == 1 && porta_tensor_is_contiguous(s));
    double back = 0;
    CHECK_OK(porta_tensor_to_host(s, &back, sizeof back));
    CHECK(back == 3.5);
    porta_tensor_release(s);
    int64_t sizes[2] = {3, 0};
    porta_tensor *z;
    CHECK_OK(porta_tensor_empty(test_cpu(), PORTA_I64, 2, sizes, &z));
    CHECK(porta_tensor_numel(z) == 0);
    CHECK_OK(porta_tensor_to_host(z, NULL, 0));
    porta_tensor_release(z);
    int64_t overflow[2] = {INT64_MAX, 4};
    CHECK_ERR(porta_tensor_empty(test_cpu(), PORTA_F32, 2, overflow, &z), PORTA_ERR_SHAPE, "int64");
}

static void add_range(void *ctx, int64_t begin, int64_t end, int thread) {
    atomic_llong *sum = ctx;
    long long local = 0;
    for (int64_t i = begin; i < end; i++) local += i;
    atomic_fetch_add(sum, local);
}

static void count_team(void *ctx, int64_t member, int64_t team, int thread) {
    atomic_int *seen = ctx;
    if (member == thread && member < team) atomic_fetch_add(seen, 1);
}

static void nested_for(void *ctx, int64_t begin, int64_t end, int thread) {
    for (int64_t i = begin; i < end; i++) cpu_parallel_for(1000, 1, add_range, ctx);
}

TEST(test_core_threadpool) {
    int original = cpu_thread_count();
    for (int threads = 1; threads <= 3; threads++) {
        cpu_set_thread_count(threads);
        CHECK(cpu_thread_count() == threads);
        for (int64_t n = 0; n < 2000; n += 397) {
            atomic_llong sum = 0;
            cpu_parallel_for(n, 1, add_range, &sum);
            CHECK_MSG(sum == n * (n - 1) / 2, "threads %d n %lld sum %lld", threads, (long long)n,
                      (long long)sum);
        }
        atomic_int seen = 0;
        int team = cpu_parallel_tasks(threads, count_team, &seen);
        CHECK(team == threads && seen == team);
        atomic_llong nested = 0;
        cpu_parallel_for(4, 1, nested_for, &nested);
        CHECK(nested == 4LL * 999 * 1000 / 2);
    }
    cpu_set_thread_count(original);
    CHECK_OK(porta_set_num_threads(0));
    CHECK(porta_get_num_threads() >= 1);
    CHECK_ERR(porta_set_num_threads(-2), PORTA_ERR_INVALID_ARGUMENT, "-2");
}

TEST(test_core_factories) {
    porta_tensor *t = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_I32, 2, (int64_t[]){2, 3}, 7.9, &t));
    double *v = test_to_doubles(t);
    CHECK(porta_tensor_numel(t) == 6 && v[0] == 7 && v[5] == 7);
    free(v);
    porta_tensor_release(t);
    t = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 0, NULL, -1.5, &t));
    CHECK(porta_tensor_rank(t) == 0);
    porta_tensor_release(t);
    t = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_F32, 1, 2, 0.25, &t));
    v = test_to_doubles(t);
    CHECK(porta_tensor_numel(t) == 4 && v[0] == 1 && v[3] == 1.75);
    free(v);
    porta_tensor_release(t);
    t = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_I64, 5, 0, -2, &t));
    v = test_to_doubles(t);
    CHECK(porta_tensor_numel(t) == 3 && v[0] == 5 && v[2] == 1);
    free(v);
    porta_tensor_release(t);
    t = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_F64, 3, 3, 1, &t));
    CHECK(porta_tensor_numel(t) == 0);
    porta_tensor_release(t);
    t = NULL;
    CHECK_ERR(porta_tensor_arange(test_cpu(), PORTA_F32, 0, 1, 0, &t), PORTA_ERR_INVALID_ARGUMENT, "step");
    CHECK_ERR(porta_tensor_arange(test_cpu(), PORTA_F32, 0, 1, -1, &t), PORTA_ERR_INVALID_ARGUMENT, "sign");
    CHECK_ERR(porta_tensor_arange(test_cpu(), PORTA_BOOL, 0, 1, 1, &t), PORTA_ERR_DTYPE, "bool");
    CHECK_ERR(porta_tensor_full(test_cpu(), PORTA_F32, 1, (int64_t[]){-1}, 0, &t), PORTA_ERR_SHAPE, NULL);
    porta_set_memory_limit(porta_memory_allocated() + 16);
    CHECK_ERR(porta_tensor_arange(test_cpu(), PORTA_F64, 0, 100, 1, &t), PORTA_ERR_OUT_OF_MEMORY, NULL);
    CHECK_ERR(porta_tensor_full(test_cpu(), PORTA_F64, 1, (int64_t[]){100}, 0, &t), PORTA_ERR_OUT_OF_MEMORY, NULL);
    porta_set_memory_limit(0);
    CHECK(t == NULL);
}
