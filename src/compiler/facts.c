/* What the schedule needs to know about a trace's buffers: a local id per
 * buffer (order of first use, so equal traces number alike), whether
 * something outside the trace still holds it, and its last reader. */
#include <stdlib.h>
#include <string.h>

#include "compiler/schedule.h"
#include "core/status.h"

typedef struct buffer_map {
    const porta_buffer **keys;
    int *ids;
    size_t capacity; /* power of two */
} buffer_map;

static size_t slot_of(const buffer_map *map, const porta_buffer *buffer) {
    uintptr_t h = (uintptr_t)buffer;
    h ^= h >> 17;
    h *= (uintptr_t)0x9E3779B97F4A7C15ull;
    size_t slot = (size_t)(h >> 7) & (map->capacity - 1);
    while (map->keys[slot] && map->keys[slot] != buffer) slot = (slot + 1) & (map->capacity - 1);
    return slot;
}

void trace_facts_free(trace_facts *facts) {
    free(facts->record_buffer);
    free(facts->external);
    free(facts->last_reader);
    memset(facts, 0, sizeof *facts);
}

porta_status *trace_facts_build(const trace_record *records, int count, trace_facts *facts) {
    memset(facts, 0, sizeof *facts);
    size_t tensors = (size_t)count * (TRACE_MAX_INPUTS + 1);
    buffer_map map = {.capacity = 16};
    while (map.capacity < 2 * tensors) map.capacity *= 2;
    map.keys = calloc(map.capacity, sizeof *map.keys);
    map.ids = malloc(map.capacity * sizeof *map.ids);
    facts->record_buffer = malloc(tensors * sizeof *facts->record_buffer);
    const porta_buffer **buffers = malloc(tensors * sizeof *buffers);
    int *trace_refs = calloc(tensors, sizeof *trace_refs);
    facts->external = calloc(tensors, sizeof *facts->external);
    facts->last_reader = malloc(tensors * sizeof *facts->last_reader);
    porta_status *status = NULL;
    if (!map.keys || !map.ids || !facts->record_buffer || !buffers || !trace_refs ||
        !facts->external || !facts->last_reader) {
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory for %d records", count);
        goto done;
    }
    for (int r = 0; r < count; r++) {
        for (int slot = 0; slot <= TRACE_MAX_INPUTS; slot++) {
            size_t index = (size_t)r * (TRACE_MAX_INPUTS + 1) + (size_t)slot;
            const porta_buffer *buffer = slot == SLOT_OUT ? records[r].out.buffer
                                         : slot < records[r].input_count
                                             ? records[r].inputs[slot].buffer
                                             : NULL;
            if (!buffer) {
                facts->record_buffer[index] = -1;
                continue;
            }
            size_t at = slot_of(&map, buffer);
            if (!map.keys[at]) {
                map.keys[at] = buffer;
                map.ids[at] = facts->buffer_count;
                buffers[facts->buffer_count] = buffer;
                facts->last_reader[facts->buffer_count] = -1;
                facts->buffer_count++;
            }
            int id = map.ids[at];
            facts->record_buffer[index] = id;
            trace_refs[id]++;
            if (slot != SLOT_OUT) facts->last_reader[id] = r;
        }
    }
    /* Each record copy holds one reference; any other is outside. */
    for (int id = 0; id < facts->buffer_count; id++)
        facts->external[id] = atomic_load(&((porta_buffer *)buffers[id])->refcount) > trace_refs[id];
done:
    free(map.keys);
    free(map.ids);
    free(buffers);
    free(trace_refs);
    if (status) trace_facts_free(facts);
    return status;
}
