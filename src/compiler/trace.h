/* The trace: primitives recorded while fusion is on (porta_set_fusion),
 * run as fused kernels at the next sync point. ops_device_execute hands
 * each primitive here; buffer reads and writes by the host sync first. */
#ifndef PORTA_COMPILER_TRACE_H
#define PORTA_COMPILER_TRACE_H

#include "ir/prim.h"
#include "runtime/tensor.h"

#define TRACE_MAX_INPUTS 3
#define TRACE_SITE_CAP 96
/* Records per trace before it is run anyway, bounding memory held by
 * pending results and the size of one schedule. */
#define TRACE_MAX_RECORDS 4096

/* One recorded primitive. Tensors are copied by value (callers may pass
 * views built on their stack), each copy holding one buffer reference. */
typedef struct trace_record {
    ir_prim prim;
    int input_count;
    porta_tensor inputs[TRACE_MAX_INPUTS];
    porta_tensor out;
    char site[TRACE_SITE_CAP]; /* where it was issued, "" if unknown */
} trace_record;

/* Whether ops_device_execute should record instead of running: fusion
 * is on and this thread is not itself running a trace. */
bool trace_recording(void);
/* Records prim (already checked against the device's `supports`). */
porta_status *trace_record_prim(const ir_prim *prim, const porta_tensor *const *inputs,
                                int input_count, const porta_tensor *out);
/* Runs the trace if `buffer` may be written or read by a recorded
 * primitive: the host is about to touch its contents. */
porta_status *trace_sync_buffer(const porta_buffer *buffer);

/* Runs records[0..count) in order (compiler/execute.c): the scheduler,
 * fused kernels and primitives run alone. Releases nothing. */
porta_status *trace_execute(trace_record *records, int count);

#endif
