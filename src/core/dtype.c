#include "dtype.h"

static const struct {
    const char *name;
    size_t size;
} dtype_table[PORTA_DTYPE_COUNT] = {
    [PORTA_BOOL] = {"bool", 1},     [PORTA_U8] = {"uint8", 1},
    [PORTA_I8] = {"int8", 1},       [PORTA_I16] = {"int16", 2},
    [PORTA_I32] = {"int32", 4},     [PORTA_I64] = {"int64", 8},
    [PORTA_F16] = {"float16", 2},   [PORTA_BF16] = {"bfloat16", 2},
    [PORTA_F32] = {"float32", 4},   [PORTA_F64] = {"float64", 8},
    [PORTA_C64] = {"complex64", 8}, [PORTA_C128] = {"complex128", 16},
};

bool core_dtype_is_valid(int dtype) { return dtype >= 0 && dtype < PORTA_DTYPE_COUNT; }

const char *porta_dtype_name(porta_dtype dtype) {
    return core_dtype_is_valid((int)dtype) ? dtype_table[dtype].name : "invalid dtype";
}

size_t porta_dtype_size(porta_dtype dtype) {
    return core_dtype_is_valid((int)dtype) ? dtype_table[dtype].size : 0;
}

bool porta_dtype_is_float(porta_dtype dtype) {
    return dtype == PORTA_F16 || dtype == PORTA_BF16 || dtype == PORTA_F32 ||
           dtype == PORTA_F64;
}

bool porta_dtype_is_complex(porta_dtype dtype) {
    return dtype == PORTA_C64 || dtype == PORTA_C128;
}

porta_dtype porta_dtype_real(porta_dtype dtype) {
    return dtype == PORTA_C64 ? PORTA_F32 : dtype == PORTA_C128 ? PORTA_F64 : dtype;
}

porta_dtype porta_dtype_complex(porta_dtype dtype) {
    return dtype == PORTA_F64 || dtype == PORTA_C128 ? PORTA_C128 : PORTA_C64;
}

bool core_dtype_is_integral(porta_dtype dtype) {
    return dtype >= PORTA_U8 && dtype <= PORTA_I64;
}

bool porta_dtype_is_signed(porta_dtype dtype) {
    return dtype != PORTA_BOOL && dtype != PORTA_U8;
}

/* Width rank within a category, for picking the wider of two. */
static int float_rank(porta_dtype d) {
    return d == PORTA_F64 ? 3 : d == PORTA_F32 ? 2 : 1;
}

porta_dtype porta_dtype_promote(porta_dtype a, porta_dtype b) {
    if (a == b) return a;
    /* complex wins, as wide as the wider component (complex64 + float64 is
     * complex128) */
    if (porta_dtype_is_complex(a) || porta_dtype_is_complex(b)) {
        porta_dtype ra = porta_dtype_real(a), rb = porta_dtype_real(b);
        return ra == PORTA_F64 || rb == PORTA_F64 ? PORTA_C128 : PORTA_C64;
    }
    bool fa = porta_dtype_is_float(a), fb = porta_dtype_is_float(b);
    if (fa && fb) {
        /* float16 and bfloat16 have no common 16-bit type. */
        if (float_rank(a) == 1 && float_rank(b) == 1) return PORTA_F32;
        return float_rank(a) >= float_rank(b) ? a : b;
    }
    if (fa) return a;
    if (fb) return b;
    if (a == PORTA_BOOL) return b;
    if (b == PORTA_BOOL) return a;
    if (a == PORTA_U8 || b == PORTA_U8) {
        porta_dtype other = a == PORTA_U8 ? b : a;
        return other == PORTA_I8 ? PORTA_I16 : other;
    }
    return a > b ? a : b; /* signed integers are ordered by width */
}

bool porta_dtype_can_cast(porta_dtype from, porta_dtype to) {
    if (porta_dtype_is_complex(from) && !porta_dtype_is_complex(to)) return false;
    if (porta_dtype_is_float(from) && !porta_dtype_is_float(to) && !porta_dtype_is_complex(to))
        return false;
    if (from != PORTA_BOOL && to == PORTA_BOOL) return false;
    return true;
}

enum { CATEGORY_NONE = -1 };

/* PyTorch's combine_categories: the higher-priority result keeps its dtype
 * unless the lower-priority one belongs to a higher category. */
static int combine(int higher, int lower) {
    if (higher == CATEGORY_NONE) return lower;
    if (lower == CATEGORY_NONE) return higher;
    if (porta_dtype_is_complex((porta_dtype)higher)) return higher;
    if (porta_dtype_is_complex((porta_dtype)lower)) /* keeps a float's precision */
        return porta_dtype_is_float((porta_dtype)higher)
                   ? (int)porta_dtype_complex((porta_dtype)higher)
                   : lower;
    if (porta_dtype_is_float((porta_dtype)higher)) return higher;
    if (higher == PORTA_BOOL || porta_dtype_is_float((porta_dtype)lower))
        return porta_dtype_promote((porta_dtype)higher, (porta_dtype)lower);
    return higher;
}

/* Tensors (of any rank) that all share one valid dtype give that dtype:
 * the common case, decided without the category walk. */
static bool one_tensor_dtype(const porta_operand_type *operands, int count) {
    if (count < 1 || !core_dtype_is_valid((int)operands[0].dtype)) return false;
    for (int i = 0; i < count; i++)
        if (operands[i].dtype != operands[0].dtype ||
            (operands[i].kind != PORTA_OPERAND_TENSOR && operands[i].kind != PORTA_OPERAND_ZERO_DIM))
            return false;
    return true;
}

porta_dtype porta_result_type(const porta_operand_type *operands, int count) {
    if (one_tensor_dtype(operands, count)) return operands[0].dtype;
    int state[3] = {CATEGORY_NONE, CATEGORY_NONE, CATEGORY_NONE};
    for (int i = 0; i < count; i++) {
        porta_dtype d = operands[i].dtype;
        int kind = operands[i].kind;
        if (kind < 0 || kind > 2 || !core_dtype_is_valid((int)d)) continue;
        if (kind == PORTA_OPERAND_SCALAR) /* Python numbers take the defaults */
            d = porta_dtype_is_complex(d) ? PORTA_C64
                : porta_dtype_is_float(d) ? PORTA_F32
                : d == PORTA_BOOL         ? PORTA_BOOL
                                          : PORTA_I64;
        state[kind] = state[kind] == CATEGORY_NONE
                          ? (int)d
                          : (int)porta_dtype_promote((porta_dtype)state[kind], d);
    }
    int result = combine(state[0], combine(state[1], state[2]));
    return result == CATEGORY_NONE ? PORTA_F32 : (porta_dtype)result;
}
