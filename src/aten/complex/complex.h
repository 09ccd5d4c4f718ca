/* Complex tensors in the aten layer. Backends have no complex kernels: an
 * op on complex operands runs on their (real, imag) pair views
 * (porta_view_as_real) as real primitives. Calls that involve a complex
 * tensor or dtype go through aten_complex_run, which picks the op's complex
 * implementation, or the op's own where that serves complex tensors as they
 * are (views, copies, fills), and otherwise refuses the call rather than
 * let a real formula read the pairs. */
#ifndef PORTA_ATEN_COMPLEX_COMPLEX_H
#define PORTA_ATEN_COMPLEX_COMPLEX_H

#include "aten/aten.h"

/* Whether args hold a complex tensor (alone or in a list) or name a
 * complex dtype. */
bool aten_complex_involved(const porta_value *args, int arg_count);
/* The complex implementations of ops of the op table (arith.c, elementary.c,
 * reduce_matmul.c), by the op's name and argument kinds. */
extern const aten_op aten_complex_arith_ops[];
extern const aten_op aten_complex_elementary_ops[];
extern const aten_op aten_complex_reduce_matmul_ops[];

/* Whether `op` computes on complex operands (aten_complex_run runs it). */
bool aten_complex_takes(const aten_op *op);
/* Runs `op` on a call aten_complex_involved accepts. */
porta_status *aten_complex_run(const aten_op *op, const porta_value *args, int arg_count,
                               aten_results *results);

#endif
