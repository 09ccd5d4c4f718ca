/* The StableHLO renderer's statement writer (codegen_stablehlo_internal.h):
 * generic op form throughout, which every MLIR parser of StableHLO reads
 * whatever pretty forms its version has. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_stablehlo_internal.h"
#include "core/dtype.h"

shlo_type shlo_tensor(const char *dims, const char *elt) {
    shlo_type t;
    snprintf(t.s, sizeof t.s, "tensor<%s%s>", dims, elt);
    return t;
}

void shlo_dims(char *out, size_t cap, const int64_t *sizes, int rank) {
    size_t used = 0;
    out[0] = '\0';
    for (int d = 0; d < rank && used < cap; d++)
        used += (size_t)snprintf(out + used, cap - used, "%" PRId64 "x", sizes[d]);
}

int shlo_attr_i64s(char *out, size_t cap, const char *name, const int64_t *values, int n) {
    size_t used = (size_t)snprintf(out, cap, "%s = array<i64", name);
    for (int i = 0; i < n && used < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%s %" PRId64, i ? "," : ":", values[i]);
    if (used < cap) used += (size_t)snprintf(out + used, cap - used, ">");
    return (int)used;
}

int shlo_op(shlo_emit *e, const char *op, int n, const int *args, const shlo_type *types,
            const char *attrs, shlo_type out) {
    int id = e->next++;
    text_printf(e->t, "    %%%d = \"%s\"(", id, op);
    for (int i = 0; i < n; i++) text_printf(e->t, "%s%%%d", i ? ", " : "", args[i]);
    text_printf(e->t, ")%s : (", attrs);
    for (int i = 0; i < n; i++) text_printf(e->t, "%s%s", i ? ", " : "", types[i].s);
    text_printf(e->t, ") -> %s\n", out.s);
    return id;
}

int shlo_op1(shlo_emit *e, const char *op, int a, shlo_type in, shlo_type out) {
    return shlo_op(e, op, 1, &a, &in, "", out);
}

int shlo_op2(shlo_emit *e, const char *op, int a, int b, shlo_type in, shlo_type out) {
    int args[2] = {a, b};
    shlo_type types[2] = {in, in};
    return shlo_op(e, op, 2, args, types, "", out);
}

int shlo_constant(shlo_emit *e, shlo_type type, const char *literal) {
    int id = e->next++;
    text_printf(e->t, "    %%%d = \"stablehlo.constant\"() {value = dense<%s> : %s} : () -> %s\n",
                id, literal, type.s, type.s);
    return id;
}

int shlo_compare(shlo_emit *e, const char *direction, int a, int b, shlo_type in,
                 const char *dims) {
    char attrs[96];
    snprintf(attrs, sizeof attrs,
             " {comparison_direction = #stablehlo<comparison_direction %s>}", direction);
    int args[2] = {a, b};
    shlo_type types[2] = {in, in};
    return shlo_op(e, "stablehlo.compare", 2, args, types, attrs, shlo_tensor(dims, "i1"));
}

int shlo_select(shlo_emit *e, int pred, int a, int b, const char *dims, shlo_type type) {
    int args[3] = {pred, a, b};
    shlo_type types[3] = {shlo_tensor(dims, "i1"), type, type};
    return shlo_op(e, "stablehlo.select", 3, args, types, "", type);
}

const char *shlo_compute_elt(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_BOOL: return "i1";
    case PORTA_U8: return "ui8";
    case PORTA_I8: return "i8";
    case PORTA_I16: return "i16";
    case PORTA_I32: return "i32";
    case PORTA_I64: return "i64";
    case PORTA_F64: return "f64";
    default: return "f32"; /* float32, and the halves computed in it */
    }
}

const char *shlo_storage_elt(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_BOOL: return "ui8";
    case PORTA_F16: return "f16";
    case PORTA_BF16: return "bf16";
    default: return shlo_compute_elt(dtype);
    }
}

const char *shlo_zero(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_BOOL: return "false";
    case PORTA_F16: case PORTA_BF16: case PORTA_F32: return "0x00000000";
    case PORTA_F64: return "0x0000000000000000";
    default: return "0";
    }
}

/* Floats as their bits: exact, and NaN and infinities need no spelling. */
void shlo_literal(char *out, size_t cap, porta_dtype dtype, double v) {
    switch (dtype) {
    case PORTA_BOOL: snprintf(out, cap, "%s", v != 0 ? "true" : "false"); return;
    case PORTA_F16: case PORTA_BF16: case PORTA_F32: {
        float f = (float)v;
        if (dtype == PORTA_F16) f = core_f16_to_f32(core_f32_to_f16(f));
        if (dtype == PORTA_BF16) f = core_bf16_to_f32(core_f32_to_bf16(f));
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        snprintf(out, cap, "0x%08" PRIX32, bits);
        return;
    }
    case PORTA_F64: {
        uint64_t bits;
        memcpy(&bits, &v, sizeof bits);
        snprintf(out, cap, "0x%016" PRIX64, bits);
        return;
    }
    default: break;
    }
    int64_t i = core_double_to_i64(v);
    switch (dtype) {
    case PORTA_U8: i = (uint8_t)i; break;
    case PORTA_I8: i = (int8_t)i; break;
    case PORTA_I16: i = (int16_t)i; break;
    case PORTA_I32: i = (int32_t)i; break;
    default: break;
    }
    snprintf(out, cap, "%" PRId64, i);
}
