/* The communication thread: one per process, started by porta_dist_init
 * and ended by porta_dist_finalize, it makes every MPI call. Issuing
 * threads queue work items; the thread runs them in issue order (every
 * rank issues collectives in the same order, so their order on the thread
 * is the program's), marks each done and wakes its waiters. The caller of
 * an asynchronous call thus keeps computing while the thread communicates:
 * DDP's backward goes on while earlier buckets are being all-reduced. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "dist/staging.h"
#include "dist/work.h"
#include "dist/world.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queued = PTHREAD_COND_INITIALIZER;
static pthread_cond_t completed = PTHREAD_COND_INITIALIZER;
static pthread_t thread;
static bool running;  /* the thread takes work */
static bool joinable; /* a thread ended that nobody joined yet */
static porta_dist_work *head, *tail;
/* Callbacks run on a thread of their own (the notifier), so that the
 * communication thread goes on to the next call at once: a callback may
 * wait (for Python's GIL, held by the thread that computes meanwhile). */
static pthread_cond_t notify_queued = PTHREAD_COND_INITIALIZER;
static pthread_t notifier;
static bool notifier_stop;
static porta_dist_work *notify_head, *notify_tail;

static void work_drop(porta_dist_work *work);
static porta_status *dist_submit(porta_dist_work *work, bool start_thread);

porta_status *dist_start(const dist_call *call, const dist_staged *staged,
                         porta_dist_work **out) {
    porta_dist_work *work = calloc(1, sizeof *work);
    if (!work) {
        free(call->counts);
        free(call->ranks);
        if (staged)
            for (int i = 0; i < 2; i++) {
                dist_staged copy = staged[i];
                dist_staged_release(&copy);
            }
        return porta_error(PORTA_ERR_OUT_OF_MEMORY,
                           "porta_dist_%s: out of memory for a work item", call->name);
    }
    work->call = *call;
    if (staged)
        memcpy(work->staged, staged, sizeof work->staged);
    atomic_init(&work->refs, 1);
    porta_status *status = dist_submit(work, call->kind == DIST_INIT);
    if (status) {
        work_drop(work);
        return status;
    }
    *out = work;
    return NULL;
}

static void work_drop(porta_dist_work *work) {
    if (atomic_fetch_sub(&work->refs, 1) != 1)
        return;
    for (int i = 0; i < 2; i++)
        dist_staged_release(&work->staged[i]);
    free(work->call.counts);
    free(work->call.ranks);
    porta_status_free(work->status);
    free(work);
}

/* Appends work to the queue from first to last (either queue, under lock). */
static void append(porta_dist_work **first, porta_dist_work **last, porta_dist_work *work) {
    work->next = NULL;
    if (*last)
        (*last)->next = work;
    else
        *first = work;
    *last = work;
}

static void complete(porta_dist_work *work, porta_status *status) {
    pthread_mutex_lock(&lock);
    work->status = status;
    work->done = true;
    bool notify = work->on_done != NULL;
    if (notify) { /* the notifier calls it and drops the thread's reference */
        append(&notify_head, &notify_tail, work);
        pthread_cond_signal(&notify_queued);
    }
    pthread_cond_broadcast(&completed);
    pthread_mutex_unlock(&lock);
    if (!notify)
        work_drop(work); /* the thread's reference */
}

static void *notifier_main(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!notify_head && !notifier_stop)
            pthread_cond_wait(&notify_queued, &lock);
        porta_dist_work *work = notify_head;
        if (work) {
            notify_head = work->next;
            if (!notify_head)
                notify_tail = NULL;
        }
        pthread_mutex_unlock(&lock);
        if (!work)
            return NULL; /* stopped, every callback run */
        work->on_done(work->on_done_user, work->status);
        work_drop(work);
    }
}

static void *thread_main(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (!head)
            pthread_cond_wait(&queued, &lock);
        porta_dist_work *work = head;
        head = work->next;
        if (!head)
            tail = NULL;
        pthread_mutex_unlock(&lock);

        porta_status *status = dist_execute(&work->call);
        bool leaving = work->call.kind == DIST_FINALIZE && !porta_dist_is_initialized();
        if (leaving) {
            /* Stop taking work before the finalize returns: later calls
             * see a stopped thread and say the world is not joined. */
            pthread_mutex_lock(&lock);
            running = false;
            joinable = true;
            porta_dist_work *rest = head;
            head = tail = NULL;
            pthread_mutex_unlock(&lock);
            complete(work, status);
            while (rest) {
                porta_dist_work *next = rest->next;
                complete(rest, porta_error(PORTA_ERR_UNAVAILABLE,
                                           "porta_dist: %s issued while the world was being "
                                           "left (porta_dist_finalize)",
                                           rest->call.name));
                rest = next;
            }
            pthread_mutex_lock(&lock);
            notifier_stop = true;
            pthread_cond_signal(&notify_queued);
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        complete(work, status);
    }
}

void dist_thread_join(void) {
    pthread_mutex_lock(&lock);
    bool join = joinable && !running;
    joinable = false;
    pthread_mutex_unlock(&lock);
    if (join) {
        pthread_join(thread, NULL);
        pthread_join(notifier, NULL);
    }
}

static porta_status *dist_submit(porta_dist_work *work, bool start_thread) {
    pthread_mutex_lock(&lock);
    if (!running) {
        if (!start_thread) {
            pthread_mutex_unlock(&lock);
            return porta_error(PORTA_ERR_UNAVAILABLE,
                               "porta_dist: %s before porta_dist_init (no MPI world joined)",
                               work->call.name);
        }
        if (joinable) { /* the last threads ended: reap them before starting anew */
            pthread_join(thread, NULL);
            pthread_join(notifier, NULL);
            joinable = false;
        }
        notifier_stop = false;
        int error = pthread_create(&notifier, NULL, notifier_main, NULL);
        if (!error) {
            error = pthread_create(&thread, NULL, thread_main, NULL);
            if (error) {
                notifier_stop = true;
                pthread_cond_signal(&notify_queued);
                pthread_mutex_unlock(&lock);
                pthread_join(notifier, NULL);
                pthread_mutex_lock(&lock);
            }
        }
        if (error) {
            pthread_mutex_unlock(&lock);
            return porta_error(PORTA_ERR_UNAVAILABLE,
                               "porta_dist: cannot start the communication thread (error %d)",
                               error);
        }
        running = true;
    }
    atomic_fetch_add(&work->refs, 1); /* the thread's */
    append(&head, &tail, work);
    pthread_cond_signal(&queued);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static bool on_thread(void) {
    pthread_mutex_lock(&lock);
    bool value = running && pthread_equal(pthread_self(), thread);
    pthread_mutex_unlock(&lock);
    return value;
}

porta_status *porta_dist_work_wait(porta_dist_work *work) {
    if (!work)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_dist_work_wait: work is NULL");
    pthread_mutex_lock(&lock);
    bool done = work->done;
    pthread_mutex_unlock(&lock);
    if (!done && on_thread())
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_dist_work_wait: %s cannot be waited for on the "
                           "communication thread, which has yet to run it",
                           work->call.name);
    pthread_mutex_lock(&lock);
    while (!work->done)
        pthread_cond_wait(&completed, &lock);
    const porta_status *failure = work->status;
    bool write_back = !failure && !work->written_back;
    work->written_back = true;
    pthread_mutex_unlock(&lock);
    if (failure)
        return porta_error(porta_status_code(failure), "%s", porta_status_message(failure));
    if (write_back)
        for (int i = 0; i < 2; i++)
            PORTA_TRY(dist_staged_write_back(&work->staged[i]));
    return NULL;
}

bool porta_dist_work_is_completed(porta_dist_work *work) {
    if (!work)
        return false;
    pthread_mutex_lock(&lock);
    bool value = work->done;
    pthread_mutex_unlock(&lock);
    return value;
}

bool porta_dist_work_needs_wait(const porta_dist_work *work) {
    if (!work)
        return false;
    for (int i = 0; i < 2; i++)
        if (work->staged[i].write_back && !work->staged[i].in_place)
            return true;
    return false;
}

void porta_dist_work_on_done(porta_dist_work *work, porta_dist_work_callback fn, void *user) {
    if (!work || !fn)
        return;
    pthread_mutex_lock(&lock);
    bool done = work->done;
    if (!done) {
        work->on_done = fn;
        work->on_done_user = user;
    }
    pthread_mutex_unlock(&lock);
    if (done)
        fn(user, work->status);
}

void porta_dist_work_free(porta_dist_work *work) {
    if (work)
        work_drop(work);
}

porta_status *dist_run_lifecycle(const dist_call *call) {
    porta_dist_work *work = NULL;
    return dist_finish(dist_start(call, NULL, &work), &work);
}
