/* A persistent pool of worker threads. Callers publish one job at a time;
 * workers (and the caller) claim chunks of it through a ticket that carries
 * the job's generation, so a worker that woke late can never run a chunk of
 * a newer job with an older job's function. */
#include "backends/cpu/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/env.h"

/* How many times an idle worker polls for the next job before sleeping, so
 * short bursts of ops avoid a futex wake-up each. Polls yield the CPU rather
 * than spin on PAUSE: under KVM, PAUSE loops make the host deschedule the
 * virtual CPU for about a millisecond. */
#define SPIN_ITERATIONS 200

/* The fewest threads cpu_thread_limit allows, so that tests and users can
 * oversubscribe a small machine on purpose. */
#define MIN_THREAD_LIMIT 64

typedef struct job {
    cpu_range_fn fn;
    void *ctx;
    int64_t n;
    int chunks;
    bool team; /* chunk t runs on thread t exactly (cpu_parallel_tasks) */
} job;

static struct {
    pthread_once_t once;
    pthread_mutex_t caller; /* held by the caller running a job */
    pthread_mutex_t lock;   /* guards job, generation, stop, condition waits */
    pthread_cond_t wake, done;
    job current;
    _Atomic uint64_t generation;
    _Atomic uint64_t ticket; /* generation << 32 | next chunk */
    atomic_int pending;      /* chunks not yet finished */
    bool stop;
    int threads; /* including the caller */
    uint64_t start_generation; /* the generation new workers start after */
    pthread_t *workers;
} pool = {.once = PTHREAD_ONCE_INIT,
          .caller = PTHREAD_MUTEX_INITIALIZER,
          .lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .done = PTHREAD_COND_INITIALIZER};

static _Thread_local bool inside_pool_task;

static void run_chunk(const job *j, int chunk) {
    if (j->team) {
        j->fn(j->ctx, chunk, j->chunks, chunk);
    } else {
        int64_t begin = j->n * chunk / j->chunks, end = j->n * (chunk + 1) / j->chunks;
        if (begin < end) j->fn(j->ctx, begin, end, chunk);
    }
    if (atomic_fetch_sub(&pool.pending, 1) == 1) {
        pthread_mutex_lock(&pool.lock);
        pthread_cond_broadcast(&pool.done);
        pthread_mutex_unlock(&pool.lock);
    }
}

/* Claims and runs chunks of generation `gen` until none are left. */
static void claim_chunks(const job *j, uint64_t gen) {
    for (;;) {
        uint64_t t = atomic_load(&pool.ticket);
        if ((t >> 32) != (gen & 0xffffffffu) || (int)(uint32_t)t >= j->chunks) return;
        if (atomic_compare_exchange_weak(&pool.ticket, &t, t + 1)) run_chunk(j, (int)(uint32_t)t);
    }
}

static void *worker_main(void *arg) {
    int self = (int)(intptr_t)arg;
    inside_pool_task = true;
    /* Not the current generation: a job may have been published before this
     * thread got to run, and a team job must not be missed. */
    uint64_t seen = pool.start_generation;
    for (;;) {
        for (int spin = 0; spin < SPIN_ITERATIONS && atomic_load(&pool.generation) == seen; spin++)
            sched_yield();
        pthread_mutex_lock(&pool.lock);
        while (!pool.stop && atomic_load(&pool.generation) == seen)
            pthread_cond_wait(&pool.wake, &pool.lock);
        if (pool.stop) {
            pthread_mutex_unlock(&pool.lock);
            return NULL;
        }
        seen = atomic_load(&pool.generation);
        job j = pool.current;
        pthread_mutex_unlock(&pool.lock);
        if (j.team) {
            if (self < j.chunks) run_chunk(&j, self);
        } else {
            claim_chunks(&j, seen);
        }
    }
}

static int cores_usable(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int cpu_thread_limit(void) {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    long limit = 4 * (online > 0 ? online : 1);
    return limit > MIN_THREAD_LIMIT ? (int)limit : MIN_THREAD_LIMIT;
}

static int default_thread_count(void) {
    return (int)core_env_int("PORTA_NUM_THREADS", 1, cpu_thread_limit(), cores_usable());
}

static void start_workers(int threads) {
    pool.threads = threads;
    pool.stop = false;
    pool.start_generation = atomic_load(&pool.generation);
    pool.workers = threads > 1 ? calloc((size_t)threads - 1, sizeof *pool.workers) : NULL;
    if (!pool.workers) {
        pool.threads = 1; /* no memory for workers: run everything inline */
        return;
    }
    for (int i = 1; i < threads; i++) {
        if (pthread_create(&pool.workers[i - 1], NULL, worker_main, (void *)(intptr_t)i)) {
            pool.threads = i; /* keep the workers that did start */
            break;
        }
    }
}

static void stop_workers(void) {
    pthread_mutex_lock(&pool.lock);
    pool.stop = true;
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);
    for (int i = 1; i < pool.threads; i++) pthread_join(pool.workers[i - 1], NULL);
    free(pool.workers);
    pool.workers = NULL;
}

static void init_pool(void) { start_workers(default_thread_count()); }

int cpu_thread_count(void) {
    pthread_once(&pool.once, init_pool);
    return pool.threads;
}

void cpu_set_thread_count(int threads) {
    pthread_once(&pool.once, init_pool);
    if (threads <= 0) threads = default_thread_count();
    if (threads > cpu_thread_limit()) threads = cpu_thread_limit();
    pthread_mutex_lock(&pool.caller);
    if (threads != pool.threads) {
        stop_workers();
        start_workers(threads);
    }
    pthread_mutex_unlock(&pool.caller);
}

/* Publishes a job, takes part in it, and waits for every chunk. */
static void run_job(job j) {
    atomic_store(&pool.pending, j.chunks);
    pthread_mutex_lock(&pool.lock);
    pool.current = j;
    uint64_t gen = atomic_load(&pool.generation) + 1;
    atomic_store(&pool.ticket, (gen & 0xffffffffu) << 32);
    atomic_store(&pool.generation, gen);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    inside_pool_task = true;
    if (j.team)
        run_chunk(&j, 0);
    else
        claim_chunks(&j, gen);
    inside_pool_task = false;

    for (int spin = 0; spin < SPIN_ITERATIONS && atomic_load(&pool.pending) > 0; spin++)
        sched_yield();
    pthread_mutex_lock(&pool.lock);
    while (atomic_load(&pool.pending) > 0) pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

void cpu_parallel_for(int64_t n, int64_t grain, cpu_range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (n <= grain) { /* one chunk: inline, before touching the pool at all */
        fn(ctx, 0, n, 0);
        return;
    }
    int threads = cpu_thread_count();
    int64_t max_chunks = (n + grain - 1) / grain;
    int chunks = max_chunks < threads ? (int)max_chunks : threads;
    if (chunks <= 1 || inside_pool_task || pthread_mutex_trylock(&pool.caller) != 0) {
        fn(ctx, 0, n, 0);
        return;
    }
    run_job((job){fn, ctx, n, chunks, false});
    pthread_mutex_unlock(&pool.caller);
}

int cpu_parallel_tasks(int tasks, cpu_range_fn fn, void *ctx) {
    int threads = cpu_thread_count();
    int team = tasks < threads ? tasks : threads;
    if (team <= 1 || inside_pool_task || pthread_mutex_trylock(&pool.caller) != 0) {
        fn(ctx, 0, 1, 0);
        return 1;
    }
    run_job((job){fn, ctx, team, team, true});
    pthread_mutex_unlock(&pool.caller);
    return team;
}
