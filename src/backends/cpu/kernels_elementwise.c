/* cpu_exec_elementwise: picks the inner loop for a primitive and its dtypes,
 * lays the operands over out's shape and runs the iterator. */
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels_elementwise.h"
#include "core/status.h"
#include "ir/infer_elementwise.h"

/* The loop and the dtypes the contract of ir/prim.h gives its operands.
 * Checked even though the op layer guarantees them, since a loop run on
 * other dtypes would read and write out of bounds. */
typedef struct loop_choice {
    ew_loop_fn loop;
    porta_dtype input, out; /* input: of every input except a where's condition */
    bool costly;
} loop_choice;

static loop_choice choose(const ir_prim *prim, const porta_tensor *const *inputs,
                          const porta_tensor *out) {
    loop_choice c = {.out = out->dtype, .input = out->dtype};
    switch (prim->kind) {
    case PRIM_UNARY:
        c.input = inputs[0]->dtype;
        c.loop = ew_unary_loop((porta_unary_op)prim->op, c.input);
        c.out = ir_unary_gives_bool((porta_unary_op)prim->op) ? PORTA_BOOL : c.input;
        c.costly = ew_unary_is_costly((porta_unary_op)prim->op);
        break;
    case PRIM_BINARY:
        c.input = inputs[0]->dtype;
        c.loop = ew_binary_loop((porta_binary_op)prim->op, c.input);
        c.out = ir_binary_gives_bool((porta_binary_op)prim->op) ? PORTA_BOOL : c.input;
        c.costly = ew_binary_is_costly((porta_binary_op)prim->op);
        break;
    case PRIM_TERNARY:
        c.loop = ew_ternary_loop((porta_ternary_op)prim->op, c.out);
        break;
    case PRIM_CAST:
        c.input = inputs[0]->dtype;
        c.loop = ew_cast_loop(c.input, c.out);
        break;
    default: /* PRIM_FILL copies one element of out's dtype everywhere */
        c.loop = ew_cast_loop(c.out, c.out);
        break;
    }
    return c;
}

static bool dtypes_match(const ir_prim *prim, const loop_choice *c,
                         const porta_tensor *const *inputs, int input_count,
                         const porta_tensor *out) {
    if (out->dtype != c->out) return false;
    for (int i = 0; i < input_count; i++) {
        bool condition = prim->kind == PRIM_TERNARY && prim->op == PORTA_WHERE && i == 0;
        if (inputs[i]->dtype != (condition ? PORTA_BOOL : c->input)) return false;
    }
    return true;
}

porta_status *cpu_exec_elementwise(const ir_prim *prim, const porta_tensor *const *inputs,
                                   int input_count, porta_tensor *out) {
    const char *name = ir_prim_name(prim);
    int expected = prim->kind == PRIM_FILL ? 0 : ir_prim_input_count(prim);
    if (prim->kind < PRIM_UNARY || prim->kind > PRIM_FILL || input_count != expected)
        return porta_error(PORTA_ERR_INTERNAL, "cpu: %s called with %d inputs", name, input_count);
    loop_choice c = choose(prim, inputs, out);
    if (!c.loop || !dtypes_match(prim, &c, inputs, input_count, out))
        return porta_error(PORTA_ERR_INTERNAL,
                           "cpu: %s has no kernel for these dtypes (out %s, first input %s)", name,
                           porta_dtype_name(out->dtype),
                           input_count ? porta_dtype_name(inputs[0]->dtype) : "none");

    ew_iter it;
    ew_iter_init(&it, out);
    for (int i = 0; i < input_count; i++) ew_iter_add_input(&it, inputs[i]);
    union {
        uint64_t bits;
        double f64; /* aligns the value for every dtype */
    } fill_value = {0};
    if (prim->kind == PRIM_FILL) {
        core_store_from_double(out->dtype, &fill_value, prim->value);
        ew_iter_add_scalar(&it, &fill_value);
    }

    int faults = ew_iter_run(&it, c.loop, c.costly ? EW_GRAIN_COSTLY : EW_GRAIN_CHEAP);
    return ir_integer_fault_error(name, faults);
}
