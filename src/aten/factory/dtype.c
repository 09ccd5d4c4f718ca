/* The default float dtype: torch.get_default_dtype(), pushed here by the
 * binding because libporta cannot ask PyTorch. */
#include <stdatomic.h>

#include "aten/factory/factory.h"

static atomic_int default_dtype = PORTA_F32;

void porta_aten_set_default_dtype(porta_dtype dtype) {
    if (dtype == PORTA_F16 || dtype == PORTA_BF16 || dtype == PORTA_F32 || dtype == PORTA_F64)
        atomic_store(&default_dtype, (int)dtype);
}

porta_dtype aten_default_dtype(void) {
    return (porta_dtype)atomic_load(&default_dtype);
}

porta_dtype aten_dtype_or_default(const porta_value *dtype) {
    return dtype->kind == PORTA_VALUE_DTYPE ? dtype->dtype : aten_default_dtype();
}
