/* Plans of earlier traces, by the trace's structure: a training loop's
 * step records the same trace every time and reuses its plan, so it is
 * scheduled and compiled once. The key is everything the plan depends on:
 * each record's primitive (not a fill's value when that is a kernel
 * parameter, nor a random primitive's seed), its tensors' layouts and
 * which buffers they share, and which buffers outlive the trace. */
#ifndef PORTA_COMPILER_PLAN_CACHE_H
#define PORTA_COMPILER_PLAN_CACHE_H

#include "compiler/schedule.h"

typedef struct trace_key {
    uint64_t hash;
    size_t size;
    unsigned char *bytes;
} trace_key;

porta_status *trace_key_build(const trace_record *records, int count, const trace_facts *facts,
                              trace_key *key);
void trace_key_free(trace_key *key);

/* The cached plan for key, or NULL. */
plan *plan_cache_find(const trace_key *key);
/* Stores plan under key (taking both); evicts the oldest entries beyond
 * the cache's bound. */
void plan_cache_insert(trace_key *key, plan *p);
/* The bytes of keys and plans the cache holds now (for its bound's test). */
size_t plan_cache_held_bytes(void);
/* Why a trace with this key is new: the first difference from the most
 * recent cached trace of the same length, for PORTA_LOG=recompiles. */
void plan_cache_explain_miss(const trace_record *records, int count, const trace_key *key,
                             char *reason, size_t cap);

#endif
