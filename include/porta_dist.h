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
 * One communication thread per process makes every MPI call after
 * porta_dist_init (it starts MPI itself when the program has not, so
 * MPI_THREAD_FUNNELED suffices; it asks for SERIALIZED so that the program
 * may call MPI itself while no porta_dist call is in flight). Calls may come
 * from any thread: each queues a work item that the thread runs in issue
 * order. The *_start functions return at once with a porta_dist_work;
 * porta_dist_work_wait blocks until it is done and returns its error. The
 * functions without _start are the same followed by the wait.
 *
 * Asynchronous calls and memory: the issuing thread reads what it sends
 * before the call returns (a tensor's pending work is run first: it is
 * flushed, or copied to host staging memory when its device has no host
 * memory or its layout is strided). Tensors are kept alive by the work.
 * Results land in place in contiguous host-memory tensors (the CPU) as the
 * communication thread receives them; staged results are written back into
 * the tensor by porta_dist_work_wait, on the waiting thread (libporta's ops
 * are not for several threads at once). Until the wait returns, neither
 * write a tensor being sent nor touch one being received; host buffers
 * given to *_host_start must stay valid until the work is done.
 *
 * Groups: porta_dist_group_new makes a communicator of some of the world's
 * ranks; a NULL group means the whole world. Ranks given to a call on a
 * group (roots, peers) are ranks within the group.
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

typedef struct porta_dist_group porta_dist_group;
typedef struct porta_dist_work porta_dist_work;

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

/* All to all: `in` holds one block per rank, in rank order, and rank r's
 * block of every rank lands in rank r's `out`, in the senders' rank order.
 * send_counts[r] / recv_counts[r] are the blocks' element counts (one per
 * rank of the group); NULL means equal blocks (numel / size). */
PORTA_API porta_status *porta_dist_all_to_all(const porta_tensor *in, const int64_t *send_counts,
                                              porta_tensor *out, const int64_t *recv_counts);

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

PORTA_API porta_status *porta_dist_all_to_all_host(const void *in, const int64_t *send_counts,
                                                   void *out, const int64_t *recv_counts,
                                                   porta_dtype dtype);

/* ---- asynchronous calls, on a group (NULL: the world) ---- */

PORTA_API porta_status *porta_dist_all_reduce_start(porta_dist_group *group,
                                                    porta_tensor *tensor, porta_dist_op op,
                                                    porta_dist_work **work);
PORTA_API porta_status *porta_dist_all_gather_start(porta_dist_group *group,
                                                    const porta_tensor *in, porta_tensor *out,
                                                    porta_dist_work **work);
PORTA_API porta_status *porta_dist_reduce_scatter_start(porta_dist_group *group,
                                                        const porta_tensor *in,
                                                        porta_tensor *out, porta_dist_op op,
                                                        porta_dist_work **work);
PORTA_API porta_status *porta_dist_all_to_all_start(porta_dist_group *group,
                                                    const porta_tensor *in,
                                                    const int64_t *send_counts,
                                                    porta_tensor *out,
                                                    const int64_t *recv_counts,
                                                    porta_dist_work **work);
PORTA_API porta_status *porta_dist_broadcast_start(porta_dist_group *group,
                                                   porta_tensor *tensor, int root,
                                                   porta_dist_work **work);
PORTA_API porta_status *porta_dist_barrier_start(porta_dist_group *group,
                                                 porta_dist_work **work);
PORTA_API porta_status *porta_dist_send_start(porta_dist_group *group,
                                              const porta_tensor *tensor, int dst, int tag,
                                              porta_dist_work **work);
PORTA_API porta_status *porta_dist_recv_start(porta_dist_group *group, porta_tensor *tensor,
                                              int src, int tag, porta_dist_work **work);

PORTA_API porta_status *porta_dist_all_reduce_host_start(porta_dist_group *group, void *data,
                                                         int64_t count, porta_dtype dtype,
                                                         porta_dist_op op,
                                                         porta_dist_work **work);
PORTA_API porta_status *porta_dist_all_gather_host_start(porta_dist_group *group,
                                                         const void *in, void *out,
                                                         int64_t count, porta_dtype dtype,
                                                         porta_dist_work **work);
PORTA_API porta_status *porta_dist_reduce_scatter_host_start(porta_dist_group *group,
                                                             const void *in, void *out,
                                                             int64_t count, porta_dtype dtype,
                                                             porta_dist_op op,
                                                             porta_dist_work **work);
PORTA_API porta_status *porta_dist_all_to_all_host_start(porta_dist_group *group,
                                                         const void *in,
                                                         const int64_t *send_counts, void *out,
                                                         const int64_t *recv_counts,
                                                         porta_dtype dtype,
                                                         porta_dist_work **work);
PORTA_API porta_status *porta_dist_broadcast_host_start(porta_dist_group *group, void *data,
                                                        int64_t count, porta_dtype dtype,
                                                        int root, porta_dist_work **work);
PORTA_API porta_status *porta_dist_send_host_start(porta_dist_group *group, const void *data,
                                                   int64_t count, porta_dtype dtype, int dst,
                                                   int tag, porta_dist_work **work);
PORTA_API porta_status *porta_dist_recv_host_start(porta_dist_group *group, void *data,
                                                   int64_t count, porta_dtype dtype, int src,
                                                   int tag, porta_dist_work **work);

/* Blocks until work is done, writes staged results back, and returns its
 * error (a new status each call; NULL when it succeeded). */
PORTA_API porta_status *porta_dist_work_wait(porta_dist_work *work);
PORTA_API bool porta_dist_work_is_completed(porta_dist_work *work);
/* Whether porta_dist_work_wait has results to write back (staged tensors):
 * until it runs, the received tensor does not hold the result. */
PORTA_API bool porta_dist_work_needs_wait(const porta_dist_work *work);
/* fn(user, status) runs once when the work is done: on a notifying thread
 * of porta_dist's (callbacks one at a time, in completion order, while the
 * communication thread goes on; status borrowed, NULL on success), or at
 * once on the calling thread when it is done already. It must not wait for
 * other work nor call libporta's ops (other threads may be running them). */
typedef void (*porta_dist_work_callback)(void *user, const porta_status *status);
PORTA_API void porta_dist_work_on_done(porta_dist_work *work, porta_dist_work_callback fn,
                                       void *user);
/* Lets go of work; an unfinished one still completes (its staged results
 * are then dropped). NULL is ignored. */
PORTA_API void porta_dist_work_free(porta_dist_work *work);

/* A communicator of the world ranks listed (count >= 1, no repeats). Every
 * listed rank calls it with the same list in the same order, and no other
 * rank does; it waits for them with the timeout. This process's rank in the
 * group is its index in the list. */
PORTA_API porta_status *porta_dist_group_new(const int *ranks, int count,
                                             porta_dist_group **out);
PORTA_API int porta_dist_group_rank(const porta_dist_group *group);
PORTA_API int porta_dist_group_size(const porta_dist_group *group);
/* Frees the group's communicator (without waiting) and the group. */
PORTA_API void porta_dist_group_free(porta_dist_group *group);

#ifdef __cplusplus
}
#endif

#endif
