/* Two things ops composed from other aten ops share: running a registered
 * op by name (so a composition reuses its checks and lowering instead of
 * repeating them) and out= results written the way PyTorch writes them. */
#ifndef PORTA_ATEN_DISPATCH_OP_REUSE_H
#define PORTA_ATEN_DISPATCH_OP_REUSE_H

#include "aten/aten.h"

/* Runs the registered op `name` on args and hands over its first result,
 * which must be a tensor. */
porta_status *aten_call_op(const char *name, const porta_value *args, int arg_count,
                           porta_tensor **out);

/* Hands `result` (a new tensor, whose reference passes here) back as an
 * out= op's result: written into out (cast to out's dtype, which result's
 * must cast to safely) and out returned when the shapes match; else result
 * itself is returned and the binding resizes out to it, as PyTorch resizes
 * a wrongly-shaped out. */
porta_status *aten_into_out(porta_tensor *result, porta_tensor *out, aten_results *results);

/* The out= variant of `fn`: fn computes `count` new results from the
 * leading arguments; each is handed back as aten_into_out does, with
 * args[first_out + i] as its out tensor. */
porta_status *aten_into_outs(aten_fn fn, const porta_value *args, int first_out, int count,
                             aten_results *results);

/* The kernel `name` of an out= variant with one result: `fresh`'s result
 * handed back through the out tensor args[out_index] (aten_into_outs). */
#define ATEN_OUT_KERNEL(name, fresh, out_index)                               \
    static porta_status *name(const porta_value *args, aten_results *r) {     \
        return aten_into_outs(fresh, args, out_index, 1, r);                  \
    }

#endif
