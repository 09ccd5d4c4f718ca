/* kir_check and kir_c_supports: what the renderer relies on before it
 * writes a line, so a malformed kernel is an error, never bad code. */
#include "codegen/codegen_c_internal.h"
#include "core/status.h"

static bool dtype_ok(int d) { return d >= 0 && d < PORTA_DTYPE_COUNT; }

static int arg_count(kir_value_kind kind) {
    switch (kind) {
    case KIR_UNARY: case KIR_CAST: case KIR_REDUCE: return 1;
    case KIR_BINARY: return 2;
    case KIR_TERNARY: return 3;
    default: return 0;
    }
}

static bool reduce_supported(const kir_value *v, porta_dtype in) {
    switch (v->op) {
    case PORTA_REDUCE_ANY: case PORTA_REDUCE_ALL:
        return v->dtype == PORTA_BOOL && dtype_ok(in);
    case PORTA_REDUCE_SUM: case PORTA_REDUCE_PROD: case PORTA_REDUCE_MAX: case PORTA_REDUCE_MIN:
        return in == v->dtype && v->dtype != PORTA_BOOL && dtype_ok(in);
    default:
        return false; /* arg reductions return indices */
    }
}

bool kir_c_supports(const kir_value *v, porta_dtype arg_dtype) {
    if (!v || !dtype_ok(v->dtype)) return false;
    switch (v->kind) {
    case KIR_LOAD: case KIR_CONST: case KIR_PARAM: return true;
    case KIR_REDUCE: return reduce_supported(v, arg_dtype);
    case KIR_UNARY:
        if (kir_c_array_function(v)) return arg_dtype == v->dtype;
        break;
    case KIR_TERNARY:
        /* where's branches share the result's dtype; only cond is args[0] */
        break;
    default: break;
    }
    const char *x[3] = {"a", "b", "c"};
    return kir_c_expression(NULL, v, arg_dtype, x);
}

/* The dtype each argument of `v` must have, given its first argument's. */
static bool args_match_contract(const kir_kernel *k, const kir_value *v) {
    porta_dtype d0 = k->values[v->args[0]].dtype;
    switch (v->kind) {
    case KIR_BINARY: return k->values[v->args[1]].dtype == d0;
    case KIR_TERNARY:
        if (v->op == PORTA_WHERE)
            return k->values[v->args[1]].dtype == v->dtype &&
                   k->values[v->args[2]].dtype == v->dtype;
        return k->values[v->args[1]].dtype == d0 && k->values[v->args[2]].dtype == d0;
    default: return true;
    }
}

static porta_status *check_value(const kir_kernel *k, int id, bool reducing) {
    const kir_value *v = &k->values[id];
    if ((unsigned)v->kind > KIR_PARAM)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel value %d: unknown kind %d", id,
                           (int)v->kind);
    if (!dtype_ok(v->dtype))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel value %d: invalid dtype %d", id,
                           (int)v->dtype);
    if (v->space != KIR_FULL && v->space != KIR_OUTER)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel value %d: invalid space %d", id,
                           (int)v->space);
    if (v->space == KIR_OUTER && !reducing)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel value %d: OUTER space in a kernel without reductions", id);
    for (int a = 0; a < arg_count(v->kind); a++) {
        int arg = v->args[a];
        if (arg < 0 || arg >= id)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "kernel value %d: argument %d is value %d; expected one of "
                               "0..%d (defined before it)",
                               id, a, arg, id - 1);
        const kir_value *av = &k->values[arg];
        bool arg_outer = av->space == KIR_OUTER || av->kind == KIR_CONST || av->kind == KIR_PARAM;
        if (v->kind == KIR_REDUCE) {
            if (av->space != KIR_FULL)
                return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                   "kernel value %d: a reduction of value %d, which is not FULL",
                                   id, arg);
        } else if (v->space == KIR_OUTER && !arg_outer) {
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "kernel value %d: OUTER value from FULL value %d", id, arg);
        }
    }
    switch (v->kind) {
    case KIR_LOAD: {
        if (v->access < 0 || v->access >= k->access_count)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "kernel value %d: access %d; expected 0..%d", id, v->access,
                               k->access_count - 1);
        const kir_access *acc = &k->accesses[v->access];
        if (acc->store)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "kernel value %d: loads from store access %d", id, v->access);
        if (acc->dtype != v->dtype || acc->space != v->space)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "kernel value %d: dtype/space %d/%d; its access %d has %d/%d", id,
                               (int)v->dtype, (int)v->space, v->access, (int)acc->dtype,
                               (int)acc->space);
        return NULL;
    }
    case KIR_CONST: return NULL;
    case KIR_PARAM:
        if (v->param < 0 || v->param >= KIR_MAX_PARAMS)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel value %d: param %d; expected 0..%d",
                               id, v->param, KIR_MAX_PARAMS - 1);
        return NULL;
    case KIR_REDUCE:
        if (v->space != KIR_OUTER)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "kernel value %d: a reduction must be OUTER", id);
        break;
    default: break;
    }
    if (!args_match_contract(k, v))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel value %d: argument dtypes do not match the op's contract", id);
    if (!kir_c_supports(v, k->values[v->args[0]].dtype))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "kernel value %d: kind %d op %d with dtype %d from %d is not "
                           "supported by the C renderer",
                           id, (int)v->kind, v->op, (int)v->dtype,
                           (int)k->values[v->args[0]].dtype);
    return NULL;
}

static porta_status *check_access(const kir_kernel *k, int i, bool reducing) {
    const kir_access *a = &k->accesses[i];
    if (!dtype_ok(a->dtype) || (a->space != KIR_FULL && a->space != KIR_OUTER) ||
        (unsigned)a->last > KIR_LAST_ZERO)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel access %d: invalid dtype, space or last stride", i);
    if (a->space == KIR_OUTER && !reducing)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel access %d: OUTER space in a kernel without reductions", i);
    if (!a->store) return NULL;
    if (a->value < 0 || a->value >= k->value_count)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel access %d stores value %d; expected 0..%d", i, a->value,
                           k->value_count - 1);
    const kir_value *v = &k->values[a->value];
    if (v->dtype != a->dtype)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel access %d of dtype %d stores value %d of dtype %d", i,
                           (int)a->dtype, a->value, (int)v->dtype);
    if (a->space == KIR_OUTER && v->space != KIR_OUTER && v->kind != KIR_CONST &&
        v->kind != KIR_PARAM)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel access %d: an OUTER store of FULL value %d", i, a->value);
    if (a->space == KIR_FULL && a->last == KIR_LAST_ZERO)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel access %d: a FULL store with a zero innermost stride", i);
    return NULL;
}

porta_status *kir_check(const kir_kernel *k) {
    if (!k) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel is NULL");
    if (k->rank < 1 || k->rank > PORTA_MAX_RANK)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel rank %d; expected 1..%d", k->rank,
                           PORTA_MAX_RANK);
    if (k->outer_rank < 0 || k->outer_rank > k->rank)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel outer_rank %d; expected 0..%d",
                           k->outer_rank, k->rank);
    if (k->value_count < 1 || k->value_count > KIR_MAX_VALUES)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel value_count %d; expected 1..%d",
                           k->value_count, KIR_MAX_VALUES);
    if (k->access_count < 1 || k->access_count > KIR_MAX_ACCESSES)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel access_count %d; expected 1..%d",
                           k->access_count, KIR_MAX_ACCESSES);
    bool reducing = k->outer_rank < k->rank, has_reduce = false, has_store = false;
    for (int i = 0; i < k->value_count; i++) {
        PORTA_TRY(check_value(k, i, reducing));
        has_reduce |= k->values[i].kind == KIR_REDUCE;
    }
    if (has_reduce != reducing)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "kernel outer_rank %d of rank %d %s, but it has %s reductions",
                           k->outer_rank, k->rank, reducing ? "reduces dims" : "reduces none",
                           has_reduce ? "" : "no");
    for (int i = 0; i < k->access_count; i++) {
        PORTA_TRY(check_access(k, i, reducing));
        has_store |= k->accesses[i].store;
    }
    if (!has_store)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "kernel stores nothing");
    return NULL;
}
