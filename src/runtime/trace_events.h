/* The profiler's recorder: what each device did and when (kernels, kernel
 * builds, copies, syncs), kept in memory between porta_profiler_start and
 * porta_profiler_stop, which writes it as a Chrome trace event file.
 *
 * A recording site brackets its work:
 *
 *     uint64_t begin = trace_begin();
 *     ... the work ...
 *     trace_end(TRACE_KERNEL, device, name, NULL, -1, begin);
 *
 * While the profiler is off, trace_begin is one relaxed atomic load and
 * returns 0, and trace_end returns at once: nothing else is paid. Events are
 * recorded on the issuing thread (the thread pool's workers record nothing),
 * so the events of one thread nest like its calls. Thread-safe. */
#ifndef PORTA_RUNTIME_TRACE_EVENTS_H
#define PORTA_RUNTIME_TRACE_EVENTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "porta.h"

typedef enum trace_category {
    TRACE_KERNEL = 0, /* an eager primitive or a fused kernel */
    TRACE_COMPILE,    /* building a kernel (C compiler, OpenCL, NVRTC) */
    TRACE_COPY,       /* between devices, or between the host and a device */
    TRACE_SYNC,       /* a flush of the fused trace, a device synchronize */
    TRACE_FALLBACK,   /* an op run by PyTorch's CPU kernels (Python package) */
    TRACE_CATEGORY_COUNT
} trace_category;

/* The category's name in the file's "cat" field; NULL when out of range. */
const char *trace_category_name(trace_category category);

extern atomic_bool trace_events_enabled;

/* Nanoseconds of CLOCK_MONOTONIC; never 0. */
uint64_t trace_clock_ns(void);

/* The start of an event: 0 while the profiler is off. */
static inline uint64_t trace_begin(void) {
    if (!atomic_load_explicit(&trace_events_enabled, memory_order_relaxed)) return 0;
    return trace_clock_ns();
}

void trace_record_event(trace_category category, const porta_device *device, const char *name,
                        const char *detail, int64_t bytes, uint64_t begin);

/* Ends the event begun at `begin` (trace_begin's value: 0 records nothing).
 * `device` NULL puts it on the host's track; `detail` (optional) and
 * `bytes` (ignored when negative) become the event's args. Strings are
 * copied (truncated to a fixed length). A macro, so that the other
 * arguments (porta_prim_name(...), ...) are evaluated only while recording:
 * the compiler cannot drop calls it cannot see into. */
#define trace_end(category, device, name, detail, bytes, begin)                          \
    do {                                                                                  \
        uint64_t trace_end_begin_ = (begin);                                              \
        if (trace_end_begin_)                                                             \
            trace_record_event((category), (device), (name), (detail), (bytes),           \
                               trace_end_begin_);                                         \
    } while (0)

/* One recorded event; times in nanoseconds from the session's start. */
#define TRACE_TEXT_CAP 96
typedef struct trace_event {
    uint64_t start, duration;
    int64_t bytes; /* -1: none */
    int device;    /* porta:N, or -1 for the host */
    int thread;    /* 1, 2, ... in the order threads first recorded */
    trace_category category;
    char name[TRACE_TEXT_CAP];
    char detail[TRACE_TEXT_CAP];
} trace_event;

/* Writes events as a Chrome trace event file (trace_json.c): complete
 * ("X") events, one process per device named by metadata events. */
porta_status *trace_write_json(const char *path, const trace_event *events, int count,
                               uint64_t dropped);

/* For tests: the events recorded so far in the running session. */
int trace_event_count(void);

#endif
