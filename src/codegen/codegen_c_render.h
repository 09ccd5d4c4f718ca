/* The C renderer's state while it writes one kernel, and the emitters its
 * files share (codegen_c.c: values, blocks and kernels without reductions;
 * codegen_c_reduce.c: passes and rows of kernels with them). */
#ifndef PORTA_CODEGEN_CODEGEN_C_RENDER_H
#define PORTA_CODEGEN_CODEGEN_C_RENDER_H

#include "codegen/codegen_c_internal.h"

typedef struct render {
    const kir_kernel *k;
    core_text *t;
    int block; /* KIR_B */
    bool scalar[KIR_MAX_VALUES];  /* one value per span (no reductions) or row */
    int level[KIR_MAX_VALUES];    /* reductions needed before the value exists */
    bool live[KIR_MAX_VALUES];    /* needed by a store */
    /* The pass being rendered: the array values it computes, and (caching)
     * those it reads back from the row cache instead. */
    bool needed[KIR_MAX_VALUES], from_cache[KIR_MAX_VALUES];
    /* Caching rows: array values a later pass needs again are kept for the
     * whole row in a scratch buffer (cache[]) when the row is short,
     * instead of being recomputed; first_pass[] is where each is computed. */
    bool caching;
    bool cache[KIR_MAX_VALUES];
    int first_pass[KIR_MAX_VALUES];
} render;

/* Rows of at most this many reduced elements keep values needed by later
 * passes (an exp in softmax) instead of recomputing them; 8 bytes each. */
#define ROW_CACHE_ELEMS 16384

/* Appends to the kernel's text. */
#define P(...) text_printf(r->t, __VA_ARGS__)

static inline bool is_half(porta_dtype d) { return d == PORTA_F16 || d == PORTA_BF16; }
static inline const char *half_name(porta_dtype d) { return d == PORTA_F16 ? "f16" : "bf16"; }
static inline bool is_float(porta_dtype d) {
    return is_half(d) || d == PORTA_F32 || d == PORTA_F64;
}
static inline int arg_count(const kir_value *v) {
    switch (v->kind) {
    case KIR_UNARY: case KIR_CAST: case KIR_REDUCE: return 1;
    case KIR_BINARY: return 2;
    case KIR_TERNARY: return 3;
    default: return 0;
    }
}

/* The operand expression of value id at element `index` (a scalar's name
 * whatever the index). */
const char *cg_ref(const render *r, int id, const char *index, char *buf, size_t cap);
/* Declares every scalar of the kernel (o<id>). */
void cg_declare_scalars(render *r);
/* Rounds float16/bfloat16 values at `target` (count of them) to their dtype. */
void cg_round_half(render *r, porta_dtype d, const char *target, const char *count);
/* Computes scalar value id (a constant, parameter, OUTER load or op). */
void cg_emit_scalar(render *r, int id);
/* Computes array value id over the block's m elements (v<id>). */
void cg_emit_array(render *r, int id);
/* Writes the block's m elements of FULL store access a. */
void cg_emit_array_store(render *r, int a);
/* Typed pointers p<a> (and innermost strides s<a>) of FULL accesses at base[]. */
void cg_emit_pointers(render *r, const char *base, const bool *used);
/* base[a] += the offset of `index` decomposed over dims [first, last]. */
void cg_emit_decompose(render *r, const char *index, const char *base, int first, int last);
/* The loop over blocks of `count` elements starting at column `start`:
 * `body` (which sees m, the block's length, and col, its first column) is
 * emitted for full blocks (m the constant KIR_B, so the compiler vectorizes
 * every loop without a tail), then, when chunk > 0, for what is left in
 * pieces of `chunk` (also constant), and for the last, shorter piece. */
void cg_emit_blocks(render *r, const char *count, const char *start, int chunk,
                    void (*body)(render *r, void *ctx), void *ctx);

/* Narrow pieces of a span (a GEMM's epilogue strips are a few vectors
 * wide): 16 elements are one 512-bit vector of float. */
#define NARROW 16

/* kir_row (and kir_row_cached) and kir_main of a kernel with reductions. */
void cg_render_reduction(render *r);

#endif
