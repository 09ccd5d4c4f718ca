/* Generation (porta_generate.h): sampling on fixed logits (greedy, top-k,
 * top-p, temperature, the same tokens from the same seed, bad options
 * named), and the decode loop on a tiny KV-cache model whose next token is
 * always the fed token + 1 (mod 5): prompts fed one token per step, stop
 * ids, max tokens, the cache's length, and sequences decoded together. */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "porta_generate.h"
#include "porta_io.h"
#include "test.h"
#include "tiny_lm.h"

static int64_t sample(const float *logits, int64_t count, porta_generate_options o,
                      uint64_t draw) {
    int64_t token = -1;
    porta_status *status = porta_generate_sample(logits, count, &o, draw, &token);
    CHECK_MSG(!status, "%s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    return token;
}

TEST(generate_sample_greedy_is_argmax) {
    const float logits[5] = {0.5f, 2, -1, 2, 1.5f};
    porta_generate_options o = porta_generate_options_default();
    CHECK(sample(logits, 5, o, 0) == 1); /* the lower id of the tie */
    o.temperature = 1;
    o.top_k = 1;
    CHECK(sample(logits, 5, o, 7) == 1);
}

TEST(generate_sample_top_k_and_top_p_cut_the_tail) {
    /* Probabilities 0.5, 0.3, 0.15, 0.05 at temperature 1. */
    const float logits[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    porta_generate_options o = porta_generate_options_default();
    o.temperature = 1;
    o.top_k = 2;
    int seen[4] = {0};
    for (uint64_t d = 0; d < 400; d++) seen[sample(logits, 4, o, d)]++;
    CHECK_MSG(seen[0] > 0 && seen[1] > 0 && !seen[2] && !seen[3], "top_k 2: %d %d %d %d",
              seen[0], seen[1], seen[2], seen[3]);
    o.top_k = 0;
    o.top_p = 0.5;
    for (uint64_t d = 0; d < 100; d++) CHECK(sample(logits, 4, o, d) == 0);
    o.top_p = 0.85;
    memset(seen, 0, sizeof seen);
    for (uint64_t d = 0; d < 400; d++) seen[sample(logits, 4, o, d)]++;
    CHECK_MSG(seen[2] > 0 && !seen[3], "top_p 0.85: %d %d %d %d", seen[0], seen[1], seen[2],
              seen[3]);
}

TEST(generate_sample_follows_the_distribution_and_temperature) {
    const float logits[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
    porta_generate_options o = porta_generate_options_default();
    o.temperature = 1;
    int seen[3] = {0};
    for (uint64_t d = 0; d < 4000; d++) seen[sample(logits, 3, o, d)]++;
    CHECK_MSG(fabs(seen[0] / 4000.0 - 0.5) < 0.03 && fabs(seen[2] / 4000.0 - 0.2) < 0.03,
              "frequencies %d %d %d", seen[0], seen[1], seen[2]);
    o.temperature = 0.05; /* sharp: almost always the most likely */
    int first = 0;
    for (uint64_t d = 0; d < 1000; d++) first += sample(logits, 3, o, d) == 0;
    CHECK_MSG(first > 990, "temperature 0.05: token 0 %d times of 1000", first);
}

TEST(generate_sample_seed_gives_the_same_tokens) {
    float logits[50];
    for (int i = 0; i < 50; i++) logits[i] = (float)(i % 7) * 0.1f;
    porta_generate_options o = porta_generate_options_default();
    o.temperature = 1;
    o.seed = 1234;
    int64_t a[32], b[32], c[32];
    for (uint64_t d = 0; d < 32; d++) a[d] = sample(logits, 50, o, d);
    for (uint64_t d = 0; d < 32; d++) b[d] = sample(logits, 50, o, d);
    o.seed = 1235;
    for (uint64_t d = 0; d < 32; d++) c[d] = sample(logits, 50, o, d);
    CHECK(!memcmp(a, b, sizeof a));
    CHECK(memcmp(a, c, sizeof a));
}

TEST(generate_sample_names_bad_options) {
    const float logits[2] = {0, 1};
    int64_t token;
    porta_generate_options o = porta_generate_options_default();
    o.temperature = -1;
    CHECK_ERR(porta_generate_sample(logits, 2, &o, 0, &token), PORTA_ERR_INVALID_ARGUMENT,
              "temperature: expected a finite number >= 0, given -1");
    o.temperature = 1;
    o.top_p = 0;
    CHECK_ERR(porta_generate_sample(logits, 2, &o, 0, &token), PORTA_ERR_INVALID_ARGUMENT,
              "top_p: expected in (0, 1], given 0");
    o.top_p = 1;
    o.top_k = -2;
    CHECK_ERR(porta_generate_sample(logits, 2, &o, 0, &token), PORTA_ERR_INVALID_ARGUMENT,
              "top_k: expected >= 0, given -2");
}

typedef struct tiny {
    char dir[256], path[300];
    porta_model *model;
    porta_generator *generator;
} tiny;

static bool tiny_open(tiny *t, int slots) {
    memset(t, 0, sizeof *t);
    if (!tiny_lm_save(t->dir, sizeof t->dir, t->path, sizeof t->path)) return false;
    porta_status *status = porta_model_load(t->path, &t->model);
    if (!status) status = porta_generator_create(t->model, test_cpu(), slots, &t->generator);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    return true;
}

static void tiny_close(tiny *t) {
    porta_generator_free(t->generator);
    porta_model_free(t->model);
    test_remove_tree(t->dir);
}

static int generate(tiny *t, const int64_t *prompt, int length, porta_generate_options o,
                    int64_t *out) {
    int64_t *tokens = NULL;
    int count = 0;
    porta_status *status =
        porta_generate(t->generator, prompt, length, &o, NULL, NULL, &tokens, &count);
    CHECK_MSG(!status, "%s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    if (tokens) memcpy(out, tokens, (size_t)count * sizeof *out);
    free(tokens);
    return count;
}

TEST(generate_loop_feeds_the_prompt_then_its_tokens) {
    tiny t;
    if (!tiny_open(&t, 1)) return;
    porta_generate_options o = porta_generate_options_default();
    o.max_tokens = 3;
    int64_t out[8];
    CHECK(generate(&t, (int64_t[]){4, 1}, 2, o, out) == 3);
    CHECK(out[0] == 2 && out[1] == 3 && out[2] == 4);
    const int64_t stop = 4;
    o.max_tokens = 5;
    o.stop_ids = &stop;
    o.stop_count = 1;
    CHECK(generate(&t, (int64_t[]){2}, 1, o, out) == 2 && out[0] == 3 && out[1] == 4);
    /* A cache of 6 positions: a 4-token prompt leaves room for 3 tokens. */
    o.stop_count = 0;
    o.max_tokens = 10;
    CHECK(generate(&t, (int64_t[]){0, 0, 0, 0}, 4, o, out) == 3);
    /* Room is kept for what the cache allows, not for max_tokens. */
    o.max_tokens = INT_MAX;
    CHECK(generate(&t, (int64_t[]){0, 0, 0, 0}, 4, o, out) == 3);
    int64_t *tokens = NULL;
    int count;
    CHECK_ERR(porta_generate(t.generator, (int64_t[]){1, 2, 3, 4, 0, 1}, 6, &o, NULL, NULL,
                             &tokens, &count),
              PORTA_ERR_INVALID_ARGUMENT, "input_ids: expected 1 to 5 token ids");
    CHECK_ERR(porta_generate(t.generator, (int64_t[]){7}, 1, &o, NULL, NULL, &tokens, &count),
              PORTA_ERR_INVALID_ARGUMENT, "input_ids[0]: expected a token id from 0 to 4, given 7");
    tiny_close(&t);
}

typedef struct request {
    tiny *t;
    int64_t first;
    int count;
    int64_t out[8];
} request;

static void *run_request(void *arg) {
    request *r = arg;
    porta_generate_options o = porta_generate_options_default();
    o.max_tokens = 4;
    r->count = generate(r->t, &r->first, 1, o, r->out);
    return NULL;
}

TEST(generate_loop_decodes_sequences_together) {
    tiny t;
    if (!tiny_open(&t, 4)) return;
    request requests[6];
    pthread_t threads[6];
    for (int i = 0; i < 6; i++) {
        requests[i] = (request){.t = &t, .first = i % 5};
        CHECK(!pthread_create(&threads[i], NULL, run_request, &requests[i]));
    }
    for (int i = 0; i < 6; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 6; i++) {
        CHECK(requests[i].count == 4);
        for (int k = 0; k < 4; k++) CHECK(requests[i].out[k] == (requests[i].first + 1 + k) % 5);
    }
    porta_generate_stats stats;
    porta_generator_stats(t.generator, &stats);
    CHECK(stats.tokens == 24 && stats.sequences == 6 && stats.vocab == 5);
    CHECK_MSG(stats.max_active >= 2 && stats.max_active <= 4, "max_active %d", stats.max_active);
    tiny_close(&t);
}
