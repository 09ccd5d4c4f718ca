/* Shape and dtype inference for the elementwise primitives, following
 * PyTorch: broadcasting, type promotion (rank-0 tensors promote like
 * torch's zero-dim tensors), float-only ops taking integers to float32, and
 * the dtypes each op refuses. The prim's name is looked up only where an
 * error message needs it: most calls never do. */
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "ir/infer_elementwise.h"

bool ir_unary_gives_bool(porta_unary_op op) {
    return op == PORTA_ISNAN || op == PORTA_ISINF || op == PORTA_ISFINITE ||
           op == PORTA_LOGICAL_NOT;
}

bool ir_binary_gives_bool(porta_binary_op op) {
    switch (op) {
    case PORTA_LOGICAL_AND: case PORTA_LOGICAL_OR: case PORTA_LOGICAL_XOR:
    case PORTA_EQ: case PORTA_NE: case PORTA_LT: case PORTA_LE: case PORTA_GT: case PORTA_GE:
        return true;
    default:
        return false;
    }
}

/* EXP through LGAMMA and the special functions from DIGAMMA on are
 * contiguous in porta_unary_op. */
static bool unary_is_float_only(porta_unary_op op) {
    return (op >= PORTA_EXP && op <= PORTA_LGAMMA) || op >= PORTA_DIGAMMA;
}

static porta_dtype promote(const ir_meta *inputs, int count) {
    porta_operand_type types[3];
    for (int i = 0; i < count; i++) {
        types[i].dtype = inputs[i].dtype;
        types[i].kind = inputs[i].rank == 0 ? PORTA_OPERAND_ZERO_DIM : PORTA_OPERAND_TENSOR;
    }
    return porta_result_type(types, count);
}

/* Integers and bool compute in torch's default float dtype. */
static porta_dtype floating(porta_dtype dtype) {
    return porta_dtype_is_float(dtype) ? dtype : PORTA_F32;
}

static bool same_shape(const ir_meta *a, const ir_meta *b) {
    return a->rank == b->rank &&
           (!a->rank || !memcmp(a->sizes, b->sizes, (size_t)a->rank * sizeof a->sizes[0]));
}

static porta_status *broadcast_all(const ir_prim *prim, const ir_meta *inputs, int count,
                                   ir_meta *out) {
    out->rank = inputs[0].rank;
    if (out->rank) memcpy(out->sizes, inputs[0].sizes, (size_t)out->rank * sizeof out->sizes[0]);
    for (int i = 1; i < count; i++)
        if (!same_shape(out, &inputs[i]))
            PORTA_TRY(ir_broadcast_shapes(ir_prim_name(prim), out->rank, out->sizes,
                                             inputs[i].rank, inputs[i].sizes, &out->rank,
                                             out->sizes));
    return NULL;
}

static porta_status *refuse(const ir_prim *prim, const char *expected, porta_dtype given) {
    return porta_error(PORTA_ERR_DTYPE, "%s: expected %s, got %s", ir_prim_name(prim), expected,
                       porta_dtype_name(given));
}

static porta_status *infer_unary(const ir_prim *prim, const ir_meta *x, ir_meta *out) {
    porta_unary_op op = (porta_unary_op)prim->op;
    porta_dtype dtype = x->dtype;
    bool is_bool = dtype == PORTA_BOOL;
    if (unary_is_float_only(op)) {
        dtype = floating(dtype);
    } else if (ir_unary_gives_bool(op)) {
        dtype = PORTA_BOOL;
    } else if (op == PORTA_NEG && is_bool) {
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: negation of a bool tensor is not supported; use logical_not "
                           "to invert a mask",
                           ir_prim_name(prim));
    } else if ((op == PORTA_ABS || (op >= PORTA_FLOOR && op <= PORTA_TRUNC)) && is_bool) {
        return refuse(prim, "an integer or float tensor", dtype);
    } else if (op == PORTA_BITWISE_NOT && porta_dtype_is_float(dtype)) {
        return refuse(prim, "an integer or bool tensor", dtype);
    }
    *out = *x;
    out->dtype = dtype;
    return NULL;
}

static porta_status *refuse_pair(const ir_prim *prim, const char *expected,
                                 const ir_meta *in) {
    return porta_error(PORTA_ERR_DTYPE, "%s: expected %s, got %s and %s", ir_prim_name(prim),
                       expected, porta_dtype_name(in[0].dtype), porta_dtype_name(in[1].dtype));
}

static porta_status *infer_binary(const ir_prim *prim, const ir_meta *in, ir_meta *out) {
    porta_binary_op op = (porta_binary_op)prim->op;
    PORTA_TRY(broadcast_all(prim, in, 2, out));
    porta_dtype common = promote(in, 2);
    out->dtype = common;
    switch (op) {
    case PORTA_SUB:
        if (in[0].dtype == PORTA_BOOL || in[1].dtype == PORTA_BOOL)
            return porta_error(PORTA_ERR_DTYPE,
                               "%s: subtraction with a bool tensor is not supported; use "
                               "logical_xor, or logical_not to invert a mask (got %s and %s)",
                               ir_prim_name(prim), porta_dtype_name(in[0].dtype),
                               porta_dtype_name(in[1].dtype));
        break;
    case PORTA_DIV:
    case PORTA_ATAN2: out->dtype = floating(common); break;
    case PORTA_IGAMMA: case PORTA_IGAMMAC: case PORTA_ZETA:
    case PORTA_CHEBYSHEV_T: case PORTA_CHEBYSHEV_U: case PORTA_CHEBYSHEV_V:
    case PORTA_CHEBYSHEV_W: case PORTA_SHIFTED_CHEBYSHEV_T: case PORTA_SHIFTED_CHEBYSHEV_U:
    case PORTA_SHIFTED_CHEBYSHEV_V: case PORTA_SHIFTED_CHEBYSHEV_W: case PORTA_HERMITE_H:
    case PORTA_HERMITE_HE: case PORTA_LAGUERRE_L: case PORTA_LEGENDRE_P:
        out->dtype = floating(common);
        break;
    case PORTA_FLOOR_DIVIDE:
    case PORTA_REMAINDER:
    case PORTA_FMOD:
    case PORTA_POW:
        if (common == PORTA_BOOL) return refuse_pair(prim, "integer or float tensors", in);
        break;
    case PORTA_BITWISE_AND:
    case PORTA_BITWISE_OR:
    case PORTA_BITWISE_XOR:
        if (porta_dtype_is_float(common)) return refuse_pair(prim, "integer or bool tensors", in);
        break;
    case PORTA_SHIFT_LEFT:
    case PORTA_SHIFT_RIGHT:
        if (!core_dtype_is_integral(common)) return refuse_pair(prim, "integer tensors", in);
        break;
    default:
        if (ir_binary_gives_bool(op)) out->dtype = PORTA_BOOL;
        break;
    }
    return NULL;
}

static porta_status *infer_ternary(const ir_prim *prim, const ir_meta *in, ir_meta *out) {
    PORTA_TRY(broadcast_all(prim, in, 3, out));
    if (prim->op == PORTA_WHERE) {
        if (in[0].dtype != PORTA_BOOL)
            return porta_error(PORTA_ERR_DTYPE, "%s: expected a bool condition, got %s",
                               ir_prim_name(prim), porta_dtype_name(in[0].dtype));
        out->dtype = promote(in + 1, 2);
        return NULL;
    }
    out->dtype = promote(in, 3);
    if (out->dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "%s: expected integer or float tensors, got three bool",
                           ir_prim_name(prim));
    return NULL;
}

static porta_status *check_dtype(const ir_prim *prim, porta_dtype dtype) {
    if (!core_dtype_is_valid((int)dtype))
        return porta_error(PORTA_ERR_DTYPE, "%s: invalid target dtype %d", ir_prim_name(prim),
                           (int)dtype);
    return NULL;
}

static porta_status *infer_fill(const ir_prim *prim, ir_meta *out) {
    PORTA_TRY(check_dtype(prim, prim->dtype));
    if (prim->rank < 0 || prim->rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: rank must be 0..%d, got %d",
                           ir_prim_name(prim), PORTA_MAX_RANK, prim->rank);
    for (int i = 0; i < prim->rank; i++)
        if (prim->sizes[i] < 0)
            return porta_error(PORTA_ERR_SHAPE, "%s: size %lld of axis %d is negative",
                               ir_prim_name(prim), (long long)prim->sizes[i], i);
    out->dtype = prim->dtype;
    out->rank = prim->rank;
    if (prim->rank) memcpy(out->sizes, prim->sizes, (size_t)prim->rank * sizeof out->sizes[0]);
    return NULL;
}

porta_status *ir_infer_elementwise(ir_prim *prim, const ir_meta *inputs, int input_count,
                                      ir_meta *out) {
    static const struct { int expected, op_count; } kinds[] = {
        [PRIM_UNARY] = {1, PORTA_UNARY_OP_COUNT}, [PRIM_BINARY] = {2, PORTA_BINARY_OP_COUNT},
        [PRIM_TERNARY] = {3, PORTA_TERNARY_OP_COUNT}, [PRIM_CAST] = {1, 0}, [PRIM_FILL] = {0, 0},
    };
    if (prim->kind < PRIM_UNARY || prim->kind > PRIM_FILL)
        return porta_error(PORTA_ERR_INTERNAL, "%s is not an elementwise primitive",
                           ir_prim_name(prim));
    if (input_count != kinds[prim->kind].expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected %d inputs, got %d",
                           ir_prim_name(prim), kinds[prim->kind].expected, input_count);
    if (kinds[prim->kind].op_count && (prim->op < 0 || prim->op >= kinds[prim->kind].op_count))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: op %d is out of range (expected 0..%d)",
                           ir_prim_kind_name(prim->kind), prim->op,
                           kinds[prim->kind].op_count - 1);
    memset(out, 0, sizeof *out);
    switch (prim->kind) {
    case PRIM_UNARY: return infer_unary(prim, inputs, out);
    case PRIM_BINARY: return infer_binary(prim, inputs, out);
    case PRIM_TERNARY: return infer_ternary(prim, inputs, out);
    case PRIM_CAST:
        PORTA_TRY(check_dtype(prim, prim->dtype));
        *out = inputs[0];
        out->dtype = prim->dtype;
        return NULL;
    default: return infer_fill(prim, out);
    }
}

porta_dtype ir_elementwise_input_dtype(const ir_prim *prim, const ir_meta *inputs,
                                          int index, const ir_meta *out) {
    switch (prim->kind) {
    case PRIM_UNARY:
        return ir_unary_gives_bool((porta_unary_op)prim->op) ? inputs[0].dtype : out->dtype;
    case PRIM_BINARY:
        return ir_binary_gives_bool((porta_binary_op)prim->op) ? promote(inputs, 2) : out->dtype;
    case PRIM_TERNARY:
        return prim->op == PORTA_WHERE && index == 0 ? PORTA_BOOL : out->dtype;
    default:
        return inputs[index].dtype;
    }
}
