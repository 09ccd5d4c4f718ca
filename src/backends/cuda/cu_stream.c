/* Events and pinned staging on the CUDA device's stream. A copy from
 * pageable host memory cannot run asynchronously (the driver copies it
 * through its own pinned buffer before returning, or the caller must keep
 * the memory until it has run), so writes go through a ring of pinned
 * buffers: the data is copied into a slot, the slot's copy to the device
 * is queued and an event recorded after it; the write returns. The slot is
 * filled again only after its event has passed, which is the only wait.
 * Reads still wait for the stream (cu_device.c): that is where the host
 * needs the data. */
#include "backends/cuda/cu_stream.h"

#include <string.h>

#include "backends/cuda/cu_runtime.h"
#include "core/status.h"

void cu_staging_init(cu_staging *staging) {
    memset(staging, 0, sizeof *staging);
    pthread_mutex_init(&staging->lock, NULL);
}

static bool has_events(const cu_driver_api *cu) {
    return cu->cuEventCreate && cu->cuEventRecord && cu->cuEventSynchronize &&
           cu->cuEventElapsedTime && cu->cuEventDestroy;
}

static void free_slots(cu_state *s) {
    cu_staging *g = &s->staging;
    for (int i = 0; i < CU_STAGE_SLOTS; i++) {
        if (g->done[i]) s->cu->cuEventDestroy(g->done[i]);
        if (g->host[i]) s->cu->cuMemFreeHost(g->host[i]);
        g->done[i] = NULL;
        g->host[i] = NULL;
        g->pending[i] = false;
    }
}

/* The ring, made once; false (and `off`) when the driver cannot. */
static bool make_slots(cu_state *s) {
    cu_staging *g = &s->staging;
    if (g->made) return !g->off;
    g->made = true;
    const cu_driver_api *cu = s->cu;
    g->off = !has_events(cu) || !cu->cuMemHostAlloc || !cu->cuMemFreeHost;
    for (int i = 0; i < CU_STAGE_SLOTS && !g->off; i++)
        g->off = cu->cuMemHostAlloc(&g->host[i], CU_STAGE_BYTES, 0) != CUDA_SUCCESS ||
                 cu->cuEventCreate(&g->done[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS;
    if (g->off) free_slots(s);
    return !g->off;
}

porta_status *cu_copy_from_host(cu_state *s, CUdeviceptr dst, const void *src, size_t bytes) {
    cu_staging *g = &s->staging;
    pthread_mutex_lock(&g->lock);
    if (!make_slots(s)) {
        pthread_mutex_unlock(&g->lock);
        CUresult r = s->cu->cuMemcpyHtoDAsync(dst, src, bytes, s->stream);
        if (r == CUDA_SUCCESS) r = s->cu->cuStreamSynchronize(s->stream);
        return r ? cu_error(s, r, "cuMemcpyHtoDAsync") : NULL;
    }
    const char *from = src;
    CUresult r = CUDA_SUCCESS;
    const char *call = NULL;
    for (size_t done = 0; done < bytes && r == CUDA_SUCCESS;) {
        size_t chunk = bytes - done < CU_STAGE_BYTES ? bytes - done : CU_STAGE_BYTES;
        int slot = g->next;
        if (g->pending[slot] && (r = s->cu->cuEventSynchronize(g->done[slot]))) {
            call = "cuEventSynchronize";
            break;
        }
        g->pending[slot] = false;
        memcpy(g->host[slot], from + done, chunk);
        if ((r = s->cu->cuMemcpyHtoDAsync(dst + done, g->host[slot], chunk, s->stream))) {
            call = "cuMemcpyHtoDAsync";
            break;
        }
        if ((r = s->cu->cuEventRecord(g->done[slot], s->stream))) {
            /* the slot cannot be known free: wait for the stream instead */
            call = "cuEventRecord";
            s->cu->cuStreamSynchronize(s->stream);
            break;
        }
        g->pending[slot] = true;
        g->next = (slot + 1) % CU_STAGE_SLOTS;
        done += chunk;
    }
    pthread_mutex_unlock(&g->lock);
    return r ? cu_error(s, r, call) : NULL;
}

void cu_staging_release(cu_state *s) {
    pthread_mutex_lock(&s->staging.lock);
    if (s->staging.made && !s->staging.off) {
        s->cu->cuStreamSynchronize(s->stream); /* no copy may still read a slot */
        free_slots(s);
    }
    s->staging.made = false;
    s->staging.next = 0;
    pthread_mutex_unlock(&s->staging.lock);
}

static porta_status *no_events(const cu_state *s) {
    return porta_error(PORTA_ERR_UNSUPPORTED,
                       "CUDA: the driver on %s has no events (expected cuEventCreate, "
                       "cuEventRecord, cuEventSynchronize, cuEventElapsedTime, "
                       "cuEventDestroy_v2)",
                       s->name);
}

porta_status *cu_event_new(cu_state *s, CUevent *event) {
    if (!has_events(s->cu)) return no_events(s);
    CUresult r = s->cu->cuEventCreate(event, CU_EVENT_DEFAULT);
    return r ? cu_error(s, r, "cuEventCreate") : NULL;
}

porta_status *cu_event_record(cu_state *s, CUevent event) {
    if (!has_events(s->cu)) return no_events(s);
    CUresult r = s->cu->cuEventRecord(event, s->stream);
    return r ? cu_error(s, r, "cuEventRecord") : NULL;
}

porta_status *cu_event_wait(cu_state *s, CUevent event) {
    if (!has_events(s->cu)) return no_events(s);
    CUresult r = s->cu->cuEventSynchronize(event);
    return r ? cu_error(s, r, "cuEventSynchronize") : NULL;
}

porta_status *cu_event_elapsed_ms(cu_state *s, CUevent start, CUevent end, float *ms) {
    if (!has_events(s->cu)) return no_events(s);
    CUresult r = s->cu->cuEventSynchronize(end);
    if (r == CUDA_SUCCESS) r = s->cu->cuEventElapsedTime(ms, start, end);
    return r ? cu_error(s, r, "cuEventElapsedTime") : NULL;
}

void cu_event_free(cu_state *s, CUevent event) {
    if (event && s->cu->cuEventDestroy) s->cu->cuEventDestroy(event);
}
