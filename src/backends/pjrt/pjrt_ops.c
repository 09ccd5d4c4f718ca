/* The PJRT backend's table of device operations: memory (pjrt_memory.c),
 * synchronization (pjrt_program.c), and what runs primitives and kernels
 * (pjrt_execute.c). */
#include <pthread.h>

#include "backends/pjrt/pjrt_backend.h"

static porta_status *pjrt_ops_synchronize(porta_device *device) {
    return pjrt_synchronize(device);
}

static rt_backend_ops ops = {
    .buffer_alloc = pjrt_buffer_alloc,
    .buffer_free = pjrt_buffer_free,
    .buffer_write = pjrt_buffer_write,
    .buffer_read = pjrt_buffer_read,
    .supports = pjrt_supports,
    .execute = pjrt_execute,
    .synchronize = pjrt_ops_synchronize,
};
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void complete_ops(void) {
    pjrt_add_compiler_entries(&ops);
}

const rt_backend_ops *pjrt_backend_ops(void) {
    pthread_once(&ops_once, complete_ops);
    return &ops;
}
