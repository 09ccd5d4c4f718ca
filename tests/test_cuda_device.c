/* The CUDA backend on a GPU: data round trips, elementwise ops, casts and
 * reductions (eager and fused) equal the CPU's, the hand-written kernels
 * (matmul, pad) run on CUDA, and a sort (no CUDA kernel) runs on the CPU
 * device instead (placement). Without a GPU (no libcuda) the backend
 * must say why it is unavailable and add no device; PORTA_REQUIRE_CUDA
 * makes a missing GPU a failure. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cu_runtime.h"
#include "porta_place.h"
#include "test.h"

/* t copied onto device (NULL, with the failure recorded, on error). */
static porta_tensor *to_device(porta_device *device, const porta_tensor *t) {
    porta_tensor *out = NULL;
    porta_status *s = porta_tensor_empty(device, porta_tensor_dtype(t), porta_tensor_rank(t),
                                         porta_tensor_sizes(t), &out);
    if (!s) s = porta_copy(t, out);
    if (s) {
        test_fail(__FILE__, __LINE__, "to_device: %s", porta_status_message(s));
        porta_status_free(s);
        porta_tensor_release(out);
        return NULL;
    }
    return out;
}

static void expect_close(const char *what, const porta_tensor *got, const porta_tensor *want,
                         double rtol) {
    CHECK_MSG(porta_tensor_numel(got) == porta_tensor_numel(want), "%s: sizes differ", what);
    double *g = test_to_doubles(got), *w = test_to_doubles(want);
    test_close(what, g, w, porta_tensor_numel(want), rtol, rtol);
    free(g);
    free(w);
}

/* exp(a * b + 1) in float32, its float16 cast, a row sum and an int64 max,
 * on the CPU and on CUDA. */
static void compare_chain(porta_device *gpu, const char *mode) {
    test_rng rng = test_rng_make(7);
    int64_t sizes[2] = {37, 129};
    porta_tensor *a = test_random_tensor(&rng, PORTA_F32, 2, sizes, -2, 2);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F32, 2, sizes, -1, 1);
    porta_tensor *n = test_random_tensor(&rng, PORTA_I64, 2, sizes, 0, 0);
    porta_tensor *one = NULL, *ga = to_device(gpu, a), *gb = to_device(gpu, b);
    porta_tensor *gn = to_device(gpu, n), *gone = NULL;
    porta_tensor *results[2][4] = {{0}};
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 0, NULL, 1.0, &one));
    CHECK_OK(porta_tensor_full(gpu, PORTA_F32, 0, NULL, 1.0, &gone));
    const porta_tensor *inputs[2][4] = {{a, b, n, one}, {ga, gb, gn, gone}};
    int axis = 1;
    for (int side = 0; side < 2 && ga && gb && gn; side++) {
        const porta_tensor *const *x = inputs[side];
        porta_tensor *product = NULL, *sum = NULL;
        CHECK_OK(porta_binary(PORTA_MUL, x[0], x[1], &product));
        CHECK_OK(porta_binary(PORTA_ADD, product, x[3], &sum));
        CHECK_OK(porta_unary(PORTA_EXP, sum, &results[side][0]));
        CHECK_OK(porta_cast(results[side][0], PORTA_F16, &results[side][1]));
        CHECK_OK(porta_reduce(PORTA_REDUCE_SUM, results[side][0], &axis, 1, false,
                              &results[side][2]));
        CHECK_OK(porta_reduce(PORTA_REDUCE_MAX, x[2], &axis, 1, true, &results[side][3]));
        porta_tensor_release(product);
        porta_tensor_release(sum);
    }
    CHECK_OK(porta_flush());
    static const char *names[4] = {"exp(a * b + 1)", "as float16", "row sums", "int64 max"};
    /* CUDA's expf and the CPU's vector exp may differ in the last bit, which
     * can move a float16 rounding by one step; sums add in another order */
    static const double rtol[4] = {1e-6, 1e-3, 1e-5, 0};
    for (int i = 0; i < 4; i++) {
        char what[96];
        snprintf(what, sizeof what, "%s, %s", names[i], mode);
        if (results[0][i] && results[1][i])
            expect_close(what, results[1][i], results[0][i], rtol[i]);
    }
    for (int i = 0; i < 4; i++) {
        porta_tensor_release(results[0][i]);
        porta_tensor_release(results[1][i]);
    }
    porta_tensor *all[] = {a, b, n, one, ga, gb, gn, gone};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) porta_tensor_release(all[i]);
}

TEST(cuda_device_or_the_reason_it_is_unavailable) {
    porta_device *gpu = test_backend_device("cuda", "cuda_device_or_the_reason_it_is_unavailable");
    if (!gpu) return;
    porta_device_info info;
    CHECK_OK(porta_device_info_get(gpu, &info));
    CHECK(info.capabilities & PORTA_CAP_F64);
    CHECK(info.memory_bytes > 0 && info.compute_units > 0);
    CHECK(porta_backend_unavailable_reason("cuda") == NULL);
}

TEST(cuda_round_trips_data) {
    porta_device *gpu = test_backend_device("cuda", "cuda_round_trips_data");
    if (!gpu) return;
    float data[5] = {1.5f, -0.0f, 3e38f, -7.25f, 1e-40f}, back[5] = {0};
    int64_t five = 5;
    porta_tensor *t = NULL;
    CHECK_OK(porta_tensor_from_host(gpu, PORTA_F32, 1, &five, data, &t));
    CHECK_OK(porta_tensor_to_host(t, back, sizeof back));
    CHECK(memcmp(data, back, sizeof data) == 0);
    porta_tensor_release(t);
}

TEST(cuda_runs_eager_ops_as_the_cpu) {
    porta_device *gpu = test_backend_device("cuda", "cuda_runs_eager_ops_as_the_cpu");
    if (!gpu) return;
    test_cache_begin();
    compare_chain(gpu, "eager");
    test_cache_end();
}

TEST(cuda_runs_fused_kernels_as_the_cpu) {
    porta_device *gpu = test_backend_device("cuda", "cuda_runs_fused_kernels_as_the_cpu");
    if (!gpu) return;
    test_cache_begin();
    CHECK_OK(porta_set_fusion(true));
    compare_chain(gpu, "fused");
    CHECK_OK(porta_set_fusion(false));
    test_cache_end();
}

/* A primitive without a CUDA kernel (sort: its program does not compile as
 * CUDA) runs on the CPU device, its operand copied there and the
 * permutation copied back (devices/placement.h): no kernel runs on the
 * GPU, so this also holds on the stand-in driver. */
TEST(cuda_places_what_has_no_kernel_yet) {
    porta_device *gpu = test_backend_device("cuda", "cuda_places_what_has_no_kernel_yet");
    if (!gpu) return;
    test_cache_begin();
    int64_t sizes[2] = {4, 4};
    float values[16];
    int64_t want[16], got[16];
    for (int i = 0; i < 16; i++) values[i] = (float)((i * 7) % 5) - 1.5f;
    porta_tensor *x = NULL, *order = NULL, *cpu_x = NULL, *cpu_order = NULL;
    porta_placement_counts_reset();
    CHECK_OK(porta_tensor_from_host(gpu, PORTA_F32, 2, sizes, values, &x));
    CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F32, 2, sizes, values, &cpu_x));
    porta_status *status = porta_sort(x, 1, PORTA_SORT_ASCENDING, NULL, &order);
    CHECK_MSG(!status, "sort on CUDA, placed on the CPU: %s", porta_status_message(status));
    porta_status_free(status);
    CHECK_OK(porta_sort(cpu_x, 1, PORTA_SORT_ASCENDING, NULL, &cpu_order));
    if (order) {
        CHECK(porta_tensor_device(order) == gpu);
        CHECK_OK(porta_tensor_to_host(order, got, sizeof got));
        CHECK_OK(porta_tensor_to_host(cpu_order, want, sizeof want));
        CHECK_MSG(!memcmp(got, want, sizeof got), "the placed sort differs from the CPU's");
    }
    porta_placement_count count;
    porta_device_info gpu_info, cpu_info;
    CHECK_OK(porta_device_info_get(gpu, &gpu_info));
    CHECK_OK(porta_device_info_get(test_cpu(), &cpu_info));
    CHECK(porta_placement_counts(&count, 1) == 1);
    CHECK_MSG(!strcmp(count.op, "sort.ascending") && count.from == gpu_info.index &&
                  count.to == cpu_info.index && count.count == 1 && count.bytes_in == 16 * 4 &&
                  count.bytes_out == 16 * 8,
              "placed: %s from porta:%d to porta:%d, %llu times, %llu bytes in, %llu out",
              count.op, count.from, count.to, (unsigned long long)count.count,
              (unsigned long long)count.bytes_in, (unsigned long long)count.bytes_out);
    porta_placement_counts_reset();
    porta_tensor_release(order);
    porta_tensor_release(cpu_order);
    porta_tensor_release(x);
    porta_tensor_release(cpu_x);
    test_cache_end();
}

/* A function of the stand-in driver (NULL on a real driver). */
static void *stand_in_symbol(const char *name) {
    const char *library = getenv("PORTA_CUDA_LIBRARY");
    void *handle = library ? dlopen(library, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void *fn = handle ? dlsym(handle, name) : NULL;
    if (handle) dlclose(handle); /* the backend holds its own reference */
    return fn;
}

/* The stand-in driver's record of its last hand-written kernel launch;
 * NULL on a real driver. */
typedef void (*last_launch_fn)(char *name, unsigned *grid, unsigned *block);
static last_launch_fn stand_in_last_launch(void) {
    return (last_launch_fn)stand_in_symbol("stand_in_last_launch");
}

/* The hand-written kernels (backends/clc/clk_*.c) on CUDA: a matmul (the tiled
 * GEMM, 16 x 16 threads per block) and a pad run on the GPU, not placed.
 * On a GPU their results equal the CPU's; on the stand-in driver, which
 * runs no kernel, their programs must have compiled with NVRTC, loaded and
 * launched in the expected shapes. */
TEST(cuda_runs_the_hand_written_kernels) {
    porta_device *gpu = test_backend_device("cuda", "cuda_runs_the_hand_written_kernels");
    if (!gpu) return;
    test_cache_begin();
    test_rng rng = test_rng_make(11);
    int64_t a_sizes[2] = {37, 29}, b_sizes[2] = {29, 21};
    porta_tensor *a = test_random_tensor(&rng, PORTA_F32, 2, a_sizes, -1, 1);
    porta_tensor *b = test_random_tensor(&rng, PORTA_F32, 2, b_sizes, -1, 1);
    porta_tensor *ga = a ? to_device(gpu, a) : NULL, *gb = b ? to_device(gpu, b) : NULL;
    porta_tensor *product = NULL, *gpu_product = NULL, *padded = NULL, *gpu_padded = NULL;
    porta_placement_counts_reset();
    int64_t pads[4] = {1, 2, 0, 3};
    last_launch_fn last = stand_in_last_launch();
    char name[64] = "";
    unsigned grid[3] = {0}, block[3] = {0};
    if (ga && gb) {
        CHECK_OK(porta_matmul(a, b, &product));
        CHECK_OK(porta_matmul(ga, gb, &gpu_product));
        if (last) {
            last(name, grid, block);
            /* 37 x 21 in 64 x 64 blocks: one block of 16 x 16 threads */
            CHECK_MSG(!strcmp(name, "mm_tiled_f32") && grid[0] == 1 && grid[1] == 1 &&
                          block[0] == 16 && block[1] == 16 && block[2] == 1,
                      "matmul launched %s over %u x %u blocks of %u x %u threads", name,
                      grid[0], grid[1], block[0], block[1]);
        } else if (product && gpu_product) {
            expect_close("matmul", gpu_product, product, 1e-5);
        }
        CHECK_OK(porta_pad(a, pads, 0.5, &padded));
        CHECK_OK(porta_pad(ga, pads, 0.5, &gpu_padded));
        if (last) {
            last(name, grid, block);
            /* 40 x 32 = 1280 elements, one item each */
            CHECK_MSG(!strcmp(name, "pad_4") && block[1] == 1 &&
                          (uint64_t)grid[0] * block[0] >= 1280 &&
                          (uint64_t)(grid[0] - 1) * block[0] < 1280,
                      "pad launched %s over %u blocks of %u threads", name, grid[0], block[0]);
        } else if (padded && gpu_padded) {
            expect_close("pad", gpu_padded, padded, 0);
        }
    }
    CHECK_MSG(porta_placement_counts(NULL, 0) == 0, "a hand-written kernel was placed elsewhere");
    porta_tensor *all[] = {a, b, ga, gb, product, gpu_product, padded, gpu_padded};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) porta_tensor_release(all[i]);
    test_cache_end();
}

/* float16 and bfloat16 matmuls on a device of compute capability >= 8.0
 * (the stand-in says 9.0) run on tensor cores (cu_gemm.c): blocks of 128
 * threads, one per 64 x 64 output block of each batch. On a GPU the
 * results equal the CPU's within the dtype's precision (float32
 * accumulation in both, in other orders). */
TEST(cuda_gemm_runs_on_tensor_cores) {
    porta_device *gpu = test_backend_device("cuda", "cuda_gemm_runs_on_tensor_cores");
    if (!gpu) return;
    test_cache_begin();
    static const struct {
        porta_dtype dtype;
        int a_rank, b_rank;
        int64_t a[3], b[3];
        unsigned grid_x, grid_y;
    } cases[] = {
        {PORTA_F16, 2, 2, {37, 29}, {29, 21}, 1, 1},
        /* 3 batches of 130 x 70 (3 x 2 blocks each), K = 40 (a partial depth step) */
        {PORTA_BF16, 3, 3, {3, 130, 40}, {3, 40, 70}, 2, 9},
        /* b broadcast over a's 4 batches; 65 x 129: 2 x 3 blocks */
        {PORTA_F16, 3, 2, {4, 65, 8}, {8, 129}, 3, 8},
    };
    last_launch_fn last = stand_in_last_launch();
    test_rng rng = test_rng_make(13);
    porta_placement_counts_reset();
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        porta_tensor *a = test_random_tensor(&rng, cases[c].dtype, cases[c].a_rank, cases[c].a,
                                             -1, 1);
        porta_tensor *b = test_random_tensor(&rng, cases[c].dtype, cases[c].b_rank, cases[c].b,
                                             -1, 1);
        porta_tensor *ga = a ? to_device(gpu, a) : NULL, *gb = b ? to_device(gpu, b) : NULL;
        porta_tensor *product = NULL, *gpu_product = NULL;
        const char *want = cases[c].dtype == PORTA_BF16 ? "gemm_tc_bf16" : "gemm_tc_f16";
        if (ga && gb) {
            CHECK_OK(porta_matmul(a, b, &product));
            CHECK_OK(porta_matmul(ga, gb, &gpu_product));
        }
        if (gpu_product && last) {
            char name[64] = "";
            unsigned grid[3] = {0}, block[3] = {0};
            last(name, grid, block);
            CHECK_MSG(!strcmp(name, want) && grid[0] == cases[c].grid_x &&
                          grid[1] == cases[c].grid_y && grid[2] == 1 && block[0] == 128 &&
                          block[1] == 1 && block[2] == 1,
                      "case %zu: launched %s over %u x %u x %u blocks of %u x %u x %u threads; "
                      "expected %s over %u x %u x 1 blocks of 128 x 1 x 1",
                      c, name, grid[0], grid[1], grid[2], block[0], block[1], block[2], want,
                      cases[c].grid_x, cases[c].grid_y);
        } else if (gpu_product && product) {
            expect_close(want, gpu_product, product,
                         cases[c].dtype == PORTA_BF16 ? 1.6e-2 : 2e-3);
        }
        porta_tensor *all[] = {a, b, ga, gb, product, gpu_product};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) porta_tensor_release(all[i]);
    }
    CHECK_MSG(porta_placement_counts(NULL, 0) == 0, "a half matmul was placed elsewhere");
    test_cache_end();
}

/* The caching allocator (cu_alloc.c): a freed buffer's block is kept and
 * the next request of its size class (512-byte steps here) takes it
 * without the driver; porta_memory_allocated() counts live buffers' bytes
 * exactly, kept ones are cu_cache_bytes(). On the stand-in driver, which
 * counts its allocations and can be given a capacity, also: the driver
 * is asked once per class, and out of memory the kept blocks go back to
 * it and the allocation succeeds, or fails cleanly when even that is not
 * enough. */
typedef void (*memory_fn)(size_t *live, long *allocs, long *frees);
typedef void (*capacity_fn)(size_t bytes);

static porta_tensor *device_bytes(porta_device *gpu, int64_t bytes) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_empty(gpu, PORTA_U8, 1, &bytes, &t);
    CHECK_MSG(!status, "%lld bytes on CUDA: %s", (long long)bytes, porta_status_message(status));
    porta_status_free(status);
    return t;
}

TEST(cuda_caches_device_memory) {
    porta_device *gpu = test_backend_device("cuda", "cuda_caches_device_memory");
    if (!gpu) return;
    cu_state *s = cu_of(gpu);
    memory_fn memory = (memory_fn)stand_in_symbol("stand_in_memory");
    capacity_fn capacity = (capacity_fn)stand_in_symbol("stand_in_set_capacity");
    cu_cache_release(s);
    uint64_t base = porta_memory_allocated();
    size_t live0 = 0, live = 0;
    long allocs0 = 0, frees0 = 0, allocs = 0, frees = 0;
    if (memory) memory(&live0, &allocs0, &frees0);

    porta_tensor *t1 = device_bytes(gpu, 4000);
    CHECK_MSG(porta_memory_allocated() == base + 4000 && cu_cache_bytes(s) == 0,
              "a live 4000-byte buffer: %llu allocated (expected %llu), %zu cached (expected 0)",
              (unsigned long long)porta_memory_allocated(), (unsigned long long)(base + 4000),
              cu_cache_bytes(s));
    porta_tensor_release(t1);
    CHECK_MSG(porta_memory_allocated() == base && cu_cache_bytes(s) == 4096,
              "after freeing it: %llu allocated (expected %llu), %zu cached (expected 4096)",
              (unsigned long long)porta_memory_allocated(), (unsigned long long)base,
              cu_cache_bytes(s));
    t1 = device_bytes(gpu, 3900); /* the same class: the kept block */
    porta_tensor *t2 = device_bytes(gpu, 10000);
    CHECK_MSG(porta_memory_allocated() == base + 13900 && cu_cache_bytes(s) == 0,
              "3900 + 10000 bytes live: %llu allocated (expected %llu), %zu cached (expected 0)",
              (unsigned long long)porta_memory_allocated(), (unsigned long long)(base + 13900),
              cu_cache_bytes(s));
    if (memory) {
        memory(&live, &allocs, &frees);
        CHECK_MSG(allocs == allocs0 + 2 && frees == frees0 && live == live0 + 4096 + 10240,
                  "driver: %ld allocations, %ld frees, %zu bytes live; expected %ld, %ld, %zu",
                  allocs, frees, live, allocs0 + 2, frees0, live0 + 4096 + 10240);
    }
    porta_tensor_release(t1);
    porta_tensor_release(t2);
    CHECK(cu_cache_bytes(s) == 4096 + 10240 && porta_memory_allocated() == base);

    if (memory && capacity) {
        /* room for 20000 bytes only once the 14336 kept bytes are back */
        memory(&live, &allocs, &frees);
        capacity(live + 20480 - 1);
        porta_tensor *t3 = device_bytes(gpu, 20000);
        memory(&live, &allocs, &frees);
        CHECK_MSG(t3 && cu_cache_bytes(s) == 0 && allocs == allocs0 + 3 &&
                      frees == frees0 + 2 && live == live0 + 20480,
                  "out of memory with 14336 bytes kept: %zu kept after, driver %ld "
                  "allocations, %ld frees, %zu live; expected 0, %ld, %ld, %zu",
                  cu_cache_bytes(s), allocs, frees, live, allocs0 + 3, frees0 + 2,
                  live0 + 20480);
        porta_tensor_release(t3); /* kept: 20480 */
        capacity(live + 1000);
        int64_t big = 1 << 20;
        porta_tensor *t4 = NULL;
        CHECK_ERR(porta_tensor_empty(gpu, PORTA_U8, 1, &big, &t4), PORTA_ERR_OUT_OF_MEMORY,
                  "after returning every cached block");
        CHECK_MSG(!t4 && porta_memory_allocated() == base && cu_cache_bytes(s) == 0,
                  "a failed allocation: %llu allocated (expected %llu), %zu kept (expected 0)",
                  (unsigned long long)porta_memory_allocated(), (unsigned long long)base,
                  cu_cache_bytes(s));
        capacity((size_t)-1);
    } else {
        fprintf(stderr, "    not on the stand-in driver: driver counts and out of memory "
                        "not checked\n");
    }
    cu_cache_release(s);
    if (memory) {
        memory(&live, &allocs, &frees);
        CHECK_MSG(live == live0, "after releasing the cache the driver holds %zu bytes, %zu "
                                 "before the test", live, live0);
    }
    CHECK(cu_cache_bytes(s) == 0);
}

/* Writes from the host go through the device's pinned staging ring
 * (cu_stream.c) and return without waiting for the stream; a write larger
 * than the ring refills slots only after their events have passed; a read
 * waits for the stream, and gives back what was written (on a GPU too).
 * Events time the stream. On the stand-in driver, which counts its
 * synchronizations and tells copies from pinned memory apart, also: no
 * stream wait on a write, every write chunk from pinned memory. */
typedef void (*copies_fn)(long *stream_syncs, long *event_syncs, long *pinned, long *pageable);

TEST(cuda_copies_from_the_host_asynchronously) {
    porta_device *gpu = test_backend_device("cuda", "cuda_copies_from_the_host_asynchronously");
    if (!gpu) return;
    cu_state *s = cu_of(gpu);
    copies_fn copies = (copies_fn)stand_in_symbol("stand_in_copies");
    long syncs0 = 0, events0 = 0, pinned0 = 0, pageable0 = 0;
    long syncs = 0, events = 0, pinned = 0, pageable = 0;
    /* 2.5 rings of slots: 10 chunks, the last 6 into slots used before */
    int64_t count = (int64_t)(CU_STAGE_SLOTS * CU_STAGE_BYTES * 5 / 2 / sizeof(float));
    float *values = malloc((size_t)count * sizeof *values);
    float *back = malloc((size_t)count * sizeof *back);
    CHECK(values && back);
    if (!values || !back) {
        free(values);
        free(back);
        return;
    }
    for (int64_t i = 0; i < count; i++) values[i] = (float)(i % 1000003) - 7.25f;
    porta_tensor *small = NULL, *large = NULL;
    int64_t small_count = 1000;
    if (copies) copies(&syncs0, &events0, &pinned0, &pageable0);
    CHECK_OK(porta_tensor_from_host(gpu, PORTA_F32, 1, &small_count, values, &small));
    if (copies) {
        copies(&syncs, &events, &pinned, &pageable);
        CHECK_MSG(syncs == syncs0 && pinned == pinned0 + 1 && pageable == pageable0,
                  "a 4000-byte write: %ld stream waits, %ld pinned and %ld pageable copies; "
                  "expected 0, 1, 0",
                  syncs - syncs0, pinned - pinned0, pageable - pageable0);
    }
    CHECK_OK(porta_tensor_from_host(gpu, PORTA_F32, 1, &count, values, &large));
    memset(back, 0, (size_t)count * sizeof *back);
    if (copies) {
        long before_read = syncs;
        copies(&syncs, &events, &pinned, &pageable);
        long chunks = (long)(count * (int64_t)sizeof(float) / (int64_t)CU_STAGE_BYTES);
        CHECK_MSG(syncs == before_read && pinned == pinned0 + 1 + chunks &&
                      pageable == pageable0 && events - events0 >= chunks + 1 - CU_STAGE_SLOTS,
                  "a %lld-byte write: %ld stream waits, %ld pinned and %ld pageable copies, "
                  "%ld slot waits; expected 0, %ld, 0, at least %ld",
                  (long long)(count * 4), syncs - before_read, pinned - pinned0 - 1,
                  pageable - pageable0, events - events0, chunks,
                  chunks + 1 - CU_STAGE_SLOTS);
    }
    if (large) {
        CHECK_OK(porta_tensor_to_host(large, back, (size_t)count * sizeof *back));
        CHECK_MSG(!memcmp(back, values, (size_t)count * sizeof *back),
                  "the staged write did not arrive as written");
        if (copies) {
            long before = syncs;
            copies(&syncs, &events, &pinned, &pageable);
            CHECK_MSG(syncs > before, "a read did not wait for the stream");
        }
    }
    CUevent start = NULL, end = NULL;
    float ms = -1;
    CHECK_OK(cu_event_new(s, &start));
    CHECK_OK(cu_event_new(s, &end));
    if (start && end) {
        CHECK_OK(cu_event_record(s, start));
        CHECK_OK(porta_tensor_to_host(small, back, 4000));
        CHECK_OK(cu_event_record(s, end));
        CHECK_OK(cu_event_elapsed_ms(s, start, end, &ms));
        CHECK_MSG(ms >= 0 && ms < 60e3, "the events measured %g ms", ms);
    }
    cu_event_free(s, start);
    cu_event_free(s, end);
    porta_tensor_release(small);
    porta_tensor_release(large);
    free(values);
    free(back);
}
