/*
 * porta_place.h - where primitives run when their device cannot run them.
 *
 * A primitive whose device cannot run it (a dtype the device lacks, such as
 * float64 on an OpenCL device without cl_khr_fp64, or an op its backend has
 * no kernel for) runs on another device instead of failing: the CPU device
 * when it is visible and supports it, else the first other visible device
 * in porta:N order that does. The CPU comes first because every copy
 * between devices stages through host memory: the CPU is reached with one
 * copy each way, any other device with two. Its inputs are copied there,
 * the result is copied back into the original output, and the program goes
 * on as if the device had run it.
 * Eagerly this happens per primitive; in fused mode and torch.compile the
 * scheduler keeps such primitives out of the device's fused kernels and runs
 * each on the fallback device between them (a trace split across devices).
 *
 * The counters below say what was placed where and what the copies cost.
 * The conventions of porta.h apply.
 */
#ifndef PORTA_PLACE_H
#define PORTA_PLACE_H

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One (primitive, from, to) triple: `op` as in error messages ("cast",
 * "binary.add", "reduce.sum", "matmul"), devices by porta:N index; -1 for
 * a device PORTA_VISIBLE_DEVICES hides (the host CPU, when only other
 * devices are visible). */
typedef struct porta_placement_count {
    char op[48];
    int from;
    int to;
    uint64_t count;       /* primitives placed */
    uint64_t bytes_in;    /* copied from `from` to `to` (inputs, and the
                             output's old contents when it has gaps) */
    uint64_t bytes_out;   /* copied back from `to` to `from` (results) */
} porta_placement_count;

/* Writes up to `cap` entries to out (which may be NULL when cap is 0), in
 * the order the triples first occurred, and returns how many exist. */
PORTA_API int porta_placement_counts(porta_placement_count *out, int cap);
PORTA_API void porta_placement_counts_reset(void);

#ifdef __cplusplus
}
#endif

#endif
