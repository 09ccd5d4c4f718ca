/* The default random generator of each porta device, as torch.cuda keeps
 * one per GPU: a Philox (seed, offset) pair (see core/philox.h for how a
 * (seed, offset) defines a stream). Every random aten op reserves the
 * stream positions it consumes here, so the same seed gives the same
 * numbers on every backend and each op's draw is deterministic.
 *
 * For other families (native_dropout, ...): call aten_generator_next with
 * the number of random values the op draws (usually the result's numel),
 * then fill with porta_random_uniform/normal(dst, seed, offset, ...). */
#ifndef PORTA_ATEN_RANDOM_STATE_H
#define PORTA_ATEN_RANDOM_STATE_H

#include "porta.h"

/* Reserves `count` stream positions of `device`'s generator: *seed and
 * *offset name the first; the generator then moves past them (rounded up
 * to a whole Philox block of 4, so each draw starts on a block boundary,
 * as CUDA's Philox offsets do). */
porta_status *aten_generator_next(porta_device *device, uint64_t count, uint64_t *seed,
                                  uint64_t *offset);
/* dst filled with U[a, b) (normal: N(a, b)) from the next positions of its
 * device's stream: what every random op draws its numbers with. */
porta_status *aten_random_fill(porta_tensor *dst, bool normal, double a, double b);

#endif
