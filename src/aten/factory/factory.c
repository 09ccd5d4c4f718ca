/* Factory aten ops that make or fill whole tensors: empty, empty_strided,
 * full, scalar_tensor, empty_like, full_like, fill, zero_. Shared helpers for the other factory and
 * random files live here too (factory.h). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "aten/factory/factory.h"
#include "aten/shape/copy.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* Checks an 'I' sizes argument as PyTorch does, naming the whole shape. */
static porta_status *check_sizes(const porta_value *sizes) {
    if (sizes->ints.count > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "cannot create a tensor of %d dimensions: porta allows at most %d",
                           sizes->ints.count, PORTA_MAX_RANK);
    for (int i = 0; i < sizes->ints.count; i++)
        if (sizes->ints.items[i] < 0) {
            char shape[CORE_SHAPE_STR_CAP];
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "Trying to create tensor with negative dimension %lld: %s",
                               (long long)sizes->ints.items[i],
                               core_format_shape(shape, sizeof shape, sizes->ints.count,
                                                  sizes->ints.items));
        }
    return NULL;
}

porta_status *aten_factory_device(const porta_value *device, porta_device **out) {
    int index = device->kind == PORTA_VALUE_INT ? (int)device->i : 0;
    if (index < 0 || index >= porta_device_count())
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "porta:%d does not exist: %d porta device(s)",
                           index, porta_device_count());
    return porta_device_get(index, out);
}

porta_status *aten_new_tensor(const porta_value *sizes, porta_dtype dtype,
                              const porta_value *device, porta_tensor **out) {
    PORTA_TRY(check_sizes(sizes));
    porta_device *dev;
    PORTA_TRY(aten_factory_device(device, &dev));
    return porta_tensor_empty(dev, dtype, sizes->ints.count, sizes->ints.items, out);
}

/* The C++ type names PyTorch's overflow message uses. */
static const char *cpp_type_name(porta_dtype dtype) {
    static const char *const names[PORTA_DTYPE_COUNT] = {
        "bool", "uint8_t", "int8_t", "int16_t", "int", "int64_t",
        "c10::Half", "c10::BFloat16", "float", "double",
        "c10::complex<float>", "c10::complex<double>"};
    return names[dtype];
}

/* The largest value of an integer dtype. */
static double integer_max(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_U8: return 255.0;
    case PORTA_I8: return 127.0;
    case PORTA_I16: return 32767.0;
    case PORTA_I32: return 2147483647.0;
    default: return 9223372036854775807.0;
    }
}

/* c10::overflows: an int may wrap into an unsigned type (-1 -> 255) but a
 * float may not; float16/bfloat16/float64 take anything, float32 rounds
 * infinities and NaN through but not finite values beyond its range. */
static bool overflows(const porta_value *number, porta_dtype dtype) {
    if (number->kind == PORTA_VALUE_BOOL || dtype == PORTA_BOOL) return false;
    double v = aten_number(number);
    if (dtype == PORTA_F32) return isfinite(v) && fabs(v) > FLT_MAX;
    if (porta_dtype_is_float(dtype)) return false;
    double max = integer_max(dtype);
    if (number->kind == PORTA_VALUE_INT) {
        if (dtype == PORTA_I64) return false; /* every int64 fits */
        return v > max || v < (dtype == PORTA_U8 ? -max : -max - 1);
    }
    if (isnan(v) || isinf(v)) return true;
    return v > max || v < (dtype == PORTA_U8 ? 0.0 : -max - 1);
}

porta_status *aten_check_fits(const porta_value *number, porta_dtype dtype) {
    if (overflows(number, dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "value cannot be converted to type %s without overflow",
                           cpp_type_name(dtype));
    return NULL;
}

porta_status *aten_fill_number(porta_tensor *dst, const porta_value *number) {
    PORTA_TRY(aten_check_fits(number, dst->dtype));
    /* A rank-0 tensor of the number's own type, copied (cast, broadcast):
     * a double could not carry every int64. */
    porta_dtype dtype = number->kind == PORTA_VALUE_INT    ? PORTA_I64
                        : number->kind == PORTA_VALUE_BOOL ? PORTA_BOOL
                                                           : PORTA_F64;
    union { int64_t i; bool b; double f; } value;
    if (dtype == PORTA_I64) value.i = number->i;
    else if (dtype == PORTA_BOOL) value.b = number->b;
    else value.f = number->f;
    porta_tensor *scalar = NULL;
    PORTA_TRY(porta_tensor_from_host(dst->buffer->device, dtype, 0, NULL, &value, &scalar));
    porta_status *status = porta_copy(scalar, dst);
    porta_tensor_release(scalar);
    return status;
}

/* A new tensor of `sizes` filled with `value`; `results` takes it. */
static porta_status *make_full(const porta_value *sizes, const porta_value *value,
                               porta_dtype dtype, const porta_value *device,
                               aten_results *results) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_new_tensor(sizes, dtype, device, &out));
    porta_status *status = aten_fill_number(out, value);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(results, out);
}

/* The dtype torch.full and torch.scalar_tensor infer from the value. */
static porta_dtype dtype_of_value(const porta_value *dtype, const porta_value *value) {
    if (dtype->kind == PORTA_VALUE_DTYPE) return dtype->dtype;
    return value->kind == PORTA_VALUE_FLOAT ? aten_default_dtype() : aten_number_dtype(value);
}

/* empty(size, dtype, layout, device, pin_memory, memory_format) */
/* empty(size, dtype, layout, device, pin_memory, memory_format): contiguous,
 * or channels-last strides when asked (preserve means contiguous here:
 * there is nothing to preserve). */
static porta_status *empty(const porta_value *args, aten_results *r) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_new_tensor(&args[0], aten_dtype_or_default(&args[1]), &args[3], &out));
    const porta_value *format = &args[5];
    if (format->kind != PORTA_VALUE_INT || format->i == PORTA_MEMORY_CONTIGUOUS ||
        format->i == PORTA_MEMORY_PRESERVE)
        return aten_push_tensor(r, out);
    porta_tensor *laid_out = NULL;
    porta_status *status = aten_empty_like("empty", out, out->dtype, porta_tensor_device(out),
                                           format, &laid_out);
    porta_tensor_release(out);
    PORTA_TRY(status);
    return aten_push_tensor(r, laid_out);
}

/* Elements a layout reaches: one past the farthest, 0 when any size is 0. */
static int64_t strided_extent(int rank, const int64_t *sizes, const int64_t *strides) {
    int64_t extent = 1;
    for (int i = 0; i < rank; i++) {
        if (sizes[i] == 0) return 0;
        extent += (sizes[i] - 1) * (strides[i] < 0 ? -strides[i] : strides[i]);
    }
    return extent;
}

/* empty_strided(size, stride, dtype, layout, device, pin_memory): a fresh
 * buffer just large enough for the layout. */
static porta_status *empty_strided(const porta_value *args, aten_results *r) {
    const porta_value *sizes = &args[0], *strides = &args[1];
    PORTA_TRY(check_sizes(sizes));
    if (strides->ints.count != sizes->ints.count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "mismatch in length of strides and shape: %d strides for %d sizes",
                           strides->ints.count, sizes->ints.count);
    for (int i = 0; i < strides->ints.count; i++)
        if (strides->ints.items[i] < 0)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "empty_strided: negative stride %lld is not supported",
                               (long long)strides->ints.items[i]);
    porta_dtype dtype = aten_dtype_or_default(&args[2]);
    porta_device *device;
    PORTA_TRY(aten_factory_device(&args[4], &device));
    int rank = sizes->ints.count;
    int64_t extent = strided_extent(rank, sizes->ints.items, strides->ints.items);
    porta_buffer *buffer = NULL;
    PORTA_TRY(porta_buffer_alloc(device, (size_t)extent * porta_dtype_size(dtype), &buffer));
    porta_tensor *out = NULL;
    porta_status *status = porta_tensor_view(buffer, dtype, rank, sizes->ints.items,
                                             strides->ints.items, 0, &out);
    porta_buffer_release(buffer);
    return status ? status : aten_push_tensor(r, out);
}

/* full(size, fill_value, dtype, layout, device, pin_memory) */
static porta_status *full(const porta_value *args, aten_results *r) {
    return make_full(&args[0], &args[1], dtype_of_value(&args[2], &args[1]), &args[4], r);
}

/* scalar_tensor(s, dtype, layout, device, pin_memory): unlike full, a
 * missing dtype means the default dtype whatever the value. */
static porta_status *scalar_tensor(const porta_value *args, aten_results *r) {
    porta_value no_sizes = {.kind = PORTA_VALUE_INTS, .ints = {NULL, 0}};
    return make_full(&no_sizes, &args[0], aten_dtype_or_default(&args[1]), &args[3], r);
}

/* _efficientzerotensor(size, dtype, layout, device, pin_memory): zeros
 * that PyTorch's backward formulas return for inputs with no gradient (sgn
 * of a real tensor); porta stores them like any other zeros. */
static porta_status *efficient_zero_tensor(const porta_value *args, aten_results *r) {
    porta_value zero = {.kind = PORTA_VALUE_INT, .i = 0};
    return make_full(&args[0], &zero, aten_dtype_or_default(&args[1]), &args[3], r);
}

/* A new tensor like self for the *_like factories, whose options
 * (dtype, layout, device, pin_memory, memory_format) start at `options`:
 * the dtype and device default to self's, the layout to preserve. */
static porta_status *new_like(const char *op, const porta_value *self,
                              const porta_value *options, porta_tensor **out) {
    const porta_value *dtype = &options[0], *device = &options[2], *format = &options[4];
    const porta_tensor *x = self->tensor;
    porta_device *target = x->buffer->device;
    if (device->kind == PORTA_VALUE_INT) PORTA_TRY(aten_factory_device(device, &target));
    return aten_empty_like(op, x, dtype->kind == PORTA_VALUE_DTYPE ? dtype->dtype : x->dtype,
                           target, format, out);
}

/* empty_like(self, dtype, layout, device, pin_memory, memory_format) */
static porta_status *empty_like(const porta_value *args, aten_results *r) {
    porta_tensor *out = NULL;
    PORTA_TRY(new_like("empty_like", &args[0], &args[1], &out));
    return aten_push_tensor(r, out);
}

/* full_like(self, fill_value, dtype, layout, device, pin_memory,
 * memory_format) */
static porta_status *full_like(const porta_value *args, aten_results *r) {
    porta_tensor *out = NULL;
    PORTA_TRY(new_like("full_like", &args[0], &args[2], &out));
    porta_status *status = aten_fill_number(out, &args[1]);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(r, out);
}

/* fill.Scalar(self, value): a new contiguous tensor shaped like self. */
static porta_status *fill(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor, *out = NULL;
    PORTA_TRY(porta_tensor_empty(self->buffer->device, self->dtype, self->rank, self->sizes, &out));
    porta_status *status = aten_fill_number(out, &args[1]);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(r, out);
}

/* Returns self, the in-place result (the binding hands back the input). */
static porta_status *push_self(porta_tensor *self, aten_results *r) {
    porta_tensor_retain(self);
    return aten_push_tensor(r, self);
}

/* fill_.Scalar(self, value) */
static porta_status *fill_scalar_(const porta_value *args, aten_results *r) {
    PORTA_TRY(aten_fill_number(args[0].tensor, &args[1]));
    return push_self(args[0].tensor, r);
}

/* fill_.Tensor(self, value): value is zero-dim (a CPU one arrives as a
 * number). */
static porta_status *fill_tensor_(const porta_value *args, aten_results *r) {
    if (args[1].kind != PORTA_VALUE_TENSOR) return fill_scalar_(args, r);
    const porta_tensor *value = args[1].tensor;
    if (value->rank != 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "fill_ only supports 0-dimension value tensor but got tensor with "
                           "%d dimensions.",
                           value->rank);
    PORTA_TRY(porta_copy(value, args[0].tensor));
    return push_self(args[0].tensor, r);
}

/* zero_(self) */
static porta_status *zero_(const porta_value *args, aten_results *r) {
    PORTA_TRY(porta_fill(args[0].tensor, 0.0));
    return push_self(args[0].tensor, r);
}

const aten_op aten_factory_ops[] = {
    {"empty.memory_format", "IdxDxm", empty},
    {"empty_strided", "IIdxDx", empty_strided},
    {"full", "IsdxDx", full},
    {"scalar_tensor", "sdxDx", scalar_tensor},
    {"_efficientzerotensor", "IdxDx", efficient_zero_tensor},
    {"empty_like", "TdxDxm", empty_like},
    {"full_like", "TsdxDxm", full_like},
    {"fill.Scalar", "Ts", fill},
    {"fill_.Scalar", "Ts", fill_scalar_},
    {"fill_.Tensor", "TT", fill_tensor_},
    {"zero_", "T", zero_},
    {NULL, NULL, NULL},
};
