/* Choosing the next token from a step's logits (porta_generate.h): greedy,
 * or temperature, top-k and top-p sampling with a Philox draw, on the host
 * in double so every device's logits give the same choice. */
#include <math.h>
#include <stdlib.h>

#include "core/philox.h"
#include "core/status.h"
#include "porta_generate.h"

porta_generate_options porta_generate_options_default(void) {
    porta_generate_options o = {.max_tokens = 16, .top_p = 1.0};
    return o;
}

typedef struct scored {
    double p;
    int64_t id;
} scored;

/* Most likely first; the lower id first on a tie, so the order is total. */
static int by_probability(const void *a, const void *b) {
    const scored *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int64_t argmax(const float *logits, int64_t count) {
    int64_t best = 0;
    for (int64_t i = 1; i < count; i++)
        if (logits[i] > logits[best] || (isnan(logits[i]) && !isnan(logits[best]))) best = i;
    return best;
}

static porta_status *check(const float *logits, int64_t count, const porta_generate_options *o,
                           const int64_t *token) {
    if (!logits || count < 1 || !o || !token)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "porta_generate_sample: expected logits, a count >= 1, options and "
                           "a token, given count %lld",
                           (long long)count);
    if (!(o->temperature >= 0) || !isfinite(o->temperature))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "temperature: expected a finite number >= 0, given %g", o->temperature);
    if (o->top_k < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "top_k: expected >= 0, given %d", o->top_k);
    if (!(o->top_p > 0 && o->top_p <= 1))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "top_p: expected in (0, 1], given %g",
                           o->top_p);
    return NULL;
}

porta_status *porta_generate_sample(const float *logits, int64_t count,
                                    const porta_generate_options *o, uint64_t draw,
                                    int64_t *token) {
    PORTA_TRY(check(logits, count, o, token));
    if (o->temperature == 0 || o->top_k == 1) {
        *token = argmax(logits, count);
        return NULL;
    }
    scored *s = malloc((size_t)count * sizeof *s);
    if (!s) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "sampling: out of memory");
    double top = logits[argmax(logits, count)];
    for (int64_t i = 0; i < count; i++) {
        s[i].id = i;
        s[i].p = exp(((double)logits[i] - top) / o->temperature);
        if (!(s[i].p >= 0)) s[i].p = 0; /* NaN logits are never drawn */
    }
    qsort(s, (size_t)count, sizeof *s, by_probability);
    int64_t kept = o->top_k > 0 && o->top_k < count ? o->top_k : count;
    double kept_total = 0;
    for (int64_t i = 0; i < kept; i++) kept_total += s[i].p;
    /* top-p over the top-k distribution: the fewest tokens reaching it. */
    double mass = 0;
    for (int64_t i = 0; i < kept; i++) {
        mass += s[i].p;
        if (mass >= o->top_p * kept_total) {
            kept = i + 1;
            kept_total = mass;
            break;
        }
    }
    core_philox_words words = core_philox_block(o->seed, draw / 4);
    double target = core_philox_unit(words.x[draw % 4]) * kept_total;
    int64_t chosen = s[kept - 1].id;
    mass = 0;
    for (int64_t i = 0; i < kept; i++) {
        mass += s[i].p;
        if (target < mass) {
            chosen = s[i].id;
            break;
        }
    }
    free(s);
    *token = chosen;
    return NULL;
}
