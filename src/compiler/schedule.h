/* The schedule of a trace: which recorded primitives run together as one
 * fused kernel, which run alone, and which need not run at all.
 *
 * Fusion rule. Records are taken in program order; each joins an open
 * group when it can without its inputs being written to memory first:
 *  - elementwise records over the group's domain join; a value another
 *    member produced is used from the register when the reader views it
 *    exactly as it was written;
 *  - a reduction over the domain's trailing dims joins (its elementwise
 *    producers become its prologue), and so do elementwise records over the
 *    reduced shape after it (epilogue) and over the whole domain reading
 *    the reduction broadcast (softmax's division, layer norm's scaling);
 *  - after a float32 matrix multiply, elementwise records over its [M, N]
 *    result join as the GEMM's epilogue;
 *  - one-element fills join as constants;
 *  - any buffer written in the group is accessed through one view only,
 *    so the fused loop keeps every element's reads and writes in order.
 * Several groups stay open while they are pairwise independent (plan.c):
 * a record that cannot join one but depends on none of them starts
 * another, so interleaved independent work still fuses; the groups a
 * record depends on are closed (run) first.
 * A value is stored when its buffer outlives the trace or a record outside
 * the group reads it; otherwise it lives only in registers. */
#ifndef PORTA_COMPILER_SCHEDULE_H
#define PORTA_COMPILER_SCHEDULE_H

#include "compiler/trace.h"
#include "ir/kernel_ir.h"

/* Facts about the trace's buffers, by local id (order of first use). */
typedef struct trace_facts {
    int buffer_count;
    int *record_buffer;   /* [record * (TRACE_MAX_INPUTS + 1) + slot]; slot
                             TRACE_MAX_INPUTS is the output */
    bool *external;       /* held outside the trace: must hold its values */
    int *last_reader;     /* last record reading the buffer, -1 if none */
} trace_facts;

porta_status *trace_facts_build(const trace_record *records, int count, trace_facts *facts);
void trace_facts_free(trace_facts *facts);
static inline int facts_buffer(const trace_facts *facts, int record, int slot) {
    return facts->record_buffer[record * (TRACE_MAX_INPUTS + 1) + slot];
}
#define SLOT_OUT TRACE_MAX_INPUTS

typedef enum step_kind {
    STEP_ALONE = 0,         /* one record through the device's execute */
    STEP_FUSED,             /* records [first, end) as one kernel */
    STEP_MATMUL_EPILOGUE    /* record `first` is a MATMUL, the rest its epilogue */
} step_kind;

/* Where an access of a kernel finds its tensor: a record's input or out. */
typedef struct access_binding {
    int record;
    int slot; /* input index, or SLOT_OUT */
} access_binding;

typedef struct plan_step {
    step_kind kind;
    int first; /* the record alone, or the group's first member */
    /* Fused steps: */
    int member_count;
    int *members; /* records, in program order */
    kir_kernel *kernel;
    void *program;
    access_binding bindings[KIR_MAX_ACCESSES];
    kir_args args; /* sizes and strides; data and params filled per run */
    int param_count;
    int param_records[KIR_MAX_PARAMS];
    int64_t work;  /* elements, or rows for reduction kernels */
    char *summary; /* what the kernel computes, for explain */
    /* Buffers used last by this step that nothing outside the trace holds:
     * their memory goes back right after it, for the next steps to reuse. */
    int release_count;
    access_binding *release;
} plan_step;

typedef struct plan {
    int step_count;
    plan_step *steps;
    int record_count;
    int kernel_count; /* steps that launch something */
} plan;

/* Builds the plan of records[0..count): groups, kernels lowered and
 * prepared on the device (a kernel the device cannot build makes its
 * records run alone). */
porta_status *plan_build(const trace_record *records, int count, const trace_facts *facts,
                         plan **out);
void plan_free(plan *p);
/* The host memory the plan holds (its steps, kernels, summaries, release
 * lists; not the device's compiled programs, which the kernel cache owns),
 * for the plan cache's bound. */
size_t plan_memory_bytes(const plan *p);


#endif
