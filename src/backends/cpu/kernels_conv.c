/* PRIM_CONV on the CPU, for any number of spatial axes: im2col + GEMM.
 *
 * For batch b and group g, the output block out[b, g's channels, positions]
 * is the matrix product W_g (Cout/g x Cin/g * prod(kernel)) @ col, where col
 * holds, for each (input channel, kernel offset) row and output position
 * column, the input element that kernel tap reads (0 in the padding). col is
 * built in tiles of positions (and of rows, when a column is very tall), so
 * the scratch stays bounded by COL_BYTES per thread whatever the shapes.
 *
 * The arithmetic is float32 for float32/float16/bfloat16 and double for
 * float64. Float32 arithmetic with more than a few output channels per group
 * builds col tiles for cpu_sgemm; float64 and the few-channel case
 * (depthwise convolutions) instead add each col row, as it is read, times
 * the weights into the output tile. Tiles are spread over threads when there
 * are enough of them; otherwise they run in turn and sgemm threads. */
#include <stdatomic.h>
#include <string.h>

/* -O2's very cheap cost model leaves the widening and axpy loops, whose
 * lengths are not known, scalar; the cheap model vectorizes them (measured
 * on one thread: depthwise 3x3 over [8, 64, 56, 56] 7.2 -> 4.8 ms, a
 * float64 3x3 conv 4.0 -> 2.7 ms). */
#pragma GCC optimize("vect-cost-model=cheap")

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels_conv.h"
#include "backends/cpu/gemm/gemm.h"
#include "backends/cpu/threadpool.h"
#include "core/alloc.h"
#include "core/dtype.h"
#include "core/status.h"

/* Bytes of one thread's column tile. */
#define COL_BYTES (1 << 20)
/* Output positions per tile unless the whole output is smaller: narrower
 * tiles make GEMMs too thin to run fast. */
#define MIN_TILE_POSITIONS 64
/* Columns up to which a tile takes several whole images (see
 * run_image_block). */
#define BLOCK_COLUMNS 256
/* Multiply-adds below which a tile is not worth another thread. */
#define TASK_WORK (1 << 17)


static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* ---- moving elements between tensors and arithmetic-type tiles ---- */

/* count elements from src (element stride `stride`) into dst, widened. */
void cpu_conv_gather_run(porta_dtype dtype, void *dst, const char *src, int64_t count,
                         int64_t stride) {
    if (stride == 1 && (dtype == PORTA_F32 || dtype == PORTA_F64)) {
        memcpy(dst, src, (size_t)count * porta_dtype_size(dtype));
        return;
    }
    switch (dtype) {
    case PORTA_F64:
        for (int64_t i = 0; i < count; i++) ((double *)dst)[i] = ((const double *)src)[i * stride];
        break;
    case PORTA_F32:
        for (int64_t i = 0; i < count; i++) ((float *)dst)[i] = ((const float *)src)[i * stride];
        break;
    case PORTA_F16:
        for (int64_t i = 0; i < count; i++)
            ((float *)dst)[i] = core_f16_to_f32(((const uint16_t *)src)[i * stride]);
        break;
    default: /* bfloat16 */
        for (int64_t i = 0; i < count; i++)
            ((float *)dst)[i] = core_bf16_to_f32(((const uint16_t *)src)[i * stride]);
        break;
    }
}

static void scatter_one(porta_dtype dtype, char *dst, const void *src, int64_t i) {
    switch (dtype) {
    case PORTA_F64: *(double *)dst = ((const double *)src)[i]; break;
    case PORTA_F32: *(float *)dst = ((const float *)src)[i]; break;
    case PORTA_F16: *(uint16_t *)dst = core_f32_to_f16(((const float *)src)[i]); break;
    default: *(uint16_t *)dst = core_f32_to_bf16(((const float *)src)[i]); break;
    }
}

/* Multi-index of position p over the output's spatial sizes. */
static void position_index(const conv_job *job, int64_t p, int64_t *idx) {
    for (int d = job->spatial - 1; d >= 0; d--) {
        idx[d] = p % job->out_sizes[d];
        p /= job->out_sizes[d];
    }
}

/* Called for each stretch of positions of one col row that reads inside
 * the input: column `at` (relative to the tile's first position) onwards,
 * `count` positions reading src, src + stride, ... (elements of x's dtype).
 * Positions between stretches read padding, that is zero. */
typedef void (*segment_fn)(void *ctx, int64_t at, const char *src, int64_t count,
                           int64_t stride);

/* Walks row `row` of image b's col matrix for group g over positions
 * [p0, p0 + count), in runs along the last spatial axis. */
static void for_each_segment(const conv_job *job, int64_t b, int64_t g, int64_t row, int64_t p0,
                             int64_t count, segment_fn fn, void *ctx) {
    int last = job->spatial - 1;
    int64_t channel = g * job->in_per_group + row / job->taps;
    int64_t tap[PORTA_MAX_RANK - 2];
    for (int64_t t = row % job->taps, d = last; d >= 0; d--) {
        tap[d] = t % job->kernel[d];
        t /= job->kernel[d];
    }
    int64_t elem = (int64_t)porta_dtype_size(job->dtype);
    const char *plane = job->x + (b * job->x_strides[0] + channel * job->x_strides[1]) * elem;
    /* Along the last axis output o reads input o*s + start, which is inside
     * the input for o in [first, end). */
    int64_t s = job->stride[last], x_stride = job->x_strides[2 + last];
    int64_t start = tap[last] * job->dilation[last] - job->padding[last];
    int64_t first = start >= 0 ? 0 : (-start + s - 1) / s;
    int64_t limit = job->in_sizes[last] - start;
    int64_t end = limit <= 0 ? 0 : (limit + s - 1) / s;
    int64_t o[PORTA_MAX_RANK - 2];
    position_index(job, p0, o);
    for (int64_t done = 0; done < count;) {
        int64_t run = min64(job->out_sizes[last] - o[last], count - done);
        /* Outer axes: one input coordinate for the whole run. */
        bool inside = true;
        int64_t offset = 0;
        for (int d = 0; d < last && inside; d++) {
            int64_t i = o[d] * job->stride[d] - job->padding[d] + tap[d] * job->dilation[d];
            inside = i >= 0 && i < job->in_sizes[d];
            offset += i * job->x_strides[2 + d];
        }
        int64_t lo = max64(o[last], min64(first, o[last] + run));
        int64_t hi = max64(lo, min64(end, o[last] + run));
        if (inside && hi > lo)
            fn(ctx, done + lo - o[last], plane + (offset + (lo * s + start) * x_stride) * elem,
               hi - lo, s * x_stride);
        done += run;
        o[last] += run;
        for (int d = last; d > 0 && o[d] == job->out_sizes[d]; d--) {
            o[d] = 0;
            o[d - 1]++;
        }
    }
}

/* im2col: one col row, written in full (zeros in the padding). */
typedef struct col_row {
    porta_dtype dtype;
    size_t ct_size;
    char *dst;
    int64_t filled; /* columns written so far */
} col_row;

static void write_segment(void *ctx, int64_t at, const char *src, int64_t count,
                          int64_t stride) {
    col_row *row = ctx;
    memset(row->dst + (size_t)row->filled * row->ct_size, 0,
           (size_t)(at - row->filled) * row->ct_size);
    cpu_conv_gather_run(row->dtype, row->dst + (size_t)at * row->ct_size, src, count, stride);
    row->filled = at + count;
}

/* One col row of a stride-1 convolution whose output rows are as wide as
 * the input's, read from a plane whose rows are contiguous and adjacent:
 * the row is then the plane shifted by (top, left), one copy, after which
 * the columns that wrapped around a row's end (and the rows above or below
 * the input) are zeroed. */
static void shifted_row_f32(const float *plane, int64_t in_h, int64_t width, int64_t top,
                            int64_t left, int64_t p0, int64_t count, float *dst) {
    int64_t shift = top * width + left, end = p0 + count;
    /* positions whose input row exists and whose source lies in the plane */
    int64_t lo = max64(p0, max64(-top, 0) * width), hi = min64(end, (in_h - top) * width);
    lo = max64(lo, -shift);
    hi = min64(hi, in_h * width - shift);
    if (hi <= lo) {
        memset(dst, 0, (size_t)count * sizeof(float));
        return;
    }
    memset(dst, 0, (size_t)(lo - p0) * sizeof(float));
    memcpy(dst + (lo - p0), plane + lo + shift, (size_t)(hi - lo) * sizeof(float));
    memset(dst + (hi - p0), 0, (size_t)(end - hi) * sizeof(float));
    /* columns ow with ow + left outside [0, width): a stripe down the rows */
    int64_t bad_lo = left < 0 ? 0 : width - left, bad_hi = left < 0 ? -left : width;
    for (int64_t row = lo / width * width; row < hi; row += width)
        for (int64_t p = max64(row + bad_lo, lo); p < min64(row + bad_hi, hi); p++)
            dst[p - p0] = 0.0f;
}

/* im2col for float32 images (2 spatial axes), with the element loops
 * inline: small images make runs of a few elements, on which the general
 * walk's calls per run (segment callback, memset, memcpy) cost more than
 * the copying (one thread, a 3x3 conv of [64, 16, 8, 8] to 32 channels:
 * 1.15 -> 0.69 ms). */
static void im2col_f32_2d(const conv_job *job, int64_t b, int64_t g, int64_t row0, int64_t rows,
                          int64_t p0, int64_t count, int64_t ld, float *col) {
    int64_t out_w = job->out_sizes[1];
    int64_t in_h = job->in_sizes[0], in_w = job->in_sizes[1];
    int64_t kh = job->kernel[0], kw = job->kernel[1];
    int64_t sh = job->stride[0], sw = job->stride[1];
    int64_t xh = job->x_strides[2], xw = job->x_strides[3];
    /* rows are short (a tile's positions): the row's channel and kernel
     * tap are counted, not divided out of the row number each time */
    int64_t channel = g * job->in_per_group + row0 / job->taps, tap = row0 % job->taps;
    int64_t ki = tap / kw, kj = tap % kw, oh0 = p0 / out_w, ow0 = p0 % out_w;
    bool shifted = sh == 1 && sw == 1 && xw == 1 && xh == in_w && out_w == in_w;
    for (int64_t r = 0; r < rows; r++) {
        int64_t top = ki * job->dilation[0] - job->padding[0];
        int64_t left = kj * job->dilation[1] - job->padding[1];
        const float *plane = (const float *)job->x + b * job->x_strides[0] +
                             channel * job->x_strides[1];
        /* output column o reads input column o*sw + left: inside for o in [first, end) */
        int64_t first = left >= 0 ? 0 : sw == 1 ? -left : (-left + sw - 1) / sw;
        int64_t limit = in_w - left;
        int64_t end = limit <= 0 ? 0 : min64(out_w, sw == 1 ? limit : (limit + sw - 1) / sw);
        if (++kj == kw) {
            kj = 0;
            if (++ki == kh) {
                ki = 0;
                channel++;
            }
        }
        float *dst = col + r * ld;
        if (shifted) {
            shifted_row_f32(plane, in_h, in_w, top, left, p0, count, dst);
            continue;
        }
        int64_t oh = oh0, ow = ow0;
        for (int64_t done = 0; done < count; oh++, ow = 0) {
            int64_t run = min64(out_w - ow, count - done);
            int64_t ih = oh * sh + top, lo = max64(ow, first), hi = min64(ow + run, end);
            float *at = dst + done - ow;
            if (ih < 0 || ih >= in_h || lo >= hi) {
                for (int64_t o = ow; o < ow + run; o++) at[o] = 0.0f;
            } else {
                const float *src = plane + ih * xh + left * xw;
                for (int64_t o = ow; o < lo; o++) at[o] = 0.0f;
                if (sw * xw == 1)
                    memcpy(at + lo, src + lo, (size_t)(hi - lo) * sizeof(float));
                else
                    for (int64_t o = lo; o < hi; o++) at[o] = src[o * sw * xw];
                for (int64_t o = hi; o < ow + run; o++) at[o] = 0.0f;
            }
            done += run;
        }
    }
}

void cpu_conv_load_positions(const conv_job *job, int64_t b, int64_t channel, int64_t p0,
                             int64_t count, void *dst) {
    int64_t elem = (int64_t)porta_dtype_size(job->dtype);
    const char *plane = job->out + (b * job->out_strides[0] + channel * job->out_strides[1]) * elem;
    if (job->position_stride != 0) {
        cpu_conv_gather_run(job->dtype, dst, plane + p0 * job->position_stride * elem, count,
                            job->position_stride);
        return;
    }
    int64_t o[PORTA_MAX_RANK - 2];
    for (int64_t p = p0, d = job->spatial - 1; d >= 0; d--) {
        o[d] = p % job->out_sizes[d];
        p /= job->out_sizes[d];
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t offset = 0;
        for (int d = 0; d < job->spatial; d++) offset += o[d] * job->out_strides[2 + d];
        cpu_conv_gather_run(job->dtype, (char *)dst + (size_t)i * job->ct_size,
                            plane + offset * elem, 1, 1);
        for (int d = job->spatial - 1; d >= 0 && ++o[d] == job->out_sizes[d]; d--) o[d] = 0;
    }
}

/* Floats of the padded planes im2col_padded_f32 builds on the stack. */
#define PADDED_FLOATS 8192

/* im2col for all of a small float32 image (2 spatial axes): the channels
 * the rows read are first copied into zero-padded planes, after which
 * every col row is plain strided reads, with no bounds to check or runs to
 * work out (one thread, a 3x3 conv of [64, 16, 8, 8] to 32 channels:
 * 0.44 -> 0.40 ms). False, doing nothing, when the planes would not fit.
 * Rows are a few elements long: copied inline, not by calls to memcpy and
 * memset that the compiler would otherwise make of the loops. */
__attribute__((optimize("no-tree-loop-distribute-patterns")))
static bool im2col_padded_f32(const conv_job *job, int64_t b, int64_t g, int64_t row0,
                              int64_t rows, int64_t ld, float *col) {
    int64_t in_h = job->in_sizes[0], in_w = job->in_sizes[1];
    int64_t pad_h = job->padding[0], pad_w = job->padding[1];
    int64_t plane_h = in_h + 2 * pad_h, plane_w = in_w + 2 * pad_w, area = plane_h * plane_w;
    int64_t first = row0 / job->taps, channels = (row0 + rows - 1) / job->taps - first + 1;
    if (channels * area > PADDED_FLOATS) return false;
    float planes[PADDED_FLOATS];
    int64_t xh = job->x_strides[2], xw = job->x_strides[3];
    for (int64_t c = 0; c < channels; c++) {
        const float *src = (const float *)job->x + b * job->x_strides[0] +
                           (g * job->in_per_group + first + c) * job->x_strides[1];
        float *plane = planes + c * area;
        for (int64_t i = 0; i < area; i++) plane[i] = 0.0f;
        for (int64_t h = 0; h < in_h; h++) {
            float *dst = plane + (h + pad_h) * plane_w + pad_w;
            for (int64_t w = 0; w < in_w; w++) dst[w] = src[h * xh + w * xw];
        }
    }
    int64_t out_h = job->out_sizes[0], out_w = job->out_sizes[1];
    int64_t kw = job->kernel[1], sh = job->stride[0], sw = job->stride[1];
    int64_t dh = job->dilation[0], dw = job->dilation[1];
    for (int64_t r = 0; r < rows; r++) {
        int64_t row = row0 + r, tap = row % job->taps;
        const float *base = planes + (row / job->taps - first) * area +
                            tap / kw * dh * plane_w + tap % kw * dw;
        float *dst = col + r * ld;
        for (int64_t oh = 0; oh < out_h; oh++, dst += out_w) {
            const float *src = base + oh * sh * plane_w;
            if (sw == 1)
                for (int64_t ow = 0; ow < out_w; ow++) dst[ow] = src[ow];
            else
                for (int64_t ow = 0; ow < out_w; ow++) dst[ow] = src[ow * sw];
        }
    }
    return true;
}

void cpu_conv_im2col(const conv_job *job, int64_t b, int64_t g, int64_t row0, int64_t rows,
                     int64_t p0, int64_t count, int64_t ld, char *col) {
    if (job->dtype == PORTA_F32 && job->spatial == 2 && p0 == 0 && count == job->positions &&
        rows > 0 && im2col_padded_f32(job, b, g, row0, rows, ld, (float *)col))
        return;
    if (job->dtype == PORTA_F32 && job->spatial == 2) {
        im2col_f32_2d(job, b, g, row0, rows, p0, count, ld, (float *)col);
        return;
    }
    for (int64_t r = 0; r < rows; r++) {
        col_row row = {job->dtype, job->ct_size, col + (size_t)(r * ld) * job->ct_size, 0};
        for_each_segment(job, b, g, row0 + r, p0, count, write_segment, &row);
        memset(row.dst + (size_t)row.filled * row.ct_size, 0,
               (size_t)(count - row.filled) * row.ct_size);
    }
}

/* Without col: each segment of a col row, widened a piece at a time, is
 * added times each output channel's weight straight into the output tile.
 * For a few output channels (depthwise convolutions) this beats building col
 * for sgemm, and it is the float64 path. */
#define STAGE 256

typedef struct accumulate_row {
    const conv_job *job;
    int64_t channels;
    const char *weights; /* this col row's weight for the first channel */
    char *tile;          /* channels x tile_row of the arithmetic type */
    int64_t tile_row;
} accumulate_row;

static void accumulate_segment(void *ctx, int64_t at, const char *src, int64_t count,
                               int64_t stride) {
    const accumulate_row *acc = ctx;
    const conv_job *job = acc->job;
    int64_t elem = (int64_t)porta_dtype_size(job->dtype);
    /* Unit-stride input already in the arithmetic type is read in place. */
    bool in_place = stride == 1 && (job->dtype == PORTA_F32 || job->dtype == PORTA_F64);
    union {
        float f[STAGE];
        double d[STAGE];
    } stage;
    for (int64_t j0 = 0; j0 < count; j0 += STAGE) {
        int64_t n = min64(STAGE, count - j0);
        const void *x = src + j0 * stride * elem;
        if (!in_place) {
            cpu_conv_gather_run(job->dtype, &stage, x, n, stride);
            x = &stage;
        }
        for (int64_t i = 0; i < acc->channels; i++) {
            size_t w_at = (size_t)(i * job->weight_rs) * job->ct_size;
            size_t row_at = (size_t)(i * acc->tile_row + at + j0) * job->ct_size;
            if (job->wide) {
                double w = *(const double *)(acc->weights + w_at);
                double *row = (double *)(acc->tile + row_at);
                const double *xd = x;
                for (int64_t j = 0; j < n; j++) row[j] += w * xd[j];
            } else {
                float w = *(const float *)(acc->weights + w_at);
                float *row = (float *)(acc->tile + row_at);
                const float *xf = x;
                for (int64_t j = 0; j < n; j++) row[j] += w * xf[j];
            }
        }
    }
}

/* Writes a channels x count output tile (arithmetic type, rows tile_rs
 * apart) to out[b, channel0.., positions p0..]. */
static void store_tile(const conv_job *job, int64_t b, int64_t channel0, int64_t channels,
                       int64_t p0, int64_t count, const void *tile, int64_t tile_rs) {
    int64_t elem = (int64_t)porta_dtype_size(job->dtype);
    for (int64_t c = 0; c < channels; c++) {
        char *plane =
            job->out + (b * job->out_strides[0] + (channel0 + c) * job->out_strides[1]) * elem;
        if (job->position_stride != 0) { /* float32, positions one stride apart */
            float *dst = (float *)plane + p0 * job->position_stride;
            const float *src = (const float *)tile + c * tile_rs;
            for (int64_t i = 0; i < count; i++) dst[i * job->position_stride] = src[i];
            continue;
        }
        int64_t o[PORTA_MAX_RANK - 2];
        position_index(job, p0, o);
        int64_t offset = 0;
        for (int d = 0; d < job->spatial; d++) offset += o[d] * job->out_strides[2 + d];
        for (int64_t i = 0; i < count; i++) {
            scatter_one(job->dtype, plane + offset * elem, tile, c * tile_rs + i);
            for (int d = job->spatial - 1; d >= 0; d--) {
                offset += job->out_strides[2 + d];
                if (++o[d] < job->out_sizes[d]) break;
                offset -= o[d] * job->out_strides[2 + d];
                o[d] = 0;
            }
        }
    }
}

/* ---- one tile: positions [p0, p0 + count) of image b, group g ---- */

/* Output channels per group up to which accumulating without col beats
 * sgemm, whose packing does not pay for so few rows. */
#define PLAIN_MAX_CHANNELS 4

static bool uses_sgemm(const conv_job *job) {
    return !job->wide && job->out_per_group > PLAIN_MAX_CHANNELS;
}

static void fill_bias(const conv_job *job, int64_t channel0, int64_t m, int64_t n, void *c,
                      int64_t c_rs, int64_t c_cs) {
    if (!job->wide && c_cs == 1) { /* the common case, in a loop the compiler vectorizes */
        for (int64_t i = 0; i < m; i++) {
            float value = job->bias ? ((const float *)job->bias)[channel0 + i] : 0.0f;
            float *row = (float *)c + i * c_rs;
            for (int64_t j = 0; j < n; j++) row[j] = value;
        }
        return;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            int64_t at = i * c_rs + j * c_cs;
            if (job->wide)
                ((double *)c)[at] = job->bias ? ((const double *)job->bias)[channel0 + i] : 0.0;
            else
                ((float *)c)[at] = job->bias ? ((const float *)job->bias)[channel0 + i] : 0.0f;
        }
}

static porta_status *run_tile(const conv_job *job, int64_t tile, int thread) {
    int64_t image = tile / job->tiles_per_image;
    int64_t b = image / job->groups, g = image % job->groups;
    int64_t p0 = tile % job->tiles_per_image * job->tile_positions;
    int64_t count = min64(job->tile_positions, job->positions - p0);
    int64_t m = job->out_per_group, channel0 = g * m;
    bool sgemm = uses_sgemm(job);
    char *col = (char *)job->scratch + (size_t)thread * job->scratch_stride;
    size_t col_bytes = sgemm ? (size_t)(job->tile_depth * job->tile_positions) * job->ct_size : 0;
    void *c = col + (col_bytes + 63) / 64 * 64;
    int64_t c_rs = count, c_cs = 1;
    /* Straight into out when its positions are one stride apart (unit
     * stride without sgemm), else through the scratch tile. */
    bool direct = job->position_stride != 0 && (sgemm || job->position_stride == 1);
    if (direct) {
        c = job->out + (b * job->out_strides[0] + channel0 * job->out_strides[1] +
                        p0 * job->position_stride) * (int64_t)sizeof(float);
        c_rs = job->out_strides[1];
        c_cs = job->position_stride;
    }
    const char *w = (const char *)job->weights + (size_t)(channel0 * job->weight_rs) * job->ct_size;
    if (!sgemm) {
        fill_bias(job, channel0, m, count, c, c_rs, c_cs);
        accumulate_row acc = {job, m, w, c, c_rs};
        for (int64_t row = 0; row < job->depth; row++, acc.weights += job->ct_size)
            for_each_segment(job, b, g, row, p0, count, accumulate_segment, &acc);
    } else {
        /* Later depth chunks accumulate; so does the first onto a bias. */
        bool accumulate = job->bias || job->depth == 0;
        if (accumulate) fill_bias(job, channel0, m, count, c, c_rs, c_cs);
        for (int64_t row0 = 0; row0 < job->depth; row0 += job->tile_depth) {
            int64_t rows = min64(job->tile_depth, job->depth - row0);
            cpu_conv_im2col(job, b, g, row0, rows, p0, count, count, col);
            PORTA_TRY(cpu_sgemm(m, count, rows, (const float *)(w + (size_t)row0 * job->ct_size),
                                job->weight_rs, 1, (const float *)col, count, 1,
                                accumulate ? 1.0f : 0.0f, c, c_rs, c_cs));
            accumulate = true;
        }
    }
    if (!direct) store_tile(job, b, channel0, m, p0, count, c, count);
    return NULL;
}

/* A tile of several small images of group g: their cols side by side make
 * one product wide enough for sgemm to pay for packing the weights once
 * (one thread, a 3x3 conv of [64, 16, 8, 8] to 32 channels: 0.40 -> 0.38 ms). */
static porta_status *run_image_block(const conv_job *job, int64_t tile, int thread) {
    int64_t g = tile % job->groups, b0 = tile / job->groups * job->tile_images;
    int64_t images = min64(job->tile_images, job->batch - b0), positions = job->positions;
    int64_t ld = images * positions, m = job->out_per_group, channel0 = g * m;
    size_t ct = job->ct_size;
    char *col = (char *)job->scratch + (size_t)thread * job->scratch_stride;
    size_t col_bytes = (size_t)(job->tile_depth * job->tile_images * positions) * ct;
    float *c = (float *)(col + (col_bytes + 63) / 64 * 64);
    const char *w = (const char *)job->weights + (size_t)(channel0 * job->weight_rs) * ct;
    bool accumulate = job->bias || job->depth == 0;
    if (accumulate) fill_bias(job, channel0, m, ld, c, ld, 1);
    for (int64_t row0 = 0; row0 < job->depth; row0 += job->tile_depth) {
        int64_t rows = min64(job->tile_depth, job->depth - row0);
        for (int64_t t = 0; t < images; t++)
            cpu_conv_im2col(job, b0 + t, g, row0, rows, 0, positions, ld,
                            col + (size_t)(t * positions) * ct);
        PORTA_TRY(cpu_sgemm(m, ld, rows, (const float *)(w + (size_t)row0 * ct), job->weight_rs,
                            1, (const float *)col, ld, 1, accumulate ? 1.0f : 0.0f, c, ld, 1));
        accumulate = true;
    }
    for (int64_t t = 0; t < images; t++)
        store_tile(job, b0 + t, channel0, m, 0, positions, c + t * positions, ld);
    return NULL;
}

static void record_error(conv_job *job, porta_status *status) {
    porta_status *none = NULL;
    if (status && !atomic_compare_exchange_strong(&job->error, &none, status))
        porta_status_free(status);
}

static void tile_range(void *ctx, int64_t begin, int64_t end, int thread) {
    conv_job *job = ctx;
    for (int64_t t = begin; t < end && !atomic_load(&job->error); t++)
        record_error(job, job->tile_images > 1 ? run_image_block(job, t, thread)
                                               : run_tile(job, t, thread));
}

/* ---- setup ---- */

/* W [Cout, Cin/g, *kernel] as a [Cout, depth] matrix in the arithmetic
 * type: float32 weights whose rows are already flat are used in place. */
porta_status *cpu_conv_prepare_weights(conv_job *job, const porta_tensor *w, void **owned) {
    *owned = NULL;
    bool flat = true;
    int64_t expect = 1;
    for (int d = w->rank - 1; d >= 1; d--) {
        if (w->sizes[d] != 1 && w->strides[d] != expect) flat = false;
        expect *= w->sizes[d];
    }
    if (job->dtype == PORTA_F32 && flat) {
        job->weights = core_tensor_data(w);
        job->weight_rs = w->strides[0];
        return NULL;
    }
    int64_t rows = w->sizes[0], cols = job->depth;
    PORTA_TRY(core_host_alloc((size_t)(rows * cols) * job->ct_size, "conv weights", owned));
    int64_t elem = (int64_t)porta_dtype_size(w->dtype);
    int64_t idx[PORTA_MAX_RANK] = {0};
    char *dst = *owned;
    /* Row-major walk over all of w with the last axis as strided runs. */
    int last = w->rank - 1;
    for (int64_t run = 0; run < rows * cols / w->sizes[last]; run++) {
        int64_t offset = 0;
        for (int d = 0; d < last; d++) offset += idx[d] * w->strides[d];
        cpu_conv_gather_run(job->dtype, dst, core_tensor_data(w) + offset * elem, w->sizes[last],
                   w->strides[last]);
        dst += (size_t)w->sizes[last] * job->ct_size;
        for (int d = last - 1; d >= 0 && ++idx[d] == w->sizes[d]; d--) idx[d] = 0;
    }
    job->weights = *owned;
    job->weight_rs = cols;
    return NULL;
}

static porta_status *prepare_bias(conv_job *job, const porta_tensor *bias, void **owned) {
    *owned = NULL;
    job->bias = NULL;
    if (!bias) return NULL;
    PORTA_TRY(core_host_alloc((size_t)bias->sizes[0] * job->ct_size, "conv bias", owned));
    cpu_conv_gather_run(job->dtype, *owned, core_tensor_data(bias), bias->sizes[0], bias->strides[0]);
    job->bias = *owned;
    return NULL;
}

/* The single stride that walks out's positions in order, or 0 when the
 * spatial axes do not collapse into one or out is not float32 (the tile
 * then goes through scratch). */
static int64_t collapsed_position_stride(const porta_tensor *out) {
    if (out->dtype != PORTA_F32) return 0;
    int64_t step = 1, span = 1; /* span: positions per step of axis d */
    bool have = false;
    for (int d = out->rank - 1; d >= 2; d--) {
        if (out->sizes[d] != 1) {
            if (!have) {
                step = out->strides[d];
                have = true;
            } else if (out->strides[d] != step * span) {
                return 0;
            }
        }
        span *= out->sizes[d];
    }
    return step;
}

/* Tile sizes: positions per tile and col rows per pass, within COL_BYTES
 * (the output tile, without col), and enough tiles to keep every thread
 * busy when the output allows. */
static void choose_tiles(conv_job *job, int64_t images) {
    int64_t per_row = COL_BYTES / (int64_t)job->ct_size;
    int64_t floor = min64(job->positions, MIN_TILE_POSITIONS);
    int64_t rows = uses_sgemm(job) ? job->depth : job->out_per_group;
    int64_t width = rows ? per_row / rows : job->positions;
    int64_t threads = cpu_thread_count();
    if (images < threads) {
        int64_t wanted_tiles = (threads + images - 1) / images;
        width = min64(width, (job->positions + wanted_tiles - 1) / wanted_tiles);
    }
    job->tile_positions = max64(floor, min64(width, job->positions));
    job->tile_images = 1;
    if (uses_sgemm(job) && job->tile_positions == job->positions &&
        job->positions < BLOCK_COLUMNS) {
        /* small images: several to a tile, keeping a few tiles per thread */
        int64_t blocks = max64(1, 4 * threads / job->groups);
        job->tile_images = max64(1, min64(BLOCK_COLUMNS / job->positions,
                                          (job->batch + blocks - 1) / blocks));
    }
    job->tile_depth =
        max64(1, min64(job->depth, per_row / (job->tile_positions * job->tile_images)));
    job->tiles_per_image = (job->positions + job->tile_positions - 1) / job->tile_positions;
}

void cpu_conv_describe(conv_job *job, const porta_conv_params *params, const porta_tensor *x,
                       const int64_t *w_sizes, const porta_tensor *out) {
    job->dtype = out->dtype;
    job->wide = out->dtype == PORTA_F64;
    job->ct_size = job->wide ? sizeof(double) : sizeof(float);
    job->spatial = x->rank - 2;
    job->x = core_tensor_data(x);
    job->out = (char *)core_tensor_data(out);
    memcpy(job->x_strides, x->strides, sizeof job->x_strides);
    memcpy(job->out_strides, out->strides, sizeof job->out_strides);
    job->batch = out->sizes[0];
    job->positions = 1;
    job->taps = 1;
    for (int d = 0; d < job->spatial; d++) {
        job->in_sizes[d] = x->sizes[2 + d];
        job->kernel[d] = w_sizes[2 + d];
        job->out_sizes[d] = out->sizes[2 + d];
        job->stride[d] = params->stride[d];
        job->padding[d] = params->padding[d];
        job->dilation[d] = params->dilation[d];
        job->positions *= out->sizes[2 + d];
        job->taps *= w_sizes[2 + d];
    }
    job->position_stride = collapsed_position_stride(out);
    job->groups = params->groups;
    job->in_per_group = x->sizes[1] / job->groups;
    job->out_per_group = out->sizes[1] / job->groups;
    job->depth = job->in_per_group * job->taps;
}

porta_status *cpu_exec_conv(const ir_prim *prim, const porta_tensor *const *inputs,
                            int input_count, porta_tensor *out) {
    if (porta_tensor_numel(out) == 0) return NULL;
    conv_job job;
    memset(&job, 0, sizeof job);
    cpu_conv_describe(&job, &prim->conv, inputs[0], inputs[1]->sizes, out);
    atomic_init(&job.error, NULL);
    int64_t images = out->sizes[0] * job.groups;
    choose_tiles(&job, images);
    int64_t tiles = job.tile_images > 1
                        ? job.groups * ((job.batch + job.tile_images - 1) / job.tile_images)
                        : images * job.tiles_per_image;
    int64_t tile_work =
        job.out_per_group * job.tile_positions * job.tile_images * max64(job.depth, 1);
    int threads = cpu_thread_count();
    /* Too few tiles to go round: run them in turn and let sgemm thread. */
    bool thread_tiles = !uses_sgemm(&job) || tiles >= threads;
    int64_t grain = thread_tiles ? TASK_WORK / tile_work + 1 : tiles;
    int64_t chunks = min64(threads, (tiles + grain - 1) / grain);

    void *weights = NULL, *bias = NULL;
    porta_status *status = NULL;
    CORE_TRY_GOTO(status, cpu_conv_prepare_weights(&job, inputs[1], &weights), done);
    CORE_TRY_GOTO(status, prepare_bias(&job, input_count > 2 ? inputs[2] : NULL, &bias), done);
    int64_t tile_columns = job.tile_positions * job.tile_images;
    size_t col_bytes =
        uses_sgemm(&job) ? (size_t)(job.tile_depth * tile_columns) * job.ct_size : 0;
    size_t out_bytes = (size_t)(job.out_per_group * tile_columns) * job.ct_size;
    job.scratch_stride = (col_bytes + 63) / 64 * 64 + (out_bytes + 63) / 64 * 64;
    CORE_TRY_GOTO(status, core_host_alloc(job.scratch_stride * (size_t)chunks,
                                            "conv column tiles", &job.scratch), done);
    cpu_parallel_for(tiles, grain, tile_range, &job);
    status = atomic_exchange(&job.error, NULL);
done:
    core_host_free(job.scratch);
    core_host_free(bias);
    core_host_free(weights);
    return status;
}
