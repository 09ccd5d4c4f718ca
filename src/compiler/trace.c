/* Recording primitives and running the trace at sync points. One trace for
 * the process, under a mutex: PyTorch issues backward ops from its own
 * thread, and they must land in the same order as the forward's. */
#include "compiler/trace.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/deferred.h"
#include "runtime/profiler.h"

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool fusion_on;
static atomic_int pending_count; /* read without the lock to skip empty syncs */
static trace_record *records;
static int record_capacity;
static _Thread_local bool running_trace;
static _Thread_local char current_site[TRACE_SITE_CAP];

bool trace_recording(void) {
    return atomic_load_explicit(&fusion_on, memory_order_relaxed) && !running_trace;
}

void porta_trace_set_site(const char *site) {
    if (!site) {
        current_site[0] = '\0';
        return;
    }
    snprintf(current_site, sizeof current_site, "%s", site);
}

static void release_record(trace_record *record) {
    for (int i = 0; i < record->input_count; i++) porta_buffer_release(record->inputs[i].buffer);
    porta_buffer_release(record->out.buffer);
}

static void copy_tensor(porta_tensor *dst, const porta_tensor *src) {
    *dst = *src;
    atomic_init(&dst->refcount, 1);
    porta_buffer_retain(src->buffer);
}

/* Runs and releases every pending record; the caller holds trace_lock. */
static porta_status *run_locked(void) {
    int count = atomic_load(&pending_count);
    if (!count) return NULL;
    running_trace = true;
    uint64_t begin = prof_begin();
    porta_status *status = trace_execute(records, count);
    if (begin) { /* on the first record's device: most traces have one */
        char detail[48];
        snprintf(detail, sizeof detail, "%d primitives", count);
        prof_end(PROF_SYNC, records[0].out.buffer->device, "flush", detail, -1, begin);
    }
    running_trace = false;
    for (int i = 0; i < count; i++) release_record(&records[i]);
    atomic_store(&pending_count, 0);
    return status;
}

porta_status *trace_record_prim(const ir_prim *prim, const porta_tensor *const *inputs,
                                int input_count, const porta_tensor *out) {
    if (input_count > TRACE_MAX_INPUTS)
        return porta_error(PORTA_ERR_INTERNAL, "trace: %s has %d inputs, at most %d are recorded",
                           ir_prim_name(prim), input_count, TRACE_MAX_INPUTS);
    pthread_mutex_lock(&trace_lock);
    porta_status *status = NULL;
    int count = atomic_load(&pending_count);
    if (count == TRACE_MAX_RECORDS) {
        status = run_locked();
        count = 0;
        if (status) goto done;
    }
    if (count == record_capacity) {
        int capacity = record_capacity ? 2 * record_capacity : 256;
        trace_record *grown = realloc(records, (size_t)capacity * sizeof *grown);
        if (!grown) {
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "trace: no memory for %d records",
                                 capacity);
            goto done;
        }
        records = grown;
        record_capacity = capacity;
    }
    trace_record *record = &records[count];
    record->prim = *prim;
    record->input_count = input_count;
    for (int i = 0; i < input_count; i++) copy_tensor(&record->inputs[i], inputs[i]);
    copy_tensor(&record->out, out);
    memcpy(record->site, current_site, sizeof record->site);
    atomic_store(&pending_count, count + 1);
done:
    pthread_mutex_unlock(&trace_lock);
    return status;
}

porta_status *porta_flush(void) {
    if (running_trace || !atomic_load(&pending_count)) return NULL;
    pthread_mutex_lock(&trace_lock);
    porta_status *status = run_locked();
    pthread_mutex_unlock(&trace_lock);
    return status;
}

porta_status *trace_sync_buffer(const porta_buffer *buffer) {
    /* A buffer only its caller holds is in no record: records hold a
     * reference to every buffer they read or write. */
    if (!atomic_load_explicit(&pending_count, memory_order_relaxed) ||
        atomic_load(&((porta_buffer *)buffer)->refcount) == 1)
        return NULL;
    return porta_flush();
}

/* Buffers and device syncs reach the trace through the runtime's hooks.
 * Nothing is recorded before fusion is first on, so registering then is
 * early enough. */
static const rt_deferred_hooks trace_hooks = {
    .recording = trace_recording,
    .sync_buffer = trace_sync_buffer,
    .flush = porta_flush,
};

porta_status *porta_set_fusion(bool on) {
    if (on) rt_deferred_register(&trace_hooks);
    porta_status *status = on ? NULL : porta_flush(); /* off even when the flush failed */
    atomic_store(&fusion_on, on);
    return status;
}

bool porta_get_fusion(void) { return atomic_load(&fusion_on); }
