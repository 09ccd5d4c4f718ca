/* The generation loop (porta_generate.h): one thread runs decode steps of
 * the model over every slot; requests wait for a free slot, join at the
 * next step, and are answered when they finish. The KV caches stay on the
 * device from step to step: each step's cache outputs are the next step's
 * inputs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "porta_generate.h"

typedef struct sequence {
    const int64_t *prompt;
    int prompt_length;
    const porta_generate_options *options;
    porta_generate_token_fn on_token;
    void *context;
    int fed;           /* tokens fed to the model: the next one's position */
    int64_t *tokens;   /* generated */
    int count;
    porta_status *status;
    bool done;
    struct sequence *next; /* waiting for a slot */
} sequence;

struct porta_generator {
    porta_model *model;
    porta_device *device;
    int slots;
    int64_t layers, heads, length, head_dim;
    porta_dtype cache_dtype;
    porta_tensor *keys, *values;
    sequence **running; /* per slot, NULL when free */
    sequence *waiting, *waiting_tail;
    pthread_mutex_t lock;
    pthread_cond_t work, finished;
    pthread_t worker;
    bool stop;
    porta_generate_stats stats;
};

static porta_status *check_signature(porta_generator *g) {
    porta_model *m = g->model;
    const char *expected = "inputs ids [B, 1] int64, positions [B] int64, keys and values "
                           "[L, B, H, S, D] and outputs logits, keys, values";
    if (porta_model_input_count(m) != 4 || porta_model_output_count(m) != 3)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "generation: expected a model with %s (torch_porta.export_causal_lm), "
                           "given %d inputs and %d outputs",
                           expected, porta_model_input_count(m), porta_model_output_count(m));
    porta_model_input_info in[4];
    for (int i = 0; i < 4; i++) PORTA_TRY(porta_model_input_info_get(m, i, &in[i]));
    bool ok = in[0].rank == 2 && in[0].dtype == PORTA_I64 && in[0].sizes[1] == 1 &&
              in[1].rank == 1 && in[1].dtype == PORTA_I64 && in[2].rank == 5 &&
              in[3].rank == 5 && in[2].dtype == in[3].dtype;
    for (int d = 0; ok && d < 5; d++)
        ok = (d == 1 || in[2].sizes[d] > 0) && in[2].sizes[d] == in[3].sizes[d];
    if (!ok)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "generation: expected a model with %s, given inputs '%s' (rank %d), "
                           "'%s' (rank %d), '%s' (rank %d), '%s' (rank %d)",
                           expected, in[0].name, in[0].rank, in[1].name, in[1].rank, in[2].name,
                           in[2].rank, in[3].name, in[3].rank);
    g->layers = in[2].sizes[0];
    g->heads = in[2].sizes[2];
    g->length = in[2].sizes[3];
    g->head_dim = in[2].sizes[4];
    g->cache_dtype = in[2].dtype;
    g->stats.max_length = g->length;
    return NULL;
}

static porta_status *zero_caches(porta_generator *g) {
    int64_t sizes[5] = {g->layers, g->slots, g->heads, g->length, g->head_dim};
    PORTA_TRY(porta_tensor_full(g->device, g->cache_dtype, 5, sizes, 0.0, &g->keys));
    return porta_tensor_full(g->device, g->cache_dtype, 5, sizes, 0.0, &g->values);
}

static bool is_stop(const porta_generate_options *o, int64_t token) {
    for (int i = 0; i < o->stop_count; i++)
        if (o->stop_ids[i] == token) return true;
    return false;
}

/* Hands waiting sequences free slots; called with the lock held. */
static void admit(porta_generator *g) {
    for (int s = 0; s < g->slots && g->waiting; s++) {
        if (g->running[s]) continue;
        sequence *q = g->waiting;
        g->waiting = q->next;
        if (!g->waiting) g->waiting_tail = NULL;
        g->running[s] = q;
    }
}

static void finish(porta_generator *g, int slot, porta_status *status) {
    sequence *q = g->running[slot];
    q->status = status;
    q->done = true;
    g->running[slot] = NULL;
    g->stats.sequences++;
    pthread_cond_broadcast(&g->finished);
}

/* One step over every slot (a free slot runs token 0 at position 0, which
 * the next sequence there overwrites). Runs without the lock: only this
 * thread touches the running sequences' progress. */
static porta_status *step(porta_generator *g, sequence **running, int64_t *ids,
                          int64_t *positions, float *logits) {
    for (int s = 0; s < g->slots; s++) {
        sequence *q = running[s];
        ids[s] = !q ? 0 : q->fed < q->prompt_length ? q->prompt[q->fed] : q->tokens[q->count - 1];
        positions[s] = q ? q->fed : 0;
    }
    int64_t id_sizes[2] = {g->slots, 1};
    porta_tensor *inputs[4] = {NULL, NULL, g->keys, g->values}, *outputs[3] = {NULL};
    porta_status *status =
        porta_tensor_from_host(g->device, PORTA_I64, 2, id_sizes, ids, &inputs[0]);
    if (!status)
        status = porta_tensor_from_host(g->device, PORTA_I64, 1, id_sizes, positions, &inputs[1]);
    if (!status) status = porta_model_run(g->model, g->device, inputs, 4, outputs, 3);
    porta_tensor_release(inputs[0]);
    porta_tensor_release(inputs[1]);
    if (status) return status;
    porta_tensor_release(g->keys);
    porta_tensor_release(g->values);
    g->keys = outputs[1];
    g->values = outputs[2];
    const int64_t *sizes = porta_tensor_sizes(outputs[0]);
    if (porta_tensor_dtype(outputs[0]) != PORTA_F32 || porta_tensor_rank(outputs[0]) != 3 ||
        sizes[0] != g->slots || sizes[1] != 1 || sizes[2] != g->stats.vocab)
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "generation: expected logits float32 [%d, 1, %lld] from the model",
                             g->slots, (long long)g->stats.vocab);
    if (!status)
        status = porta_tensor_to_host(outputs[0], logits,
                                      (size_t)g->slots * (size_t)g->stats.vocab * sizeof *logits);
    porta_tensor_release(outputs[0]);
    return status;
}

/* After a step: each sequence past its prompt takes a token. Returns
 * whether the slot's sequence finished (its status in *status). */
static bool advance(porta_generator *g, sequence *q, const float *logits, porta_status **status) {
    q->fed++;
    if (q->fed < q->prompt_length) return false;
    int64_t token;
    *status = porta_generate_sample(logits, g->stats.vocab, q->options, (uint64_t)q->count, &token);
    if (*status) return true;
    q->tokens[q->count++] = token;
    if (q->on_token) q->on_token(q->context, token);
    return q->count >= q->options->max_tokens || is_stop(q->options, token) ||
           q->fed >= g->length;
}

static void *decode_loop(void *arg) {
    porta_generator *g = arg;
    size_t n = (size_t)g->slots;
    int64_t *ids = malloc(n * sizeof *ids), *positions = malloc(n * sizeof *positions);
    float *logits = malloc(n * (size_t)g->stats.vocab * sizeof *logits);
    sequence **running = malloc(n * sizeof *running);
    pthread_mutex_lock(&g->lock);
    for (;;) {
        admit(g);
        int active = 0;
        for (int s = 0; s < g->slots; s++) active += g->running[s] != NULL;
        g->stats.active = active;
        if (!active) {
            if (g->stop) break;
            pthread_cond_wait(&g->work, &g->lock);
            continue;
        }
        if (active > g->stats.max_active) g->stats.max_active = active;
        memcpy(running, g->running, n * sizeof *running);
        pthread_mutex_unlock(&g->lock);
        porta_status *status =
            ids && positions && logits && running
                ? step(g, running, ids, positions, logits)
                : porta_error(PORTA_ERR_OUT_OF_MEMORY, "generation: out of memory");
        pthread_mutex_lock(&g->lock);
        g->stats.steps++;
        for (int s = 0; s < g->slots; s++) {
            if (!running[s]) continue;
            porta_status *own = NULL;
            int before = running[s]->count;
            bool done = status ? (own = porta_error(porta_status_code(status), "%s",
                                                             porta_status_message(status)),
                                       true)
                               : advance(g, running[s], logits + (size_t)s * g->stats.vocab, &own);
            g->stats.tokens += (uint64_t)(running[s]->count - before);
            if (done) finish(g, s, own);
        }
        porta_status_free(status);
    }
    pthread_mutex_unlock(&g->lock);
    free(ids);
    free(positions);
    free(logits);
    free(running);
    return NULL;
}

/* The vocabulary, from one step on zeros (which also loads the weights). */
static porta_status *learn_vocab(porta_generator *g) {
    int64_t id_sizes[2] = {g->slots, 1};
    porta_tensor *inputs[4] = {NULL, NULL, g->keys, g->values}, *outputs[3] = {NULL};
    porta_status *status = porta_tensor_full(g->device, PORTA_I64, 2, id_sizes, 0, &inputs[0]);
    if (!status) status = porta_tensor_full(g->device, PORTA_I64, 1, id_sizes, 0, &inputs[1]);
    if (!status) status = porta_model_run(g->model, g->device, inputs, 4, outputs, 3);
    if (!status && porta_tensor_rank(outputs[0]) == 3)
        g->stats.vocab = porta_tensor_sizes(outputs[0])[2];
    else if (!status)
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                             "generation: expected logits [B, 1, V] as the first output, given "
                             "rank %d",
                             porta_tensor_rank(outputs[0]));
    porta_tensor_release(inputs[0]);
    porta_tensor_release(inputs[1]);
    for (int i = 0; i < 3; i++) porta_tensor_release(outputs[i]);
    return status;
}

porta_status *porta_generator_create(porta_model *model, porta_device *device, int slots,
                                     porta_generator **out) {
    if (out) *out = NULL;
    if (!model || !device || !out || slots < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_generator_create: expected a model, a device, slots >= 1 and "
                           "out, given %d slots",
                           slots);
    porta_generator *g = calloc(1, sizeof *g);
    if (!g) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "generation: out of memory");
    g->model = model;
    g->device = device;
    g->slots = slots;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->work, NULL);
    pthread_cond_init(&g->finished, NULL);
    g->running = calloc((size_t)slots, sizeof *g->running);
    porta_status *status = g->running ? check_signature(g)
                                      : porta_error(PORTA_ERR_OUT_OF_MEMORY, "generation: out of memory");
    if (!status) status = zero_caches(g);
    if (!status) status = learn_vocab(g);
    if (!status && pthread_create(&g->worker, NULL, decode_loop, g))
        status = porta_error(PORTA_ERR_UNAVAILABLE, "generation: cannot start a thread");
    if (status) {
        porta_tensor_release(g->keys);
        porta_tensor_release(g->values);
        free(g->running);
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->work);
        pthread_cond_destroy(&g->finished);
        free(g);
        return status;
    }
    *out = g;
    return NULL;
}

void porta_generator_free(porta_generator *g) {
    if (!g) return;
    pthread_mutex_lock(&g->lock);
    g->stop = true;
    pthread_cond_broadcast(&g->work);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->worker, NULL);
    porta_tensor_release(g->keys);
    porta_tensor_release(g->values);
    free(g->running);
    pthread_mutex_destroy(&g->lock);
    pthread_cond_destroy(&g->work);
    pthread_cond_destroy(&g->finished);
    free(g);
}

porta_status *porta_generate_check(const porta_generator *g, const int64_t *prompt,
                                   int prompt_length, const porta_generate_options *o) {
    if (!g || !o || (!prompt && prompt_length))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_generate: expected a generator, a prompt and options");
    if (prompt_length < 1 || prompt_length >= g->length)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "input_ids: expected 1 to %lld token ids (the model's cache holds "
                           "%lld), given %d",
                           (long long)g->length - 1, (long long)g->length, prompt_length);
    for (int i = 0; i < prompt_length; i++)
        if (prompt[i] < 0 || prompt[i] >= g->stats.vocab)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "input_ids[%d]: expected a token id from 0 to %lld, given %lld", i,
                               (long long)g->stats.vocab - 1, (long long)prompt[i]);
    if (o->max_tokens < 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "max_tokens: expected >= 1, given %d",
                           o->max_tokens);
    if (o->stop_count < 0 || (o->stop_count && !o->stop_ids))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "stop ids: expected a list, given %d",
                           o->stop_count);
    float probe = 0;
    int64_t token;
    return porta_generate_sample(&probe, 1, o, 0, &token); /* checks the sampling options */
}

porta_status *porta_generate(porta_generator *g, const int64_t *prompt, int prompt_length,
                             const porta_generate_options *o, porta_generate_token_fn on_token,
                             void *context, int64_t **tokens, int *count) {
    if (tokens) *tokens = NULL;
    if (count) *count = 0;
    if (!tokens || !count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta_generate: tokens or count is NULL");
    PORTA_TRY(porta_generate_check(g, prompt, prompt_length, o));
    sequence q = {.prompt = prompt, .prompt_length = prompt_length, .options = o,
                  .on_token = on_token, .context = context};
    /* At most one token per cache position past the prompt, and the last. */
    int64_t room = g->length - prompt_length + 1;
    size_t slots = (size_t)(o->max_tokens < room ? o->max_tokens : room);
    q.tokens = malloc(slots * sizeof *q.tokens);
    if (!q.tokens) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "generation: out of memory");
    pthread_mutex_lock(&g->lock);
    if (g->waiting_tail) g->waiting_tail->next = &q;
    else g->waiting = &q;
    g->waiting_tail = &q;
    pthread_cond_signal(&g->work);
    while (!q.done) pthread_cond_wait(&g->finished, &g->lock);
    pthread_mutex_unlock(&g->lock);
    if (q.status) {
        free(q.tokens);
        return q.status;
    }
    *tokens = q.tokens;
    *count = q.count;
    return NULL;
}

void porta_generator_stats(porta_generator *g, porta_generate_stats *out) {
    pthread_mutex_lock(&g->lock);
    *out = g->stats;
    pthread_mutex_unlock(&g->lock);
}
