/* PRIM_RANDOM on the CPU: Philox streams (core/philox.h) written into a
 * float tensor of any strides, element i at stream position offset + i.
 *
 * Values are made a batch at a time: the Philox words of every block the
 * batch touches, then the transform of those words to the distribution, in
 * straight loops over arrays, then the stores. */
#include <string.h>

/* The batch loops (Philox rounds over blocks, the transforms) have lengths
 * -O2's very cheap cost model will not vectorize; the cheap one does
 * (measured on one thread, 10M float32 uniforms: 35 -> 20 ms). */
#pragma GCC optimize("vect-cost-model=cheap")

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/threadpool.h"
#include "core/dtype.h"
#include "core/philox.h"
#include "core/status.h"

/* Elements per batch. */
#define BATCH 512
/* Elements per thread below which threading costs more than it saves. */
#define GRAIN 16384

typedef struct random_job {
    const ir_prim *prim;
    char *data; /* element 0 of out */
    porta_dtype dtype;
    /* out's layout with mergeable axes merged, in row-major order */
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t strides[PORTA_MAX_RANK];
} random_job;

/* One batch: the words of stream positions [first & ~3, ...), so position
 * first + j has word words[skip + j]; then its values. */
typedef struct batch {
    uint32_t words[BATCH + 8];
    int skip;
    float narrow[BATCH + 8];
    double wide[BATCH + 8];
} batch;

/* core_philox4x32_10 on every block of the batch at once: each round is a
 * loop over blocks, which the compiler turns into vector multiplies. */
static void make_words(uint64_t seed, uint64_t first, int count, batch *out) {
    out->skip = (int)(first & 3);
    uint64_t base = first - (uint64_t)out->skip;
    int blocks = (out->skip + count + 3) / 4;
    uint32_t c0[BATCH / 4 + 2], c1[BATCH / 4 + 2], c2[BATCH / 4 + 2], c3[BATCH / 4 + 2];
    for (int k = 0; k < blocks; k++) {
        /* Positions wrap modulo 2^64, and blocks with them. */
        uint64_t block = (base + 4 * (uint64_t)k) >> 2;
        c0[k] = (uint32_t)block;
        c1[k] = (uint32_t)(block >> 32);
        c2[k] = 0;
        c3[k] = 0;
    }
    uint32_t key0 = (uint32_t)seed, key1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        for (int k = 0; k < blocks; k++) {
            uint64_t p0 = (uint64_t)CORE_PHILOX_M0 * c0[k];
            uint64_t p1 = (uint64_t)CORE_PHILOX_M1 * c2[k];
            uint32_t next0 = (uint32_t)(p1 >> 32) ^ c1[k] ^ key0;
            uint32_t next2 = (uint32_t)(p0 >> 32) ^ c3[k] ^ key1;
            c1[k] = (uint32_t)p1;
            c3[k] = (uint32_t)p0;
            c0[k] = next0;
            c2[k] = next2;
        }
        key0 += CORE_PHILOX_W0;
        key1 += CORE_PHILOX_W1;
    }
    for (int k = 0; k < blocks; k++) {
        out->words[4 * k] = c0[k];
        out->words[4 * k + 1] = c1[k];
        out->words[4 * k + 2] = c2[k];
        out->words[4 * k + 3] = c3[k];
    }
}

/* Values for words [begin, end) of the batch (begin and end even for
 * normals, so pairs stay whole), scaled to the distribution. */
static void transform(const ir_prim *prim, porta_dtype dtype, int begin, int end, batch *b) {
    const uint32_t *w = b->words;
    if (dtype == PORTA_F64) {
        double lo = prim->value, hi = prim->value2, *v = b->wide;
        if (prim->normal) {
            for (int j = begin; j < end; j += 2) {
                core_philox_box_muller_f64(w[j], w[j + 1], &v[j], &v[j + 1]);
                v[j] = lo + hi * v[j];
                v[j + 1] = lo + hi * v[j + 1];
            }
        } else {
            double range = hi - lo;
            for (int j = begin; j < end; j++) {
                double u = lo + range * (double)core_philox_unit(w[j]);
                v[j] = u >= hi ? lo : u;
            }
        }
        return;
    }
    float lo = (float)prim->value, hi = (float)prim->value2, *v = b->narrow;
    if (prim->normal) {
        for (int j = begin; j < end; j += 2) {
            core_philox_box_muller_f32(w[j], w[j + 1], &v[j], &v[j + 1]);
            v[j] = lo + hi * v[j];
            v[j + 1] = lo + hi * v[j + 1];
        }
        return;
    }
    float range = hi - lo;
    for (int j = begin; j < end; j++) v[j] = lo + range * core_philox_unit(w[j]);
    /* Rounding (to float, then to a half type) can reach `high`. */
    if (dtype == PORTA_F16)
        for (int j = begin; j < end; j++) v[j] = core_f16_to_f32(core_f32_to_f16(v[j]));
    else if (dtype == PORTA_BF16)
        for (int j = begin; j < end; j++) v[j] = core_bf16_to_f32(core_f32_to_bf16(v[j]));
    for (int j = begin; j < end; j++)
        if ((double)v[j] >= prim->value2) v[j] = lo;
}

/* Stores values [from, from + count) of the batch at element offsets
 * offset, offset + stride, ... of out. */
static void store(const random_job *job, const batch *b, int from, int count, int64_t offset,
                  int64_t stride) {
    switch (job->dtype) {
    case PORTA_F64: {
        double *out = (double *)job->data + offset;
        for (int j = 0; j < count; j++) out[j * stride] = b->wide[from + j];
        break;
    }
    case PORTA_F32: {
        float *out = (float *)job->data + offset;
        for (int j = 0; j < count; j++) out[j * stride] = b->narrow[from + j];
        break;
    }
    case PORTA_F16: {
        uint16_t *out = (uint16_t *)job->data + offset;
        for (int j = 0; j < count; j++) out[j * stride] = core_f32_to_f16(b->narrow[from + j]);
        break;
    }
    default: { /* bfloat16: the contract admits only float dtypes */
        uint16_t *out = (uint16_t *)job->data + offset;
        for (int j = 0; j < count; j++) out[j * stride] = core_f32_to_bf16(b->narrow[from + j]);
        break;
    }
    }
}

static void fill_range(void *ctx, int64_t begin, int64_t end, int thread) {
    const random_job *job = ctx;
    batch b;
    /* Multi-index of element `begin` over all but the last axis, which is
     * stored in runs. */
    int64_t idx[PORTA_MAX_RANK];
    int last = job->rank - 1;
    int64_t rest = begin, offset = 0;
    for (int d = last; d >= 0; d--) {
        idx[d] = rest % job->sizes[d];
        rest /= job->sizes[d];
        offset += idx[d] * job->strides[d];
    }
    int64_t last_size = last >= 0 ? job->sizes[last] : 1;
    int64_t last_stride = last >= 0 ? job->strides[last] : 0;
    int64_t last_idx = last >= 0 ? idx[last] : 0;
    for (int64_t i = begin; i < end; i += BATCH) {
        int count = end - i < BATCH ? (int)(end - i) : BATCH;
        uint64_t first = job->prim->offset + (uint64_t)i;
        make_words(job->prim->seed, first, count, &b);
        /* Normals transform whole pairs, including an unused partner at
         * either end of the batch. */
        int from = b.skip, to = b.skip + count;
        if (job->prim->normal) {
            from &= ~1;
            to = (to + 1) & ~1;
        }
        transform(job->prim, job->dtype, from, to, &b);
        for (int done = 0; done < count;) {
            int run = (int)(last_size - last_idx < count - done ? last_size - last_idx
                                                                : count - done);
            store(job, &b, b.skip + done, run, offset, last_stride);
            done += run;
            offset += run * last_stride;
            last_idx += run;
            if (last_idx < last_size) continue;
            /* Carry into the outer axes. */
            offset -= last_idx * last_stride;
            last_idx = 0;
            for (int d = last - 1; d >= 0; d--) {
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

porta_status *cpu_exec_random(const ir_prim *prim, const porta_tensor *const *inputs,
                              int input_count, porta_tensor *out) {
    if (!porta_dtype_is_float(out->dtype))
        return porta_error(PORTA_ERR_INTERNAL, "cpu random: out dtype %s is not a float dtype",
                           porta_dtype_name(out->dtype));
    int64_t n = porta_tensor_numel(out);
    if (n == 0) return NULL;
    random_job job = {.prim = prim, .data = core_tensor_data(out), .dtype = out->dtype};
    merge_axes(out, &job);
    cpu_parallel_for(n, GRAIN, fill_range, &job);
    return NULL;
}
