/* grid_sampler_2d and 3d and their backward ops (nn/sample_grid.c), listed in the
 * sampling ops' table (nn/sample.c). */
#ifndef PORTA_ATEN_NN_SAMPLE_GRID_H
#define PORTA_ATEN_NN_SAMPLE_GRID_H

#include "aten/aten.h"

porta_status *aten_grid_sampler_2d(const porta_value *args, aten_results *results);
porta_status *aten_grid_sampler_2d_backward(const porta_value *args, aten_results *results);
porta_status *aten_grid_sampler_3d(const porta_value *args, aten_results *results);
porta_status *aten_grid_sampler_3d_backward(const porta_value *args, aten_results *results);

#endif
