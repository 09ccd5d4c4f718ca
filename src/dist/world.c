/* Joining the MPI world, its subgroups, and waiting with a deadline. All
 * of it runs on the communication thread (comm_thread.c), one call at a
 * time; other threads only read the state under state_lock.
 *
 * MPI's own blocking calls can wait forever for a rank that died or hangs.
 * Every wait here polls a nonblocking request instead, and a rank that runs
 * out of time asks the other members of the call's group, on a
 * communicator of its own, which call they are in: ranks waiting in any
 * porta_dist call answer while they poll, so silence means a rank exited,
 * hangs, or has not issued the call. The answers go into the error, which
 * names the ranks that did not arrive. */
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "dist/world.h"
#include "porta_dist.h"

#define DEFAULT_TIMEOUT_SECONDS 60.0
#define TAG_ASK 1
#define TAG_ANSWER 2
#define TAG_GROUP 3
#define BROKEN_CAP 1024

typedef struct question {
    int64_t id;
} question;

typedef struct answer {
    int64_t id;
    uint64_t group;     /* the communicator of the call it is in */
    int64_t collective; /* collectives the answering rank has entered on it */
    char op[32];        /* the call it is in */
} answer;

/* Guards what other threads read (joined, rank, size, timeout, broken);
 * everything else is touched by the communication thread alone. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static dist_world world;
static bool joined;
static bool initialized_mpi_here;
static double timeout_seconds; /* 0: not read from the environment yet */
static bool broken;
static char broken_reason[BROKEN_CAP];
static const char *current_op = "none";
static porta_dist_group *current_group;
static int64_t question_id;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

porta_status *dist_timeout_from_environment(double *out) {
    const char *text = getenv("PORTA_DIST_TIMEOUT");
    if (!text || !*text) {
        *out = DEFAULT_TIMEOUT_SECONDS;
        return NULL;
    }
    char *end = NULL;
    double value = strtod(text, &end);
    if (*end != '\0' || !(value > 0) || value > 1e9)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "PORTA_DIST_TIMEOUT: expected seconds > 0, given \"%s\"", text);
    *out = value;
    return NULL;
}

porta_status *porta_dist_set_timeout(double seconds) {
    if (!(seconds > 0) || seconds > 1e9)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_set_timeout: expected seconds in (0, 1e9], given %g",
                           seconds);
    pthread_mutex_lock(&state_lock);
    timeout_seconds = seconds;
    pthread_mutex_unlock(&state_lock);
    return NULL;
}

/* Call with state_lock held. */
static double current_timeout(void) {
    if (timeout_seconds <= 0) {
        double value = DEFAULT_TIMEOUT_SECONDS;
        porta_status *status = dist_timeout_from_environment(&value);
        porta_status_free(status); /* porta_dist_init reports a bad value */
        timeout_seconds = status ? DEFAULT_TIMEOUT_SECONDS : value;
    }
    return timeout_seconds;
}

double porta_dist_get_timeout(void) {
    pthread_mutex_lock(&state_lock);
    double value = current_timeout();
    pthread_mutex_unlock(&state_lock);
    return value;
}

bool porta_dist_available(void) {
    const mpi_api *mpi = NULL;
    porta_status *status = mpi_api_get(&mpi);
    porta_status_free(status);
    return status == NULL;
}

static porta_status *mpi_failure(const mpi_api *mpi, int code, const char *op, const char *what) {
    char text[MPI_MAX_ERROR_STRING_VALUE + 1] = "unknown MPI error";
    int length = 0;
    if (mpi->Error_string(code, text, &length) != MPI_OK)
        snprintf(text, sizeof text, "MPI error %d", code);
    text[MPI_MAX_ERROR_STRING_VALUE] = '\0';
    return porta_error(PORTA_ERR_IO, "porta_dist: %s: %s failed: %s", op, what, text);
}

/* torchrun's variables, when set, must describe the same world as MPI. */
static porta_status *check_launcher_environment(int rank, int size) {
    const char *size_text = getenv("WORLD_SIZE");
    const char *rank_text = getenv("RANK");
    if (size_text && *size_text && atoi(size_text) != size) {
        if (size == 1)
            return porta_error(PORTA_ERR_UNAVAILABLE,
                               "porta_dist: WORLD_SIZE=%s but MPI sees a world of 1 process: "
                               "Porta's collectives run over MPI, so launch the processes with "
                               "`mpirun -np %s ...` (torchrun alone can start only a world of "
                               "1)",
                               size_text, size_text);
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist: WORLD_SIZE=%s but MPI's world has %d processes",
                           size_text, size);
    }
    if (rank_text && *rank_text && atoi(rank_text) != rank)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist: RANK=%s but MPI gives this process rank %d", rank_text,
                           rank);
    return NULL;
}

/* Waits for a request of init (before the world is joined: no questions
 * to answer yet) within the timeout. */
static porta_status *wait_during_init(const mpi_api *mpi, mpi_request *request, double timeout,
                                      const char *what) {
    double start = now_seconds();
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        int code = mpi->Test(request, &done, MPI_STATUS_IGNORE_VALUE);
        if (code != MPI_OK)
            return mpi_failure(mpi, code, "init", "MPI_Test");
        if (done)
            return NULL;
        if (spins >= 256) {
            if (now_seconds() - start > timeout) {
                /* The request cannot be taken back: no later init. */
                pthread_mutex_lock(&state_lock);
                broken = true;
                snprintf(broken_reason, sizeof broken_reason, "porta_dist_init timed out");
                pthread_mutex_unlock(&state_lock);
                return porta_error(PORTA_ERR_IO,
                                   "porta_dist: init timed out after %.3g s waiting for every "
                                   "rank to join (%s)",
                                   now_seconds() - start, what);
            }
            sched_yield();
        }
    }
}

/* A communicator of our own, made by every rank together: a nonblocking
 * duplicate waited for with the timeout, so that a rank that never joins
 * makes the others fail instead of hang. */
static porta_status *duplicate_world(const mpi_api *mpi, double timeout, mpi_comm *out) {
    mpi_request request = NULL;
    mpi_comm comm = NULL;
    int code = mpi->Comm_idup(mpi->comm_world, &comm, &request);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Comm_idup");
    PORTA_TRY(wait_during_init(mpi, &request, timeout,
                               "some rank has not called porta_dist_init; the timeout is "
                               "PORTA_DIST_TIMEOUT"));
    *out = comm;
    return NULL;
}

/* MPI's thread level: this thread makes every MPI call, so FUNNELED
 * suffices when MPI is started here (this thread is then MPI's main
 * thread). SERIALIZED is asked for so that the program may call MPI itself
 * while no porta_dist call is in flight (a benchmark's plain MPI_Allreduce).
 * When the program started MPI on another thread, this one is not MPI's
 * main thread and needs SERIALIZED. */
static porta_status *start_mpi(const mpi_api *mpi) {
    int flag = 0;
    int code = mpi->Initialized(&flag);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Initialized");
    int provided = 0;
    if (flag) {
        code = mpi->Query_thread(&provided);
        if (code != MPI_OK)
            return mpi_failure(mpi, code, "init", "MPI_Query_thread");
        if (provided < MPI_THREAD_SERIALIZED_VALUE)
            return porta_error(PORTA_ERR_UNAVAILABLE,
                               "porta_dist_init: the program started MPI with thread level %d; "
                               "Porta's communication thread needs MPI_THREAD_SERIALIZED (%d) "
                               "or more when it does not start MPI itself (use "
                               "MPI_Init_thread, or let porta_dist_init start MPI)",
                               provided, MPI_THREAD_SERIALIZED_VALUE);
        return NULL;
    }
    code = mpi->Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED_VALUE, &provided);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Init_thread");
    initialized_mpi_here = true;
    if (provided < MPI_THREAD_FUNNELED_VALUE)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist_init: MPI gives thread level %d, Porta needs at least "
                           "MPI_THREAD_FUNNELED (%d): one thread of its own makes every MPI "
                           "call",
                           provided, MPI_THREAD_FUNNELED_VALUE);
    return NULL;
}

static uint64_t members_id(const int *ranks, int count) {
    uint64_t hash = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < count; i++) {
        hash ^= (uint64_t)(uint32_t)(ranks ? ranks[i] : i);
        hash *= 1099511628211ull;
    }
    return hash;
}

porta_status *dist_world_join(double timeout) {
    const mpi_api *mpi = NULL;
    PORTA_TRY(mpi_api_get(&mpi));
    int flag = 0;
    if (mpi->Finalized(&flag) == MPI_OK && flag)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist_init: MPI was already finalized in this process (a "
                           "process joins the MPI world once)");
    PORTA_TRY(start_mpi(mpi));
    dist_world joining = {.mpi = mpi};
    int code = mpi->Comm_rank(mpi->comm_world, &joining.group.rank);
    if (code == MPI_OK)
        code = mpi->Comm_size(mpi->comm_world, &joining.group.size);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Comm_rank/size");
    PORTA_TRY(check_launcher_environment(joining.group.rank, joining.group.size));
    mpi->Comm_set_errhandler(mpi->comm_world, mpi->errors_return);
    PORTA_TRY(duplicate_world(mpi, timeout, &joining.group.comm));
    porta_status *status = duplicate_world(mpi, timeout, &joining.control);
    if (status) {
        mpi->Comm_free(&joining.group.comm);
        return status;
    }
    /* Errors come back as codes that become statuses, not aborts. */
    mpi->Comm_set_errhandler(joining.group.comm, mpi->errors_return);
    mpi->Comm_set_errhandler(joining.control, mpi->errors_return);
    joining.group.id = members_id(NULL, joining.group.size) ^ 1; /* apart from a subgroup of all */
    joining.group.comm_live = true;
    world = joining;
    pthread_mutex_lock(&state_lock);
    if (timeout_seconds <= 0)
        timeout_seconds = timeout;
    pthread_mutex_unlock(&state_lock);
    return NULL;
}

void dist_world_set_joined(bool value) {
    pthread_mutex_lock(&state_lock);
    joined = value;
    pthread_mutex_unlock(&state_lock);
}

porta_status *dist_world_leave(void) {
    /* After a failure the others may never finalize; MPI_Finalize would
     * wait for them, so a broken world is left for process exit. */
    pthread_mutex_lock(&state_lock);
    bool usable = joined && !broken;
    pthread_mutex_unlock(&state_lock);
    if (!usable)
        return NULL;
    const mpi_api *mpi = world.mpi;
    mpi->Comm_free(&world.control);
    mpi->Comm_free(&world.group.comm);
    world.group.comm_live = false;
    if (initialized_mpi_here) {
        int code = mpi->Finalize();
        if (code != MPI_OK)
            return mpi_failure(mpi, code, "finalize", "MPI_Finalize");
    }
    return NULL;
}

bool porta_dist_is_initialized(void) {
    pthread_mutex_lock(&state_lock);
    bool value = joined;
    pthread_mutex_unlock(&state_lock);
    return value;
}

int porta_dist_rank(void) {
    pthread_mutex_lock(&state_lock);
    int value = joined ? world.group.rank : -1;
    pthread_mutex_unlock(&state_lock);
    return value;
}

int porta_dist_size(void) {
    pthread_mutex_lock(&state_lock);
    int value = joined ? world.group.size : -1;
    pthread_mutex_unlock(&state_lock);
    return value;
}

porta_status *dist_refusal(const char *op) {
    pthread_mutex_lock(&state_lock);
    porta_status *status = NULL;
    if (broken)
        status = porta_error(PORTA_ERR_IO,
                             "porta_dist: %s refused: an earlier call failed and left the "
                             "world unusable (%s)",
                             op, broken_reason);
    pthread_mutex_unlock(&state_lock);
    return status;
}

porta_status *dist_begin(const char *op, porta_dist_group *group, bool collective,
                         const dist_world **out, porta_dist_group **resolved) {
    pthread_mutex_lock(&state_lock);
    bool usable = joined;
    pthread_mutex_unlock(&state_lock);
    if (!usable)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist: %s before porta_dist_init (no MPI world joined)", op);
    PORTA_TRY(dist_refusal(op));
    porta_dist_group *target = group ? group : &world.group;
    if (!target->comm_live)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist: %s on a group whose communicator is gone", op);
    if (collective)
        target->collectives++;
    current_op = op;
    current_group = target;
    *out = &world;
    *resolved = target;
    return NULL;
}

void dist_end(void) {
    current_op = "none";
    current_group = NULL;
}

porta_status *dist_break(porta_status *status) {
    pthread_mutex_lock(&state_lock);
    broken = true;
    snprintf(broken_reason, sizeof broken_reason, "%s", porta_status_message(status));
    pthread_mutex_unlock(&state_lock);
    return status;
}

porta_status *dist_check(int code, const char *what) {
    if (code == MPI_OK)
        return NULL;
    return mpi_failure(world.mpi, code, current_op, what);
}

/* Tells each rank that asks where this one is: the call, and the count of
 * collectives on the communicator the asker named. */
static void answer_questions(void) {
    const mpi_api *mpi = world.mpi;
    for (;;) {
        int found = 0;
        mpi_status status;
        if (mpi->Iprobe(-1, TAG_ASK, world.control, &found, &status) != MPI_OK || !found)
            return;
        question asked;
        if (mpi->Recv(&asked, (int)sizeof asked, mpi->byte, status.source, TAG_ASK,
                      world.control, MPI_STATUS_IGNORE_VALUE) != MPI_OK)
            return;
        answer reply = {.id = asked.id, .group = current_group ? current_group->id : 0,
                        .collective = current_group ? current_group->collectives : -1};
        snprintf(reply.op, sizeof reply.op, "%s", current_op);
        mpi->Send(&reply, (int)sizeof reply, mpi->byte, status.source, TAG_ANSWER,
                  world.control);
    }
}

/* snprintf at the end of text, never past cap. */
static void append(char *text, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *text, size_t cap, const char *fmt, ...) {
    size_t used = strlen(text);
    if (used + 1 >= cap)
        return;
    va_list args;
    va_start(args, fmt);
    vsnprintf(text + used, cap - used, fmt, args);
    va_end(args);
}

static int world_rank_of(const porta_dist_group *group, int member) {
    return group->world_ranks ? group->world_ranks[member] : member;
}

/* Asks the group's other members where they are, waits briefly for the
 * answers, and returns the timeout's error naming (by world rank) those
 * that did not arrive. */
static porta_status *timed_out(int peer, double waited) {
    const mpi_api *mpi = world.mpi;
    const porta_dist_group *group = current_group;
    int world_size = world.group.size;
    answer *answers = calloc((size_t)world_size, sizeof *answers);
    bool *answered = calloc((size_t)world_size, sizeof *answered);
    if (!answers || !answered) {
        free(answers);
        free(answered);
        return dist_break(porta_error(PORTA_ERR_IO,
                                      "porta_dist: %s (collective #%lld of rank %d) "
                                      "timed out after %.3g s",
                                      current_op, (long long)group->collectives,
                                      world.group.rank, waited));
    }
    question asked = {.id = ++question_id};
    int expected = 0;
    for (int member = 0; member < group->size; member++) {
        int r = world_rank_of(group, member);
        if (member == group->rank)
            continue;
        if (mpi->Send(&asked, (int)sizeof asked, mpi->byte, r, TAG_ASK, world.control) ==
            MPI_OK)
            expected++;
    }
    pthread_mutex_lock(&state_lock);
    double window = timeout_seconds / 4;
    pthread_mutex_unlock(&state_lock);
    window = window < 0.2 ? 0.2 : window > 2.0 ? 2.0 : window;
    double until = now_seconds() + window;
    int received = 0;
    while (received < expected && now_seconds() < until) {
        answer_questions();
        int found = 0;
        mpi_status status;
        if (mpi->Iprobe(-1, TAG_ANSWER, world.control, &found, &status) != MPI_OK)
            break;
        if (!found) {
            sched_yield();
            continue;
        }
        answer reply;
        if (mpi->Recv(&reply, (int)sizeof reply, mpi->byte, status.source, TAG_ANSWER,
                      world.control, MPI_STATUS_IGNORE_VALUE) != MPI_OK)
            break;
        if (reply.id != asked.id || status.source < 0 || status.source >= world_size)
            continue; /* a late answer to an earlier question */
        reply.op[sizeof reply.op - 1] = '\0';
        answers[status.source] = reply;
        answered[status.source] = true;
        received++;
    }
    char absent[BROKEN_CAP / 2] = "";
    char elsewhere[BROKEN_CAP / 2] = "";
    int absent_count = 0;
    for (int member = 0; member < group->size; member++) {
        int r = world_rank_of(group, member);
        if (member == group->rank || (peer >= 0 && member != peer))
            continue;
        if (!answered[r]) {
            append(absent, sizeof absent, "%s%d", absent_count ? ", " : "", r);
            absent_count++;
        } else if (strcmp(answers[r].op, current_op) != 0 || answers[r].group != group->id ||
                   answers[r].collective != group->collectives) {
            append(elsewhere, sizeof elsewhere, "; rank %d is waiting in %s", r, answers[r].op);
            if (answers[r].group == group->id)
                append(elsewhere, sizeof elsewhere, " (its collective #%lld)",
                       (long long)answers[r].collective);
            else
                append(elsewhere, sizeof elsewhere, " (on another group)");
        }
    }
    free(answers);
    free(answered);
    return dist_break(porta_error(
        PORTA_ERR_IO,
        "porta_dist: %s (collective #%lld of rank %d%s) timed out after %.3g s%s%s%s%s; the "
        "timeout is PORTA_DIST_TIMEOUT or porta_dist_set_timeout",
        current_op, (long long)group->collectives, world.group.rank,
        group->world_ranks ? " in a subgroup" : "", waited,
        absent_count ? (absent_count > 1 ? ": ranks " : ": rank ") : "", absent,
        absent_count ? " did not arrive (no answer: exited, hung, or busy outside porta_dist)"
                     : "",
        elsewhere));
}

/* Pause between polls of a long wait: the program's own threads compute
 * meanwhile (DDP's backward), and the ranks may share cores. Short waits
 * poll hot; after a millisecond the thread yields its core for a while. */
static void pause_polling(double waited) {
    if (waited < 1e-3) {
        sched_yield();
        return;
    }
    struct timespec pause = {.tv_sec = 0, .tv_nsec = 50 * 1000};
    nanosleep(&pause, NULL);
}

porta_status *dist_wait(mpi_request *request, int peer) {
    const mpi_api *mpi = world.mpi;
    double start = now_seconds();
    pthread_mutex_lock(&state_lock);
    double deadline = start + current_timeout();
    pthread_mutex_unlock(&state_lock);
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        int code = mpi->Test(request, &done, MPI_STATUS_IGNORE_VALUE);
        if (code != MPI_OK)
            return dist_break(dist_check(code, "MPI_Test"));
        if (done)
            return NULL;
        answer_questions();
        if (spins >= 256) {
            double now = now_seconds();
            if (now > deadline)
                return timed_out(peer, now - start);
            pause_polling(now - start);
        }
    }
}

/* Every member sends every other a token on the control communicator and
 * waits for theirs with the timeout: MPI_Comm_create_group itself has no
 * deadline, so it starts only once all members are known to be there. */
static porta_status *members_arrive(const int *ranks, int count, int me, uint64_t id) {
    const mpi_api *mpi = world.mpi;
    uint64_t *tokens = calloc((size_t)count, sizeof *tokens);
    mpi_request *requests = calloc((size_t)count * 2, sizeof *requests);
    if (!tokens || !requests) {
        free(tokens);
        free(requests);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_dist: new_group: out of memory");
    }
    int *peers = calloc((size_t)count * 2, sizeof *peers);
    porta_status *status = NULL;
    if (!peers)
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "porta_dist: new_group: out of memory");
    int posted = 0;
    for (int i = 0; i < count && !status; i++) {
        if (i == me)
            continue;
        status = dist_check(mpi->Irecv(&tokens[i], (int)sizeof tokens[i], mpi->byte, ranks[i],
                                       TAG_GROUP, world.control, &requests[posted]),
                            "MPI_Irecv");
        if (!status)
            peers[posted++] = ranks[i];
        if (!status)
            status = dist_check(mpi->Isend(&id, (int)sizeof id, mpi->byte, ranks[i], TAG_GROUP,
                                           world.control, &requests[posted]),
                                "MPI_Isend");
        if (!status)
            peers[posted++] = ranks[i];
    }
    /* The calls waits on world ranks (the current group is the world). */
    for (int i = 0; i < posted && !status; i++)
        status = dist_wait(&requests[i], peers[i]);
    free(peers);
    for (int i = 0; i < count && !status; i++)
        if (i != me && tokens[i] != id)
            status = dist_break(porta_error(
                PORTA_ERR_INVALID_ARGUMENT,
                "porta_dist: new_group: rank %d listed other members than rank %d (every "
                "member must pass the same ranks in the same order)",
                ranks[i], ranks[me]));
    if (status)
        return status; /* posted requests may still land in tokens: kept */
    free(tokens);
    free(requests);
    return NULL;
}

porta_status *dist_group_create(const int *ranks, int count, porta_dist_group *out) {
    const mpi_api *mpi = world.mpi;
    int me = -1;
    for (int i = 0; i < count; i++)
        if (ranks[i] == world.group.rank)
            me = i;
    if (me < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_group_new: this process (rank %d) is not among the "
                           "members; only members call it",
                           world.group.rank);
    uint64_t id = members_id(ranks, count);
    PORTA_TRY(members_arrive(ranks, count, me, id));
    mpi_group all = NULL, members = NULL;
    mpi_comm comm = NULL;
    porta_status *status = dist_check(mpi->Comm_group(world.group.comm, &all), "MPI_Comm_group");
    if (!status)
        status = dist_check(mpi->Group_incl(all, count, ranks, &members), "MPI_Group_incl");
    if (!status)
        status = dist_check(mpi->Comm_create_group(world.group.comm, members, TAG_GROUP, &comm),
                            "MPI_Comm_create_group");
    if (members)
        mpi->Group_free(&members);
    if (all)
        mpi->Group_free(&all);
    if (status)
        return dist_break(status);
    mpi->Comm_set_errhandler(comm, mpi->errors_return);
    out->comm = comm;
    out->rank = me;
    out->size = count;
    out->id = id;
    out->collectives = 0;
    out->comm_live = true;
    return NULL;
}

void dist_group_release_comm(porta_dist_group *group) {
    pthread_mutex_lock(&state_lock);
    bool usable = joined && !broken;
    pthread_mutex_unlock(&state_lock);
    if (group->comm_live && usable)
        world.mpi->Comm_free(&group->comm);
    group->comm_live = false;
}
