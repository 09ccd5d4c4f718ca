/* The kernel of one primitive alone (kir_layout.h): how a backend whose
 * every kernel is compiled (OpenCL) runs eager elementwise ops and
 * reductions with the same renderer as fused ones. Sizes and strides are
 * run-time arguments and a fill's value a parameter, so one compiled
 * kernel serves every shape, layout class and value of an op and dtype. */
#include <string.h>

#include "codegen/codegen_c.h"
#include "codegen/kir_layout.h"

static int add_access(kir_kernel *k, int64_t (*strides)[PORTA_MAX_RANK], porta_dtype dtype,
                      kir_space space, const int64_t *access_strides, int rank) {
    int a = k->access_count++;
    k->accesses[a] = (kir_access){.dtype = dtype, .space = space};
    memset(strides[a], 0, sizeof strides[a]);
    memcpy(strides[a], access_strides, (size_t)rank * sizeof *access_strides);
    return a;
}

static int add_value(kir_kernel *k, kir_value value) {
    k->values[k->value_count] = value;
    return k->value_count++;
}

static void add_store(kir_kernel *k, int64_t (*strides)[PORTA_MAX_RANK], const porta_tensor *out,
                      kir_space space, const int64_t *out_strides, int value) {
    int a = add_access(k, strides, out->dtype, space, out_strides, out->rank);
    k->accesses[a].store = true;
    k->accesses[a].value = value;
}

static bool elementwise(const ir_prim *prim, const porta_tensor *const *inputs, int count,
                        const porta_tensor *out, kir_kernel *k, kir_args *args) {
    int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK];
    kir_value value = {.op = prim->op, .dtype = out->dtype, .space = KIR_FULL};
    switch (prim->kind) {
    case PRIM_UNARY: value.kind = KIR_UNARY; break;
    case PRIM_BINARY: value.kind = KIR_BINARY; break;
    case PRIM_TERNARY: value.kind = KIR_TERNARY; break;
    case PRIM_CAST: value.kind = KIR_CAST; break;
    case PRIM_FILL: value.kind = KIR_PARAM; value.param = 0; break;
    default: return false;
    }
    if (count > 3) return false;
    for (int i = 0; i < count; i++) {
        int a = add_access(k, strides, inputs[i]->dtype, KIR_FULL, inputs[i]->strides,
                           inputs[i]->rank);
        value.args[i] = add_value(k, (kir_value){.kind = KIR_LOAD, .dtype = inputs[i]->dtype,
                                                 .space = KIR_FULL, .access = a});
    }
    if (value.kind != KIR_PARAM &&
        !kir_c_supports(&value, count ? inputs[0]->dtype : out->dtype))
        return false;
    add_store(k, strides, out, KIR_FULL, out->strides, add_value(k, value));
    kir_merge_dims(k, out->rank, 0, out->sizes, (const int64_t(*)[PORTA_MAX_RANK])strides, args);
    args->params[0] = prim->value;
    return true;
}

/* x's dims reordered: kept axes in order, then the reduced ones. */
static bool reduction(const ir_prim *prim, const porta_tensor *x, const porta_tensor *out,
                      kir_kernel *k, kir_args *args) {
    int op = prim->op;
    switch (op) {
    case PORTA_REDUCE_SUM: case PORTA_REDUCE_PROD: case PORTA_REDUCE_ANY:
    case PORTA_REDUCE_ALL: break;
    /* of bools, the largest is "any true", the smallest "all true" */
    case PORTA_REDUCE_MAX: if (x->dtype == PORTA_BOOL) op = PORTA_REDUCE_ANY; break;
    case PORTA_REDUCE_MIN: if (x->dtype == PORTA_BOOL) op = PORTA_REDUCE_ALL; break;
    default: return false; /* arg reductions return indices */
    }
    bool reduced[PORTA_MAX_RANK] = {false};
    for (int i = 0; i < prim->axis_count; i++) reduced[prim->axes[i]] = true;
    for (int d = 0; d < x->rank && prim->axis_count == 0; d++) reduced[d] = true;
    int64_t sizes[PORTA_MAX_RANK], x_strides[PORTA_MAX_RANK], out_strides[PORTA_MAX_RANK] = {0};
    int n = 0, kept = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < x->rank; d++) {
            if (reduced[d] != (pass == 1)) continue;
            sizes[n] = x->sizes[d];
            x_strides[n] = x->strides[d];
            /* out has keepdim's shape: its own dim d, or its kept-th */
            if (pass == 0) out_strides[n] = out->strides[prim->keepdim ? d : kept++];
            n++;
        }
    int count = 0;
    for (int d = 0; d < x->rank; d++) count += reduced[d];
    if (n == 0) { /* a zero-dim x: one row of one element */
        sizes[0] = 1;
        x_strides[0] = 0;
        n = count = 1;
    }
    int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK];
    int a = add_access(k, strides, x->dtype, KIR_FULL, x_strides, n);
    int load = add_value(k, (kir_value){.kind = KIR_LOAD, .dtype = x->dtype, .space = KIR_FULL,
                                        .access = a});
    kir_value value = {.kind = KIR_REDUCE, .op = op, .dtype = out->dtype,
                       .space = KIR_OUTER, .args = {load}};
    if (!kir_c_supports(&value, x->dtype)) return false;
    int id = add_value(k, value);
    int s = add_access(k, strides, out->dtype, KIR_OUTER, out_strides, n);
    k->accesses[s].store = true;
    k->accesses[s].value = id;
    kir_merge_dims(k, n, count, sizes, (const int64_t(*)[PORTA_MAX_RANK])strides,
                   args);
    return true;
}

bool kir_single(const ir_prim *prim, const porta_tensor *const *inputs, int input_count,
                const porta_tensor *out, kir_kernel *kernel, kir_args *args, int64_t *work) {
    memset(kernel, 0, sizeof *kernel);
    bool ok = prim->kind == PRIM_REDUCE
                  ? input_count == 1 && reduction(prim, inputs[0], out, kernel, args)
                  : elementwise(prim, inputs, input_count, out, kernel, args);
    if (!ok) return false;
    *work = 1;
    for (int d = 0; d < kernel->outer_rank; d++) *work *= args->sizes[d];
    return true;
}
