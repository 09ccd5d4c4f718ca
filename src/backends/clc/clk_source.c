/* Kernel names of the library's programs. */
#include "backends/clc/clk_source.h"

const char *clk_dtype_suffix(porta_dtype dtype) {
    static const char *const names[PORTA_DTYPE_COUNT] = {
        [PORTA_BOOL] = "b8", [PORTA_U8] = "u8",     [PORTA_I8] = "i8",
        [PORTA_I16] = "i16", [PORTA_I32] = "i32",   [PORTA_I64] = "i64",
        [PORTA_F16] = "f16", [PORTA_BF16] = "bf16", [PORTA_F32] = "f32",
        [PORTA_F64] = "f64",
    };
    return (unsigned)dtype < PORTA_DTYPE_COUNT && names[dtype] ? names[dtype] : "unknown";
}
