/* The plan cache's bound: a program whose traces never repeat (each step
 * cut short at a different point by errors) must not grow the process
 * without limit; the cache keeps the most recent plans within its bytes. */
#include <stdlib.h>
#include <string.h>

#include "compiler/plan_cache.h"
#include "test.h"

#define KEY_BYTES (1u << 20)
#define KEYS 64 /* 64 MiB of keys offered, far past the bound */

/* A distinct key of KEY_BYTES, as trace_key_build would hand it over. */
static bool make_key(int n, trace_key *key) {
    key->size = KEY_BYTES;
    key->bytes = malloc(KEY_BYTES);
    if (!key->bytes) return false;
    memset(key->bytes, n, KEY_BYTES);
    key->hash = 0x9e3779b97f4a7c15ull * (uint64_t)(n + 1);
    return true;
}

TEST(test_plan_cache_bounded_by_bytes) {
    trace_key first;
    CHECK(make_key(0, &first));
    trace_key first_probe = first;
    first_probe.bytes = malloc(KEY_BYTES);
    CHECK(first_probe.bytes != NULL);
    if (!first_probe.bytes) return;
    memcpy(first_probe.bytes, first.bytes, KEY_BYTES);
    plan_cache_insert(&first, calloc(1, sizeof(plan)));
    CHECK(plan_cache_find(&first_probe) != NULL);

    size_t most = 0;
    trace_key last_probe = {0};
    for (int n = 1; n < KEYS; n++) {
        trace_key key;
        CHECK(make_key(n, &key));
        if (n == KEYS - 1) {
            CHECK(make_key(n, &last_probe));
        }
        plan_cache_insert(&key, calloc(1, sizeof(plan)));
        size_t held = plan_cache_held_bytes();
        if (held > most) most = held;
    }
    CHECK_MSG(most <= (16u << 20), "the cache held %zu bytes", most);
    CHECK_MSG(most >= (8u << 20), "the cache held only %zu bytes: it keeps too little", most);
    CHECK(plan_cache_find(&first_probe) == NULL); /* the oldest went */
    CHECK(plan_cache_find(&last_probe) != NULL);  /* the newest stays */
    trace_key_free(&first_probe);
    trace_key_free(&last_probe);
}
