/* Two things ops composed from other aten ops share: running a registered
 * op by name (so a composition reuses its checks and lowering instead of
 * repeating them) and out= results written the way PyTorch writes them. */
#ifndef PORTA_ATEN_OP_REUSE_H
#define PORTA_ATEN_OP_REUSE_H

#include "aten/aten.h"

/* Runs the registered op `name` on args and hands over its first result,
 * which must be a tensor. */
porta_status *aten_call_op(const char *name, const porta_value *args, int arg_count,
                           porta_tensor **out);

/* The out= variant of `fn`: fn computes `count` new results from the
 * leading arguments; each goes into args[first_out + i] when the shapes
 * match (cast to its dtype, which the result's must cast to safely) and
 * that tensor is returned, else the new result is returned and the binding
 * resizes the out tensor to it, as PyTorch resizes outs. */
/* Hands `result` (a new tensor, whose reference passes here) back as an
 * out= op's result: written into out (cast to out's dtype, which result's
 * must cast to safely) and out returned when the shapes match; else result
 * itself is returned and the binding resizes out to it, as PyTorch resizes
 * a wrongly-shaped out. */
porta_status *aten_into_out(porta_tensor *result, porta_tensor *out, aten_results *results);

porta_status *aten_into_outs(aten_fn fn, const porta_value *args, int first_out, int count,
                             aten_results *results);

#endif
