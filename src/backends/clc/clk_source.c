/* Program text and kernel names of the library. */
#include "backends/clc/clk_source.h"

#include <stdlib.h>
#include <string.h>

char *clk_join(const char *head, const char *tail) {
    if (!head || !tail) return NULL;
    size_t a = strlen(head), b = strlen(tail);
    char *text = malloc(a + b + 1);
    if (!text) return NULL;
    memcpy(text, head, a);
    memcpy(text + a, tail, b + 1);
    return text;
}

const char *clk_dtype_suffix(porta_dtype dtype) {
    static const char *const names[PORTA_DTYPE_COUNT] = {
        [PORTA_BOOL] = "b8", [PORTA_U8] = "u8",     [PORTA_I8] = "i8",
        [PORTA_I16] = "i16", [PORTA_I32] = "i32",   [PORTA_I64] = "i64",
        [PORTA_F16] = "f16", [PORTA_BF16] = "bf16", [PORTA_F32] = "f32",
        [PORTA_F64] = "f64",
    };
    return (unsigned)dtype < PORTA_DTYPE_COUNT && names[dtype] ? names[dtype] : "unknown";
}
