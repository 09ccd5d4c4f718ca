/* The process's place in the MPI world, its groups, and the rules every
 * collective follows: a deadline on every wait, and after a timeout no
 * further calls. Everything here that calls MPI runs on the communication
 * thread (comm_thread.c), the only thread that calls MPI after init. */
#ifndef PORTA_DIST_WORLD_H
#define PORTA_DIST_WORLD_H

#include <stdint.h>

#include "dist/mpi_load.h"
#include "porta_dist.h"

/* A communicator and this process's place in it. */
struct porta_dist_group {
    mpi_comm comm;
    int rank;
    int size;
    int *world_ranks;    /* member i's rank in the world; NULL for the world itself */
    uint64_t id;         /* the same on every member (from the member list) */
    int64_t collectives; /* entered on this communicator so far */
    bool comm_live;      /* comm is to be freed (not yet freed, world not left) */
};

typedef struct dist_world {
    const mpi_api *mpi;
    porta_dist_group group; /* every rank, on a duplicate of MPI_COMM_WORLD */
    mpi_comm control;       /* asking who arrived, apart from the data's messages */
} dist_world;

/* Reads PORTA_DIST_TIMEOUT (60 s when unset); an error for a bad value. */
porta_status *dist_timeout_from_environment(double *out);

/* On the communication thread: joins the world (starting MPI unless the
 * program did) / leaves it. `timeout` bounds the wait for the others. */
porta_status *dist_world_join(double timeout);
porta_status *dist_world_leave(void);
/* Marks the world joined or left for the getters of other threads. */
void dist_world_set_joined(bool joined);

/* Starts call `op` (a name for messages) on `group` (NULL: the world):
 * checks that the world is joined and not broken, and counts it when
 * `collective`. On success the caller calls dist_end when done. */
porta_status *dist_begin(const char *op, porta_dist_group *group, bool collective,
                         const dist_world **world, porta_dist_group **resolved);
void dist_end(void);
/* Waits for request within the timeout, answering other ranks' questions
 * meanwhile. On timeout asks the group's other members where they are,
 * marks the world broken and returns an error naming the call and the
 * (world) ranks that did not arrive; `peer` (a rank of the group, or -1 for
 * every member) is the rank the call waits on. */
porta_status *dist_wait(mpi_request *request, int peer);
/* An error for MPI's return code `code` in the current call (or NULL). */
porta_status *dist_check(int code, const char *what);
/* Marks the world unusable with status's message; returns status. */
porta_status *dist_break(porta_status *status);
/* The refusal every call gets after the world broke (NULL while usable). */
porta_status *dist_refusal(const char *op);

/* On the communication thread: a communicator of the world ranks listed
 * (every member calls it with the same list), and freeing one. */
porta_status *dist_group_create(const int *ranks, int count, porta_dist_group *out);
void dist_group_release_comm(porta_dist_group *group);

#endif
