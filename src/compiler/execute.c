/* Running a trace: the schedule decides which records become one fused
 * kernel; everything else runs alone through the device's own kernels. */
#include "compiler/trace.h"

#include "compiler/stats.h"
#include "core/status.h"
#include "runtime/device.h"

/* Names the record and the site that issued it in a failure at flush time,
 * which is far from the line that caused it. */
static porta_status *blame(porta_status *status, const trace_record *record) {
    if (record->site[0])
        return porta_error_context(status, "%s (issued at %s)", porta_prim_name(&record->prim),
                                   record->site);
    return porta_error_context(status, "%s", porta_prim_name(&record->prim));
}

static porta_status *run_alone(trace_record *record) {
    const porta_tensor *inputs[TRACE_MAX_INPUTS];
    for (int i = 0; i < record->input_count; i++) inputs[i] = &record->inputs[i];
    porta_device *device = record->out.buffer->device;
    porta_status *status =
        device->ops->execute(device, &record->prim, inputs, record->input_count, &record->out);
    return status ? blame(status, record) : NULL;
}

porta_status *trace_execute(trace_record *records, int count) {
    compiler_count(COUNTER_FLUSHES, 1);
    for (int i = 0; i < count; i++) PORTA_TRY(run_alone(&records[i]));
    compiler_count(COUNTER_PRIMS_ALONE, (uint64_t)count);
    compiler_set_last_trace_kernels((uint64_t)count);
    return NULL;
}
