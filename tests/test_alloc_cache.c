/* The cache of freed large host blocks (core/alloc.c): reuse of a block of
 * the same size, the bounds on what it keeps, the memory limit, and the
 * statistics, which count only what callers hold. */
#include "core/alloc.h"
#include "test.h"

#define MIB ((size_t)1 << 20)

TEST(test_alloc_cache_reuses_large_blocks) {
    core_host_cache_release();
    uint64_t before = porta_memory_allocated();
    void *first = NULL, *second = NULL;
    CHECK_OK(core_host_alloc(16 * MIB, "a test block", &first));
    CHECK(porta_memory_allocated() == before + 16 * MIB);
    core_host_free(first);
    CHECK(porta_memory_allocated() == before);
    CHECK(core_host_cache_bytes() >= 16 * MIB);
    /* A request rounding to the same whole pages gets the same block. */
    CHECK_OK(core_host_alloc(16 * MIB + 100, "a test block", &second));
    CHECK(second == first);
    CHECK(core_host_cache_bytes() == 0);
    CHECK(porta_memory_allocated() == before + 16 * MIB + 100);
    core_host_free(second);
    core_host_cache_release();
    CHECK(core_host_cache_bytes() == 0);
    CHECK(porta_memory_allocated() == before);
}

TEST(test_alloc_cache_skips_small_blocks) {
    core_host_cache_release();
    void *small = NULL;
    CHECK_OK(core_host_alloc(16 * 1024, "a small block", &small));
    core_host_free(small);
    CHECK(core_host_cache_bytes() == 0);
}

TEST(test_alloc_cache_is_bounded) {
    core_host_cache_release();
    enum { BLOCKS = 40 };
    void *blocks[BLOCKS] = {NULL};
    for (int i = 0; i < BLOCKS; i++)
        CHECK_OK(core_host_alloc((size_t)(i + 1) * MIB, "a test block", &blocks[i]));
    for (int i = 0; i < BLOCKS; i++) core_host_free(blocks[i]);
    /* Sizes 1..40 MiB sum to 820 MiB: the cache keeps 256 MiB at most, in
     * at most 16 blocks, the most recently freed. */
    size_t kept = core_host_cache_bytes();
    CHECK(kept > 0 && kept <= 256 * MIB);
    void *again = NULL;
    CHECK_OK(core_host_alloc(40 * MIB, "a test block", &again));
    CHECK(again == blocks[BLOCKS - 1]);
    core_host_free(again);
    core_host_cache_release();
}

TEST(test_alloc_cache_within_memory_limit) {
    core_host_cache_release();
    uint64_t before = porta_memory_allocated();
    void *a = NULL, *b = NULL;
    CHECK_OK(core_host_alloc(8 * MIB, "a test block", &a));
    core_host_free(a);
    CHECK(core_host_cache_bytes() >= 8 * MIB);
    /* A limit leaving less than the cached bytes drops them. */
    uint64_t previous = porta_set_memory_limit(before + 4 * MIB);
    CHECK(core_host_cache_bytes() == 0);
    /* Under the limit, live plus cached bytes stay within it. */
    CHECK_OK(core_host_alloc(3 * MIB, "a test block", &a));
    core_host_free(a);
    CHECK(core_host_cache_bytes() <= 4 * MIB);
    CHECK_OK(core_host_alloc(2 * MIB, "a test block", &b));
    CHECK(porta_memory_allocated() + core_host_cache_bytes() <= before + 4 * MIB);
    /* The limit counts what callers hold, not what is cached. */
    void *over = NULL;
    CHECK_ERR(core_host_alloc(3 * MIB, "a test block", &over), PORTA_ERR_OUT_OF_MEMORY,
              "memory limit");
    core_host_free(b);
    porta_set_memory_limit(previous);
    core_host_cache_release();
    CHECK(porta_memory_allocated() == before);
}
