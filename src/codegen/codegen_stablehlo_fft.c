/* PRIM_FFT as stablehlo.fft: the (real, imaginary) pairs become a complex
 * tensor (stablehlo.complex of the two halves of the last axis), the
 * transformed axes are moved last in the primitive's order (stablehlo.fft
 * transforms trailing axes, RFFT and IRFFT halving the last), and the
 * result goes back through the inverse permutation and into pairs. IFFT
 * and IRFFT divide by the point count, so the scale applied afterwards
 * makes up the normalization the primitive asks for. */
#include "codegen/codegen_stablehlo_fft.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct fft_shape {
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
} fft_shape;

static shlo_type type_over(const fft_shape *s, const char *elt) {
    char dims[PORTA_MAX_RANK * 24];
    shlo_dims(dims, sizeof dims, s->sizes, s->rank);
    return shlo_tensor(dims, elt);
}

/* `x` (of shape *s) through the permutation perm: result dim i is dim perm[i]. */
static int transpose(shlo_emit *e, int x, fft_shape *s, const int64_t *perm, const char *elt) {
    fft_shape t = {.rank = s->rank};
    for (int d = 0; d < s->rank; d++) t.sizes[d] = s->sizes[perm[d]];
    char attrs[PORTA_MAX_RANK * 24 + 40];
    attrs[0] = ' ', attrs[1] = '{';
    shlo_attr_i64s(attrs + 2, sizeof attrs - 4, "permutation", perm, s->rank);
    strcat(attrs, "}");
    shlo_type in = type_over(s, elt);
    *s = t;
    return shlo_op(e, "stablehlo.transpose", 1, &x, &in, attrs, type_over(s, elt));
}

/* Elements [start, limit) of axis `axis` of x (of shape *s). */
static int slice(shlo_emit *e, int x, fft_shape *s, int axis, int64_t start, int64_t limit,
                 const char *elt) {
    int64_t starts[PORTA_MAX_RANK] = {0}, limits[PORTA_MAX_RANK], steps[PORTA_MAX_RANK];
    for (int d = 0; d < s->rank; d++) limits[d] = s->sizes[d], steps[d] = 1;
    starts[axis] = start, limits[axis] = limit;
    char a[3][PORTA_MAX_RANK * 24 + 40], attrs[3 * (PORTA_MAX_RANK * 24 + 40) + 8];
    shlo_attr_i64s(a[0], sizeof a[0], "start_indices", starts, s->rank);
    shlo_attr_i64s(a[1], sizeof a[1], "limit_indices", limits, s->rank);
    shlo_attr_i64s(a[2], sizeof a[2], "strides", steps, s->rank);
    snprintf(attrs, sizeof attrs, " {%s, %s, %s}", a[0], a[1], a[2]);
    shlo_type in = type_over(s, elt);
    s->sizes[axis] = limit - start;
    return shlo_op(e, "stablehlo.slice", 1, &x, &in, attrs, type_over(s, elt));
}

static int reshape(shlo_emit *e, int x, const fft_shape *from, const fft_shape *to,
                   const char *elt) {
    return shlo_op1(e, "stablehlo.reshape", x, type_over(from, elt), type_over(to, elt));
}

/* The complex z (of shape *s) as (real, imaginary) pairs in a new last
 * axis of 2; *s becomes their shape. */
static int to_pairs(shlo_emit *e, int z, fft_shape *s, const char *elt, const char *celt) {
    shlo_type complex_type = type_over(s, celt), real_type = type_over(s, elt);
    fft_shape column = *s;
    column.sizes[column.rank++] = 1;
    int re = shlo_op1(e, "stablehlo.real", z, complex_type, real_type);
    int im = shlo_op1(e, "stablehlo.imag", z, complex_type, real_type);
    int parts[2] = {reshape(e, re, s, &column, elt), reshape(e, im, s, &column, elt)};
    shlo_type types[2] = {type_over(&column, elt), type_over(&column, elt)};
    char concat[48];
    snprintf(concat, sizeof concat, " {dimension = %d : i64}", s->rank);
    fft_shape pairs = *s;
    pairs.sizes[pairs.rank++] = 2;
    *s = pairs;
    return shlo_op(e, "stablehlo.concatenate", 2, parts, types, concat, type_over(s, elt));
}

int shlo_fft(shlo_render *r, const shlo_prim *p, int x) {
    shlo_emit *e = shlo_render_emitter(r);
    const ir_prim *prim = &p->prim;
    porta_fft_kind kind = (porta_fft_kind)prim->op;
    const char *elt = shlo_compute_elt(p->dtype[0]);
    char celt[32];
    snprintf(celt, sizeof celt, "complex<%s>", elt);
    int count = prim->axis_count, last = prim->axes[count - 1], out = p->count - 1;
    fft_shape s = {.rank = p->rank[0]};
    memcpy(s.sizes, p->sizes[0], sizeof s.sizes);
    int z = x;
    const char *z_elt = elt;
    if (kind != PORTA_FFT_R2C) {
        int pair_axis = s.rank - 1;
        if (kind == PORTA_FFT_C2R && s.sizes[last] > prim->stop / 2 + 1)
            x = slice(e, x, &s, last, 0, prim->stop / 2 + 1, elt);
        fft_shape half = s;
        int re = slice(e, x, &half, pair_axis, 0, 1, elt);
        half = s;
        int im = slice(e, x, &half, pair_axis, 1, 2, elt);
        fft_shape signal = {.rank = s.rank - 1};
        memcpy(signal.sizes, s.sizes, sizeof signal.sizes);
        re = reshape(e, re, &half, &signal, elt);
        im = reshape(e, im, &half, &signal, elt);
        int parts[2] = {re, im};
        shlo_type types[2] = {type_over(&signal, elt), type_over(&signal, elt)};
        z = shlo_op(e, "stablehlo.complex", 2, parts, types, "", type_over(&signal, celt));
        z_elt = celt;
        s = signal;
    }
    /* the axes that stay, then the transformed ones in the primitive's order */
    int64_t perm[PORTA_MAX_RANK], inverse[PORTA_MAX_RANK];
    bool moved[PORTA_MAX_RANK] = {false};
    int next = 0;
    for (int i = 0; i < count; i++) moved[prim->axes[i]] = true;
    for (int d = 0; d < s.rank; d++)
        if (!moved[d]) perm[next++] = d;
    for (int i = 0; i < count; i++) perm[next++] = prim->axes[i];
    for (int d = 0; d < s.rank; d++) inverse[perm[d]] = d;
    z = transpose(e, z, &s, perm, z_elt);

    int64_t lengths[SHLO_FFT_MAX_AXES];
    double points = 1;
    for (int i = 0; i < count; i++) {
        int axis = prim->axes[i];
        lengths[i] = kind == PORTA_FFT_C2R ? p->sizes[out][axis] : p->sizes[0][axis];
        points *= (double)lengths[i];
    }
    const char *fft_type = kind == PORTA_FFT_R2C   ? "RFFT"
                           : kind == PORTA_FFT_C2R ? "IRFFT"
                           : prim->value > 0       ? "IFFT"
                                                   : "FFT";
    fft_shape result = s;
    if (kind == PORTA_FFT_R2C) result.sizes[s.rank - 1] = lengths[count - 1] / 2 + 1;
    if (kind == PORTA_FFT_C2R) result.sizes[s.rank - 1] = lengths[count - 1];
    const char *result_elt = kind == PORTA_FFT_C2R ? elt : celt;
    char attrs[160], lens[96];
    shlo_attr_i64s(lens, sizeof lens, "fft_length", lengths, count);
    snprintf(attrs, sizeof attrs, " {fft_type = #stablehlo<fft_type %s>, %s}", fft_type, lens);
    shlo_type z_type = type_over(&s, z_elt);
    z = shlo_op(e, "stablehlo.fft", 1, &z, &z_type, attrs, type_over(&result, result_elt));
    s = result;

    z = transpose(e, z, &s, inverse, result_elt);
    if (kind != PORTA_FFT_C2R) z = to_pairs(e, z, &s, elt, celt);
    double scale = prim->axis == PORTA_FFT_NORM_BY_ROOT_N ? 1 / sqrt(points)
                   : prim->axis == PORTA_FFT_NORM_BY_N    ? 1 / points
                                                          : 1;
    if (prim->value > 0) scale *= points; /* undo IFFT's and IRFFT's 1/N */
    if (scale == 1) return z;
    char literal[48];
    shlo_literal(literal, sizeof literal, p->dtype[0], scale);
    shlo_type t = type_over(&s, elt);
    return shlo_op2(e, "stablehlo.multiply", z, shlo_constant(e, t, literal), t, t);
}

