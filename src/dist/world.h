/* The process's place in the MPI world and the rules every call follows:
 * one call at a time, a deadline on every wait, and after a timeout no
 * further calls. */
#ifndef PORTA_DIST_WORLD_H
#define PORTA_DIST_WORLD_H

#include "dist/mpi_load.h"

typedef struct dist_world {
    const mpi_api *mpi;
    mpi_comm comm;    /* the data's communicator (a duplicate of MPI_COMM_WORLD) */
    mpi_comm control; /* asking who arrived, apart from the data's messages */
    int rank;
    int size;
} dist_world;

/* Starts call `op` (a name for messages): takes the lock, checks that the
 * world is initialized and not broken, and counts it when `collective`.
 * On success the caller must call dist_leave. */
porta_status *dist_enter(const char *op, bool collective, const dist_world **out);
void dist_leave(void);
/* Waits for request within the timeout, answering other ranks' questions
 * meanwhile. On timeout asks the others where they are, marks the world
 * broken and returns an error naming the call and the ranks that did not
 * arrive; `peer` (or -1 for every rank) is the rank the call waits on. */
porta_status *dist_wait(mpi_request *request, int peer);
/* An error for MPI's return code `code` in the current call (or NULL). */
porta_status *dist_check(int code, const char *what);

#endif
