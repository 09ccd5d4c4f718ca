/* Fused recurrent cell aten ops: the LSTM and GRU cells nn.LSTM and nn.GRU
 * call on devices with fused kernels, and their backward ops. Each cell
 * takes the input and hidden projections ([B, 4H] for LSTM, gates i, f,
 * g, o; [B, 3H] for GRU, gates r, z, n) and optional biases, and returns
 * a workspace holding what its backward needs:
 *   LSTM: [B, 4H], the activated gates i, f, g, o;
 *   GRU:  [B, 5H], the activated gates r, z, n, then hx and the hidden
 *         projection of n (with its bias).
 * Computation runs in float32 for float16/bfloat16 inputs. */
#include "aten/dispatch/scope.h"

#include "core/status.h"
#include "runtime/tensor.h"

/* Columns [k*h, (k+1)*h) of a [B, n*h] tensor. */
static porta_tensor *chunk(aten_scope *s, const porta_tensor *x, int k, int64_t h) {
    return scope_slice(s, x, 1, k * h, (k + 1) * h, 1);
}

/* The parts ([B, h] each) side by side along axis 1, as `dtype`. */
static porta_tensor *join(aten_scope *s, porta_tensor *const *parts, int count, int64_t b, int64_t h,
                          porta_device *device, porta_dtype dtype) {
    int64_t sizes[2] = {b, h * count};
    porta_tensor *out = scope_full(s, device, dtype, 2, sizes, 0);
    for (int k = 0; k < count; k++) scope_copy(s, parts[k], chunk(s, out, k, h));
    return out;
}

/* 1 - y */
static porta_tensor *one_minus(aten_scope *s, porta_tensor *y) {
    return scope_binary_number(s, PORTA_ADD, scope_unary(s, PORTA_NEG, y), 1);
}

/* y * (1 - y): the sigmoid's derivative from its output. */
static porta_tensor *sigmoid_grad(aten_scope *s, porta_tensor *y) {
    return scope_binary(s, PORTA_MUL, y, one_minus(s, y));
}

/* 1 - y * y: tanh's derivative from its output. */
static porta_tensor *tanh_grad(aten_scope *s, porta_tensor *y) {
    return one_minus(s, scope_binary(s, PORTA_MUL, y, y));
}

static porta_status *check_cell(const char *op, const porta_tensor *ig, const porta_tensor *hg,
                                const porta_tensor *state, int gates) {
    char a[CORE_SHAPE_STR_CAP], b[CORE_SHAPE_STR_CAP], c[CORE_SHAPE_STR_CAP];
    if (!porta_dtype_is_float(ig->dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: expected floating-point gates, got %s", op,
                           porta_dtype_name(ig->dtype));
    if (ig->rank != 2 || hg->rank != 2 || state->rank != 2 || ig->sizes[0] != hg->sizes[0] ||
        ig->sizes[1] != hg->sizes[1] || state->sizes[0] != ig->sizes[0] ||
        ig->sizes[1] != gates * state->sizes[1])
        return porta_error(PORTA_ERR_SHAPE,
                           "%s: expected input_gates and hidden_gates of shape [B, %d*H] and a "
                           "state of shape [B, H], got %s, %s and %s",
                           op, gates, core_format_shape(a, sizeof a, ig->rank, ig->sizes),
                           core_format_shape(b, sizeof b, hg->rank, hg->sizes),
                           core_format_shape(c, sizeof c, state->rank, state->sizes));
    return NULL;
}

/* input_gates + hidden_gates (+ biases), in the compute dtype. */
static porta_tensor *gate_sum(aten_scope *s, porta_tensor *ig, porta_tensor *hg,
                              const porta_tensor *ib, const porta_tensor *hb, porta_dtype compute) {
    porta_tensor *g = scope_binary(s, PORTA_ADD, ig, hg);
    if (ib) g = scope_binary(s, PORTA_ADD, g, scope_cast(s, ib, compute));
    if (hb) g = scope_binary(s, PORTA_ADD, g, scope_cast(s, hb, compute));
    return g;
}

/* _thnn_fused_lstm_cell(input_gates, hidden_gates, cx, input_bias?,
 * hidden_bias?) -> (hy, cy, workspace) */
static porta_status *fused_lstm_cell(const porta_value *args, aten_results *results) {
    const porta_tensor *ig = args[0].tensor, *hg = args[1].tensor, *cx = args[2].tensor;
    PORTA_TRY(check_cell("_thnn_fused_lstm_cell", ig, hg, cx, 4));
    int64_t b = cx->sizes[0], h = cx->sizes[1];
    porta_device *device = ig->buffer->device;
    porta_dtype compute = aten_compute_dtype(ig->dtype);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *gates = gate_sum(&s, scope_cast(&s, ig, compute), scope_cast(&s, hg, compute),
                                   aten_optional_tensor(&args[3]), aten_optional_tensor(&args[4]), compute);
    porta_tensor *act[4] = {
        scope_unary(&s, PORTA_SIGMOID, chunk(&s, gates, 0, h)),
        scope_unary(&s, PORTA_SIGMOID, chunk(&s, gates, 1, h)),
        scope_unary(&s, PORTA_TANH, chunk(&s, gates, 2, h)),
        scope_unary(&s, PORTA_SIGMOID, chunk(&s, gates, 3, h)),
    };
    porta_tensor *cy = scope_binary(&s, PORTA_ADD,
                                 scope_binary(&s, PORTA_MUL, act[1], scope_cast(&s, cx, compute)),
                                 scope_binary(&s, PORTA_MUL, act[0], act[2]));
    porta_tensor *hy = scope_binary(&s, PORTA_MUL, act[3], scope_unary(&s, PORTA_TANH, cy));
    scope_push(&s, results, scope_cast(&s, hy, ig->dtype));
    scope_push(&s, results, scope_cast(&s, cy, ig->dtype));
    scope_push(&s, results, join(&s, act, 4, b, h, device, ig->dtype));
    return scope_end(&s);
}

/* _thnn_fused_lstm_cell_backward_impl(grad_hy?, grad_cy?, cx, cy,
 * workspace, has_bias) -> (grad_gates, grad_cx, grad_bias) */
static porta_status *fused_lstm_cell_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *ghy = aten_optional_tensor(&args[0]), *gcy = aten_optional_tensor(&args[1]);
    const porta_tensor *cx = args[2].tensor, *cy = args[3].tensor, *ws = args[4].tensor;
    PORTA_TRY(check_cell("_thnn_fused_lstm_cell_backward_impl", ws, ws, cx, 4));
    int64_t b = cx->sizes[0], h = cx->sizes[1];
    porta_device *device = ws->buffer->device;
    porta_dtype dtype = ws->dtype, compute = aten_compute_dtype(dtype);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *w = scope_cast(&s, ws, compute);
    porta_tensor *i = chunk(&s, w, 0, h), *f = chunk(&s, w, 1, h), *g = chunk(&s, w, 2, h),
                 *o = chunk(&s, w, 3, h);
    porta_tensor *tanh_cy = scope_unary(&s, PORTA_TANH, scope_cast(&s, cy, compute));
    porta_tensor *zero = scope_full(&s, device, compute, 2, cx->sizes, 0);
    porta_tensor *gh = ghy ? scope_cast(&s, ghy, compute) : zero;
    porta_tensor *gc = gcy ? scope_cast(&s, gcy, compute) : zero;
    /* the whole gradient reaching cy */
    porta_tensor *gcell = scope_binary(
        &s, PORTA_ADD, gc,
        scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, gh, o), tanh_grad(&s, tanh_cy)));
    porta_tensor *grads[4] = {
        scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, gcell, g), sigmoid_grad(&s, i)),
        scope_binary(&s, PORTA_MUL,
                  scope_binary(&s, PORTA_MUL, gcell, scope_cast(&s, cx, compute)), sigmoid_grad(&s, f)),
        scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, gcell, i), tanh_grad(&s, g)),
        scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, gh, tanh_cy), sigmoid_grad(&s, o)),
    };
    porta_tensor *grad_gates = join(&s, grads, 4, b, h, device, compute);
    scope_push(&s, results, scope_cast(&s, grad_gates, dtype));
    scope_push(&s, results, scope_cast(&s, scope_binary(&s, PORTA_MUL, gcell, f), dtype));
    if (args[5].b) {
        int axis = 0;
        scope_push(&s, results,
                scope_cast(&s, scope_reduce(&s, PORTA_REDUCE_SUM, grad_gates, &axis, 1, false), dtype));
    } else {
        scope_push_none(&s, results);
    }
    return scope_end(&s);
}

/* _thnn_fused_gru_cell(input_gates, hidden_gates, hx, input_bias?,
 * hidden_bias?) -> (hy, workspace) */
static porta_status *fused_gru_cell(const porta_value *args, aten_results *results) {
    const porta_tensor *ig_v = args[0].tensor, *hg_v = args[1].tensor, *hx_v = args[2].tensor;
    const porta_tensor *ib = aten_optional_tensor(&args[3]), *hb = aten_optional_tensor(&args[4]);
    PORTA_TRY(check_cell("_thnn_fused_gru_cell", ig_v, hg_v, hx_v, 3));
    int64_t b = hx_v->sizes[0], h = hx_v->sizes[1];
    porta_device *device = ig_v->buffer->device;
    porta_dtype compute = aten_compute_dtype(ig_v->dtype);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *ig = scope_cast(&s, ig_v, compute), *hg = scope_cast(&s, hg_v, compute);
    if (ib) ig = scope_binary(&s, PORTA_ADD, ig, scope_cast(&s, ib, compute));
    if (hb) hg = scope_binary(&s, PORTA_ADD, hg, scope_cast(&s, hb, compute));
    porta_tensor *hx = scope_cast(&s, hx_v, compute);
    porta_tensor *r = scope_unary(&s, PORTA_SIGMOID, scope_binary(&s, PORTA_ADD, chunk(&s, ig, 0, h),
                                                                  chunk(&s, hg, 0, h)));
    porta_tensor *z = scope_unary(&s, PORTA_SIGMOID, scope_binary(&s, PORTA_ADD, chunk(&s, ig, 1, h),
                                                                  chunk(&s, hg, 1, h)));
    porta_tensor *hn = chunk(&s, hg, 2, h);
    porta_tensor *n = scope_unary(&s, PORTA_TANH, scope_binary(&s, PORTA_ADD, chunk(&s, ig, 2, h),
                                                               scope_binary(&s, PORTA_MUL, r, hn)));
    /* hy = n + z * (hx - n) */
    porta_tensor *hy =
        scope_binary(&s, PORTA_ADD, n, scope_binary(&s, PORTA_MUL, z, scope_binary(&s, PORTA_SUB, hx, n)));
    porta_tensor *parts[5] = {r, z, n, hx, hn};
    scope_push(&s, results, scope_cast(&s, hy, ig_v->dtype));
    scope_push(&s, results, join(&s, parts, 5, b, h, device, ig_v->dtype));
    return scope_end(&s);
}

/* _thnn_fused_gru_cell_backward(grad_hy, workspace, has_bias) ->
 * (grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias,
 * grad_hidden_bias) */
static porta_status *fused_gru_cell_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *ghy = args[0].tensor, *ws = args[1].tensor;
    char a[CORE_SHAPE_STR_CAP], c[CORE_SHAPE_STR_CAP];
    if (ghy->rank != 2 || ws->rank != 2 || ws->sizes[0] != ghy->sizes[0] ||
        ws->sizes[1] != 5 * ghy->sizes[1])
        return porta_error(PORTA_ERR_SHAPE,
                           "_thnn_fused_gru_cell_backward: expected grad_hy of shape [B, H] and a "
                           "workspace of shape [B, 5*H], got %s and %s",
                           core_format_shape(a, sizeof a, ghy->rank, ghy->sizes),
                           core_format_shape(c, sizeof c, ws->rank, ws->sizes));
    int64_t b = ghy->sizes[0], h = ghy->sizes[1];
    porta_device *device = ws->buffer->device;
    porta_dtype dtype = ws->dtype, compute = aten_compute_dtype(dtype);
    aten_scope s;
    scope_begin(&s);
    porta_tensor *w = scope_cast(&s, ws, compute), *go = scope_cast(&s, ghy, compute);
    porta_tensor *r = chunk(&s, w, 0, h), *z = chunk(&s, w, 1, h), *n = chunk(&s, w, 2, h),
                 *hx = chunk(&s, w, 3, h), *hn = chunk(&s, w, 4, h);
    porta_tensor *gn = scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, go, one_minus(&s, z)),
                                    tanh_grad(&s, n));
    porta_tensor *gz = scope_binary(
        &s, PORTA_MUL, scope_binary(&s, PORTA_MUL, go, scope_binary(&s, PORTA_SUB, hx, n)),
        sigmoid_grad(&s, z));
    porta_tensor *gr =
        scope_binary(&s, PORTA_MUL, scope_binary(&s, PORTA_MUL, gn, hn), sigmoid_grad(&s, r));
    porta_tensor *input_parts[3] = {gr, gz, gn};
    porta_tensor *hidden_parts[3] = {gr, gz, scope_binary(&s, PORTA_MUL, gn, r)};
    porta_tensor *grad_ig = join(&s, input_parts, 3, b, h, device, compute);
    porta_tensor *grad_hg = join(&s, hidden_parts, 3, b, h, device, compute);
    scope_push(&s, results, scope_cast(&s, grad_ig, dtype));
    scope_push(&s, results, scope_cast(&s, grad_hg, dtype));
    scope_push(&s, results, scope_cast(&s, scope_binary(&s, PORTA_MUL, go, z), dtype));
    if (args[2].b) {
        int axis = 0;
        scope_push(&s, results,
                scope_cast(&s, scope_reduce(&s, PORTA_REDUCE_SUM, grad_ig, &axis, 1, false), dtype));
        scope_push(&s, results,
                scope_cast(&s, scope_reduce(&s, PORTA_REDUCE_SUM, grad_hg, &axis, 1, false), dtype));
    } else {
        scope_push_none(&s, results);
        scope_push_none(&s, results);
    }
    return scope_end(&s);
}

const aten_op aten_nn_rnn_ops[] = {
    {"_thnn_fused_gru_cell", "TTTtt", fused_gru_cell},
    {"_thnn_fused_gru_cell_backward", "TTb", fused_gru_cell_backward},
    {"_thnn_fused_lstm_cell", "TTTtt", fused_lstm_cell},
    {"_thnn_fused_lstm_cell_backward_impl", "ttTTTb", fused_lstm_cell_backward},
    {NULL, NULL, NULL},
};
