/* Inference for PRIM_RANDOM: the output is exactly the requested float
 * tensor, once the distribution's parameters make sense. */
#include <math.h>
#include <string.h>

#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_layout.h"
#include "ir/infer.h"

static porta_status *check_distribution(const char *op, const ir_prim *prim) {
    if (prim->normal) {
        if (!isfinite(prim->value))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: mean must be finite, got %g", op,
                               prim->value);
        if (!(prim->value2 >= 0.0) || !isfinite(prim->value2))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: expected a finite std >= 0, got %g", op, prim->value2);
        return NULL;
    }
    if (!isfinite(prim->value) || !isfinite(prim->value2))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: bounds must be finite, got [%g, %g)", op, prim->value,
                           prim->value2);
    if (prim->value > prim->value2)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: expected low <= high, got low %g > high %g", op, prim->value,
                           prim->value2);
    if (!isfinite(prim->value2 - prim->value))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "%s: the range [%g, %g) is too wide to sample", op, prim->value,
                           prim->value2);
    return NULL;
}

porta_status *ir_infer_random(ir_prim *prim, const ir_meta *inputs, int input_count,
                                 ir_meta *out) {
    const char *op = ir_prim_name(prim);
    if (input_count != 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: expected no inputs, got %d", op,
                           input_count);
    if (!core_dtype_is_valid((int)prim->dtype) || !porta_dtype_is_float(prim->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "%s: expected a floating-point dtype (float16, bfloat16, float32 or "
                           "float64), got %s",
                           op, core_dtype_is_valid((int)prim->dtype)
                                   ? porta_dtype_name(prim->dtype) : "an invalid dtype");
    if (prim->rank < 0 || prim->rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "%s: rank must be 0..%d, got %d", op,
                           PORTA_MAX_RANK, prim->rank);
    for (int i = 0; i < prim->rank; i++)
        if (prim->sizes[i] < 0)
            return porta_error(PORTA_ERR_SHAPE, "%s: size %lld at axis %d is negative", op,
                               (long long)prim->sizes[i], i);
    if (core_shape_numel(prim->rank, prim->sizes) < 0) {
        char buf[CORE_SHAPE_STR_CAP];
        return porta_error(PORTA_ERR_SHAPE, "%s: shape %s has too many elements", op,
                           core_format_shape(buf, sizeof buf, prim->rank, prim->sizes));
    }
    PORTA_TRY(check_distribution(op, prim));
    /* Sizes past the rank take no part in the result; zero them so equal
     * requests hash equal. */
    for (int i = prim->rank; i < PORTA_MAX_RANK; i++) prim->sizes[i] = 0;
    memset(out, 0, sizeof *out);
    out->dtype = prim->dtype;
    out->rank = prim->rank;
    if (prim->rank) memcpy(out->sizes, prim->sizes, (size_t)prim->rank * sizeof out->sizes[0]);
    return NULL;
}
