/* The world's life as seen by callers: joining (which starts the
 * communication thread, where MPI is started), leaving (which ends it), and
 * groups of some of the ranks; each is a work item run on the thread. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "dist/work.h"
#include "dist/world.h"

porta_status *porta_dist_init(void) {
    double timeout = 0;
    PORTA_TRY(dist_timeout_from_environment(&timeout));
    PORTA_TRY(dist_refusal("porta_dist_init"));
    if (porta_dist_is_initialized())
        return NULL;
    /* Loading MPI needs no thread of its own: say at once when it is missing. */
    const mpi_api *mpi = NULL;
    PORTA_TRY(mpi_api_get(&mpi));
    /* Open MPI's nonblocking allreduce picks a binomial tree for two or three
     * ranks, which halves the bandwidth of large messages; the reduce-scatter
     * + allgather schedule (falling back to a ring where it does not apply)
     * is what the blocking call achieves. Every rank runs this same line, so
     * they all agree; a value the user set wins. Set here, before the thread
     * exists: setenv is not for several threads at once. */
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
    dist_call call = {.kind = DIST_INIT, .name = "init", .timeout = timeout};
    return dist_run_lifecycle(&call);
}

porta_status *porta_dist_finalize(void) {
    if (!porta_dist_is_initialized())
        return NULL; /* nothing joined (or the thread already ended) */
    dist_call call = {.kind = DIST_FINALIZE, .name = "finalize"};
    porta_status *status = dist_run_lifecycle(&call);
    dist_thread_join();
    return status;
}

porta_status *porta_dist_group_new(const int *ranks, int count, porta_dist_group **out) {
    if (!ranks || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_group_new: %s is NULL",
                           !ranks ? "ranks" : "out");
    int size = porta_dist_size();
    if (size < 0)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist: new_group before porta_dist_init (no MPI world joined)");
    if (count < 1 || count > size)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "porta_dist_group_new: count must be in [1, %d] (the world size), "
                           "given %d",
                           size, count);
    for (int i = 0; i < count; i++) {
        if (ranks[i] < 0 || ranks[i] >= size)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "porta_dist_group_new: ranks[%d] must be a rank in [0, %d), "
                               "given %d",
                               i, size, ranks[i]);
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "porta_dist_group_new: rank %d is listed twice (at %d and "
                                   "%d)",
                                   ranks[i], j, i);
    }
    porta_dist_group *group = calloc(1, sizeof *group);
    int *members = malloc((size_t)count * sizeof *members);
    int *copy = malloc((size_t)count * sizeof *copy);
    if (!group || !members || !copy) {
        free(group);
        free(members);
        free(copy);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_dist_group_new: out of memory");
    }
    memcpy(members, ranks, (size_t)count * sizeof *members);
    memcpy(copy, ranks, (size_t)count * sizeof *copy);
    group->world_ranks = members;
    /* The call names the world: the group itself is made by it. */
    dist_call call = {.kind = DIST_GROUP_NEW, .name = "new_group", .out = group,
                      .ranks = copy, .rank_count = count};
    porta_status *status = dist_run_lifecycle(&call);
    if (status) {
        free(members);
        free(group);
        return status;
    }
    *out = group;
    return NULL;
}

int porta_dist_group_rank(const porta_dist_group *group) { return group ? group->rank : -1; }

int porta_dist_group_size(const porta_dist_group *group) { return group ? group->size : -1; }

void porta_dist_group_free(porta_dist_group *group) {
    if (!group)
        return;
    /* The communicator is freed on the thread, after every call queued on
     * the group; without a thread (the world left) there is none to free. */
    dist_call call = {.kind = DIST_GROUP_FREE, .name = "group_free", .out = group};
    porta_dist_work *work = NULL;
    porta_status *status = dist_start(&call, NULL, &work);
    if (status) {
        porta_status_free(status);
        free(group->world_ranks);
        free(group);
        return;
    }
    porta_dist_work_free(work); /* the thread frees the group when it runs */
}

porta_status *dist_execute(dist_call *call) {
    switch (call->kind) {
    case DIST_INIT: {
        if (porta_dist_is_initialized())
            return NULL; /* two threads' inits: the first joined */
        PORTA_TRY(dist_world_join(call->timeout));
        dist_world_set_joined(true);
        return NULL;
    }
    case DIST_FINALIZE: {
        if (!porta_dist_is_initialized())
            return NULL;
        porta_status *refused = dist_refusal("finalize");
        if (refused) { /* the others may never finalize: leave it to process exit */
            porta_status_free(refused);
            return NULL;
        }
        porta_status *status = dist_world_leave();
        dist_world_set_joined(false);
        return status;
    }
    case DIST_GROUP_NEW: {
        const dist_world *w = NULL;
        porta_dist_group *world_group = NULL;
        PORTA_TRY(dist_begin(call->name, NULL, false, &w, &world_group));
        porta_status *status = dist_group_create(call->ranks, call->rank_count, call->out);
        dist_end();
        return status;
    }
    case DIST_GROUP_FREE: {
        porta_dist_group *group = call->out;
        dist_group_release_comm(group);
        free(group->world_ranks);
        free(group);
        return NULL;
    }
    default: return dist_execute_collective(call);
    }
}
