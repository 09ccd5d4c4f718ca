/* The random ops drawn from uniform numbers by a transformation: cauchy_,
 * log_normal_, geometric_ (in place) and multinomial. Each reserves its
 * stream positions from the device's generator (random/state.h), as the
 * ops of random.c do, so a seed gives the same numbers on every backend. */
#include <math.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/random/state.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* A new tensor of `sizes` filled with U[low, high) (normal: N(low, high))
 * from the next positions of the device's stream. */
static porta_tensor *draw(aten_scope *s, porta_device *device, porta_dtype dtype, int rank,
                          const int64_t *sizes, bool normal, double a, double b) {
    if (s->status) return NULL;
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_empty(device, dtype, rank, sizes, &t);
    if (!scope_hold(s, status, t)) return NULL; /* t read after it is made */
    status = aten_random_fill(t, normal, a, b);
    return status ? scope_fail(s, status) : t;
}

/* cauchy_(self, median, sigma, generator): median + sigma * tan(pi (u - 1/2)). */
static porta_status *cauchy_(const porta_value *args, aten_results *results) {
    porta_tensor *self = args[0].tensor;
    double median = aten_number(&args[1]), sigma = aten_number(&args[2]);
    PORTA_TRY(aten_check_float("cauchy_cpu", self));
    if (!(sigma > 0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "cauchy_ expects sigma > 0.0, but found sigma=%g", sigma);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *u = draw(&s, self->buffer->device, aten_compute_dtype(self->dtype), self->rank,
                           self->sizes, false, -M_PI / 2, M_PI / 2);
    porta_tensor *x = scope_binary_number(
        &s, PORTA_ADD, scope_binary_number(&s, PORTA_MUL, scope_unary(&s, PORTA_TAN, u), sigma),
        median);
    scope_push_into(&s, results, x, self);
    return scope_end(&s);
}

/* log_normal_(self, mean, std, generator): exp(N(mean, std)). */
static porta_status *log_normal_(const porta_value *args, aten_results *results) {
    porta_tensor *self = args[0].tensor;
    double mean = aten_number(&args[1]), std = aten_number(&args[2]);
    PORTA_TRY(aten_check_float("log_normal_cpu", self));
    if (!(std > 0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "log_normal_ expects std > 0.0, but found std=%g", std);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *z = draw(&s, self->buffer->device, aten_compute_dtype(self->dtype), self->rank,
                           self->sizes, true, mean, std);
    scope_push_into(&s, results, scope_unary(&s, PORTA_EXP, z), self);
    return scope_end(&s);
}

/* geometric_(self, p, generator): the number of trials to the first
 * success, ceil(log(v) / log1p(-p)) for v ~ U(0, 1], any dtype. */
static porta_status *geometric_(const porta_value *args, aten_results *results) {
    porta_tensor *self = args[0].tensor;
    double p = aten_number(&args[1]);
    if (!(p > 0 && p < 1))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "geometric_ expects p to be in (0, 1), but found p=%g", p);
    if (self->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"geometric_cpu\" not implemented for 'Bool'");
    aten_scope s;
    scope_begin(&s);
    /* U[-1, 0): log1p(u) = log(1 + u) is the log of a number in [0, 1) */
    porta_tensor *u = draw(&s, self->buffer->device, PORTA_F64, self->rank, self->sizes, false,
                           -1.0, 0.0);
    porta_tensor *trials = scope_unary(
        &s, PORTA_CEIL, scope_binary_number(&s, PORTA_DIV, scope_unary(&s, PORTA_LOG1P, u),
                                            log1p(-p)));
    scope_push_into(&s, results, trials, self);
    return scope_end(&s);
}

/* ---- multinomial ---- */

static porta_status *check_multinomial(const porta_tensor *x, int64_t n, bool replacement) {
    if (x->rank != 1 && x->rank != 2)
        return porta_error(PORTA_ERR_SHAPE, "prob_dist must be 1 or 2 dim");
    if (!porta_dtype_is_float(x->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "multinomial only supports floating-point dtypes for input, got: %s",
                           aten_dtype_label(x->dtype));
    if (n <= 0) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "cannot sample n_sample <= 0 samples");
    int64_t categories = x->sizes[x->rank - 1];
    if (!replacement && n > categories)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement");
    if (categories > (1 << 24))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "number of categories cannot exceed 2^24");
    return NULL;
}

/* The distributions' checks, read to the host: no negative, infinite or
 * NaN probability, and each row summing to more than 0. */
static void check_distributions(aten_scope *s, const porta_tensor *p, const porta_tensor *sums) {
    porta_tensor *bad = scope_binary(
        s, PORTA_LOGICAL_OR, scope_binary_number(s, PORTA_LT, p, 0),
        scope_unary(s, PORTA_LOGICAL_NOT, scope_unary(s, PORTA_ISFINITE, p)));
    porta_tensor *any_bad = scope_reduce(s, PORTA_REDUCE_ANY, bad, NULL, 0, false);
    if (scope_read_int(s, any_bad)) {
        scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                  "probability tensor contains either `inf`, `nan` or element < 0"));
        return;
    }
    porta_tensor *empty_row = scope_reduce(s, PORTA_REDUCE_ANY,
                                           scope_binary_number(s, PORTA_LE, sums, 0), NULL, 0,
                                           false);
    if (scope_read_int(s, empty_row))
        scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                  "invalid multinomial distribution (sum of probabilities <= 0)"));
}

/* The indices of the n largest keys along the last axis, largest first
 * (topk's second result). */
static porta_tensor *largest_indices(aten_scope *s, const porta_tensor *keys, int64_t n) {
    if (s->status || !keys) return NULL;
    porta_value args[5] = {{.kind = PORTA_VALUE_TENSOR, .tensor = (porta_tensor *)keys},
                           {.kind = PORTA_VALUE_INT, .i = n},
                           {.kind = PORTA_VALUE_INT, .i = -1},
                           {.kind = PORTA_VALUE_BOOL, .b = true},
                           {.kind = PORTA_VALUE_BOOL, .b = true}};
    porta_value *values = NULL;
    int count = 0;
    porta_status *status = porta_aten_call(porta_aten_op_find("topk"), args, 5, &values, &count);
    if (status) return scope_fail(s, status);
    porta_tensor *indices = values[1].tensor;
    values[1].kind = PORTA_VALUE_NONE; /* handed to the scope, not freed below */
    porta_aten_results_free(values, count);
    return scope_hold(s, NULL, indices);
}

/* multinomial(self, num_samples, replacement, generator): without
 * replacement (or for one sample) the categories with the largest
 * p / E, E ~ Exp(1), as PyTorch draws them; with replacement each sample
 * is the category whose cumulative probability interval holds a uniform
 * number. */
static porta_status *multinomial(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int64_t n = args[1].i;
    bool replacement = args[2].b;
    PORTA_TRY(check_multinomial(x, n, replacement));
    int last = x->rank - 1;
    int64_t categories = x->sizes[last];
    porta_device *device = x->buffer->device;
    porta_dtype work = aten_compute_dtype(x->dtype); /* a float dtype here */
    aten_scope s;
    scope_begin_on(&s, device);
    porta_tensor *p = scope_as_dtype(&s, x, work);
    porta_tensor *sums = scope_reduce(&s, PORTA_REDUCE_SUM, p, &last, 1, true);
    check_distributions(&s, p, sums);
    porta_tensor *samples;
    if (!replacement || n == 1) {
        /* -log1p(u) for u ~ U[-1, 0) is Exp(1) */
        porta_tensor *u = draw(&s, device, work, x->rank, x->sizes, false, -1.0, 0.0);
        porta_tensor *e = scope_unary(&s, PORTA_NEG, scope_unary(&s, PORTA_LOG1P, u));
        porta_tensor *keys = scope_binary(&s, PORTA_DIV, p, e);
        samples = largest_indices(&s, keys, n);
    } else {
        int64_t sizes[2] = {x->rank == 2 ? x->sizes[0] : 1, n};
        porta_tensor *normalized = scope_binary(&s, PORTA_DIV, p, sums);
        porta_value scan[3] = {{.kind = PORTA_VALUE_TENSOR, .tensor = normalized},
                               {.kind = PORTA_VALUE_INT, .i = -1},
                               {.kind = PORTA_VALUE_NONE}};
        porta_tensor *cdf = scope_call(&s, "cumsum", scan, 3);
        porta_tensor *u = draw(&s, device, work, x->rank, sizes + (x->rank == 1), false, 0, 1);
        porta_value search[6] = {{.kind = PORTA_VALUE_TENSOR, .tensor = cdf},
                                 {.kind = PORTA_VALUE_TENSOR, .tensor = u},
                                 {.kind = PORTA_VALUE_BOOL, .b = false},
                                 {.kind = PORTA_VALUE_BOOL, .b = true},
                                 {.kind = PORTA_VALUE_NONE},
                                 {.kind = PORTA_VALUE_NONE}};
        porta_tensor *found = scope_call(&s, "searchsorted.Tensor", search, 6);
        samples = scope_binary(&s, PORTA_MINIMUM, found,
                               scope_number(&s, PORTA_I64, (double)(categories - 1)));
    }
    scope_push(&s, results, samples);
    return scope_end(&s);
}

ATEN_OUT_KERNEL(multinomial_out, multinomial, 4)

const aten_op aten_random_distributions_ops[] = {
    {"cauchy_", "Tffx", cauchy_},
    {"log_normal_", "Tffx", log_normal_},
    {"geometric_", "Tfx", geometric_},
    {"multinomial", "Tibx", multinomial},
    {"multinomial.out", "TibxT", multinomial_out},
    {NULL, NULL, NULL},
};
