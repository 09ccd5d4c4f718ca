/* prelu's and rrelu's kernels with their backward ops, and channel_shuffle:
 * compositions of where, multiplications, the leaky_relu ops and views. */
#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "aten/random/state.h"
#include "aten/reduce/common.h"
#include "core/status.h"
#include "ir/infer.h"
#include "runtime/tensor.h"

/* ---- prelu ---- */

/* _prelu_kernel(self, weight): self where self > 0, weight * self
 * elsewhere (weight already broadcastable to self). */
static porta_status *prelu_kernel(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor, *w = args[1].tensor;
    PORTA_TRY(aten_check_float("prelu_cpu", x));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *positive = scope_binary_number(&s, PORTA_GT, x, 0);
    scope_push(&s, results, scope_where(&s, positive, x, scope_binary(&s, PORTA_MUL, w, x)));
    return scope_end(&s);
}

/* _prelu_kernel_backward(grad_output, self, weight) -> (grad_self,
 * grad_weight), both of the broadcast shape (autograd sums grad_weight to
 * weight's): grad or weight * grad, and 0 or self * grad. */
static porta_status *prelu_kernel_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *g = args[0].tensor, *x = args[1].tensor, *w = args[2].tensor;
    PORTA_TRY(aten_check_float("prelu_backward_cpu", x));
    int rank, all_rank;
    int64_t sizes[PORTA_MAX_RANK], all[PORTA_MAX_RANK];
    PORTA_TRY(ir_broadcast_shapes("prelu_backward", x->rank, x->sizes, w->rank, w->sizes, &rank,
                                  sizes));
    PORTA_TRY(ir_broadcast_shapes("prelu_backward", rank, sizes, g->rank, g->sizes, &all_rank, all));
    aten_scope s;
    scope_begin(&s);
    porta_tensor *positive = scope_binary_number(&s, PORTA_GT, x, 0);
    porta_tensor *grad_self = scope_where(&s, positive, g, scope_binary(&s, PORTA_MUL, w, g));
    porta_tensor *grad_weight = scope_where_number(&s, positive, 0, scope_binary(&s, PORTA_MUL, x, g));
    scope_push(&s, results, scope_contiguous(&s, scope_expand(&s, grad_self, all_rank, all)));
    scope_push(&s, results, scope_contiguous(&s, scope_expand(&s, grad_weight, all_rank, all)));
    return scope_end(&s);
}

/* ---- rrelu ---- */

/* The negative slope in training: noise ~ U[lower, upper) where
 * self <= 0, 1 elsewhere (self's shape, contiguous). */
static porta_tensor *training_noise(aten_scope *s, const porta_tensor *x, double lower,
                                    double upper) {
    if (s->status) return NULL;
    porta_tensor *u = NULL;
    porta_status *status = porta_tensor_empty(x->buffer->device, x->dtype, x->rank, x->sizes, &u);
    if (!scope_hold(s, status, u)) return NULL; /* u read after it is made */
    status = aten_random_fill(u, false, lower, upper);
    if (status) return scope_fail(s, status);
    return scope_where_number(s, scope_binary_number(s, PORTA_GT, x, 0), 1, u);
}

static porta_status *check_rrelu(const porta_tensor *x, double lower, double upper) {
    PORTA_TRY(aten_check_float("rrelu_with_noise", x));
    if (upper < lower)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Lower bound should be less than or equal to the upper bound");
    return NULL;
}

/* The result of rrelu_with_noise; with `training`, noise written into
 * `noise_out` (a new tensor when it is NULL, pushed after the result). */
static porta_status *rrelu(const porta_value *args, porta_tensor *noise_out, bool push_noise,
                           aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    double lower = aten_number(&args[2]), upper = aten_number(&args[3]);
    PORTA_TRY(check_rrelu(x, lower, upper));
    aten_scope s;
    scope_begin(&s);
    if (args[4].b) {
        porta_tensor *noise = training_noise(&s, x, lower, upper);
        scope_push(&s, results, scope_binary(&s, PORTA_MUL, x, noise));
        if (noise_out) scope_copy(&s, noise, noise_out);
        if (push_noise) scope_push(&s, results, scope_contiguous(&s, noise));
    } else {
        porta_value call[2] = {aten_tensor_value(x),
                               {.kind = PORTA_VALUE_FLOAT, .f = (lower + upper) / 2}};
        scope_push(&s, results, scope_call(&s, "leaky_relu", call, 2));
        if (push_noise) scope_push(&s, results, scope_contiguous(&s, args[1].tensor));
    }
    return scope_end(&s);
}

/* rrelu_with_noise(self, noise!, lower, upper, training, generator) */
static porta_status *rrelu_with_noise(const porta_value *args, aten_results *results) {
    return rrelu(args, args[1].tensor, false, results);
}

/* rrelu_with_noise_functional(...) -> (result, noise_out) */
static porta_status *rrelu_with_noise_functional(const porta_value *args, aten_results *results) {
    return rrelu(args, NULL, true, results);
}

/* rrelu_with_noise_backward(grad_output, self, noise, lower, upper,
 * training, self_is_result): grad * noise when training with a range,
 * leaky_relu's gradient at the mean slope otherwise. */
static porta_status *rrelu_with_noise_backward(const porta_value *args, aten_results *results) {
    double lower = aten_number(&args[3]), upper = aten_number(&args[4]);
    aten_scope s;
    scope_begin(&s);
    if (args[5].b && upper - lower > 1e-6) {
        scope_push(&s, results, scope_binary(&s, PORTA_MUL, args[0].tensor, args[2].tensor));
    } else {
        porta_value call[4] = {args[0], args[1],
                               {.kind = PORTA_VALUE_FLOAT, .f = (lower + upper) / 2}, args[6]};
        scope_push(&s, results, scope_call(&s, "leaky_relu_backward", call, 4));
    }
    return scope_end(&s);
}

/* ---- channel_shuffle ---- */

/* channel_shuffle(self, groups): channels [g, C/g] transposed to
 * [C/g, g]. */
static porta_status *channel_shuffle(const porta_value *args, aten_results *results) {
    const porta_tensor *x = args[0].tensor;
    int64_t groups = args[1].i;
    char b[CORE_SHAPE_STR_CAP];
    if (x->rank <= 2)
        return porta_error(PORTA_ERR_SHAPE,
                           "channel_shuffle expects input to have at least 3 dimensions, but got "
                           "input with sizes %s",
                           core_format_shape(b, sizeof b, x->rank, x->sizes));
    int64_t c = x->sizes[1];
    if (groups <= 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Number of groups to divide channels in must be positive. Value of "
                           "groups:%lld",
                           (long long)groups);
    if (c % groups)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Number of channels must be divisible by groups. Got %lld channels "
                           "and %lld groups.",
                           (long long)c, (long long)groups);
    int64_t split[PORTA_MAX_RANK + 1] = {x->sizes[0], groups, c / groups};
    int order[PORTA_MAX_RANK + 1] = {0, 2, 1};
    for (int i = 2; i < x->rank; i++) {
        split[i + 1] = x->sizes[i];
        order[i + 1] = i + 1;
    }
    aten_scope s;
    scope_begin(&s);
    porta_tensor *grouped = scope_reshape(&s, scope_contiguous(&s, x), x->rank + 1, split);
    porta_tensor *shuffled = scope_contiguous(&s, scope_permute(&s, grouped, order));
    scope_push(&s, results, scope_reshape(&s, shuffled, x->rank, x->sizes));
    return scope_end(&s);
}

ATEN_OUT_KERNEL(rrelu_with_noise_out, rrelu_with_noise, 6)
ATEN_OUT_KERNEL(rrelu_with_noise_backward_out, rrelu_with_noise_backward, 7)
ATEN_OUT_KERNEL(channel_shuffle_out, channel_shuffle, 2)

const aten_op aten_nn_prelu_rrelu_shuffle_ops[] = {
    {"_prelu_kernel", "TT", prelu_kernel},
    {"_prelu_kernel_backward", "TTT", prelu_kernel_backward},
    {"rrelu_with_noise", "TTssbx", rrelu_with_noise},
    {"rrelu_with_noise.out", "TTssbxT", rrelu_with_noise_out},
    {"rrelu_with_noise_functional", "TTssbx", rrelu_with_noise_functional},
    {"rrelu_with_noise_backward", "TTTssbb", rrelu_with_noise_backward},
    {"rrelu_with_noise_backward.out", "TTTssbbT", rrelu_with_noise_backward_out},
    {"channel_shuffle", "Ti", channel_shuffle},
    {"channel_shuffle.out", "TiT", channel_shuffle_out},
    {NULL, NULL, NULL},
};
