/* Operands of aten ops: numbers standing in for tensors, type promotion
 * across tensors and numbers, devices. */
#include "aten/aten.h"
#include "core/status.h"
#include "runtime/tensor.h"

double aten_number(const porta_value *v) {
    switch (v->kind) {
    case PORTA_VALUE_INT: return (double)v->i;
    case PORTA_VALUE_FLOAT: return v->f;
    case PORTA_VALUE_BOOL: return v->b ? 1.0 : 0.0;
    default: return 0.0;
    }
}

porta_dtype aten_number_dtype(const porta_value *v) {
    return v->kind == PORTA_VALUE_FLOAT ? PORTA_F32 : v->kind == PORTA_VALUE_BOOL ? PORTA_BOOL : PORTA_I64;
}

porta_dtype aten_result_type(const porta_value *const *operands, int count) {
    porta_operand_type types[16];
    int n = 0;
    for (int i = 0; i < count && n < 16; i++) {
        const porta_value *v = operands[i];
        if (v->kind == PORTA_VALUE_TENSOR)
            types[n++] = (porta_operand_type){v->tensor->dtype, v->tensor->rank
                                                                    ? PORTA_OPERAND_TENSOR
                                                                    : PORTA_OPERAND_ZERO_DIM};
        else if (aten_is_number(v))
            types[n++] = (porta_operand_type){v->kind == PORTA_VALUE_FLOAT ? PORTA_F64
                                              : v->kind == PORTA_VALUE_BOOL ? PORTA_BOOL
                                                                            : PORTA_I64,
                                              PORTA_OPERAND_SCALAR};
    }
    return porta_result_type(types, n);
}

porta_dtype aten_compute_dtype(porta_dtype dtype) {
    return dtype == PORTA_F16 || dtype == PORTA_BF16 ? PORTA_F32 : dtype;
}

porta_device *aten_device_of(const porta_value *const *operands, int count) {
    for (int i = 0; i < count; i++)
        if (operands[i]->kind == PORTA_VALUE_TENSOR) return operands[i]->tensor->buffer->device;
    porta_device *cpu = NULL;
    porta_status_free(porta_device_get(0, &cpu));
    return cpu;
}

porta_status *aten_operand(const porta_value *v, porta_device *device, porta_dtype dtype,
                           porta_tensor **out) {
    if (v->kind == PORTA_VALUE_TENSOR) {
        porta_tensor_retain(v->tensor);
        *out = v->tensor;
        return NULL;
    }
    return porta_tensor_full(device, dtype, 0, NULL, aten_number(v), out);
}

porta_status *aten_device_arg(const porta_value *v, porta_device **out) {
    return porta_device_get(v->kind == PORTA_VALUE_INT ? (int)v->i : 0, out);
}
