/* _ctc_loss and its backward, by PyTorch's recursions over time in log
 * space, vectorized over the batch and the extended target (blanks
 * between and around the labels, S = 2 * max_target_length + 1 states).
 * The per-state masks (which states a sample has, which may skip a blank)
 * are built on the host from the targets and lengths and uploaded once,
 * with the input lengths; each time step is a few elementwise ops in its
 * own scope (its per-sample masks compare the input lengths with t),
 * written into log_alpha (and log_beta) [N, T, S]. */
#include <math.h>
#include <stdlib.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* What both directions use, on the host and on the device. */
typedef struct {
    int64_t t, n, c, states; /* max input length, batch, classes, S */
    int64_t *input_lengths, *target_lengths;
    porta_tensor *lengths;    /* int64 [N, 1]: input_lengths on the device */
    porta_tensor *labels;     /* int64 [N, S]: the extended targets */
    porta_tensor *skip;       /* bool [N, S]: s may come from s - 2 */
    porta_tensor *skip_back;  /* bool [N, S]: s + 2 may come from s */
    porta_tensor *lp;         /* [T, N, S]: log_probs at each state's label */
} ctc;

static void ctc_free(ctc *g) {
    free(g->input_lengths);
    free(g->target_lengths);
}

/* The lengths argument (int[] or a tensor) as n host values. */
static porta_status *read_lengths(const char *what, const porta_value *v, int64_t n,
                                  int64_t **out) {
    int64_t count = v->kind == PORTA_VALUE_INTS ? v->ints.count
                                                : porta_tensor_numel(v->tensor);
    if (count != n)
        return porta_error(PORTA_ERR_SHAPE, "%s must be of size batch_size, got %lld and %lld",
                           what, (long long)count, (long long)n);
    *out = malloc((size_t)(n ? n : 1) * sizeof **out);
    if (!*out) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "ctc_loss: no memory");
    if (v->kind == PORTA_VALUE_INTS) {
        for (int64_t i = 0; i < n; i++) (*out)[i] = v->ints.items[i];
        return NULL;
    }
    porta_tensor *as_long = NULL;
    PORTA_TRY(porta_cast(v->tensor, PORTA_I64, &as_long));
    porta_status *status = porta_tensor_to_host(as_long, *out, (size_t)n * sizeof **out);
    porta_tensor_release(as_long);
    return status;
}

static porta_status *setup(aten_scope *s, const porta_value *a, int lengths_at, int64_t blank,
                           ctc *g) {
    const porta_tensor *lp = a[0].tensor, *targets = a[1].tensor;
    char b[CORE_SHAPE_STR_CAP];
    *g = (ctc){0};
    if (lp->rank != 3)
        return porta_error(PORTA_ERR_SHAPE, "ctc_loss: expected log_probs of 3 dimensions, got %s",
                           core_format_shape(b, sizeof b, lp->rank, lp->sizes));
    if (!porta_dtype_is_float(lp->dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"ctc_loss_cpu\" not implemented for '%s'",
                           aten_dtype_label(lp->dtype));
    g->t = lp->sizes[0];
    g->n = lp->sizes[1];
    g->c = lp->sizes[2];
    if (blank < 0 || blank >= g->c)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "blank must be in label range");
    PORTA_TRY(read_lengths("input_lengths", &a[lengths_at], g->n, &g->input_lengths));
    PORTA_TRY(read_lengths("target_lengths", &a[lengths_at + 1], g->n, &g->target_lengths));
    int64_t max_target = 0, total = 0;
    for (int64_t i = 0; i < g->n; i++) {
        if (g->input_lengths[i] < 0 || g->input_lengths[i] > g->t)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "Expected input_lengths to have value at most %lld, but got value "
                               "%lld", (long long)g->t, (long long)g->input_lengths[i]);
        if (g->target_lengths[i] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "target_lengths must be non-negative");
        if (g->target_lengths[i] > max_target) max_target = g->target_lengths[i];
        total += g->target_lengths[i];
    }
    g->states = 2 * max_target + 1;
    /* the targets on the host: [N, S_max] padded, or all concatenated */
    bool padded = targets->rank == 2;
    int64_t target_count = porta_tensor_numel(targets);
    if (padded && (targets->sizes[0] != g->n || targets->sizes[1] < max_target))
        return porta_error(PORTA_ERR_SHAPE, "Expected tensor to have size at least %lld at "
                           "dimension 1, but got size %lld", (long long)max_target,
                           (long long)targets->sizes[1]);
    if (!padded && target_count < total)
        return porta_error(PORTA_ERR_SHAPE, "Expected targets to hold %lld labels, got %lld",
                           (long long)total, (long long)target_count);
    int64_t *host = malloc((size_t)(target_count ? target_count : 1) * sizeof *host);
    double *labels = malloc((size_t)(g->n * g->states) * sizeof *labels);
    double *skip = malloc((size_t)(g->n * g->states) * sizeof *skip);
    double *skip_back = malloc((size_t)(g->n * g->states) * sizeof *skip_back);
    double *lengths = malloc((size_t)(g->n ? g->n : 1) * sizeof *lengths);
    porta_status *status = NULL;
    if (!host || !labels || !skip || !skip_back || !lengths)
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "ctc_loss: no memory");
    if (!status && target_count) {
        porta_tensor *dense = scope_contiguous(s, scope_cast(s, targets, PORTA_I64));
        if (dense) status = porta_tensor_to_host(dense, host, (size_t)target_count * sizeof *host);
    }
    for (int64_t i = 0, start = 0; !status && i < g->n; i++) {
        const int64_t *row = padded ? host + i * targets->sizes[1] : host + start;
        for (int64_t k = 0; k < g->states; k++) {
            int64_t label = k % 2 == 0 || k / 2 >= g->target_lengths[i] ? blank : row[k / 2];
            labels[i * g->states + k] = (double)label;
            skip[i * g->states + k] = k % 2 == 1 && k >= 3 && k / 2 < g->target_lengths[i] &&
                                      row[k / 2] != row[k / 2 - 1];
        }
        for (int64_t k = 0; k < g->states; k++)
            skip_back[i * g->states + k] = k + 2 < g->states && skip[i * g->states + k + 2];
        start += g->target_lengths[i];
        lengths[i] = (double)g->input_lengths[i];
    }
    if (!status) {
        int64_t sizes[2] = {g->n, g->states}, gathered[3] = {g->t, g->n, g->states};
        porta_device *device = lp->buffer->device;
        g->labels = scope_cast(s, scope_from_host(s, device, 2, sizes, labels), PORTA_I64);
        g->skip = scope_cast(s, scope_from_host(s, device, 2, sizes, skip), PORTA_BOOL);
        g->skip_back = scope_cast(s, scope_from_host(s, device, 2, sizes, skip_back), PORTA_BOOL);
        int64_t column[2] = {g->n, 1};
        g->lengths = scope_cast(s, scope_from_host(s, device, 2, column, lengths), PORTA_I64);
        int64_t row[3] = {1, g->n, g->states};
        porta_tensor *index = scope_expand(s, scope_reshape(s, g->labels, 3, row), 3, gathered);
        g->lp = scope_gather(s, scope_as_dtype(s, lp, aten_compute_dtype(lp->dtype)), 2, index);
    }
    free(host);
    free(labels);
    free(skip);
    free(skip_back);
    free(lengths);
    return status;
}

/* log(exp(a) + exp(b) + exp(c)), -inf when all are (c may be NULL). */
static porta_tensor *log_add(aten_scope *s, porta_tensor *a, porta_tensor *b, porta_tensor *c) {
    porta_tensor *m = scope_binary(s, PORTA_MAXIMUM, a, b);
    if (c) m = scope_binary(s, PORTA_MAXIMUM, m, c);
    porta_tensor *safe = scope_where_number(s, scope_unary(s, PORTA_ISINF, m), 0, m);
    porta_tensor *sum = scope_binary(s, PORTA_ADD, scope_unary(s, PORTA_EXP, scope_binary(s, PORTA_SUB, a, safe)),
                                     scope_unary(s, PORTA_EXP, scope_binary(s, PORTA_SUB, b, safe)));
    if (c)
        sum = scope_binary(s, PORTA_ADD, sum,
                           scope_unary(s, PORTA_EXP, scope_binary(s, PORTA_SUB, c, safe)));
    return scope_binary(s, PORTA_ADD, scope_unary(s, PORTA_LOG, sum), safe);
}

/* x [N, S] shifted by `by` states (toward higher s when by > 0), -inf
 * coming in. */
static porta_tensor *shift(aten_scope *s, const porta_tensor *x, int64_t by) {
    int64_t pads[4] = {0, 0, by > 0 ? by : 0, by < 0 ? -by : 0};
    int64_t states = x->sizes[1];
    porta_tensor *padded = scope_pad(s, x, pads, -INFINITY);
    return by > 0 ? scope_slice(s, padded, 1, 0, states, 1)
                  : scope_slice(s, padded, 1, -by, states - by, 1);
}

/* Bool [N, 1]: the samples whose input length is above `than`. */
static porta_tensor *longer(aten_scope *s, const ctc *g, int64_t than) {
    return scope_binary_number(s, PORTA_GT, g->lengths, (double)than);
}

/* Bool [N]: the samples with neither input nor target, on device. */
static porta_tensor *nothing_to_align(aten_scope *s, porta_device *device, const ctc *g) {
    double *values = malloc((size_t)(g->n ? g->n : 1) * sizeof *values);
    if (!values) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "ctc_loss: no memory"));
    for (int64_t i = 0; i < g->n; i++)
        values[i] = g->input_lengths[i] == 0 && g->target_lengths[i] == 0;
    porta_tensor *out = scope_cast(s, scope_from_host(s, device, 1, &g->n, values), PORTA_BOOL);
    free(values);
    return out;
}

typedef enum { VALID, STARTS, ENDS } state_kind;

/* Each sample's states of a kind (bool [N, S]): those it has (s < 2 L +
 * 1), or those a path may start or end in. */
static porta_tensor *state_mask(aten_scope *s, const ctc *g, porta_device *device,
                                state_kind kind) {
    double *values = malloc((size_t)(g->n * g->states) * sizeof *values);
    if (!values) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "ctc_loss: no memory"));
    for (int64_t i = 0; i < g->n; i++)
        for (int64_t k = 0; k < g->states; k++) {
            int64_t last = 2 * g->target_lengths[i];
            values[i * g->states + k] = kind == VALID  ? k <= last
                                        : kind == ENDS ? k == last || (last > 0 && k == last - 1)
                                                       : k == 0 || (last > 0 && k == 1);
        }
    int64_t sizes[2] = {g->n, g->states};
    porta_tensor *out = scope_cast(s, scope_from_host(s, device, 2, sizes, values), PORTA_BOOL);
    free(values);
    return out;
}

/* log_alpha [N, T, S] by the forward recursion. */
static porta_tensor *forward_variables(aten_scope *s, const ctc *g, porta_device *device,
                                       porta_dtype dtype) {
    int64_t sizes[3] = {g->n, g->t, g->states};
    porta_tensor *alpha = scope_full(s, device, dtype, 3, sizes, -INFINITY);
    porta_tensor *starts = state_mask(s, g, device, STARTS);
    porta_tensor *valid = state_mask(s, g, device, VALID);
    for (int64_t t = 0; t < g->t && !s->status; t++) {
        aten_scope step;
        scope_begin(&step);
        int64_t plane[2] = {g->n, g->states};
        porta_tensor *lp = scope_reshape(&step, scope_slice(&step, g->lp, 0, t, t + 1, 1), 2, plane);
        porta_tensor *value;
        if (t == 0) {
            value = scope_where_number(&step, scope_unary(&step, PORTA_LOGICAL_NOT, starts),
                                       -INFINITY, lp);
        } else {
            porta_tensor *prev = scope_reshape(&step, scope_slice(&step, alpha, 1, t - 1, t, 1), 2,
                                               plane);
            porta_tensor *two = scope_where_number(&step, scope_unary(&step, PORTA_LOGICAL_NOT, g->skip),
                                                   -INFINITY, shift(&step, prev, 2));
            value = scope_binary(&step, PORTA_ADD,
                                 log_add(&step, prev, shift(&step, prev, 1), two), lp);
        }
        porta_tensor *live = scope_binary(&step, PORTA_LOGICAL_AND, valid, longer(&step, g, t));
        value = scope_where_number(&step, scope_unary(&step, PORTA_LOGICAL_NOT, live), -INFINITY,
                                   value);
        porta_tensor *into = scope_slice(&step, alpha, 1, t, t + 1, 1);
        int64_t slab[3] = {g->n, 1, g->states};
        if (value && into) scope_copy(&step, scope_reshape(&step, value, 3, slab), into);
        porta_status *status = scope_end(&step);
        if (status) scope_fail(s, status);
    }
    return alpha;
}

/* -log p(target | input) per sample from log_alpha: the log-sum of the
 * alphas of the end states at the sample's last time step ([N]). */
static porta_tensor *negative_log_likelihood(aten_scope *s, const ctc *g, porta_device *device,
                                             const porta_tensor *alpha) {
    double *at = malloc((size_t)(g->n ? g->n : 1) * sizeof *at);
    if (!at) return scope_fail(s, porta_error(PORTA_ERR_OUT_OF_MEMORY, "ctc_loss: no memory"));
    for (int64_t i = 0; i < g->n; i++) at[i] = (double)(g->input_lengths[i] ? g->input_lengths[i] - 1 : 0);
    int64_t index_sizes[3] = {g->n, 1, 1}, row[3] = {g->n, 1, g->states}, plane[2] = {g->n, g->states};
    porta_tensor *last = scope_expand(
        s, scope_cast(s, scope_from_host(s, device, 3, index_sizes, at), PORTA_I64), 3, row);
    free(at);
    porta_tensor *final = scope_reshape(s, scope_gather(s, alpha, 1, last), 2, plane);
    porta_tensor *ends = state_mask(s, g, device, ENDS);
    porta_tensor *kept = scope_where_number(s, scope_unary(s, PORTA_LOGICAL_NOT, ends), -INFINITY, final);
    int64_t axis = 1;
    porta_value sum_states[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = kept},
                                 {.kind = PORTA_VALUE_INTS, .ints = {&axis, 1}},
                                 {.kind = PORTA_VALUE_BOOL, .b = false}};
    porta_tensor *nll = scope_unary(s, PORTA_NEG, scope_call(s, "logsumexp", sum_states, 3));
    /* without input, an empty target has probability 1 */
    return scope_where_number(s, nothing_to_align(s, device, g), 0, nll);
}

/* _ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
 * zero_infinity) -> (neg_log_likelihood, log_alpha); the lengths are int[]
 * or (the .Tensor overload) tensors. */
static porta_status *ctc_loss(const porta_value *a, aten_results *results) {
    const porta_tensor *lp = a[0].tensor;
    aten_scope s;
    scope_begin_on(&s, lp->buffer->device);
    ctc g;
    porta_status *status = setup(&s, a, 2, a[4].i, &g);
    if (status) {
        scope_end(&s);
        ctc_free(&g);
        return status;
    }
    porta_dtype compute = aten_compute_dtype(lp->dtype);
    porta_tensor *alpha = forward_variables(&s, &g, lp->buffer->device, compute);
    porta_tensor *nll = negative_log_likelihood(&s, &g, lp->buffer->device, alpha);
    scope_push(&s, results, scope_cast(&s, nll, lp->dtype));
    scope_push(&s, results, scope_cast(&s, alpha, lp->dtype));
    ctc_free(&g);
    return scope_end(&s);
}

/* log_beta [N, T, S] by the backward recursion. */
static porta_tensor *backward_variables(aten_scope *s, const ctc *g, porta_device *device,
                                        porta_dtype dtype) {
    int64_t sizes[3] = {g->n, g->t, g->states}, plane[2] = {g->n, g->states};
    int64_t slab[3] = {g->n, 1, g->states};
    porta_tensor *beta = scope_full(s, device, dtype, 3, sizes, -INFINITY);
    porta_tensor *not_ends = scope_unary(s, PORTA_LOGICAL_NOT, state_mask(s, g, device, ENDS));
    porta_tensor *invalid = scope_unary(s, PORTA_LOGICAL_NOT, state_mask(s, g, device, VALID));
    porta_tensor *no_skip = scope_unary(s, PORTA_LOGICAL_NOT, g->skip_back);
    for (int64_t t = g->t - 1; t >= 0 && !s->status; t--) {
        aten_scope step;
        scope_begin(&step);
        porta_tensor *lp = scope_reshape(&step, scope_slice(&step, g->lp, 0, t, t + 1, 1), 2, plane);
        porta_tensor *value = scope_where_number(&step, not_ends, -INFINITY, lp);
        if (t + 1 < g->t) {
            porta_tensor *next = scope_reshape(&step, scope_slice(&step, beta, 1, t + 1, t + 2, 1),
                                               2, plane);
            porta_tensor *two = scope_where_number(&step, no_skip, -INFINITY, shift(&step, next, -2));
            porta_tensor *recur = scope_binary(
                &step, PORTA_ADD, log_add(&step, next, shift(&step, next, -1), two), lp);
            /* the samples going on past t recur; the one ending at t starts */
            value = scope_where(&step, longer(&step, g, t + 1), recur, value);
        }
        /* a sample is live at t when it starts there or goes on past it */
        value = scope_where_number(&step, scope_unary(&step, PORTA_LOGICAL_NOT, longer(&step, g, t)),
                                   -INFINITY, value);
        value = scope_where_number(&step, invalid, -INFINITY, value);
        porta_tensor *into = scope_slice(&step, beta, 1, t, t + 1, 1);
        if (value && into) scope_copy(&step, scope_reshape(&step, value, 3, slab), into);
        porta_status *status = scope_end(&step);
        if (status) scope_fail(s, status);
    }
    return beta;
}

/* _ctc_loss_backward(grad, log_probs, targets, input_lengths,
 * target_lengths, neg_log_likelihood, log_alpha, blank, zero_infinity):
 * (exp(lp) - exp(lcab + nll - lp)) * grad, lcab the log-sum of
 * alpha + beta over the states of each class; 0 past a sample's input and
 * (zero_infinity) for an infinite loss. */
static porta_status *ctc_loss_backward(const porta_value *a, aten_results *results) {
    const porta_tensor *gy = a[0].tensor, *lp = a[1].tensor, *nll = a[5].tensor;
    const porta_tensor *alpha = a[6].tensor;
    porta_device *device = lp->buffer->device;
    aten_scope s;
    scope_begin_on(&s, device);
    ctc g;
    porta_status *status = setup(&s, a + 1, 2, a[7].i, &g);
    if (status) {
        scope_end(&s);
        ctc_free(&g);
        return status;
    }
    porta_dtype compute = aten_compute_dtype(lp->dtype);
    porta_tensor *beta = backward_variables(&s, &g, device, compute);
    porta_tensor *ab = scope_binary(&s, PORTA_ADD, scope_as_dtype(&s, alpha, compute), beta);
    int64_t classes[3] = {g.n, g.t, g.c}, states[3] = {g.n, g.t, g.states};
    int64_t row[3] = {g.n, 1, g.states}, per_batch[3] = {g.n, 1, 1};
    porta_tensor *index = scope_expand(&s, scope_reshape(&s, g.labels, 3, row), 3, states);
    porta_tensor *m = scope_scatter(&s, scope_full(&s, device, compute, 3, classes, -INFINITY), 2,
                                    index, ab, PORTA_SCATTER_AMAX);
    porta_tensor *m_safe = scope_where_number(&s, scope_unary(&s, PORTA_ISINF, m), 0, m);
    porta_tensor *terms = scope_unary(
        &s, PORTA_EXP, scope_binary(&s, PORTA_SUB, ab, scope_gather(&s, m_safe, 2, index)));
    porta_tensor *sums = scope_scatter(&s, scope_full(&s, device, compute, 3, classes, 0), 2, index,
                                       terms, PORTA_SCATTER_ADD);
    porta_tensor *lcab = scope_binary(&s, PORTA_ADD, scope_unary(&s, PORTA_LOG, sums), m_safe);
    int to_batch_first[3] = {1, 0, 2};
    porta_tensor *logp = scope_permute(&s, scope_as_dtype(&s, lp, compute), to_batch_first);
    porta_tensor *loss = scope_reshape(&s, scope_as_dtype(&s, nll, compute), 3, per_batch);
    porta_tensor *grad = scope_binary(
        &s, PORTA_SUB, scope_unary(&s, PORTA_EXP, logp),
        scope_unary(&s, PORTA_EXP, scope_binary(&s, PORTA_SUB,
                                                scope_binary(&s, PORTA_ADD, lcab, loss), logp)));
    grad = scope_binary(&s, PORTA_MUL, grad,
                        scope_reshape(&s, scope_as_dtype(&s, gy, compute), 3, per_batch));
    /* 0 past each sample's input */
    int64_t time_row[3] = {1, g.t, 1};
    porta_tensor *times = scope_reshape(&s, scope_arange(&s, device, g.t), 3, time_row);
    porta_tensor *past = scope_binary(&s, PORTA_GE, scope_cast(&s, times, PORTA_I64),
                                      scope_reshape(&s, g.lengths, 3, per_batch));
    if (a[8].b)
        past = scope_binary(&s, PORTA_LOGICAL_OR, past, scope_unary(&s, PORTA_ISINF, loss));
    grad = scope_where_number(&s, past, 0, grad);
    porta_tensor *out = scope_contiguous(&s, scope_permute(&s, grad, to_batch_first));
    scope_push(&s, results, scope_cast(&s, out, lp->dtype));
    ctc_free(&g);
    return scope_end(&s);
}

const aten_op aten_nn_loss_ctc_ops[] = {
    {"_ctc_loss", "TTIIib", ctc_loss},
    {"_ctc_loss.Tensor", "TTTTib", ctc_loss},
    {"_ctc_loss_backward", "TTTIITTib", ctc_loss_backward},
    {"_ctc_loss_backward.Tensor", "TTTTTTTib", ctc_loss_backward},
    {NULL, NULL, NULL},
};
