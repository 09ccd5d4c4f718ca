/* The plan cache: trace keys serialized compactly, hashed, compared in
 * full on a hit, kept in a bounded list (most recent first). */
#include "compiler/plan_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/group.h"
#include "core/status.h"
#include "core/text.h"
#include "runtime/device.h"

/* A program has a handful of distinct traces (a training step, an
 * evaluation step, the last partial batch); what else arrives is mostly
 * one-off (a step cut short by an error leaves a prefix of its trace that
 * never recurs), so the bound is on memory: a long trace's key and plan
 * take a few hundred KB. */
#define PLAN_CACHE_ENTRIES 512
#define PLAN_CACHE_BYTES (16u << 20) /* keys and plans together */

static void put_i64(core_text *w, int64_t v) { text_append(w, &v, sizeof v); }

/* The bytes put_tensor writes for t: a head of four int32, sizes and
 * strides, then offset, buffer size and device index. */
static size_t tensor_key_size(const porta_tensor *t) {
    return 4 * sizeof(int32_t) + 2 * (size_t)t->rank * sizeof(int64_t) + 3 * sizeof(int64_t);
}

static void put_tensor(core_text *w, const porta_tensor *t, int buffer, bool external) {
    int32_t head[4] = {buffer, (int32_t)t->dtype, t->rank, external};
    text_append(w, head, sizeof head);
    text_append(w, t->sizes, (size_t)t->rank * sizeof *t->sizes);
    text_append(w, t->strides, (size_t)t->rank * sizeof *t->strides);
    put_i64(w, t->offset);
    put_i64(w, (int64_t)t->buffer->size);
    put_i64(w, t->buffer->device->info.index);
}

/* The primitive, less what a replay takes from the new trace itself. */
static void put_prim(core_text *w, const trace_record *record) {
    ir_prim prim = record->prim;
    if (record_is_constant(record)) prim.value = 0; /* a kernel parameter */
    if (prim.kind == PRIM_RANDOM) prim.seed = prim.offset = 0;
    text_append(w, &prim, sizeof prim);
}

static uint64_t hash_bytes(const unsigned char *bytes, size_t size) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ size;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t v;
        memcpy(&v, bytes + i, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    for (; i < size; i++) h = (h ^ bytes[i]) * 0x100000001b3ull;
    h ^= h >> 33;
    return h * 0xc4ceb9fe1a85ec53ull;
}

porta_status *trace_key_build(const trace_record *records, int count, const trace_facts *facts,
                              trace_key *key) {
    core_text w = {0}; /* the key's bytes */
    put_i64(&w, count);
    for (int r = 0; r < count; r++) {
        const trace_record *record = &records[r];
        put_prim(&w, record);
        put_i64(&w, record->input_count);
        for (int i = 0; i < record->input_count; i++) {
            int buffer = facts_buffer(facts, r, i);
            put_tensor(&w, &record->inputs[i], buffer, facts->external[buffer]);
        }
        int out = facts_buffer(facts, r, SLOT_OUT);
        put_tensor(&w, &record->out, out, facts->external[out]);
    }
    if (w.failed) {
        text_free(&w);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory for a trace key");
    }
    key->bytes = (unsigned char *)w.chars;
    key->size = w.length;
    key->hash = hash_bytes((const unsigned char *)w.chars, w.length);
    return NULL;
}

void trace_key_free(trace_key *key) {
    free(key->bytes);
    key->bytes = NULL;
}

typedef struct cache_entry {
    trace_key key;
    plan *plan;
    int record_count;
    size_t bytes; /* the key's and the plan's */
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry entries[PLAN_CACHE_ENTRIES]; /* most recent first */
static int entry_count;
static size_t cached_bytes;

plan *plan_cache_find(const trace_key *key) {
    pthread_mutex_lock(&cache_lock);
    plan *found = NULL;
    for (int i = 0; i < entry_count; i++) {
        cache_entry *e = &entries[i];
        if (e->key.hash != key->hash || e->key.size != key->size ||
            memcmp(e->key.bytes, key->bytes, key->size))
            continue;
        cache_entry hit = *e;
        memmove(&entries[1], &entries[0], (size_t)i * sizeof *entries);
        entries[0] = hit;
        found = hit.plan;
        break;
    }
    pthread_mutex_unlock(&cache_lock);
    return found;
}

void plan_cache_insert(trace_key *key, plan *p) {
    size_t bytes = key->size + plan_memory_bytes(p);
    pthread_mutex_lock(&cache_lock);
    while (entry_count &&
           (entry_count == PLAN_CACHE_ENTRIES || cached_bytes + bytes > PLAN_CACHE_BYTES)) {
        cache_entry *oldest = &entries[--entry_count];
        cached_bytes -= oldest->bytes;
        trace_key_free(&oldest->key);
        plan_free(oldest->plan);
    }
    cached_bytes += bytes;
    memmove(&entries[1], &entries[0], (size_t)entry_count * sizeof *entries);
    entries[0] = (cache_entry){
        .key = *key, .plan = p, .record_count = p->record_count, .bytes = bytes};
    entry_count++;
    key->bytes = NULL;
    pthread_mutex_unlock(&cache_lock);
}

size_t plan_cache_held_bytes(void) {
    pthread_mutex_lock(&cache_lock);
    size_t bytes = cached_bytes;
    pthread_mutex_unlock(&cache_lock);
    return bytes;
}

void plan_cache_explain_miss(const trace_record *records, int count, const trace_key *key,
                             char *reason, size_t cap) {
    pthread_mutex_lock(&cache_lock);
    const cache_entry *similar = NULL;
    for (int i = 0; i < entry_count && !similar; i++)
        if (entries[i].record_count == count) similar = &entries[i];
    if (!similar) {
        snprintf(reason, cap, "no earlier trace of %d primitives", count);
        pthread_mutex_unlock(&cache_lock);
        return;
    }
    /* Walk both keys record by record: the first record whose bytes differ
     * is the first change. The cached key's layout is the same as ours up
     * to that point, so offsets line up. */
    const unsigned char *old = similar->key.bytes;
    size_t old_size = similar->key.size, at = sizeof(int64_t);
    snprintf(reason, cap, "the trace changed");
    core_text w = {0}; /* the key's bytes */
    for (int r = 0; r < count; r++) {
        w.length = 0;
        put_prim(&w, &records[r]);
        put_i64(&w, records[r].input_count);
        if (w.failed) break;
        size_t prim_bytes = w.length;
        bool same_prim = at + prim_bytes <= old_size && !memcmp(old + at, w.chars, prim_bytes);
        if (!same_prim) {
            snprintf(reason, cap, "primitive %d is %s where the earlier trace of %d primitives "
                     "differs (another op or attributes)", r, ir_prim_name(&records[r].prim),
                     count);
            break;
        }
        const porta_tensor *first_changed = NULL;
        size_t cursor = at + prim_bytes;
        for (int i = 0; i <= records[r].input_count && !first_changed; i++) {
            const porta_tensor *t = i < records[r].input_count ? &records[r].inputs[i]
                                                               : &records[r].out;
            size_t n = tensor_key_size(t);
            int32_t head[4];
            if (cursor + n > old_size) {
                first_changed = t;
                break;
            }
            memcpy(head, old + cursor, sizeof head);
            if (head[1] != (int32_t)t->dtype || head[2] != t->rank ||
                memcmp(old + cursor + sizeof head, t->sizes, (size_t)t->rank * sizeof(int64_t))) {
                char shape[CORE_SHAPE_STR_CAP];
                core_format_shape(shape, sizeof shape, t->rank, t->sizes);
                snprintf(reason, cap, "%s (primitive %d) now has %s %s, was dtype %s rank %d",
                         ir_prim_name(&records[r].prim), r, porta_dtype_name(t->dtype), shape,
                         porta_dtype_name((porta_dtype)head[1]), head[2]);
                first_changed = t;
                break;
            }
            cursor += n;
        }
        if (first_changed) break;
        if (cursor > old_size || memcmp(old + at + prim_bytes, key->bytes + at + prim_bytes,
                                        cursor - at - prim_bytes)) {
            snprintf(reason, cap, "%s (primitive %d): a tensor's strides, offset or sharing "
                     "changed", ir_prim_name(&records[r].prim), r);
            break;
        }
        at = cursor;
    }
    text_free(&w);
    pthread_mutex_unlock(&cache_lock);
}
