/* PRIM_FFT on the CPU: a multi-axis transform is one pass per axis, each
 * pass gathering every line along its axis (any strides) into per-thread
 * scratch, transforming it with the cached plan of fft_plan.h in the
 * tensor's precision and scattering it into the contiguous result; the
 * lines are split over the threads. R2C transforms its halved axis first,
 * C2R last (into the real result), the normalization is applied by the
 * last pass. */
#include <math.h>
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/fft_plan.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/status.h"
#include "core/tensor_layout.h"

typedef enum { PASS_C2C, PASS_R2C, PASS_C2R } pass_mode;

/* A strided signal: element strides of its signal axes and of the pair
 * axis (0 for a real one). */
typedef struct fft_side {
    char *data;
    int64_t sizes[PORTA_MAX_RANK], strides[PORTA_MAX_RANK];
    int64_t pair_stride;
} fft_side;

typedef struct fft_pass {
    pass_mode mode;
    int rank, axis;
    fft_side src, dst; /* alike but along axis */
    int64_t n;         /* the transform's length */
    const cpu_fft_plan *plan;
    double scale;
    size_t elem;       /* bytes of one real */
    int64_t scratch_pairs; /* per thread: the line, then the plan's */
    void *scratch;
} fft_pass;

/* The element offsets in src and dst of line `line` (row-major over the
 * axes but the pass's). */
static void line_offsets(const fft_pass *p, int64_t line, int64_t *src, int64_t *dst) {
    *src = *dst = 0;
    for (int d = p->rank - 1; d >= 0; d--) {
        if (d == p->axis) continue;
        int64_t i = line % p->dst.sizes[d];
        line /= p->dst.sizes[d];
        *src += i * p->src.strides[d];
        *dst += i * p->dst.strides[d];
    }
}

/* A real transform of even n through the complex one of m = n / 2
 * (p->plan is the real plan): R2C transforms z_j = x_2j + i x_2j+1 and
 * splits Z into the spectra of the even and odd values, E_k = (Z_k +
 * conj Z_m-k) / 2 and O_k = (Z_k - conj Z_m-k) / 2i, X_k = E_k + w^k O_k;
 * C2R joins E_k = X_k + conj X_m-k and O_k = (X_k - conj X_m-k) w^k into
 * Z_k = E_k + i O_k and transforms it back, the even values in the real
 * parts and the odd ones in the imaginary. The imaginary parts of X_0 and
 * X_m are ignored, as a full Hermitian spectrum would ignore them. */
#define REAL_SPLIT(REAL, SUFFIX)                                                             \
    static void split_##SUFFIX(const fft_pass *p, const REAL *src, REAL *dst, REAL *buf) {    \
        int64_t n = p->n, m = n / 2, ss = p->src.strides[p->axis];                            \
        int64_t ds = p->dst.strides[p->axis], sp = p->src.pair_stride, dp = p->dst.pair_stride; \
        const REAL *w = p->plan->twiddles;                                                    \
        REAL scale = (REAL)p->scale;                                                          \
        if (p->mode == PASS_R2C) {                                                            \
            for (int64_t j = 0; j < m; j++)                                                   \
                buf[2 * j] = src[2 * j * ss], buf[2 * j + 1] = src[(2 * j + 1) * ss];         \
            cpu_fft_run_##SUFFIX(p->plan->half, buf, buf + 2 * n);                           \
            for (int64_t k = 0; k <= m; k++) {                                                \
                int64_t a = k % m, b = (m - k) % m;                                           \
                REAL zr = buf[2 * a], zi = buf[2 * a + 1], cr = buf[2 * b], ci = -buf[2 * b + 1]; \
                REAL er = (zr + cr) / 2, ei = (zi + ci) / 2;                                  \
                REAL or_ = (zi - ci) / 2, oi = -(zr - cr) / 2;                                \
                REAL wr = k < m ? w[2 * k] : (REAL)-1, wi = k < m ? w[2 * k + 1] : (REAL)0;   \
                dst[k * ds] = (er + wr * or_ - wi * oi) * scale;                              \
                dst[k * ds + dp] = (ei + wr * oi + wi * or_) * scale;                         \
            }                                                                                 \
            return;                                                                           \
        }                                                                                     \
        for (int64_t k = 0; k < m; k++) {                                                     \
            REAL ar = src[k * ss], ai = k ? src[k * ss + sp] : 0;                             \
            REAL br = src[(m - k) * ss], bi = k ? -src[(m - k) * ss + sp] : 0;                \
            REAL er = ar + br, ei = ai + bi, dr = ar - br, di = ai - bi;                      \
            REAL or_ = dr * w[2 * k] - di * w[2 * k + 1], oi = dr * w[2 * k + 1] + di * w[2 * k]; \
            buf[2 * k] = er - oi, buf[2 * k + 1] = ei + or_;                                  \
        }                                                                                     \
        cpu_fft_run_##SUFFIX(p->plan->half, buf, buf + 2 * n);                               \
        for (int64_t j = 0; j < m; j++)                                                       \
            dst[2 * j * ds] = buf[2 * j] * scale, dst[(2 * j + 1) * ds] = buf[2 * j + 1] * scale; \
    }

#define LINE_PASS(REAL, SUFFIX)                                                              \
    REAL_SPLIT(REAL, SUFFIX)                                                                  \
    static void line_##SUFFIX(const fft_pass *p, int64_t line, REAL *buf) {                   \
        int64_t so, doff;                                                                     \
        line_offsets(p, line, &so, &doff);                                                    \
        const REAL *src = (const REAL *)p->src.data + so;                                     \
        REAL *dst = (REAL *)p->dst.data + doff;                                               \
        if (p->plan->real) {                                                                  \
            split_##SUFFIX(p, src, dst, buf);                                                 \
            return;                                                                           \
        }                                                                                     \
        int64_t n = p->n, ss = p->src.strides[p->axis], ds = p->dst.strides[p->axis];         \
        int64_t sp = p->src.pair_stride, dp = p->dst.pair_stride;                            \
        switch (p->mode) {                                                                    \
        case PASS_C2C:                                                                        \
            for (int64_t t = 0; t < n; t++)                                                   \
                buf[2 * t] = src[t * ss], buf[2 * t + 1] = src[t * ss + sp];                  \
            break;                                                                            \
        case PASS_R2C:                                                                        \
            for (int64_t t = 0; t < n; t++) buf[2 * t] = src[t * ss], buf[2 * t + 1] = 0;     \
            break;                                                                            \
        case PASS_C2R: /* Hermitian: value n - t is value t's conjugate */                    \
            for (int64_t t = 0; t < n / 2 + 1; t++)                                           \
                buf[2 * t] = src[t * ss], buf[2 * t + 1] = src[t * ss + sp];                  \
            for (int64_t t = n / 2 + 1; t < n; t++)                                           \
                buf[2 * t] = buf[2 * (n - t)], buf[2 * t + 1] = -buf[2 * (n - t) + 1];        \
            break;                                                                            \
        }                                                                                     \
        cpu_fft_run_##SUFFIX(p->plan, buf, buf + 2 * n);                                      \
        REAL scale = (REAL)p->scale;                                                          \
        int64_t kept = p->mode == PASS_R2C ? n / 2 + 1 : n;                                   \
        if (p->mode == PASS_C2R)                                                              \
            for (int64_t t = 0; t < n; t++) dst[t * ds] = buf[2 * t] * scale;                 \
        else                                                                                  \
            for (int64_t t = 0; t < kept; t++)                                                \
                dst[t * ds] = buf[2 * t] * scale, dst[t * ds + dp] = buf[2 * t + 1] * scale;  \
    }

LINE_PASS(float, f32)
LINE_PASS(double, f64)

static void pass_lines(void *ctx, int64_t begin, int64_t end, int thread) {
    const fft_pass *p = ctx;
    char *buf = (char *)p->scratch + (size_t)thread * (size_t)(2 * p->scratch_pairs) * p->elem;
    for (int64_t line = begin; line < end; line++) {
        if (p->elem == sizeof(double))
            line_f64(p, line, (double *)buf);
        else
            line_f32(p, line, (float *)buf);
    }
}

static porta_status *run_pass(fft_pass *p, porta_dtype dtype, int sign) {
    porta_status *status = NULL;
    bool split = p->mode != PASS_C2C && p->n % 2 == 0;
    p->plan = split ? cpu_fft_real_plan_get(p->n, sign, dtype, &status)
                    : cpu_fft_plan_get(p->n, sign, dtype, &status);
    if (status) return status;
    int64_t lines = 1;
    for (int d = 0; d < p->rank; d++)
        if (d != p->axis) lines *= p->dst.sizes[d];
    if (lines == 0) return NULL;
    p->scratch_pairs = p->n + cpu_fft_scratch_pairs(p->plan);
    int threads = cpu_thread_count();
    if (threads > lines) threads = (int)lines;
    PORTA_TRY(core_host_alloc((size_t)threads * (size_t)(2 * p->scratch_pairs) * p->elem,
                              "fft scratch", &p->scratch));
    /* about 16k values a task, so small batches of long lines still split */
    int64_t grain = 16384 / (p->n + 1) + 1;
    if (grain * threads > lines) grain = (lines + threads - 1) / threads;
    cpu_parallel_for(lines, grain, pass_lines, p);
    core_host_free(p->scratch);
    return NULL;
}

/* The signal view of t: its axes but the pair axis when `pairs`. */
static fft_side side_of(const porta_tensor *t, char *data, bool pairs) {
    fft_side s;
    memset(&s, 0, sizeof s);
    s.data = data;
    int rank = t->rank - (pairs ? 1 : 0);
    for (int d = 0; d < rank; d++) s.sizes[d] = t->sizes[d], s.strides[d] = t->strides[d];
    s.pair_stride = pairs ? t->strides[t->rank - 1] : 0;
    return s;
}

/* A contiguous complex side of `sizes` over `rank` axes. */
static fft_side contiguous_pairs(char *data, int rank, const int64_t *sizes) {
    fft_side s;
    memset(&s, 0, sizeof s);
    s.data = data;
    s.pair_stride = 1;
    int64_t stride = 2;
    for (int d = rank - 1; d >= 0; d--) {
        s.sizes[d] = sizes[d], s.strides[d] = stride;
        stride *= sizes[d];
    }
    return s;
}

static double norm_scale(porta_fft_norm norm, double points) {
    switch (norm) {
    case PORTA_FFT_NORM_BY_ROOT_N: return 1.0 / sqrt(points);
    case PORTA_FFT_NORM_BY_N: return 1.0 / points;
    default: return 1.0;
    }
}

porta_status *cpu_exec_fft(const ir_prim *prim, const porta_tensor *const *inputs,
                           int input_count, porta_tensor *out) {
    (void)input_count;
    const porta_tensor *x = inputs[0];
    if (out->dtype != x->dtype || (x->dtype != PORTA_F32 && x->dtype != PORTA_F64))
        return porta_error(PORTA_ERR_INTERNAL,
                           "cpu fft: expected float32 or float64 x and out of one dtype");
    if (porta_tensor_numel(out) == 0) return NULL;
    porta_fft_kind kind = (porta_fft_kind)prim->op;
    int sign = prim->value > 0 ? 1 : -1;
    int count = prim->axis_count, last = prim->axes[count - 1];
    size_t elem = porta_dtype_size(x->dtype);
    char *x_data = (char *)core_tensor_data(x), *out_data = (char *)core_tensor_data(out);
    bool out_pairs = kind != PORTA_FFT_C2R;
    fft_side result = side_of(out, out_data, out_pairs);
    int rank = out->rank - (out_pairs ? 1 : 0);
    double points = 1;
    for (int i = 0; i < count; i++)
        points *= (double)(kind == PORTA_FFT_C2R ? out : x)->sizes[prim->axes[i]];
    double scale = norm_scale((porta_fft_norm)prim->axis, points);

    fft_pass p = {.rank = rank, .elem = elem};
    void *staging = NULL; /* C2R's complex intermediate */
    porta_status *status = NULL;
    fft_side source = side_of(x, x_data, kind != PORTA_FFT_R2C);
    /* the passes in order: R2C's halved axis first, C2R's last */
    int order[PORTA_MAX_RANK];
    for (int i = 0; i < count; i++) order[i] = prim->axes[i];
    if (kind == PORTA_FFT_R2C) {
        for (int i = count - 1; i > 0; i--) order[i] = order[i - 1];
        order[0] = last;
    }
    fft_side target = result;
    if (kind == PORTA_FFT_C2R && count > 1) {
        int64_t sizes[PORTA_MAX_RANK];
        memcpy(sizes, x->sizes, sizeof sizes);
        sizes[last] = out->sizes[last] / 2 + 1;
        int64_t numel = 2;
        for (int d = 0; d < rank; d++) numel *= sizes[d];
        PORTA_TRY(core_host_alloc((size_t)numel * elem, "fft intermediate", &staging));
        target = contiguous_pairs(staging, rank, sizes);
    }
    for (int i = 0; i < count && !status; i++) {
        bool final = i == count - 1;
        p.axis = order[i];
        p.mode = PASS_C2C;
        if (kind == PORTA_FFT_R2C && i == 0) p.mode = PASS_R2C;
        if (kind == PORTA_FFT_C2R && final) p.mode = PASS_C2R;
        p.src = source;
        p.dst = p.mode == PASS_C2R ? result : target;
        p.n = p.mode == PASS_C2R ? out->sizes[p.axis] : p.src.sizes[p.axis];
        p.scale = final ? scale : 1.0;
        status = run_pass(&p, x->dtype, sign);
        source = p.dst; /* later passes work in place on the result so far */
    }
    core_host_free(staging);
    return status;
}
