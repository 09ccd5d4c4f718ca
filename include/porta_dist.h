/*
 * porta_dist.h - collectives between processes, over MPI.
 *
 * MPI (Open MPI's libmpi.so.40) is loaded when porta_dist_init runs, not at
 * link time: libporta builds and runs without it, and then every call here
 * returns PORTA_ERR_UNAVAILABLE saying so.
 *
 * Launch: `mpirun -np N program` gives each process its rank and the world
 * size. Under torchrun (RANK and WORLD_SIZE set, no mpirun), each process
 * sees an MPI world of one: a world of one works, and a larger WORLD_SIZE
 * makes porta_dist_init fail with a message saying to launch with mpirun.
 *
 * Tensors: any dtype, any device. Contiguous tensors on host-memory devices
 * (the CPU) are used in place; others are staged through host memory.
 * float16 and bfloat16 are reduced in float32. Every process must issue the
 * same collectives in the same order with matching shapes and dtypes.
 *
 * Timeouts: every call that waits gives up after the timeout (60 s unless
 * PORTA_DIST_TIMEOUT, in seconds, or porta_dist_set_timeout says otherwise)
 * with PORTA_ERR_IO naming the operation and the ranks that did not arrive.
 * A timed-out collective cannot be taken back, so after one every later
 * call fails at once: end the process. porta_dist_init waits with the same
 * timeout for the other ranks to join, once MPI has started; MPI_Init
 * itself (Open MPI's startup, when porta_dist_init starts MPI) waits for
 * every process of the job to start MPI, and mpirun ends the job when one
 * exits first.
 *
 * Calls may come from any thread; they are serialized.
 */
#ifndef PORTA_DIST_H
#define PORTA_DIST_H

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum porta_dist_op {
    PORTA_DIST_SUM = 0,
    PORTA_DIST_AVG, /* sum divided by the world size; floating dtypes only */
    PORTA_DIST_MAX,
    PORTA_DIST_MIN
} porta_dist_op;

/* Whether an MPI library can be loaded here (loads it; cheap after). */
PORTA_API bool porta_dist_available(void);
/* Joins the MPI world (initializes MPI unless the program already did).
 * Idempotent. Checks RANK / WORLD_SIZE, when set, against MPI's view. */
PORTA_API porta_status *porta_dist_init(void);
PORTA_API bool porta_dist_is_initialized(void);
/* Leaves the world (finalizes MPI when porta_dist_init initialized it). */
PORTA_API porta_status *porta_dist_finalize(void);
PORTA_API int porta_dist_rank(void); /* -1 before init */
PORTA_API int porta_dist_size(void); /* -1 before init */

/* Seconds a call may wait; > 0. Returns an error for other values. */
PORTA_API porta_status *porta_dist_set_timeout(double seconds);
PORTA_API double porta_dist_get_timeout(void);

/* In place: every rank ends with op over all ranks' tensors. */
PORTA_API porta_status *porta_dist_all_reduce(porta_tensor *tensor, porta_dist_op op);
/* out holds size * numel(in) elements of in's dtype: rank r's `in` lands at
 * elements [r * numel(in), (r + 1) * numel(in)) in row-major order. */
PORTA_API porta_status *porta_dist_all_gather(const porta_tensor *in, porta_tensor *out);
/* in holds size * numel(out) elements; rank r gets op over all ranks of
 * in's r-th block of numel(out) elements. */
PORTA_API porta_status *porta_dist_reduce_scatter(const porta_tensor *in, porta_tensor *out,
                                                  porta_dist_op op);
/* Every rank's tensor becomes root's. */
PORTA_API porta_status *porta_dist_broadcast(porta_tensor *tensor, int root);
PORTA_API porta_status *porta_dist_barrier(void);
/* Point to point; tag >= 0 matches a send to a receive. */
PORTA_API porta_status *porta_dist_send(const porta_tensor *tensor, int dst, int tag);
PORTA_API porta_status *porta_dist_recv(porta_tensor *tensor, int src, int tag);

/* The same on contiguous host memory of `count` elements (callers that hold
 * plain arrays, e.g. another framework's CPU tensors). */
PORTA_API porta_status *porta_dist_all_reduce_host(void *data, int64_t count,
                                                   porta_dtype dtype, porta_dist_op op);
PORTA_API porta_status *porta_dist_all_gather_host(const void *in, void *out, int64_t count,
                                                   porta_dtype dtype);
PORTA_API porta_status *porta_dist_reduce_scatter_host(const void *in, void *out,
                                                       int64_t count, porta_dtype dtype,
                                                       porta_dist_op op);
PORTA_API porta_status *porta_dist_broadcast_host(void *data, int64_t count,
                                                  porta_dtype dtype, int root);
PORTA_API porta_status *porta_dist_send_host(const void *data, int64_t count,
                                             porta_dtype dtype, int dst, int tag);
PORTA_API porta_status *porta_dist_recv_host(void *data, int64_t count, porta_dtype dtype,
                                             int src, int tag);

#ifdef __cplusplus
}
#endif

#endif
