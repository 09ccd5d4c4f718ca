/* The README's C example: a matrix product and a reduction on porta:0. */
#include <stdio.h>

#include "porta.h"

#define CHECK(call)                                                       \
    do {                                                                  \
        porta_status *s_ = (call);                                        \
        if (s_) {                                                         \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,            \
                    porta_status_message(s_));                            \
            porta_status_free(s_);                                        \
            return 1;                                                     \
        }                                                                 \
    } while (0)

int main(void) {
    porta_device *cpu;
    CHECK(porta_device_get(0, &cpu));

    const float a_data[2][3] = {{1, 2, 3}, {4, 5, 6}};
    const float b_data[3][2] = {{1, 0}, {0, 1}, {1, 1}};
    porta_tensor *a, *b, *c = NULL, *total = NULL;
    CHECK(porta_tensor_from_host(cpu, PORTA_F32, 2, (int64_t[]){2, 3}, a_data, &a));
    CHECK(porta_tensor_from_host(cpu, PORTA_F32, 2, (int64_t[]){3, 2}, b_data, &b));

    CHECK(porta_matmul(a, b, &c));                                   /* [2, 2] */
    CHECK(porta_reduce(PORTA_REDUCE_SUM, c, (int[]){1}, 1, false, &total)); /* [2] */

    float result[2];
    CHECK(porta_tensor_to_host(total, result, sizeof result));
    printf("row sums of a @ b: %g %g\n", result[0], result[1]); /* 9 21 */

    /* Bad input is an error value, never a crash. */
    porta_tensor *bad = NULL;
    porta_status *status = porta_matmul(a, a, &bad);
    printf("a @ a: %s\n", porta_status_message(status));
    porta_status_free(status);

    porta_tensor_release(total);
    porta_tensor_release(c);
    porta_tensor_release(b);
    porta_tensor_release(a);
    return 0;
}
