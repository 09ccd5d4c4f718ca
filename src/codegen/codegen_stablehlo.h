/* Kernel IR -> a StableHLO module (MLIR text), for devices whose compiler
 * takes StableHLO (the PJRT backend: XLA, libtpu, GPU vendors' plugins).
 *
 * StableHLO shapes are static, so unlike the C and OpenCL renderers the
 * module depends on the run's sizes and strides and on the byte size of
 * each buffer: one module per kernel and shape. What changes from run to
 * run without changing the shapes stays out of the text: each access's
 * element offset and the kernel's parameters (a learning rate) arrive in
 * one small scalar buffer, so a view of a buffer at another offset or a new
 * learning rate runs the module compiled before.
 *
 * The module's @main takes one tensor<N x ui8> per distinct buffer (N its
 * bytes, in buffer order), then, when it reads an offset or a parameter,
 * the scalar buffer (tensor<SHLO_SCALAR_BYTES x ui8>, shlo_pack_scalars),
 * and returns one
 * tensor<N x ui8> per buffer some access stores to, in buffer order: the
 * buffer's new bytes. Loads read the buffers as they were before the
 * kernel; stores to one buffer apply in access order. */
#ifndef PORTA_CODEGEN_CODEGEN_STABLEHLO_H
#define PORTA_CODEGEN_CODEGEN_STABLEHLO_H

#include <stdbool.h>
#include <stdint.h>

#include "ir/kernel_ir.h"
#include "ir/prim.h"

/* The run-time facts a module is specialized for. */
typedef struct shlo_layout {
    int64_t sizes[PORTA_MAX_RANK];                       /* the domain (kir_args.sizes) */
    int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK];   /* kir_args.strides */
    int buffer[KIR_MAX_ACCESSES]; /* each access's buffer: 0..buffer_count-1 */
    int buffer_count;
    int64_t buffer_bytes[KIR_MAX_ACCESSES]; /* per buffer */
} shlo_layout;

/* The scalar buffer: int64 slot a is access a's element offset, slot
 * KIR_MAX_ACCESSES + p holds parameter p's float64 bits. */
#define SHLO_SCALAR_SLOTS (KIR_MAX_ACCESSES + KIR_MAX_PARAMS)
#define SHLO_SCALAR_BYTES (SHLO_SCALAR_SLOTS * 8)
void shlo_pack_scalars(const int64_t *offsets, int access_count, const double *params,
                       int64_t slots[SHLO_SCALAR_SLOTS]);

/* Whether the renderer spells this value (the C renderer's set: the same
 * ops with the same semantics). */
bool shlo_supports(const kir_value *value, porta_dtype arg_dtype);

/* Whether buffer b is among the module's results (some access stores to
 * it). */
bool shlo_buffer_stored(const kir_kernel *kernel, const shlo_layout *layout, int b);

/* The module of `kernel` (checked first with kir_check) for `layout`, in
 * *text (malloc'd, NUL-terminated), and whether it takes the scalar buffer
 * (takes_scalars may be NULL). Unsupported ops, views that do not fit
 * their buffer's bytes and malformed layouts are errors. */
porta_status *kir_render_stablehlo(const kir_kernel *kernel, const shlo_layout *layout,
                                   char **text, bool *takes_scalars);

/* A MATMUL primitive (ir/prim.h): a [..., M, K] times b [..., K, N] into
 * out [..., M, N], one float dtype, as stablehlo.dot_general with the
 * leading dims as batch dims. Accesses 0, 1, 2 of `layout` are a, b and out
 * (its sizes unused: each operand has its own), their offsets slots 0..2.
 * With an epilogue (an elementwise kernel over out's domain that reads the
 * product, run_matmul_epilogue in runtime/device.h), both are one module:
 * the kernel's accesses and buffer sizes are epilogue_layout's (the same
 * buffer numbering as layout's, which gives only a, b and out), its
 * offsets take slots 0.. and the operands' follow them. */
typedef struct shlo_matmul {
    porta_dtype dtype;
    int rank; /* of each operand */
    int64_t a_sizes[PORTA_MAX_RANK], b_sizes[PORTA_MAX_RANK], out_sizes[PORTA_MAX_RANK];
    shlo_layout layout;
    const kir_kernel *epilogue; /* NULL: none */
    shlo_layout epilogue_layout;
} shlo_matmul;
porta_status *shlo_render_matmul(const shlo_matmul *matmul, char **text, bool *takes_scalars);

/* A primitive other than the kernel-IR kinds and MATMUL as one module
 * (codegen_stablehlo_prim.c): PAD, GATHER, INDEX_SELECT, SCATTER (rank >= 1;
 * duplicates combine in index order, as the XLA CPU plugin applies them),
 * SORT, POOL_MAX, CONV (bias optional), CONV_INPUT_GRAD and
 * CONV_WEIGHT_GRAD, with the CPU kernels' semantics (ir/prim.h). Operands
 * 0..count-2 are the inputs, the last is out; layout's access i is operand
 * i (its strides, buffer and the buffer's bytes; the domain unused), its
 * offset in slot i. Index values must already be known to lie in range:
 * the module cannot report an error, so the caller checks them as the CPU
 * does. */
#define SHLO_PRIM_MAX_OPERANDS 4
typedef struct shlo_prim {
    ir_prim prim;
    int count;
    porta_dtype dtype[SHLO_PRIM_MAX_OPERANDS];
    int rank[SHLO_PRIM_MAX_OPERANDS];
    int64_t sizes[SHLO_PRIM_MAX_OPERANDS][PORTA_MAX_RANK];
    shlo_layout layout;
} shlo_prim;
/* Whether shlo_render_prim spells this primitive of inputs of these dtypes
 * and ranks. */
bool shlo_prim_supported(const ir_prim *prim, const porta_dtype *dtypes, const int *ranks,
                         int input_count);
porta_status *shlo_render_prim(const shlo_prim *prim, char **text, bool *takes_scalars);

#endif
