/*
 * porta_generate.h - generating tokens with a causal language model whose
 * KV cache is an explicit input and output (docs/serve.md, "Generation").
 *
 * The conventions of porta.h apply. The model is one decode step, as
 * torch_porta.export_causal_lm writes it:
 *   inputs  ids [B, 1] int64, positions [B] int64,
 *           keys [L, B, H, S, D], values [L, B, H, S, D] (float)
 *   outputs logits [B, 1, V] float32, keys, values (the caches, updated)
 * B is a symbol (the batch), S the most tokens a sequence may hold. Each
 * row of the batch is a slot holding one sequence at its own position, so
 * sequences of different lengths run together and a new one takes a free
 * slot at the next step (continuous batching). A prompt is fed one token
 * per step, in the same steps as the other slots' decoding.
 *
 * Sampling is done on the host from the step's logits: greedy when the
 * temperature is 0, else softmax(logits / temperature) cut to the top_k
 * most likely tokens, then to the fewest whose probabilities sum to top_p,
 * and a token drawn with uniform number n (the n-th token generated) of the
 * Philox stream of `seed` (src/core/philox.h): the same logits give the
 * same tokens with the same seed, in any batch.
 */
#ifndef PORTA_GENERATE_H
#define PORTA_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "porta.h"
#include "porta_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct porta_generate_options {
    int max_tokens;      /* tokens to generate, >= 1 */
    double temperature;  /* 0: greedy (the most likely token, the lowest id on a tie) */
    int top_k;           /* 0: no limit */
    double top_p;        /* in (0, 1]; 1: no limit */
    uint64_t seed;
    const int64_t *stop_ids; /* generation ends after one of these (it is returned) */
    int stop_count;
} porta_generate_options;

/* Defaults: 16 tokens, greedy, top_k 0, top_p 1, seed 0, no stop ids. */
PORTA_API porta_generate_options porta_generate_options_default(void);

/* Chooses the next token from `count` logits with draw number `draw` of
 * the seed's stream (what porta_generate does at each step). */
PORTA_API porta_status *porta_generate_sample(const float *logits, int64_t count,
                                              const porta_generate_options *options,
                                              uint64_t draw, int64_t *token);

typedef struct porta_generator porta_generator;

/* Checks that `model` has the inputs and outputs above and starts the
 * decoding thread with `slots` rows (sequences decoded together). The
 * model must not be run by anyone else while the generator lives. */
PORTA_API porta_status *porta_generator_create(porta_model *model, porta_device *device,
                                               int slots, porta_generator **out);
/* Waits for the sequences being decoded, then stops. */
PORTA_API void porta_generator_free(porta_generator *generator);

/* Called from the decoding thread with each token as it is generated. */
typedef void (*porta_generate_token_fn)(void *context, int64_t token);

/* Generates up to options->max_tokens tokens after `prompt` (1 to S - 1
 * ids); blocks until done. Thread safe: calls from several threads are
 * decoded together. *tokens (free() it) and *count receive the tokens;
 * generation also ends when the sequence fills the cache (S tokens).
 * on_token may be NULL. */
PORTA_API porta_status *porta_generate(porta_generator *generator, const int64_t *prompt,
                                       int prompt_length, const porta_generate_options *options,
                                       porta_generate_token_fn on_token, void *context,
                                       int64_t **tokens, int *count);

/* The checks porta_generate makes before it queues a request (the
 * prompt's length and ids, the options), without generating. */
PORTA_API porta_status *porta_generate_check(const porta_generator *generator,
                                             const int64_t *prompt, int prompt_length,
                                             const porta_generate_options *options);

typedef struct porta_generate_stats {
    uint64_t steps;           /* model runs */
    uint64_t tokens;          /* tokens generated */
    uint64_t sequences;       /* sequences finished */
    int active;               /* sequences in the slots now */
    int max_active;           /* the most sequences one step has run */
    int64_t vocab, max_length;
} porta_generate_stats;
PORTA_API void porta_generator_stats(porta_generator *generator, porta_generate_stats *out);

#ifdef __cplusplus
}
#endif

#endif
