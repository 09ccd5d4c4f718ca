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
    serve_tensor *outputs;
    porta_status *status;
    int batch_requests;
    bool done;
    /* Signalled when this job is done: each waiting request has its own,
     * so a finished batch wakes its requests only, not every one queued. */
    pthread_cond_t finished;
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

/* Stacks the jobs' inputs along dim 0, runs once, splits the outputs. */
static porta_status *run_stacked(serve_model *m, job **batch, int n, int64_t rows) {
    serve_tensor *inputs = calloc((size_t)m->input_count + 1, sizeof *inputs);
    serve_tensor *outputs = calloc((size_t)m->output_count + 1, sizeof *outputs);
    porta_status *status = inputs && outputs ? NULL
                                             : porta_error(PORTA_ERR_OUT_OF_MEMORY, "batch: out of memory");
    for (int i = 0; !status && i < m->input_count; i++) {
        inputs[i] = batch[0]->inputs[i];
        inputs[i].name = NULL;
        inputs[i].sizes[0] = rows;
        inputs[i].bytes = 0;
        for (int k = 0; k < n; k++) inputs[i].bytes += batch[k]->inputs[i].bytes;
        if (!(inputs[i].data = malloc(inputs[i].bytes ? inputs[i].bytes : 1))) {
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "batch: out of memory");
            break;
        }
        size_t at = 0;
        for (int k = 0; k < n; k++) {
            memcpy((char *)inputs[i].data + at, batch[k]->inputs[i].data, batch[k]->inputs[i].bytes);
            at += batch[k]->inputs[i].bytes;
        }
    }
    if (!status) status = serve_model_run(m, inputs, outputs);
    for (int o = 0; !status && o < m->output_count; o++)
        if (!outputs[o].rank || outputs[o].sizes[0] != rows)
            status = porta_error(PORTA_ERR_INTERNAL,
                                 "batch of %lld rows: output '%s' has %lld rows", (long long)rows,
                                 outputs[o].name, outputs[o].rank ? (long long)outputs[o].sizes[0] : 0LL);
    int64_t first_row = 0;
    for (int k = 0; !status && k < n; first_row += batch[k]->rows, k++) {
        for (int o = 0; !status && o < m->output_count; o++) {
            serve_tensor *whole = &outputs[o], *part = &batch[k]->outputs[o];
            size_t row_bytes = rows ? whole->bytes / (size_t)rows : 0;
            *part = *whole;
            part->sizes[0] = batch[k]->rows;
            part->bytes = row_bytes * (size_t)batch[k]->rows;
            part->name = strdup(whole->name);
            part->data = malloc(part->bytes ? part->bytes : 1);
            if (!part->name || !part->data) {
                status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "batch: out of memory");
                break;
            }
            memcpy(part->data, (char *)whole->data + (size_t)first_row * row_bytes, part->bytes);
        }
    }
    /* The callers' outputs start zeroed, so those never filled clear too. */
    for (int k = 0; status && k < n; k++) serve_tensors_clear(batch[k]->outputs, m->output_count);
    serve_tensors_clear(inputs, m->input_count);
    serve_tensors_clear(outputs, m->output_count);
    free(inputs);
    free(outputs);
    return status;
}

static void run_batch(serve_batcher *b, job **batch, int n) {
    int64_t rows = 0;
    for (int k = 0; k < n; k++) rows += batch[k]->rows;
    porta_status *status = NULL;
    if (n == 1) status = serve_model_run(b->model, batch[0]->inputs, batch[0]->outputs);
    else status = run_stacked(b->model, batch, n, rows);
    if (b->metrics) serve_metrics_batch(b->metrics, b->model_index, n, rows);
    for (int k = 0; k < n; k++) {
        batch[k]->batch_requests = n;
        batch[k]->status = status && k ? porta_error(porta_status_code(status), "%s",
                                                     porta_status_message(status))
                                       : status;
    }
}

static void *work(void *arg) {
    serve_batcher *b = arg;
    int cap = b->options.max_batch < 1024 ? (int)b->options.max_batch : 1024;
    job **batch = calloc((size_t)cap + 1, sizeof *batch);
    pthread_mutex_lock(&b->lock);
    for (;;) {
        while (!b->head && !b->stopping) pthread_cond_wait(&b->work, &b->lock);
        if (!b->head) break;
        struct timespec deadline = add_seconds(b->head->arrived, b->options.delay_seconds);
        while (b->model->batchable && !b->stopping &&
               stackable_rows(b) < b->options.max_batch &&
               pthread_cond_timedwait(&b->work, &b->lock, &deadline) != ETIMEDOUT) {
        }
        int n = batch ? take_batch(b, batch, cap) : 0;
        if (!n) { /* no memory for the list: fail the head alone */
            job *j = b->head;
            b->head = j->next;
            if (!b->head) b->tail = NULL;
            b->depth--;
            j->status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "batch: out of memory");
            j->done = true;
            pthread_cond_signal(&j->finished);
            continue;
        }
        if (b->metrics) serve_metrics_queue_depth(b->metrics, b->model_index, b->depth);
        pthread_mutex_unlock(&b->lock);
        run_batch(b, batch, n);
        pthread_mutex_lock(&b->lock);
        for (int k = 0; k < n; k++) {
            batch[k]->done = true;
            pthread_cond_signal(&batch[k]->finished);
        }
    }
    pthread_mutex_unlock(&b->lock);
    free(batch);
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
    int err = pthread_create(&b->worker, NULL, work, b);
    if (err) {
        pthread_cond_destroy(&b->work);
        pthread_mutex_destroy(&b->lock);
        free(b);
        return porta_error(PORTA_ERR_IO, "batcher: cannot start a thread: %s", strerror(err));
    }
    *out = b;
    return NULL;
}

porta_status *serve_batcher_infer(serve_batcher *b, const serve_tensor *inputs, int64_t rows,
                                  serve_tensor *outputs, int *batch_requests) {
    job j = {.inputs = inputs, .rows = rows, .outputs = outputs};
    clock_gettime(CLOCK_MONOTONIC, &j.arrived);
    pthread_cond_init(&j.finished, NULL);
    pthread_mutex_lock(&b->lock);
    if (b->stopping || b->depth >= b->options.queue_limit) {
        int depth = b->depth;
        bool stopping = b->stopping;
        pthread_mutex_unlock(&b->lock);
        pthread_cond_destroy(&j.finished);
        return stopping ? porta_error(PORTA_ERR_UNAVAILABLE, "model '%s': the server is stopping",
                                      b->model->name)
                        : porta_error(PORTA_ERR_UNAVAILABLE,
                                      "model '%s': %d requests are queued, the limit; try again",
                                      b->model->name, depth);
    }
    if (b->tail) b->tail->next = &j;
    else b->head = &j;
    b->tail = &j;
    b->depth++;
    if (b->metrics) serve_metrics_queue_depth(b->metrics, b->model_index, b->depth);
    pthread_cond_signal(&b->work);
    while (!j.done) pthread_cond_wait(&j.finished, &b->lock);
    pthread_mutex_unlock(&b->lock);
    pthread_cond_destroy(&j.finished);
    if (batch_requests) *batch_requests = j.batch_requests;
    return j.status;
}

void serve_batcher_stop(serve_batcher *b) {
    if (!b) return;
    pthread_mutex_lock(&b->lock);
    b->stopping = true;
    pthread_cond_broadcast(&b->work);
    pthread_mutex_unlock(&b->lock);
    pthread_join(b->worker, NULL);
    pthread_cond_destroy(&b->work);
    pthread_mutex_destroy(&b->lock);
    free(b);
}
