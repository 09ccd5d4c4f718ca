/* Per-kind facts about primitives: input counts and readable names. */
#include "ir/prim.h"

#include <pthread.h>
#include <stdio.h>

int ir_prim_input_count(const ir_prim *prim) {
    switch (prim->kind) {
    case PRIM_INPUT:
    case PRIM_CONSTANT:
    case PRIM_FILL:
    case PRIM_RANDOM:
        return 0;
    case PRIM_UNARY:
    case PRIM_CAST:
    case PRIM_REDUCE:
    case PRIM_PAD:
    case PRIM_RESHAPE:
    case PRIM_PERMUTE:
    case PRIM_EXPAND:
    case PRIM_SLICE:
    case PRIM_FLIP:
    case PRIM_SORT:
    case PRIM_POOL_MAX:
    case PRIM_FFT:
        return 1;
    case PRIM_BINARY:
    case PRIM_GATHER:
    case PRIM_INDEX_SELECT:
    case PRIM_MATMUL:
    case PRIM_CONV_WEIGHT_GRAD:
    case PRIM_CONV_INPUT_GRAD:
        return 2;
    case PRIM_TERNARY:
    case PRIM_SCATTER:
        return 3;
    case PRIM_FACTOR:
        return prim->op == PORTA_FACTOR_TRIANGULAR_SOLVE || prim->op == PORTA_FACTOR_LDL_SOLVE ? 2
                                                                                          : 1;
    case PRIM_SOFTMAX:
        return prim->op == PORTA_SOFTMAX_BACKWARD || prim->op == PORTA_LOG_SOFTMAX_BACKWARD ? 2
                                                                                            : 1;
    case PRIM_CONV: /* bias is optional */
    case PRIM_KIND_COUNT:
        break;
    }
    return -1;
}

const char *ir_prim_kind_name(ir_prim_kind kind) {
    static const char *const names[PRIM_KIND_COUNT] = {
        [PRIM_INPUT] = "input",     [PRIM_CONSTANT] = "constant",
        [PRIM_UNARY] = "unary",     [PRIM_BINARY] = "binary",
        [PRIM_TERNARY] = "ternary", [PRIM_CAST] = "cast",
        [PRIM_FILL] = "fill",       [PRIM_REDUCE] = "reduce",
        [PRIM_PAD] = "pad",         [PRIM_GATHER] = "gather",
        [PRIM_SCATTER] = "scatter", [PRIM_INDEX_SELECT] = "index_select",
        [PRIM_MATMUL] = "matmul",   [PRIM_CONV] = "conv",
        [PRIM_RANDOM] = "random",   [PRIM_RESHAPE] = "reshape",
        [PRIM_PERMUTE] = "permute", [PRIM_EXPAND] = "expand",
        [PRIM_SLICE] = "slice",     [PRIM_FLIP] = "flip",
        [PRIM_SORT] = "sort",       [PRIM_CONV_WEIGHT_GRAD] = "conv_weight_grad",
        [PRIM_CONV_INPUT_GRAD] = "conv_input_grad",
        [PRIM_POOL_MAX] = "pool_max",   [PRIM_FACTOR] = "factor",
        [PRIM_FFT] = "fft",
        [PRIM_SOFTMAX] = "softmax",
    };
    if ((unsigned)kind >= PRIM_KIND_COUNT) return "invalid primitive";
    return names[kind];
}

/* "kind.op" names are joined once, on first use, so callers get strings that
 * live for the process and can appear several times in one message. */
#define NAME_CAP 48
static char unary_names[PORTA_UNARY_OP_COUNT][NAME_CAP];
static char binary_names[PORTA_BINARY_OP_COUNT][NAME_CAP];
static char ternary_names[PORTA_TERNARY_OP_COUNT][NAME_CAP];
static char reduce_names[PORTA_REDUCE_OP_COUNT][NAME_CAP];
static char factor_names[PORTA_FACTOR_OP_COUNT][NAME_CAP];
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

static void join_names(void) {
    for (int op = 0; op < PORTA_UNARY_OP_COUNT; op++)
        snprintf(unary_names[op], NAME_CAP, "unary.%s", porta_unary_op_name(op));
    for (int op = 0; op < PORTA_BINARY_OP_COUNT; op++)
        snprintf(binary_names[op], NAME_CAP, "binary.%s", porta_binary_op_name(op));
    for (int op = 0; op < PORTA_TERNARY_OP_COUNT; op++)
        snprintf(ternary_names[op], NAME_CAP, "ternary.%s", porta_ternary_op_name(op));
    for (int op = 0; op < PORTA_REDUCE_OP_COUNT; op++)
        snprintf(reduce_names[op], NAME_CAP, "reduce.%s", porta_reduce_op_name(op));
    for (int op = 0; op < PORTA_FACTOR_OP_COUNT; op++)
        snprintf(factor_names[op], NAME_CAP, "factor.%s", porta_factor_op_name(op));
}

/* Picks names[op], or `invalid` when op is outside the enum. */
static const char *op_name(const char (*names)[NAME_CAP], int count, int op,
                           const char *invalid) {
    return op >= 0 && op < count ? names[op] : invalid;
}

const char *ir_prim_name(const ir_prim *prim) {
    pthread_once(&names_once, join_names);
    switch (prim->kind) {
    case PRIM_UNARY:
        return op_name(unary_names, PORTA_UNARY_OP_COUNT, prim->op, "unary.(invalid op)");
    case PRIM_BINARY:
        return op_name(binary_names, PORTA_BINARY_OP_COUNT, prim->op, "binary.(invalid op)");
    case PRIM_TERNARY:
        return op_name(ternary_names, PORTA_TERNARY_OP_COUNT, prim->op,
                       "ternary.(invalid op)");
    case PRIM_REDUCE:
        return op_name(reduce_names, PORTA_REDUCE_OP_COUNT, prim->op, "reduce.(invalid op)");
    case PRIM_SCATTER:
        switch (prim->op) {
        case PORTA_SCATTER_NONE: return "scatter";
        case PORTA_SCATTER_ADD: return "scatter.add";
        case PORTA_SCATTER_MUL: return "scatter.mul";
        case PORTA_SCATTER_AMAX: return "scatter.amax";
        case PORTA_SCATTER_AMIN: return "scatter.amin";
        default: return "scatter.(invalid reduce)";
        }
    case PRIM_RANDOM:
        return prim->normal ? "random.normal" : "random.uniform";
    case PRIM_FACTOR:
        return op_name(factor_names, PORTA_FACTOR_OP_COUNT, prim->op, "factor.(invalid op)");
    case PRIM_FFT:
        switch (prim->op) {
        case PORTA_FFT_C2C: return prim->value > 0 ? "fft.c2c_backward" : "fft.c2c";
        case PORTA_FFT_R2C: return "fft.r2c";
        case PORTA_FFT_C2R: return "fft.c2r";
        default: return "fft.(invalid kind)";
        }
    case PRIM_SOFTMAX:
        switch (prim->op) {
        case PORTA_SOFTMAX: return "softmax";
        case PORTA_LOG_SOFTMAX: return "softmax.log";
        case PORTA_SOFTMAX_BACKWARD: return "softmax.backward";
        case PORTA_LOG_SOFTMAX_BACKWARD: return "softmax.log_backward";
        default: return "softmax.(invalid op)";
        }
    case PRIM_SORT:
        return prim->op == PORTA_SORT_DESCENDING ? "sort.descending" : "sort.ascending";
    default:
        return ir_prim_kind_name(prim->kind);
    }
}

porta_status *ir_integer_fault_error(const char *op_name, int faults) {
    if (faults & IR_FAULT_DIV_ZERO)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: integer division by zero (ZeroDivisionError in PyTorch)", op_name);
    if (faults & IR_FAULT_NEGATIVE_POWER)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: Integers to negative integer powers are not allowed", op_name);
    return NULL;
}
