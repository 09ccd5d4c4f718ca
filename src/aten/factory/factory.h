/* Helpers the factory and random aten ops share: the default dtype, sizes
 * arguments, scalar values converted as PyTorch converts them. */
#ifndef PORTA_ATEN_FACTORY_FACTORY_H
#define PORTA_ATEN_FACTORY_FACTORY_H

#include "aten/aten.h"

/* PyTorch's default float dtype (torch.get_default_dtype()), which the
 * binding keeps in step with torch.set_default_dtype. */
porta_dtype aten_default_dtype(void);

/* The dtype a factory makes: the 'd' argument, or the default dtype. */
porta_dtype aten_dtype_or_default(const porta_value *dtype);

/* The device a factory's 'D' argument names (None: porta:0); a missing
 * index is a RuntimeError in PyTorch (CUDA's "invalid device ordinal"),
 * not an IndexError. */
porta_status *aten_factory_device(const porta_value *device, porta_device **out);

/* A new contiguous tensor of `sizes` (an 'I' argument) on the 'D' device;
 * negative sizes are rejected as PyTorch rejects them. */
porta_status *aten_new_tensor(const porta_value *sizes, porta_dtype dtype,
                              const porta_value *device, porta_tensor **out);

/* Checks that a number fits `dtype` as PyTorch's checked conversion does
 * ("value cannot be converted to type uint8_t without overflow"). */
porta_status *aten_check_fits(const porta_value *number, porta_dtype dtype);

/* Sets every element of dst to the number, exactly (int64 values keep all
 * their bits), cast to dst's dtype. */
porta_status *aten_fill_number(porta_tensor *dst, const porta_value *number);


#endif
