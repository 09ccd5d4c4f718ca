/* CONV, CONV_INPUT_GRAD and CONV_WEIGHT_GRAD as one stablehlo.convolution
 * each (codegen_stablehlo_prim.c loads and stores the operands), the
 * gradients as XLA's own autodiff derives them:
 *  - the input gradient convolves gy, dilated by the stride, with the
 *    kernel reversed in space and its feature dims swapped (grouped:
 *    regrouped so each group's Cin/groups outputs are its own);
 *  - the weight gradient convolves x with gy as the window, channels as the
 *    batch (batch_group_count splits them into the groups), the forward
 *    dilation as the window stride and the forward stride as the window's
 *    dilation.
 * Float16/bfloat16 compute in float32, as the CPU kernels do. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "codegen/codegen_stablehlo_conv.h"

/* "b, f, 0, 1, ..." for n spatial dims after two named ones. */
static void layout_text(char *out, size_t cap, const char *first, const char *second, int n) {
    size_t used = (size_t)snprintf(out, cap, "%s, %s", first, second);
    for (int d = 0; d < n && used < cap; d++)
        used += (size_t)snprintf(out + used, cap - used, ", %d", d);
}

typedef struct conv_form {
    char lhs[64], rhs[64], out[64];
    int64_t strides[PORTA_MAX_RANK], lhs_dilation[PORTA_MAX_RANK], rhs_dilation[PORTA_MAX_RANK];
    int64_t low[PORTA_MAX_RANK], high[PORTA_MAX_RANK];
    int64_t feature_groups, batch_groups;
} conv_form;

static int convolution(shlo_emit *e, int n, const conv_form *f, int lhs, shlo_type lhs_type,
                       int rhs, shlo_type rhs_type, shlo_type out) {
    char attrs[1024], part[256];
    size_t used = (size_t)snprintf(attrs, sizeof attrs,
                                   " {batch_group_count = %" PRId64 " : i64, "
                                   "dimension_numbers = #stablehlo.conv<[%s]x[%s]->[%s]>, "
                                   "feature_group_count = %" PRId64 " : i64, ",
                                   f->batch_groups, f->lhs, f->rhs, f->out, f->feature_groups);
    shlo_attr_i64s(part, sizeof part, "lhs_dilation", f->lhs_dilation, n);
    used += (size_t)snprintf(attrs + used, sizeof attrs - used, "%s, padding = dense<[", part);
    for (int d = 0; d < n; d++)
        used += (size_t)snprintf(attrs + used, sizeof attrs - used,
                                 "%s[%" PRId64 ", %" PRId64 "]", d ? ", " : "", f->low[d],
                                 f->high[d]);
    used += (size_t)snprintf(attrs + used, sizeof attrs - used, "]> : tensor<%dx2xi64>, ", n);
    shlo_attr_i64s(part, sizeof part, "rhs_dilation", f->rhs_dilation, n);
    used += (size_t)snprintf(attrs + used, sizeof attrs - used, "%s, ", part);
    shlo_attr_i64s(part, sizeof part, "window_strides", f->strides, n);
    snprintf(attrs + used, sizeof attrs - used, "%s}", part);
    int args[2] = {lhs, rhs};
    shlo_type types[2] = {lhs_type, rhs_type};
    return shlo_op(e, "stablehlo.convolution", 2, args, types, attrs, out);
}

static shlo_type typed(const int64_t *sizes, int rank, const char *elt) {
    char dims[PORTA_MAX_RANK * 24];
    shlo_dims(dims, sizeof dims, sizes, rank);
    return shlo_tensor(dims, elt);
}

/* w [Cout, Cin/G, k...] as [Cout/G, Cin, k...]: group g's Cin/G columns
 * hold its Cout/G rows, so feature_group_count G pairs them again. */
static int regroup(shlo_emit *e, int w, const int64_t *w_sizes, int rank, int64_t groups,
                   const char *elt, int64_t *out_sizes) {
    int64_t split[PORTA_MAX_RANK + 1], swapped[PORTA_MAX_RANK + 1], perm[PORTA_MAX_RANK + 1];
    split[0] = groups;
    split[1] = w_sizes[0] / groups;
    for (int d = 1; d < rank; d++) split[d + 1] = w_sizes[d];
    for (int d = 0; d <= rank; d++) perm[d] = d;
    perm[0] = 1;
    perm[1] = 0;
    for (int d = 0; d <= rank; d++) swapped[d] = split[perm[d]];
    int grouped = shlo_op1(e, "stablehlo.reshape", w, typed(w_sizes, rank, elt),
                           typed(split, rank + 1, elt));
    char attrs[256] = " {";
    shlo_attr_i64s(attrs + 2, sizeof attrs - 4, "permutation", perm, rank + 1);
    strcat(attrs, "}");
    shlo_type split_type = typed(split, rank + 1, elt);
    int moved = shlo_op(e, "stablehlo.transpose", 1, &grouped, &split_type, attrs,
                        typed(swapped, rank + 1, elt));
    out_sizes[0] = w_sizes[0] / groups;
    out_sizes[1] = w_sizes[1] * groups;
    for (int d = 2; d < rank; d++) out_sizes[d] = w_sizes[d];
    return shlo_op1(e, "stablehlo.reshape", moved, typed(swapped, rank + 1, elt),
                    typed(out_sizes, rank, elt));
}

int shlo_conv(shlo_emit *e, const shlo_conv_operands *c) {
    const ir_prim *prim = c->prim;
    const porta_conv_params *p = &prim->conv;
    int rank = c->rank[0], n = rank - 2;
    const char *elt = c->elt;
    conv_form f;
    memset(&f, 0, sizeof f);
    f.feature_groups = f.batch_groups = 1;
    for (int d = 0; d < n; d++) f.lhs_dilation[d] = f.rhs_dilation[d] = f.strides[d] = 1;
    shlo_type A = typed(c->sizes[0], rank, elt), B = typed(c->sizes[1], rank, elt);
    shlo_type out = typed(c->out_sizes, rank, elt);
    if (prim->kind == PRIM_CONV) { /* x [N, Cin, in], w [Cout, Cin/G, k] */
        layout_text(f.lhs, sizeof f.lhs, "b", "f", n);
        layout_text(f.rhs, sizeof f.rhs, "o", "i", n);
        layout_text(f.out, sizeof f.out, "b", "f", n);
        for (int d = 0; d < n; d++) {
            f.strides[d] = p->stride[d];
            f.rhs_dilation[d] = p->dilation[d];
            f.low[d] = f.high[d] = p->padding[d];
        }
        f.feature_groups = p->groups;
        return convolution(e, n, &f, c->x[0], A, c->x[1], B, out);
    }
    if (prim->kind == PRIM_CONV_INPUT_GRAD) { /* gy [N, Cout, O], w [Cout, Cin/G, k] */
        int64_t dims[PORTA_MAX_RANK];
        for (int d = 0; d < n; d++) dims[d] = d + 2;
        char attrs[256] = " {";
        shlo_attr_i64s(attrs + 2, sizeof attrs - 4, "dimensions", dims, n);
        strcat(attrs, "}");
        int w = shlo_op(e, "stablehlo.reverse", 1, &c->x[1], &B, attrs, B);
        int64_t w_sizes[PORTA_MAX_RANK];
        memcpy(w_sizes, c->sizes[1], (size_t)rank * sizeof *w_sizes);
        if (p->groups > 1) {
            w = regroup(e, w, c->sizes[1], rank, p->groups, elt, w_sizes);
            B = typed(w_sizes, rank, elt);
        }
        layout_text(f.lhs, sizeof f.lhs, "b", "f", n);
        layout_text(f.rhs, sizeof f.rhs, "i", "o", n);
        layout_text(f.out, sizeof f.out, "b", "f", n);
        for (int d = 0; d < n; d++) {
            int64_t window = p->dilation[d] * (c->sizes[1][d + 2] - 1) + 1;
            int64_t dilated = (c->sizes[0][d + 2] - 1) * p->stride[d] + 1;
            f.lhs_dilation[d] = p->stride[d];
            f.rhs_dilation[d] = p->dilation[d];
            f.low[d] = window - 1 - p->padding[d];
            f.high[d] = c->out_sizes[d + 2] - dilated + window - 1 - f.low[d];
        }
        f.feature_groups = p->groups;
        return convolution(e, n, &f, c->x[0], A, w, B, out);
    }
    /* CONV_WEIGHT_GRAD: x [N, Cin, in], gy [N, Cout, O] -> [Cout, Cin/G, k] */
    layout_text(f.lhs, sizeof f.lhs, "f", "b", n);
    layout_text(f.rhs, sizeof f.rhs, "i", "o", n);
    layout_text(f.out, sizeof f.out, "f", "b", n);
    for (int d = 0; d < n; d++) {
        int64_t dilated = (c->sizes[1][d + 2] - 1) * p->stride[d] + 1;
        f.strides[d] = p->dilation[d];
        f.rhs_dilation[d] = p->stride[d];
        f.low[d] = p->padding[d];
        /* just wide enough for `kernel` window positions */
        f.high[d] = (c->out_sizes[d + 2] - 1) * p->dilation[d] + dilated - c->sizes[0][d + 2] -
                    p->padding[d];
    }
    f.batch_groups = p->groups;
    return convolution(e, n, &f, c->x[0], A, c->x[1], B, out);
}
