/* The profiler's session: events appended under a mutex while it runs,
 * handed to the JSON writer when it stops. */
#include "runtime/profiler.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "runtime/device.h"
#include "runtime/device_lookup.h"

/* A long training run under the profiler must not take the machine's
 * memory: past this many events the rest are counted, not kept. */
#define PROF_MAX_EVENTS (4 << 20)

atomic_bool prof_enabled;

static pthread_mutex_t session_lock = PTHREAD_MUTEX_INITIALIZER;
static bool session_open;        /* under session_lock; the flag above mirrors it */
static uint64_t session_start;   /* prof_clock_ns at porta_profiler_start */
static prof_event *events;
static int event_count, event_capacity;
static uint64_t dropped;

static atomic_int threads_seen;
static _Thread_local int thread_number;

static const char *const category_names[PROF_CATEGORY_COUNT] = {
    [PROF_KERNEL] = "kernel", [PROF_COMPILE] = "compile", [PROF_COPY] = "copy",
    [PROF_SYNC] = "sync", [PROF_FALLBACK] = "fallback",
};

const char *prof_category_name(prof_category category) {
    return (unsigned)category < PROF_CATEGORY_COUNT ? category_names[category] : NULL;
}

uint64_t prof_clock_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return ns ? ns : 1;
}

static void copy_text(char *dst, const char *src) {
    snprintf(dst, PROF_TEXT_CAP, "%s", src ? src : "");
}

/* Call with session_lock held. */
static prof_event *new_event(void) {
    if (event_count == event_capacity) {
        if (event_capacity == PROF_MAX_EVENTS) return NULL;
        int capacity = event_capacity ? 2 * event_capacity : 1024;
        prof_event *grown = realloc(events, (size_t)capacity * sizeof *grown);
        if (!grown) return NULL;
        events = grown;
        event_capacity = capacity;
    }
    return &events[event_count++];
}

void prof_record_event(prof_category category, const porta_device *device, const char *name,
                       const char *detail, int64_t bytes, uint64_t begin) {
    uint64_t end = prof_clock_ns();
    if (!thread_number) thread_number = atomic_fetch_add(&threads_seen, 1) + 1;
    pthread_mutex_lock(&session_lock);
    /* An event begun before this session started belongs to none. */
    if (session_open && begin >= session_start) {
        prof_event *e = new_event();
        if (e) {
            e->start = begin - session_start;
            e->duration = end >= begin ? end - begin : 0;
            e->bytes = bytes < 0 ? -1 : bytes;
            e->device = device ? device->info.index : -1;
            e->thread = thread_number;
            e->category = category;
            copy_text(e->name, name);
            copy_text(e->detail, detail);
        } else {
            dropped++;
        }
    }
    pthread_mutex_unlock(&session_lock);
}

int prof_event_count(void) {
    pthread_mutex_lock(&session_lock);
    int count = event_count;
    pthread_mutex_unlock(&session_lock);
    return count;
}

porta_status *porta_profiler_start(void) {
    pthread_mutex_lock(&session_lock);
    bool was_open = session_open;
    if (!was_open) {
        event_count = 0;
        dropped = 0;
        session_start = prof_clock_ns();
        session_open = true;
        atomic_store(&prof_enabled, true);
    }
    pthread_mutex_unlock(&session_lock);
    if (was_open)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "profiler_start: expected a stopped profiler, but it is running");
    return NULL;
}

porta_status *porta_profiler_stop(const char *path) {
    pthread_mutex_lock(&session_lock);
    bool was_open = session_open;
    prof_event *taken = events;
    int count = event_count;
    uint64_t lost = dropped;
    if (was_open) {
        atomic_store(&prof_enabled, false);
        session_open = false;
        events = NULL;
        event_count = event_capacity = 0;
    }
    pthread_mutex_unlock(&session_lock);
    if (!was_open)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "profiler_stop: expected a running profiler, but it is stopped");
    porta_status *status = path ? prof_write_json(path, taken, count, lost) : NULL;
    free(taken);
    return status;
}

uint64_t porta_profiler_begin(void) { return prof_begin(); }

porta_status *porta_profiler_record(const char *category, int device_index, const char *name,
                                    uint64_t begin) {
    if (!category || !name)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "profiler_record: NULL argument");
    int found = -1;
    for (int c = 0; c < PROF_CATEGORY_COUNT; c++)
        if (!strcmp(category, category_names[c])) found = c;
    if (found < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "profiler_record: expected a category kernel, compile, copy, sync or "
                           "fallback, but got \"%s\"",
                           category);
    porta_device *device = NULL;
    if (device_index != -1) PORTA_TRY(rt_lookup_device(device_index, &device));
    prof_end((prof_category)found, device, name, NULL, -1, begin);
    return NULL;
}
