/* The batching queue and its worker (batcher.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/status.h"
#include "serve/batcher.h"

typedef struct job {
    const serve_tensor *inputs;
    int64_t rows;
    serve_batch_done done;
    void *context;
    struct timespec arrived;
    struct job *next;
} job;

struct serve_batcher {
    serve_model *model;
    serve_batcher_options options;
    serve_metrics *metrics;
    int model_index;
    pthread_mutex_t lock;
    pthread_cond_t work;
    job *head, *tail;
    int depth;
    bool stopping;
    pthread_t worker;
    /* The hand-over from the worker to the replier: the run whose replies
     * are being written (NULL when none), and whether the worker has ended. */
    pthread_cond_t handed;
    struct ran *replying;
    bool worker_ended;
    pthread_t replier;
};

static struct timespec add_seconds(struct timespec t, double seconds) {
    long long ns = (long long)t.tv_nsec + (long long)(seconds * 1e9);
    t.tv_sec += (time_t)(ns / 1000000000LL);
    t.tv_nsec = (long)(ns % 1000000000LL);
    return t;
}

/* Two requests can share a run when every input has the same dims past
 * the batch dim (their dtypes and ranks were checked against the model). */
static bool stackable(const serve_model *m, const job *a, const job *b) {
    for (int i = 0; i < m->input_count; i++)
        for (int d = 1; d < a->inputs[i].rank; d++)
            if (a->inputs[i].sizes[d] != b->inputs[i].sizes[d]) return false;
    return true;
}

/* Rows waiting that could join the head's batch. */
static int64_t stackable_rows(const serve_batcher *b) {
    int64_t rows = 0;
    for (const job *j = b->head; j; j = j->next)
        if (stackable(b->model, b->head, j)) rows += j->rows;
    return rows;
}

/* Unlinks the head and the stackable jobs after it that fit, into batch[]. */
static int take_batch(serve_batcher *b, job **batch, int cap) {
    int n = 0;
    int64_t rows = 0;
    job **link = &b->head, *first = b->head;
    b->tail = NULL;
    while (*link) {
        job *j = *link;
        bool fits = n < cap && (n == 0 || (b->model->batchable && stackable(b->model, first, j) &&
                                           rows + j->rows <= b->options.max_batch));
        if (fits) {
            batch[n++] = j;
            rows += j->rows;
            *link = j->next;
        } else {
            b->tail = j;
            link = &j->next;
        }
    }
    b->depth -= n;
    return n;
}

/* One run from its stacking to its last reply: its jobs, the stacked
 * inputs' headers, the run's outputs (kept until every reply is written)
 * and one request's views of them. The worker fills one while the replier
 * answers the other, so the model runs while the previous run's replies
 * are encoded. */
typedef struct ran {
    job **batch;
    int n;
    int64_t rows;
    porta_status *status;
    serve_tensor *inputs, *outputs, *views;
} ran;

/* Stacks the jobs' inputs along dim 0 into inputs[] (data malloc'd). */
static porta_status *stack_inputs(const serve_model *m, job **batch, int n, int64_t rows,
                                  serve_tensor *inputs) {
    for (int i = 0; i < m->input_count; i++) {
        inputs[i] = batch[0]->inputs[i];
        inputs[i].name = NULL;
        inputs[i].sizes[0] = rows;
        inputs[i].bytes = 0;
        for (int k = 0; k < n; k++) inputs[i].bytes += batch[k]->inputs[i].bytes;
        if (!(inputs[i].data = malloc(inputs[i].bytes ? inputs[i].bytes : 1))) {
            serve_tensors_clear(inputs, i);
            return porta_error(PORTA_ERR_OUT_OF_MEMORY, "batch: out of memory");
        }
        size_t at = 0;
        for (int k = 0; k < n; k++) {
            memcpy((char *)inputs[i].data + at, batch[k]->inputs[i].data, batch[k]->inputs[i].bytes);
            at += batch[k]->inputs[i].bytes;
        }
    }
    return NULL;
}

/* Runs the batch once (stacked when it holds several requests); its
 * outputs stay in `work` for reply_batch. */
static void run_batch(serve_batcher *b, ran *work) {
    serve_model *m = b->model;
    job **batch = work->batch;
    int n = work->n;
    int64_t rows = 0;
    for (int k = 0; k < n; k++) rows += batch[k]->rows;
    work->rows = rows;
    memset(work->outputs, 0, (size_t)m->output_count * sizeof *work->outputs);
    porta_status *status = NULL;
    if (n == 1) {
        status = serve_model_run(m, batch[0]->inputs, work->outputs);
    } else {
        status = stack_inputs(m, batch, n, rows, work->inputs);
        if (!status) {
            status = serve_model_run(m, work->inputs, work->outputs);
            serve_tensors_clear(work->inputs, m->input_count);
        }
    }
    for (int o = 0; !status && o < m->output_count; o++)
        if (!work->outputs[o].rank || work->outputs[o].sizes[0] != rows)
            status = porta_error(PORTA_ERR_INTERNAL,
                                 "batch of %lld rows: output '%s' has %lld rows", (long long)rows,
                                 work->outputs[o].name,
                                 work->outputs[o].rank ? (long long)work->outputs[o].sizes[0] : 0LL);
    if (b->metrics) serve_metrics_batch(b->metrics, b->model_index, n, rows);
    work->status = status;
}

/* Hands each request of a finished run views of its rows of the outputs:
 * no copy per request here, its reply is written from them. */
static void reply_batch(const serve_model *m, ran *work) {
    job **batch = work->batch;
    int n = work->n;
    int64_t rows = work->rows;
    porta_status *status = work->status;
    int64_t first_row = 0;
    for (int k = 0; k < n; k++) {
        /* The callee frees the status it gets: the last request takes the
         * run's own, the others a copy. */
        porta_status *failed = status && k < n - 1 ? porta_error(porta_status_code(status), "%s",
                                                                 porta_status_message(status))
                                                   : status;
        for (int o = 0; !status && o < m->output_count; o++) {
            const serve_tensor *whole = &work->outputs[o];
            size_t row_bytes = rows ? whole->bytes / (size_t)rows : 0;
            work->views[o] = *whole;
            work->views[o].sizes[0] = batch[k]->rows;
            work->views[o].bytes = row_bytes * (size_t)batch[k]->rows;
            work->views[o].data = (char *)whole->data + (size_t)first_row * row_bytes;
        }
        batch[k]->done(batch[k]->context, status ? NULL : work->views, n, failed);
        first_row += batch[k]->rows;
        free(batch[k]);
    }
    serve_tensors_clear(work->outputs, m->output_count);
    work->status = NULL;
}

/* Answers the runs the worker hands over, one at a time, off the worker's
 * thread: reply encoding overlaps the next run. */
static void *reply(void *arg) {
    serve_batcher *b = arg;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (!b->replying && !b->worker_ended) pthread_cond_wait(&b->handed, &b->lock);
        if (!b->replying) break;
        ran *work = b->replying;
        pthread_mutex_unlock(&b->lock);
        reply_batch(b->model, work);
        pthread_mutex_lock(&b->lock);
        b->replying = NULL;
        pthread_cond_broadcast(&b->handed);
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

static bool ran_alloc(ran *r, const serve_model *m, int cap) {
    r->batch = calloc((size_t)cap + 1, sizeof *r->batch);
    r->inputs = calloc((size_t)m->input_count + 1, sizeof *r->inputs);
    r->outputs = calloc((size_t)m->output_count + 1, sizeof *r->outputs);
    r->views = calloc((size_t)m->output_count + 1, sizeof *r->views);
    return r->batch && r->inputs && r->outputs && r->views;
}

static void ran_free(ran *r) {
    free(r->batch);
    free(r->inputs);
    free(r->outputs);
    free(r->views);
}

static void *work(void *arg) {
    serve_batcher *b = arg;
    int cap = b->options.max_batch < 1024 ? (int)b->options.max_batch : 1024;
    ran runs[2] = {{0}};
    bool have_memory = ran_alloc(&runs[0], b->model, cap) && ran_alloc(&runs[1], b->model, cap);
    int next = 0;
    /* Requests that queued while the worker was busy have waited already:
     * their batch starts as soon as the worker is free, without a window. */
    bool waited_for_worker = false;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (!b->head && !b->stopping) pthread_cond_wait(&b->work, &b->lock);
        if (!b->head) break;
        struct timespec deadline = add_seconds(b->head->arrived, b->options.delay_seconds);
        while (!waited_for_worker && b->model->batchable && !b->stopping &&
               stackable_rows(b) < b->options.max_batch &&
               pthread_cond_timedwait(&b->work, &b->lock, &deadline) != ETIMEDOUT) {
        }
        if (!have_memory) { /* no memory for the worker's lists: fail the head alone */
            job *j = b->head;
            b->head = j->next;
            if (!b->head) b->tail = NULL;
            b->depth--;
            pthread_mutex_unlock(&b->lock);
            j->done(j->context, NULL, 1, porta_error(PORTA_ERR_OUT_OF_MEMORY, "batch: out of memory"));
            free(j);
            pthread_mutex_lock(&b->lock);
            continue;
        }
        ran *work = &runs[next];
        next ^= 1;
        work->n = take_batch(b, work->batch, cap);
        if (b->metrics) serve_metrics_queue_depth(b->metrics, b->model_index, b->depth);
        pthread_mutex_unlock(&b->lock);
        run_batch(b, work);
        pthread_mutex_lock(&b->lock);
        while (b->replying) pthread_cond_wait(&b->handed, &b->lock);
        b->replying = work;
        pthread_cond_broadcast(&b->handed);
        waited_for_worker = b->head != NULL;
    }
    while (b->replying) pthread_cond_wait(&b->handed, &b->lock);
    b->worker_ended = true;
    pthread_cond_broadcast(&b->handed);
    pthread_mutex_unlock(&b->lock);
    ran_free(&runs[0]);
    ran_free(&runs[1]);
    return NULL;
}

porta_status *serve_batcher_start(serve_model *model, serve_batcher_options options,
                                  serve_metrics *metrics, int model_index, serve_batcher **out) {
    *out = NULL;
    serve_batcher *b = calloc(1, sizeof *b);
    if (!b) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "batcher: out of memory");
    b->model = model;
    b->options = options;
    if (b->options.max_batch < 1) b->options.max_batch = 1;
    if (model->batchable && model->batch_max < b->options.max_batch)
        b->options.max_batch = model->batch_max;
    /* What metadata reports as max_batch_size: the rows a run takes here. */
    if (model->batchable) model->batch_max = b->options.max_batch;
    b->metrics = metrics;
    b->model_index = model_index;
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&b->work, &attr);
    pthread_condattr_destroy(&attr);
    pthread_cond_init(&b->handed, NULL);
    int err = pthread_create(&b->replier, NULL, reply, b);
    if (!err) {
        err = pthread_create(&b->worker, NULL, work, b);
        if (err) {
            pthread_mutex_lock(&b->lock);
            b->worker_ended = true;
            pthread_cond_broadcast(&b->handed);
            pthread_mutex_unlock(&b->lock);
            pthread_join(b->replier, NULL);
        }
    }
    if (err) {
        pthread_cond_destroy(&b->handed);
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->lock);
        free(b);
        return porta_error(PORTA_ERR_IO, "batcher: cannot start a thread: %s", strerror(err));
    }
    *out = b;
    return NULL;
}

porta_status *serve_batcher_submit(serve_batcher *b, const serve_tensor *inputs, int64_t rows,
                                   serve_batch_done done, void *context) {
    job *j = malloc(sizeof *j);
    if (!j) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "model '%s': out of memory", b->model->name);
    *j = (job){.inputs = inputs, .rows = rows, .done = done, .context = context};
    clock_gettime(CLOCK_MONOTONIC, &j->arrived);
    pthread_mutex_lock(&b->lock);
    if (b->stopping || b->depth >= b->options.queue_limit) {
        int depth = b->depth;
        bool stopping = b->stopping;
        pthread_mutex_unlock(&b->lock);
        free(j);
        return stopping ? porta_error(PORTA_ERR_UNAVAILABLE, "model '%s': the server is stopping",
                                      b->model->name)
                        : porta_error(PORTA_ERR_UNAVAILABLE,
                                      "model '%s': %d requests are queued, the limit; try again",
                                      b->model->name, depth);
    }
    if (b->tail) b->tail->next = j;
    else b->head = j;
    b->tail = j;
    b->depth++;
    if (b->metrics) serve_metrics_queue_depth(b->metrics, b->model_index, b->depth);
    pthread_cond_signal(&b->work);
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

void serve_batcher_stop(serve_batcher *b) {
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    b->stopping = true;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
    pthread_join(b->worker, NULL);
    pthread_join(b->replier, NULL);
    pthread_cond_destroy(&b->handed);
    pthread_cond_destroy(&b->work);
    pthread_mutex_destroy(&b->lock);
    free(b);
}
