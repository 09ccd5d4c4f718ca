/* segment_reduce (_segment_reduce's kernel) and its backward, composed
 * from searchsorted, scatter_reduce and gather. Segments of `axis` are
 * given by lengths or offsets of shape data.shape[:axis] + [S (+1)]; each
 * position of the axis gets its segment's id, and the data is
 * scatter-reduced into S + 1 slots (the last collects positions past the
 * final offset and is dropped). Every segment's reduction starts from
 * `initial` (or the reduction's identity), as PyTorch's kernel does. */
#include <math.h>
#include <string.h>

#include "aten/dispatch/op_reuse.h"
#include "aten/dispatch/scope.h"
#include "core/status.h"
#include "runtime/tensor.h"

typedef enum { SEG_MAX, SEG_MIN, SEG_SUM, SEG_MEAN, SEG_PROD } seg_reduce;

static porta_status *parse_reduce(const char *name, seg_reduce *out) {
    static const char *const names[] = {"max", "min", "sum", "mean", "prod"};
    for (int i = 0; i < 5; i++)
        if (name && strcmp(name, names[i]) == 0) {
            *out = (seg_reduce)i;
            return NULL;
        }
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "reduce argument must be either sum, prod, max, min or mean, got %s",
                       name ? name : "None");
}

/* What both directions use. */
typedef struct {
    int axis, rank;
    int64_t segments;         /* S */
    porta_tensor *index;      /* data's shape: each element's segment, S past the end */
    porta_tensor *lengths;    /* [lead..., S] int64 */
    int64_t slot_sizes[PORTA_MAX_RANK]; /* data's shape with S + 1 along axis */
} segments;

/* The segments lengths or offsets give; false after a failure. */
static bool segments_of(aten_scope *s, const porta_tensor *data, const porta_tensor *lengths,
                        const porta_tensor *offsets, int64_t axis_arg, segments *g) {
    if (!lengths && !offsets) {
        scope_fail(s, porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                  "segment_reduce(): Either lengths or offsets must be defined"));
        return false;
    }
    if (s->status) return false;
    porta_status *status = core_normalize_axis("segment_reduce", (int)axis_arg, data->rank,
                                               &g->axis);
    if (status) {
        scope_fail(s, status);
        return false;
    }
    const porta_tensor *given = lengths ? lengths : offsets;
    if (given->rank != g->axis + 1) {
        scope_fail(s, porta_error(PORTA_ERR_SHAPE,
                                  "segment_reduce(): Expected %s to have %d dimensions (axis + 1), "
                                  "got %d", lengths ? "lengths" : "offsets", g->axis + 1,
                                  given->rank));
        return false;
    }
    int last = g->axis;
    g->rank = data->rank;
    porta_tensor *ends, *counts;
    porta_tensor *as_long = scope_cast(s, given, PORTA_I64);
    if (lengths) {
        g->segments = given->sizes[last];
        porta_value scan[3] = {aten_tensor_value(as_long), {.kind = PORTA_VALUE_INT, .i = last},
                               {.kind = PORTA_VALUE_NONE}};
        ends = scope_call(s, "cumsum", scan, 3);
        counts = as_long;
    } else {
        g->segments = given->sizes[last] - 1;
        ends = scope_slice(s, as_long, last, 1, g->segments + 1, 1);
        counts = scope_binary(s, PORTA_SUB, ends, scope_slice(s, as_long, last, 0, g->segments, 1));
    }
    g->lengths = counts;
    /* positions 0..D-1 along the axis, laid out like ends' leading axes */
    int64_t d = data->sizes[g->axis], position_sizes[PORTA_MAX_RANK];
    for (int i = 0; i < g->axis; i++) position_sizes[i] = data->sizes[i];
    position_sizes[g->axis] = d;
    int64_t line[PORTA_MAX_RANK];
    for (int i = 0; i <= g->axis; i++) line[i] = i == g->axis ? d : 1;
    porta_tensor *positions = scope_contiguous(
        s, scope_expand(s, scope_reshape(s, scope_arange(s, data->buffer->device, d), g->axis + 1,
                                         line),
                        g->axis + 1, position_sizes));
    porta_value search[6] = {aten_tensor_value(scope_contiguous(s, ends)), aten_tensor_value(positions),
                             {.kind = PORTA_VALUE_BOOL, .b = false},
                             {.kind = PORTA_VALUE_BOOL, .b = true},
                             {.kind = PORTA_VALUE_NONE},
                             {.kind = PORTA_VALUE_NONE}};
    porta_tensor *ids = scope_call(s, "searchsorted.Tensor", search, 6);
    int64_t id_sizes[PORTA_MAX_RANK];
    for (int i = 0; i < data->rank; i++) {
        id_sizes[i] = i <= g->axis ? data->sizes[i] : 1;
        g->slot_sizes[i] = i == g->axis ? g->segments + 1 : data->sizes[i];
    }
    g->index = scope_expand(s, scope_reshape(s, ids, data->rank, id_sizes), data->rank, data->sizes);
    return !s->status;
}

/* t [lead..., S] viewed to broadcast against data's shape. */
static porta_tensor *per_segment(aten_scope *s, const porta_tensor *t, const segments *g) {
    int64_t sizes[PORTA_MAX_RANK];
    for (int i = 0; i < g->rank; i++)
        sizes[i] = i < g->axis ? t->sizes[i] : i == g->axis ? g->segments : 1;
    return scope_reshape(s, t, g->rank, sizes);
}

static double identity_of(seg_reduce r) {
    return r == SEG_MAX ? -INFINITY : r == SEG_MIN ? INFINITY : r == SEG_PROD ? 1 : 0;
}

/* segment_reduce(data, reduce, lengths?, indices?, offsets?, axis, unsafe,
 * initial?) */
static porta_status *segment_reduce(const porta_value *args, aten_results *results) {
    const porta_tensor *data = args[0].tensor;
    seg_reduce r;
    PORTA_TRY(parse_reduce(args[1].kind == PORTA_VALUE_STRING ? args[1].string : NULL, &r));
    bool has_initial = args[7].kind != PORTA_VALUE_NONE;
    double initial = has_initial ? aten_number(&args[7]) : identity_of(r);
    if (!porta_dtype_is_float(data->dtype))
        return porta_error(PORTA_ERR_DTYPE, "segment_reduce: expected a floating data, got %s",
                           porta_dtype_name(data->dtype));
    aten_scope s;
    scope_begin(&s);
    segments g;
    if (segments_of(&s, data, aten_optional_tensor(&args[2]), aten_optional_tensor(&args[4]), args[5].i, &g)) {
        static const porta_scatter_reduce ops[] = {PORTA_SCATTER_AMAX, PORTA_SCATTER_AMIN,
                                                   PORTA_SCATTER_ADD, PORTA_SCATTER_ADD,
                                                   PORTA_SCATTER_MUL};
        porta_tensor *slots = scope_full(&s, data->buffer->device, data->dtype, data->rank,
                                         g.slot_sizes, r == SEG_MEAN ? 0 : initial);
        porta_tensor *reduced = scope_slice(
            &s, scope_scatter(&s, slots, g.axis, g.index, data, ops[r]), g.axis, 0, g.segments, 1);
        if (r == SEG_MEAN) {
            porta_tensor *count = scope_cast(&s, per_segment(&s, g.lengths, &g), data->dtype);
            porta_tensor *mean = scope_binary(
                &s, PORTA_DIV, scope_binary_number(&s, PORTA_ADD, reduced, has_initial ? initial : 0),
                count);
            reduced = scope_where_number(&s, scope_binary_number(&s, PORTA_LE, count, 0),
                                         has_initial ? initial : NAN, mean);
        }
        scope_push(&s, results, scope_contiguous(&s, reduced));
    }
    return scope_end(&s);
}

/* t [.., S, ..] with a zero slot appended along the axis, gathered to
 * data's shape by segment. */
static porta_tensor *spread(aten_scope *s, const porta_tensor *t, const segments *g) {
    int64_t pads[2 * PORTA_MAX_RANK] = {0};
    pads[2 * g->axis + 1] = 1;
    return scope_gather(s, scope_pad(s, t, pads, 0), g->axis, g->index);
}

/* _segment_reduce_backward(grad, output, data, reduce, lengths?, offsets?,
 * axis, initial?): sum and mean pass the gradient (over the length); max
 * and min give it to the elements equal to the result, a positive one
 * shared among ties as PyTorch's kernel shares it; prod gives
 * grad * output / x, or for a zero the product of the others. */
static porta_status *segment_reduce_backward(const porta_value *args, aten_results *results) {
    const porta_tensor *grad = args[0].tensor, *output = args[1].tensor, *data = args[2].tensor;
    seg_reduce r;
    PORTA_TRY(parse_reduce(args[3].kind == PORTA_VALUE_STRING ? args[3].string : NULL, &r));
    bool has_initial = args[7].kind != PORTA_VALUE_NONE;
    double initial = has_initial ? aten_number(&args[7]) : 1;
    aten_scope s;
    scope_begin(&s);
    segments g;
    if (segments_of(&s, data, aten_optional_tensor(&args[4]), aten_optional_tensor(&args[5]), args[6].i, &g)) {
        porta_tensor *gi = NULL;
        if (r == SEG_SUM) {
            gi = spread(&s, grad, &g);
        } else if (r == SEG_MEAN) {
            porta_tensor *count = scope_cast(&s, per_segment(&s, g.lengths, &g), grad->dtype);
            gi = spread(&s, scope_binary(&s, PORTA_DIV, grad, count), &g);
        } else if (r == SEG_MAX || r == SEG_MIN) {
            porta_tensor *hit = scope_binary(&s, PORTA_LOGICAL_OR,
                                             scope_binary(&s, PORTA_EQ, data, spread(&s, output, &g)),
                                             scope_unary(&s, PORTA_ISNAN, data));
            porta_tensor *taken = scope_where_number(&s, scope_unary(&s, PORTA_LOGICAL_NOT, hit), 0,
                                                     spread(&s, grad, &g));
            porta_tensor *zeros = scope_full(&s, data->buffer->device, data->dtype, data->rank,
                                             g.slot_sizes, 0);
            porta_tensor *ties = scope_gather(
                &s, scope_scatter(&s, zeros, g.axis, g.index, scope_cast(&s, hit, data->dtype),
                                  PORTA_SCATTER_ADD),
                g.axis, g.index);
            porta_tensor *shared = scope_binary(
                &s, PORTA_LOGICAL_AND, scope_binary_number(&s, PORTA_GE, ties, 2),
                scope_binary_number(&s, PORTA_GT, taken, 0));
            gi = scope_where(&s, shared, scope_binary(&s, PORTA_DIV, taken, ties), taken);
        } else {
            porta_tensor *zero = scope_binary_number(&s, PORTA_EQ, data, 0);
            porta_tensor *nonzero_data = scope_where_number(&s, zero, 1, data);
            porta_tensor *ones = scope_full(&s, data->buffer->device, data->dtype, data->rank,
                                            g.slot_sizes, 1);
            porta_tensor *zeros = scope_full(&s, data->buffer->device, data->dtype, data->rank,
                                             g.slot_sizes, 0);
            porta_tensor *others = scope_gather(
                &s, scope_scatter(&s, ones, g.axis, g.index, nonzero_data, PORTA_SCATTER_MUL), g.axis,
                g.index);
            porta_tensor *zero_count = scope_gather(
                &s, scope_scatter(&s, zeros, g.axis, g.index, scope_cast(&s, zero, data->dtype),
                                  PORTA_SCATTER_ADD),
                g.axis, g.index);
            /* a zero's gradient: the others' product when it is the only zero */
            porta_tensor *exclusive = scope_where_number(
                &s, scope_binary_number(&s, PORTA_NE, zero_count, 1), 0,
                scope_binary_number(&s, PORTA_MUL, others, initial));
            porta_tensor *g_data = spread(&s, grad, &g);
            porta_tensor *through = scope_binary(
                &s, PORTA_DIV, spread(&s, scope_binary(&s, PORTA_MUL, grad, output), &g),
                nonzero_data);
            gi = scope_where(&s, zero, scope_binary(&s, PORTA_MUL, g_data, exclusive), through);
        }
        scope_push(&s, results, scope_contiguous(&s, gi));
    }
    return scope_end(&s);
}

ATEN_OUT_KERNEL(segment_reduce_out, segment_reduce, 8)
ATEN_OUT_KERNEL(segment_reduce_backward_out, segment_reduce_backward, 8)

const aten_op aten_index_segment_reduce_ops[] = {
    {"segment_reduce", "TrtttibS", segment_reduce},
    {"segment_reduce.out", "TrtttibST", segment_reduce_out},
    {"_segment_reduce_backward", "TTTrttiS", segment_reduce_backward},
    {"_segment_reduce_backward.out", "TTTrttiST", segment_reduce_backward_out},
    {NULL, NULL, NULL},
};
