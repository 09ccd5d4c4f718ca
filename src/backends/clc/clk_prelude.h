/* The text every program of both backends begins with (clk_prelude.c):
 * fixed-width integer names, double (float where the device has no fp64),
 * float16/bfloat16 conversions kir_f16_to_f32, kir_f32_to_f16,
 * kir_bf16_to_f32, kir_f32_to_bf16 (ushort storage, the CPU's rounding),
 * and the C renderer's helpers. */
#ifndef PORTA_BACKENDS_CLC_CLK_PRELUDE_H
#define PORTA_BACKENDS_CLC_CLK_PRELUDE_H

/* The text, joined once; NULL when out of memory. */
const char *clk_prelude(void);

#endif
