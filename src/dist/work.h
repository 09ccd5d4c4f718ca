/* Work items of the communication thread: what a call asks for, queued by
 * the issuing thread and run, in issue order, by the one thread that makes
 * every MPI call (comm_thread.c). */
#ifndef PORTA_DIST_WORK_H
#define PORTA_DIST_WORK_H

#include <pthread.h>
#include <stdatomic.h>

#include "porta_dist.h"

typedef enum dist_kind {
    DIST_INIT,
    DIST_FINALIZE,
    DIST_GROUP_NEW,
    DIST_GROUP_FREE,
    DIST_ALL_REDUCE,
    DIST_ALL_GATHER,
    DIST_REDUCE_SCATTER,
    DIST_ALL_TO_ALL,
    DIST_BROADCAST,
    DIST_BARRIER,
    DIST_SEND,
    DIST_RECV
} dist_kind;

/* Host memory of a tensor for the MPI call: the tensor's own buffer, or a
 * staging copy written back by porta_dist_work_wait. */
typedef struct dist_staged {
    porta_tensor *tensor; /* retained while the work lives; NULL when unused */
    void *host;
    bool in_place;
    bool write_back; /* the call's result lands here */
} dist_staged;

typedef struct dist_call {
    dist_kind kind;
    const char *name; /* for messages: "all_reduce" */
    porta_dist_group *group;
    const void *in;
    void *out;
    int64_t count; /* elements (all_gather / reduce_scatter: one rank's block) */
    porta_dtype dtype;
    porta_dist_op op;
    int peer; /* root, destination or source */
    int tag;
    int *counts; /* all_to_all: send counts, send displacements, receive counts,
                    receive displacements, size ints each (owned) */
    int *ranks;  /* group_new: the members (owned) */
    int rank_count;
    double timeout; /* init */
} dist_call;

struct porta_dist_work {
    dist_call call;
    dist_staged staged[2]; /* in, out */
    atomic_int refs;       /* the issuer's and the thread's */
    porta_dist_work *next; /* in the queue */
    /* Under the thread's lock: */
    bool done;
    bool written_back;
    porta_status *status;
    porta_dist_work_callback on_done;
    void *on_done_user;
};

/* Queues call (taking over its counts and ranks, and the staged memory
 * when given: two entries) as a new work for the communication thread. On
 * error everything taken over is released. */
porta_status *dist_start(const dist_call *call, const dist_staged *staged,
                         porta_dist_work **out);
/* Queues a call of the world's life (init, finalize, groups), starting the
 * thread for init, and waits for it. */
porta_status *dist_run_lifecycle(const dist_call *call);
/* The synchronous forms: started's error, or *work's once waited for
 * (read after `started` is evaluated, when the start has set it). */
porta_status *dist_finish(porta_status *started, porta_dist_work **work);

/* On the issuing thread: the checks of a call's arguments (and that the
 * world is joined), and all_to_all's counts and displacements. */
porta_status *dist_check_call(dist_call *call);
porta_status *dist_all_to_all_counts(dist_call *call, const int64_t *send_counts,
                                     int64_t in_count, const int64_t *recv_counts,
                                     int64_t out_count);

/* On the communication thread: runs a call (lifecycle.c), collectives
 * through dist_execute_collective (host_collectives.c). */
porta_status *dist_execute(dist_call *call);
porta_status *dist_execute_collective(dist_call *call);
/* Waits for the thread to end after a finalize work left the world. */
void dist_thread_join(void);

#endif
