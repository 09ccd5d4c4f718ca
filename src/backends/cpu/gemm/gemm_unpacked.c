/* GEMM without packing, for problems too small to pay for it and for
 * k == 0, where it reduces to C = beta C. */
#include "gemm_internal.h"

void gemm_run_unpacked(const gemm_problem *p) {
    for (int64_t j = 0; j < p->n; j++) {
        for (int64_t i = 0; i < p->m; i++) {
            const float *a = p->a + i * p->a_rs;
            const float *b = p->b + j * p->b_cs;
            float sum = 0.0f;
            for (int64_t q = 0; q < p->k; q++) sum += a[q * p->a_cs] * b[q * p->b_rs];
            float *c = p->c + i * p->c_rs + j * p->c_cs;
            *c = p->beta == 0.0f ? sum : sum + p->beta * *c;
        }
    }
}
