/* Pointwise ops lay their results out like their channels-last operands, as
 * PyTorch's TensorIterator does. */
#ifndef PORTA_ATEN_DISPATCH_POINTWISE_LAYOUT_H
#define PORTA_ATEN_DISPATCH_POINTWISE_LAYOUT_H

#include "aten/aten.h"

/* Runs the pointwise op `fn` (aten overload `name`). When its first
 * operand of the highest rank (4 or 5) is laid out channels-last, every
 * operand is viewed with the channel dim moved last (lower-rank operands
 * first get the leading size-1 dims broadcasting gives them): those views
 * are contiguous, so the op computes in NHWC order, and its results viewed
 * back have channels-last strides, with no copy. In-place and out= variants
 * write where they are told and run as they are. */
porta_status *aten_call_pointwise(aten_fn fn, const char *name, const porta_value *args,
                                  int arg_count, aten_results *results);

#endif
