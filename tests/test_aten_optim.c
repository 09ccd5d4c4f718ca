/* The fused optimizer steps (aten/optim/): one step of SGD with momentum
 * and of Adam and AdamW against the formulas worked out by hand, found_inf
 * skipping a step, and lists that do not match refused before anything is
 * written. */
#include <math.h>
#include <stdlib.h>

#include "test.h"

static porta_tensor *from_floats(int rank, const int64_t *sizes, const float *values) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, rank, sizes, values, &t);
    CHECK_MSG(!status, "from_host: %s", status ? porta_status_message(status) : "");
    porta_status_free(status);
    return t;
}

static porta_value list(porta_tensor *const *items, int count) {
    return (porta_value){.kind = PORTA_VALUE_TENSORS, .tensors = {items, count}};
}
static porta_value tensor(porta_tensor *t) {
    return (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = t};
}
static porta_value number(double f) { return (porta_value){.kind = PORTA_VALUE_FLOAT, .f = f}; }
static porta_value flag(bool b) { return (porta_value){.kind = PORTA_VALUE_BOOL, .b = b}; }
static const porta_value none = {.kind = PORTA_VALUE_NONE};

static porta_status *call(const char *name, porta_value *args, int count) {
    porta_value *results = NULL;
    int result_count = 0;
    porta_status *status = porta_aten_call(porta_aten_op_find(name), args, count, &results, &result_count);
    CHECK(status || result_count == 0); /* the schemas return () */
    porta_aten_results_free(results, result_count);
    return status;
}

static void check_values(const char *what, const porta_tensor *t, const double *want, int n) {
    double *got = test_to_doubles(t);
    test_close(what, got, want, n, 1e-6, 1e-7);
    free(got);
}

static porta_status *sgd(porta_tensor *param, porta_tensor *grad, porta_tensor *buffer,
                         bool first_step, porta_tensor *found_inf) {
    porta_value args[12] = {list(&param, 1), list(&grad, 1), list(&buffer, buffer ? 1 : 0),
                            number(0.1),  /* weight_decay */
                            number(0.9),  /* momentum */
                            number(0.5),  /* lr */
                            number(0.25), /* dampening */
                            flag(false), flag(false), flag(first_step),
                            none, found_inf ? tensor(found_inf) : none};
    return call("_fused_sgd_", args, 12);
}

TEST(test_aten_optim_fused_sgd_momentum_steps) {
    int64_t two = 2;
    porta_tensor *param = from_floats(1, &two, (float[]){1, -2});
    porta_tensor *grad = from_floats(1, &two, (float[]){0.5f, 4});
    porta_tensor *buffer = from_floats(1, &two, (float[]){0, 0});
    /* first step: g = grad + 0.1 * param = (0.6, 3.8); buffer = g;
     * param -= 0.5 * buffer */
    CHECK_OK(sgd(param, grad, buffer, true, NULL));
    check_values("sgd buffer 1", buffer, (double[]){0.6, 3.8}, 2);
    check_values("sgd param 1", param, (double[]){0.7, -3.9}, 2);
    /* second: g = (0.5 + 0.07, 4 - 0.39); buffer = 0.9 * buffer + 0.75 * g */
    CHECK_OK(sgd(param, grad, buffer, false, NULL));
    double b0 = 0.9 * 0.6 + 0.75 * 0.57, b1 = 0.9 * 3.8 + 0.75 * 3.61;
    check_values("sgd buffer 2", buffer, (double[]){b0, b1}, 2);
    check_values("sgd param 2", param, (double[]){0.7 - 0.5 * b0, -3.9 - 0.5 * b1}, 2);
    /* found_inf set: nothing moves */
    porta_tensor *found = from_floats(0, NULL, (float[]){1});
    CHECK_OK(sgd(param, grad, buffer, false, found));
    check_values("sgd skipped", param, (double[]){0.7 - 0.5 * b0, -3.9 - 0.5 * b1}, 2);
    porta_tensor_release(param);
    porta_tensor_release(grad);
    porta_tensor_release(buffer);
    porta_tensor_release(found);
}

TEST(test_aten_optim_fused_adam_and_adamw_first_step) {
    int64_t two = 2;
    for (int decoupled = 0; decoupled < 2; decoupled++) {
        porta_tensor *param = from_floats(1, &two, (float[]){1, -2});
        porta_tensor *grad = from_floats(1, &two, (float[]){0.5f, -4});
        porta_tensor *m = from_floats(1, &two, (float[]){0, 0});
        porta_tensor *v = from_floats(1, &two, (float[]){0, 0});
        porta_tensor *step = from_floats(0, NULL, (float[]){1});
        double lr = 0.01, beta1 = 0.9, beta2 = 0.999, decay = 0.1, eps = 1e-8;
        porta_value args[15] = {list(&param, 1), list(&grad, 1), list(&m, 1), list(&v, 1),
                                list(NULL, 0), list(&step, 1), number(lr), number(beta1),
                                number(beta2), number(decay), number(eps), flag(false), flag(false),
                                none, none};
        CHECK_OK(call(decoupled ? "_fused_adamw_" : "_fused_adam_", args, 15));
        double p0[2] = {1, -2}, g0[2] = {0.5, -4}, want_m[2], want_v[2], want_p[2];
        for (int i = 0; i < 2; i++) {
            double g = decoupled ? g0[i] : g0[i] + decay * p0[i];
            double p = decoupled ? p0[i] * (1 - lr * decay) : p0[i];
            want_m[i] = (1 - beta1) * g;
            want_v[i] = (1 - beta2) * g * g;
            /* bias corrections at step 1 undo the (1 - beta) factors */
            double denom = sqrt(want_v[i]) / sqrt(1 - beta2) + eps;
            want_p[i] = p - lr / (1 - beta1) * want_m[i] / denom;
        }
        check_values("adam exp_avg", m, want_m, 2);
        check_values("adam exp_avg_sq", v, want_v, 2);
        check_values(decoupled ? "adamw param" : "adam param", param, want_p, 2);
        porta_tensor_release(param);
        porta_tensor_release(grad);
        porta_tensor_release(m);
        porta_tensor_release(v);
        porta_tensor_release(step);
    }
}

TEST(test_aten_optim_fused_refuses_mismatched_lists) {
    int64_t two = 2, three = 3;
    porta_tensor *param = from_floats(1, &two, (float[]){1, 2});
    porta_tensor *grad = from_floats(1, &three, (float[]){1, 2, 3});
    /* momentum 0: no momentum buffers */
    porta_value args[12] = {list(&param, 1), list(&grad, 1), list(NULL, 0), number(0), number(0),
                            number(0.1), number(0), flag(false), flag(false), flag(false),
                            none, none};
    CHECK_ERR(call("_fused_sgd_", args, 12), PORTA_ERR_SHAPE,
              "grads[0] must have the shape of parameter 0");
    args[1] = list(NULL, 0);
    CHECK_ERR(call("_fused_sgd_", args, 12), PORTA_ERR_INVALID_ARGUMENT,
              "grads holds 0 tensors, expected 1 (one per parameter)");
    CHECK_ERR(sgd(param, param, NULL, false, NULL), PORTA_ERR_INVALID_ARGUMENT,
              "momentum_buffer_list holds 0 tensors, expected 1");
    check_values("untouched", param, (double[]){1, 2}, 2);
    porta_tensor_release(param);
    porta_tensor_release(grad);
}
