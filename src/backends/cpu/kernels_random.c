/* PRIM_RANDOM on the CPU: Philox streams (core/philox.h) written into a
 * float tensor of any strides, element i at stream position offset + i. */
#include <string.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "core/dtype.h"
#include "core/philox.h"
#include "core/status.h"

/* Values are made in batches this long, then stored with conversion. */
#define BATCH 256
/* Elements per thread below which threading costs more than it saves. */
#define GRAIN 16384

typedef struct random_job {
    const porta_prim *prim;
    char *data; /* element 0 of out */
    size_t elem;
    porta_dtype dtype;
    /* out's layout with mergeable axes merged, in row-major order */
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t strides[PORTA_MAX_RANK];
} random_job;

/* Standard values (U[0,1) or N(0,1)) for positions first .. first+count-1,
 * in float, or in double for float64 (`wide`). */
static void standard_values(const porta_prim *prim, uint64_t first, int count, bool wide,
                            float *narrow_out, double *wide_out) {
    uint64_t cached_block = 0;
    porta_philox_words words = {{0, 0, 0, 0}};
    bool have_block = false;
    for (int j = 0; j < count; j++) {
        uint64_t position = first + (uint64_t)j;
        uint64_t block = position >> 2;
        if (!have_block || block != cached_block) {
            words = porta_philox_block(prim->seed, block);
            cached_block = block;
            have_block = true;
        }
        unsigned lane = (unsigned)(position & 3);
        if (!prim->normal) {
            float u = porta_philox_unit(words.x[lane]);
            if (wide) wide_out[j] = u; else narrow_out[j] = u;
            continue;
        }
        /* Both lanes of a pair come out of one Box-Muller step; keep the
         * partner too when the batch will ask for it next. */
        unsigned even = lane & ~1u;
        bool partner_next = !(lane & 1) && j + 1 < count;
        if (wide) {
            double z[2];
            porta_philox_box_muller_f64(words.x[even], words.x[even + 1], &z[0], &z[1]);
            wide_out[j] = z[lane & 1];
            if (partner_next) wide_out[++j] = z[1];
        } else {
            float z[2];
            porta_philox_box_muller_f32(words.x[even], words.x[even + 1], &z[0], &z[1]);
            narrow_out[j] = z[lane & 1];
            if (partner_next) narrow_out[++j] = z[1];
        }
    }
}

/* Scales standard values to the distribution and rounds them to the
 * destination dtype, keeping uniform results below `high`. */
static void scale_narrow(const porta_prim *prim, porta_dtype dtype, const float *in, int count,
                         float *out) {
    float a = (float)prim->value, b = (float)prim->value2;
    if (prim->normal) {
        for (int j = 0; j < count; j++) out[j] = a + b * in[j];
    } else {
        float range = b - a;
        for (int j = 0; j < count; j++) out[j] = a + range * in[j];
    }
    if (dtype == PORTA_F16)
        for (int j = 0; j < count; j++) out[j] = porta_f16_to_f32(porta_f32_to_f16(out[j]));
    else if (dtype == PORTA_BF16)
        for (int j = 0; j < count; j++) out[j] = porta_bf16_to_f32(porta_f32_to_bf16(out[j]));
    if (!prim->normal)
        for (int j = 0; j < count; j++)
            if ((double)out[j] >= prim->value2) out[j] = a;
}

static void scale_wide(const porta_prim *prim, const double *in, int count, double *out) {
    double a = prim->value, b = prim->value2;
    if (prim->normal) {
        for (int j = 0; j < count; j++) out[j] = a + b * in[j];
    } else {
        double range = b - a;
        for (int j = 0; j < count; j++) {
            double v = a + range * in[j];
            out[j] = v >= b ? a : v;
        }
    }
}

static void store_value(porta_dtype dtype, char *p, const float *narrow, const double *wide,
                        int j) {
    switch (dtype) {
    case PORTA_F64: memcpy(p, &wide[j], sizeof(double)); break;
    case PORTA_F32: memcpy(p, &narrow[j], sizeof(float)); break;
    case PORTA_F16: {
        uint16_t h = porta_f32_to_f16(narrow[j]);
        memcpy(p, &h, sizeof h);
        break;
    }
    default: { /* bfloat16: the contract admits only float dtypes */
        uint16_t h = porta_f32_to_bf16(narrow[j]);
        memcpy(p, &h, sizeof h);
        break;
    }
    }
}

static void fill_range(void *ctx, int64_t begin, int64_t end, int thread) {
    const random_job *job = ctx;
    bool wide = job->dtype == PORTA_F64;
    float standard_f[BATCH], scaled_f[BATCH];
    double standard_d[BATCH], scaled_d[BATCH];

    /* Multi-index of element `begin`, then an odometer walk. */
    int64_t idx[PORTA_MAX_RANK];
    int64_t rest = begin, offset = 0;
    for (int d = job->rank - 1; d >= 0; d--) {
        idx[d] = rest % job->sizes[d];
        rest /= job->sizes[d];
        offset += idx[d] * job->strides[d];
    }
    int last = job->rank - 1;
    for (int64_t i = begin; i < end; i += BATCH) {
        int count = end - i < BATCH ? (int)(end - i) : BATCH;
        uint64_t first = job->prim->offset + (uint64_t)i;
        standard_values(job->prim, first, count, wide, standard_f, standard_d);
        if (wide)
            scale_wide(job->prim, standard_d, count, scaled_d);
        else
            scale_narrow(job->prim, job->dtype, standard_f, count, scaled_f);
        for (int j = 0; j < count; j++) {
            store_value(job->dtype, job->data + offset * (int64_t)job->elem, scaled_f, scaled_d,
                        j);
            for (int d = last; d >= 0; d--) {
                offset += job->strides[d];
                if (++idx[d] < job->sizes[d]) break;
                offset -= idx[d] * job->strides[d];
                idx[d] = 0;
            }
        }
    }
}

/* Merges axes that walk memory as one (stride[d] == stride[d+1] * size[d+1])
 * and drops size-1 axes; the row-major element order is unchanged. */
static void merge_axes(const porta_tensor *t, random_job *job) {
    job->rank = 0;
    for (int d = 0; d < t->rank; d++) {
        if (t->sizes[d] == 1) continue;
        int r = job->rank;
        if (r > 0 && job->strides[r - 1] == t->strides[d] * t->sizes[d]) {
            job->sizes[r - 1] *= t->sizes[d];
            job->strides[r - 1] = t->strides[d];
        } else {
            job->sizes[r] = t->sizes[d];
            job->strides[r] = t->strides[d];
            job->rank++;
        }
    }
}

porta_status *cpu_exec_random(const porta_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    if (!porta_dtype_is_float(out->dtype))
        return porta_error(PORTA_ERR_INTERNAL, "cpu random: out dtype %s is not a float dtype",
                           porta_dtype_name(out->dtype));
    int64_t n = porta_tensor_numel(out);
    if (n == 0) return NULL;
    random_job job = {.prim = prim,
                      .data = porta_tensor_data(out),
                      .elem = porta_dtype_size(out->dtype),
                      .dtype = out->dtype};
    merge_axes(out, &job);
    cpu_parallel_for(n, GRAIN, fill_range, &job);
    return NULL;
}
