/* Dynamic batching: one worker thread per served model takes requests from
 * a bounded queue. The first request waiting opens a window of delay_seconds;
 * requests arriving in it whose inputs differ only in the batch dim are
 * stacked along it (up to max_batch rows), run once, and each handed its
 * rows of the outputs. A request is never held past its window: the batch runs when
 * the window closes or the batch is full, whichever comes first; requests
 * that queued while the worker was busy have waited already, and their
 * batch starts as soon as the worker is free. Replies are written by a
 * second thread while the worker runs the next batch. A model without a
 * batch dim runs each request alone, in arrival order. */
#ifndef PORTA_SERVE_BATCHER_H
#define PORTA_SERVE_BATCHER_H

#include "serve/metrics.h"
#include "serve/served_model.h"

typedef struct serve_batcher_options {
    int64_t max_batch;    /* rows per run; 1 turns batching off */
    double delay_seconds; /* the window */
    int queue_limit;      /* requests waiting; one more is refused */
} serve_batcher_options;

typedef struct serve_batcher serve_batcher;

/* Starts the worker of `model` (borrowed; outlives the batcher; its
 * batch_max becomes the rows a run takes, max_batch or less). metrics
 * (may be NULL) gets its batches and queue depth as series `model_index`. */
porta_status *serve_batcher_start(serve_model *model, serve_batcher_options options,
                                  serve_metrics *metrics, int model_index, serve_batcher **out);

/* Called once per queued request, on the batcher's reply thread, when its
 * run is done: outputs[] (one per model output; NULL on failure) are views of this
 * request's rows in the run's outputs, valid during the call only, so the
 * reply is written straight from them; batch_requests is how many requests
 * the run stacked; status (owned by the callee) is NULL or the failure. */
typedef void (*serve_batch_done)(void *context, const serve_tensor *outputs,
                                 int batch_requests, porta_status *status);

/* Queues one checked request (inputs in the model's order, borrowed until
 * `done` is called; `rows` along the batch dim) and returns at once.
 * PORTA_ERR_UNAVAILABLE (done not called) when the queue is full or the
 * batcher is stopping. */
porta_status *serve_batcher_submit(serve_batcher *batcher, const serve_tensor *inputs,
                                   int64_t rows, serve_batch_done done, void *context);

/* Refuses new requests, finishes those queued, joins the worker, frees. */
void serve_batcher_stop(serve_batcher *batcher);

#endif
