/* Joining the MPI world, one call at a time, and waiting with a deadline.
 *
 * MPI's own blocking calls can wait forever for a rank that died or hangs.
 * Every wait here polls a nonblocking request instead, and a rank that runs
 * out of time asks every other rank, on a communicator of its own, which
 * call it is in: ranks waiting in any porta_dist call answer while they
 * poll, so silence means a rank exited, hangs, or is busy elsewhere. The
 * answers go into the error, which names the ranks that did not arrive. */
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
#define BROKEN_CAP 1024

typedef struct question {
    int64_t id;
} question;

typedef struct answer {
    int64_t id;
    int64_t collective; /* collectives the answering rank has entered */
    char op[32];        /* the call it is in */
} answer;

static pthread_mutex_t call_lock = PTHREAD_MUTEX_INITIALIZER;
static dist_world world;
static bool initialized;
static bool initialized_mpi_here;
static double timeout_seconds; /* 0: not read from the environment yet */
static bool broken;
static char broken_reason[BROKEN_CAP];
/* Collectives entered so far: every rank issues them in the same order, so
 * equal counts mean the same collective (point-to-point calls don't count). */
static int64_t collectives;
static const char *current_op = "none";
static int64_t question_id;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static porta_status *timeout_from_environment(double *out) {
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
    pthread_mutex_lock(&call_lock);
    timeout_seconds = seconds;
    pthread_mutex_unlock(&call_lock);
    return NULL;
}

static double current_timeout(void) {
    if (timeout_seconds <= 0) {
        double value = DEFAULT_TIMEOUT_SECONDS;
        porta_status *status = timeout_from_environment(&value);
        porta_status_free(status); /* porta_dist_init reports a bad value */
        timeout_seconds = status ? DEFAULT_TIMEOUT_SECONDS : value;
    }
    return timeout_seconds;
}

double porta_dist_get_timeout(void) {
    pthread_mutex_lock(&call_lock);
    double value = current_timeout();
    pthread_mutex_unlock(&call_lock);
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

/* A communicator of our own, made by every rank together: a nonblocking
 * duplicate waited for with the timeout, so that a rank that never joins
 * makes the others fail instead of hang. */
static porta_status *duplicate_world(const mpi_api *mpi, double timeout, mpi_comm *out) {
    mpi_request request = NULL;
    mpi_comm comm = NULL;
    int code = mpi->Comm_idup(mpi->comm_world, &comm, &request);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Comm_idup");
    double start = now_seconds();
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        code = mpi->Test(&request, &done, MPI_STATUS_IGNORE_VALUE);
        if (code != MPI_OK)
            return mpi_failure(mpi, code, "init", "MPI_Test");
        if (done)
            break;
        if (spins >= 256) {
            if (now_seconds() - start > timeout) {
                /* The duplicate cannot be taken back: no later init. */
                broken = true;
                snprintf(broken_reason, sizeof broken_reason, "porta_dist_init timed out");
                return porta_error(PORTA_ERR_IO,
                                   "porta_dist: init timed out after %.3g s waiting for every "
                                   "rank to join (some rank has not called porta_dist_init); "
                                   "the timeout is PORTA_DIST_TIMEOUT",
                                   now_seconds() - start);
            }
            sched_yield();
        }
    }
    *out = comm;
    return NULL;
}

static porta_status *join(void) {
    double timeout = 0;
    PORTA_TRY(timeout_from_environment(&timeout));
    const mpi_api *mpi = NULL;
    PORTA_TRY(mpi_api_get(&mpi));
    int flag = 0;
    if (mpi->Finalized(&flag) == MPI_OK && flag)
        return porta_error(PORTA_ERR_UNAVAILABLE,
                           "porta_dist_init: MPI was already finalized in this process (a "
                           "process joins the MPI world once)");
    int code = mpi->Initialized(&flag);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Initialized");
    if (!flag) {
        /* Open MPI's nonblocking allreduce picks a binomial tree for two or
         * three ranks, which halves the bandwidth of large messages; the
         * reduce-scatter + allgather schedule (falling back to a ring where
         * it does not apply) is what the blocking call achieves. Every rank
         * runs this same line, so they all agree; a value the user set wins. */
        setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
        int provided = 0;
        code = mpi->Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE_VALUE, &provided);
        if (code != MPI_OK)
            return mpi_failure(mpi, code, "init", "MPI_Init_thread");
        initialized_mpi_here = true;
        /* Calls come from any thread (autograd's, for one), one at a time. */
        if (provided < MPI_THREAD_SERIALIZED_VALUE)
            return porta_error(PORTA_ERR_UNAVAILABLE,
                               "porta_dist_init: MPI gives thread level %d, Porta needs at "
                               "least MPI_THREAD_SERIALIZED (%d)",
                               provided, MPI_THREAD_SERIALIZED_VALUE);
    }
    dist_world joined = {.mpi = mpi};
    code = mpi->Comm_rank(mpi->comm_world, &joined.rank);
    if (code == MPI_OK)
        code = mpi->Comm_size(mpi->comm_world, &joined.size);
    if (code != MPI_OK)
        return mpi_failure(mpi, code, "init", "MPI_Comm_rank/size");
    PORTA_TRY(check_launcher_environment(joined.rank, joined.size));
    mpi->Comm_set_errhandler(mpi->comm_world, mpi->errors_return);
    PORTA_TRY(duplicate_world(mpi, timeout, &joined.comm));
    porta_status *status = duplicate_world(mpi, timeout, &joined.control);
    if (status) {
        mpi->Comm_free(&joined.comm);
        return status;
    }
    /* Errors come back as codes that become statuses, not aborts. */
    mpi->Comm_set_errhandler(joined.comm, mpi->errors_return);
    mpi->Comm_set_errhandler(joined.control, mpi->errors_return);
    world = joined;
    if (timeout_seconds <= 0)
        timeout_seconds = timeout;
    return NULL;
}

porta_status *porta_dist_init(void) {
    pthread_mutex_lock(&call_lock);
    porta_status *status = NULL;
    if (broken)
        status = porta_error(PORTA_ERR_IO, "porta_dist_init refused: %s", broken_reason);
    else if (!initialized)
        status = join();
    if (!status)
        initialized = true;
    pthread_mutex_unlock(&call_lock);
    return status;
}

bool porta_dist_is_initialized(void) {
    pthread_mutex_lock(&call_lock);
    bool value = initialized;
    pthread_mutex_unlock(&call_lock);
    return value;
}

porta_status *porta_dist_finalize(void) {
    pthread_mutex_lock(&call_lock);
    porta_status *status = NULL;
    /* After a failure the others may never finalize; MPI_Finalize would
     * wait for them, so a broken world is left for process exit. */
    if (initialized && !broken) {
        const mpi_api *mpi = world.mpi;
        mpi->Comm_free(&world.control);
        mpi->Comm_free(&world.comm);
        if (initialized_mpi_here) {
            int code = mpi->Finalize();
            if (code != MPI_OK)
                status = mpi_failure(mpi, code, "finalize", "MPI_Finalize");
        }
        initialized = false;
    }
    pthread_mutex_unlock(&call_lock);
    return status;
}

int porta_dist_rank(void) {
    pthread_mutex_lock(&call_lock);
    int value = initialized ? world.rank : -1;
    pthread_mutex_unlock(&call_lock);
    return value;
}

int porta_dist_size(void) {
    pthread_mutex_lock(&call_lock);
    int value = initialized ? world.size : -1;
    pthread_mutex_unlock(&call_lock);
    return value;
}

porta_status *dist_enter(const char *op, bool collective, const dist_world **out) {
    pthread_mutex_lock(&call_lock);
    porta_status *status = NULL;
    if (!initialized)
        status = porta_error(PORTA_ERR_UNAVAILABLE,
                             "porta_dist: %s before porta_dist_init (no MPI world joined)", op);
    else if (broken)
        status = porta_error(PORTA_ERR_IO,
                             "porta_dist: %s refused: an earlier call failed and left the "
                             "world unusable (%s)",
                             op, broken_reason);
    if (status) {
        pthread_mutex_unlock(&call_lock);
        return status;
    }
    if (collective)
        collectives++;
    current_op = op;
    *out = &world;
    return NULL;
}

void dist_leave(void) {
    current_op = "none";
    pthread_mutex_unlock(&call_lock);
}

static porta_status *break_world(porta_status *status) {
    broken = true;
    snprintf(broken_reason, sizeof broken_reason, "%s", porta_status_message(status));
    return status;
}

porta_status *dist_check(int code, const char *what) {
    if (code == MPI_OK)
        return NULL;
    return mpi_failure(world.mpi, code, current_op, what);
}

/* Tells each rank that asks where this one is. */
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
        answer reply = {.id = asked.id, .collective = collectives};
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

/* Asks every other rank where it is, waits briefly for the answers, and
 * returns the timeout's error naming the ranks that did not arrive. */
static porta_status *timed_out(int peer, double waited) {
    const mpi_api *mpi = world.mpi;
    int size = world.size;
    answer *answers = calloc((size_t)size, sizeof *answers);
    bool *answered = calloc((size_t)size, sizeof *answered);
    if (!answers || !answered) {
        free(answers);
        free(answered);
        return break_world(porta_error(PORTA_ERR_IO,
                                       "porta_dist: %s (collective #%lld of rank %d) "
                                       "timed out after %.3g s",
                                       current_op, (long long)collectives, world.rank,
                                       waited));
    }
    question asked = {.id = ++question_id};
    int expected = 0;
    for (int r = 0; r < size; r++) {
        if (r == world.rank)
            continue;
        if (mpi->Send(&asked, (int)sizeof asked, mpi->byte, r, TAG_ASK, world.control) ==
            MPI_OK)
            expected++;
    }
    double window = timeout_seconds / 4;
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
        if (reply.id != asked.id || status.source < 0 || status.source >= size)
            continue; /* a late answer to an earlier question */
        reply.op[sizeof reply.op - 1] = '\0';
        answers[status.source] = reply;
        answered[status.source] = true;
        received++;
    }
    char absent[BROKEN_CAP / 2] = "";
    char elsewhere[BROKEN_CAP / 2] = "";
    int absent_count = 0;
    for (int r = 0; r < size; r++) {
        if (r == world.rank || (peer >= 0 && r != peer))
            continue;
        if (!answered[r]) {
            append(absent, sizeof absent, "%s%d", absent_count ? ", " : "", r);
            absent_count++;
        } else if (strcmp(answers[r].op, current_op) != 0 ||
                   answers[r].collective != collectives) {
            append(elsewhere, sizeof elsewhere,
                   "; rank %d is waiting in %s (its collective #%lld)", r, answers[r].op,
                   (long long)answers[r].collective);
        }
    }
    free(answers);
    free(answered);
    return break_world(porta_error(
        PORTA_ERR_IO,
        "porta_dist: %s (collective #%lld of rank %d) timed out after %.3g s%s%s%s%s; the "
        "timeout is PORTA_DIST_TIMEOUT or porta_dist_set_timeout",
        current_op, (long long)collectives, world.rank, waited,
        absent_count ? (absent_count > 1 ? ": ranks " : ": rank ") : "", absent,
        absent_count ? " did not arrive (no answer: exited, hung, or busy outside porta_dist)"
                     : "",
        elsewhere));
}

porta_status *dist_wait(mpi_request *request, int peer) {
    const mpi_api *mpi = world.mpi;
    double start = now_seconds();
    double deadline = start + current_timeout();
    for (unsigned spins = 0;; spins++) {
        int done = 0;
        int code = mpi->Test(request, &done, MPI_STATUS_IGNORE_VALUE);
        if (code != MPI_OK)
            return break_world(dist_check(code, "MPI_Test"));
        if (done)
            return NULL;
        answer_questions();
        if (spins >= 256) {
            double now = now_seconds();
            if (now > deadline)
                return timed_out(peer, now - start);
            sched_yield(); /* ranks may share cores */
        }
    }
}
