/* The profiler's recorder: what each device did and when (kernels, kernel
 * builds, copies, syncs), kept in memory between porta_profiler_start and
 * porta_profiler_stop, which writes it as a Chrome trace event file.
 *
 * A recording site brackets its work:
 *
 *     uint64_t begin = prof_begin();
 *     ... the work ...
 *     prof_end(PROF_KERNEL, device, name, NULL, -1, begin);
 *
 * While the profiler is off, prof_begin is one relaxed atomic load and
 * returns 0, and prof_end returns at once: nothing else is paid. Events are
 * recorded on the issuing thread (the thread pool's workers record nothing),
 * so the events of one thread nest like its calls. Thread-safe. */
#ifndef PORTA_RUNTIME_PROFILER_H
#define PORTA_RUNTIME_PROFILER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "porta.h"

typedef enum prof_category {
    PROF_KERNEL = 0, /* an eager primitive or a fused kernel */
    PROF_COMPILE,    /* building a kernel (C compiler, OpenCL, NVRTC) */
    PROF_COPY,       /* between devices, or between the host and a device */
    PROF_SYNC,       /* a flush of the fused trace, a device synchronize */
    PROF_FALLBACK,   /* an op run by PyTorch's CPU kernels (Python package) */
    PROF_CATEGORY_COUNT
} prof_category;

/* The category's name in the file's "cat" field; NULL when out of range. */
const char *prof_category_name(prof_category category);

extern atomic_bool prof_enabled;

/* Nanoseconds of CLOCK_MONOTONIC; never 0. */
uint64_t prof_clock_ns(void);

/* The start of an event: 0 while the profiler is off. */
static inline uint64_t prof_begin(void) {
    if (!atomic_load_explicit(&prof_enabled, memory_order_relaxed)) return 0;
    return prof_clock_ns();
}

void prof_record_event(prof_category category, const porta_device *device, const char *name,
                       const char *detail, int64_t bytes, uint64_t begin);

/* Ends the event begun at `begin` (prof_begin's value: 0 records nothing).
 * `device` NULL puts it on the host's track; `detail` (optional) and
 * `bytes` (ignored when negative) become the event's args. Strings are
 * copied (truncated to a fixed length). A macro, so that the other
 * arguments (ir_prim_name(...), ...) are evaluated only while recording:
 * the compiler cannot drop calls it cannot see into. */
#define prof_end(category, device, name, detail, bytes, begin)                 \
    do {                                                                       \
        uint64_t prof_end_begin_ = (begin);                                    \
        if (prof_end_begin_)                                                   \
            prof_record_event((category), (device), (name), (detail), (bytes), \
                              prof_end_begin_);                                \
    } while (0)

/* One recorded event; times in nanoseconds from the session's start. */
#define PROF_TEXT_CAP 96
typedef struct prof_event {
    uint64_t start, duration;
    int64_t bytes; /* -1: none */
    int device;    /* porta:N, or -1 for the host */
    int thread;    /* 1, 2, ... in the order threads first recorded */
    prof_category category;
    char name[PROF_TEXT_CAP];
    char detail[PROF_TEXT_CAP];
} prof_event;

/* Writes events as a Chrome trace event file (profiler_json.c): complete
 * ("X") events, one process per device named by metadata events. */
porta_status *prof_write_json(const char *path, const prof_event *events, int count,
                              uint64_t dropped);

/* For tests: the events recorded so far in the running session. */
int prof_event_count(void);

#endif
