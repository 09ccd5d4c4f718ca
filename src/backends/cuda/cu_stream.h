/* Ordering on the CUDA device's stream (cu_stream.c): events, for timing
 * and for knowing when a copy is done, and pinned staging buffers that let
 * host-to-device copies return before they have run. */
#ifndef PORTA_BACKENDS_CUDA_CU_STREAM_H
#define PORTA_BACKENDS_CUDA_CU_STREAM_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "backends/cuda/cu_api.h"
#include "porta.h"

#define CU_STAGE_SLOTS 4
#define CU_STAGE_BYTES ((size_t)1 << 20)

/* A ring of pinned host buffers, each with the event recorded after the
 * last copy out of it: a slot is refilled only once that copy has run.
 * Made at the first write; `off` when the driver has no events or pinned
 * memory (copies then wait for the stream). */
typedef struct cu_staging {
    pthread_mutex_t lock;
    bool made, off;
    int next;
    void *host[CU_STAGE_SLOTS];
    CUevent done[CU_STAGE_SLOTS];
    bool pending[CU_STAGE_SLOTS];
} cu_staging;

struct cu_state;

void cu_staging_init(cu_staging *staging);

/* Copies `bytes` from host memory at `src` to device address `dst`, in
 * stream order, through the staging ring: returns once `src` has been
 * read (the caller may reuse it at once), usually before the copy has
 * run; work queued after it on the stream sees the data. Without staging,
 * waits for the copy. */
porta_status *cu_copy_from_host(struct cu_state *s, CUdeviceptr dst, const void *src,
                                size_t bytes);

/* Frees the ring's pinned buffers and events (at exit). */
void cu_staging_release(struct cu_state *s);

/* Events that can time (elapsed milliseconds between two recorded on the
 * stream). PORTA_ERR_UNSUPPORTED when the driver lacks events. */
porta_status *cu_event_new(struct cu_state *s, CUevent *event);
porta_status *cu_event_record(struct cu_state *s, CUevent event);
/* Waits until the work before the event's record has run. */
porta_status *cu_event_wait(struct cu_state *s, CUevent event);
porta_status *cu_event_elapsed_ms(struct cu_state *s, CUevent start, CUevent end, float *ms);
void cu_event_free(struct cu_state *s, CUevent event);

#endif
