/* A kernel's domain made as small as it can be: dims every access walks
 * alike merged into one, which makes loops fewer and innermost runs longer
 * and lets one compiled kernel serve many shapes. Shared by the scheduler
 * (group_close.c) and the single-primitive kernels (kir_single.c). */
#ifndef PORTA_CODEGEN_KIR_LAYOUT_H
#define PORTA_CODEGEN_KIR_LAYOUT_H

#include "ir/kernel_ir.h"
#include "ir/prim.h"
#include "runtime/tensor.h"

/* Merges the domain sizes[rank], whose last `reduced` dims are reduced (0:
 * no reduction), for the kernel's accesses walked with strides[access]
 * (OUTER accesses: only the outer dims count). Fills args' sizes and
 * strides (the rest of args zeroed), the kernel's rank and outer_rank, and
 * each access's `last`. */
void kir_merge_dims(kir_kernel *kernel, int rank, int reduced, const int64_t *sizes,
                    const int64_t (*strides)[PORTA_MAX_RANK], kir_args *args);

/* Sets each access's `last` from args' innermost strides. */
void kir_classify_last(kir_kernel *kernel, const kir_args *args);

#endif

/* Binds tensor t to access a of args (kernel_abi.h): its address on a
 * host-memory device, else its buffer's handle and element offset. */
void kir_bind_tensor(kir_args *args, int access, const porta_tensor *t);

/* The kernel of one primitive alone — an elementwise op, cast, fill, or a
 * SUM/PROD/MAX/MIN/ANY/ALL reduction over any axes (moved last) — for
 * backends that run eager ops through their compiler. Fills kernel, args
 * (sizes, strides, the fill's value as parameter 0; not the buffers) and
 * work (elements, or rows). False when the kernel IR cannot express it. */
bool kir_single(const ir_prim *prim, const porta_tensor *const *inputs, int input_count,
                const porta_tensor *out, kir_kernel *kernel, kir_args *args, int64_t *work);
