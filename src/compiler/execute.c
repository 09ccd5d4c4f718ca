/* Running a trace: find or build its plan (plan_cache.h, plan.c), then run
 * the plan's steps in order: fused kernels, matrix multiplies with fused
 * epilogues, and records alone through the device's own kernels. */
#include "compiler/trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_c.h"
#include "codegen/codegen_cl.h"
#include "codegen/kir_layout.h"
#include "compiler/explain.h"
#include "compiler/plan_cache.h"
#include "core/status.h"
#include "devices/placement.h"
#include "runtime/compile_stats.h"
#include "runtime/device.h"
#include "runtime/profiler.h"

/* Names the record and the site that issued it in a failure at flush time,
 * which is far from the line that caused it. */
static porta_status *blame(porta_status *status, const trace_record *record) {
    if (record->site[0])
        return porta_error_context(status, "%s (issued at %s)", ir_prim_name(&record->prim),
                                   record->site);
    return porta_error_context(status, "%s", ir_prim_name(&record->prim));
}

static porta_status *run_alone(trace_record *record) {
    const porta_tensor *inputs[TRACE_MAX_INPUTS];
    for (int i = 0; i < record->input_count; i++) inputs[i] = &record->inputs[i];
    porta_device *device = record->out.buffer->device;
    /* a primitive the device cannot run runs on the fallback device, with
     * copies there and back (devices/placement.h) */
    uint64_t begin = prof_begin();
    porta_status *status =
        dev_runs(device, &record->prim, inputs, record->input_count)
            ? device->ops->execute(device, &record->prim, inputs, record->input_count,
                                   &record->out)
            : dev_placement_run(&record->prim, inputs, record->input_count, &record->out);
    prof_end(PROF_KERNEL, device, ir_prim_name(&record->prim), NULL, -1, begin);
    return status ? blame(status, record) : NULL;
}

/* The step's arguments bound to this trace's tensors and fill values
 * (kernel_abi.h: host addresses, or handles and offsets). */
static void bind_args(const plan_step *step, const trace_record *records, kir_args *args) {
    *args = step->args;
    for (int a = 0; a < step->kernel->access_count; a++) {
        const access_binding *b = &step->bindings[a];
        const trace_record *record = &records[b->record];
        const porta_tensor *t = b->slot == SLOT_OUT ? &record->out : &record->inputs[b->slot];
        kir_bind_tensor(args, a, t);
    }
    for (int k = 0; k < step->param_count; k++)
        args->params[k] = records[step->param_records[k]].prim.value;
}

static porta_buffer *bound_buffer(const trace_record *records, const access_binding *b) {
    const trace_record *record = &records[b->record];
    return b->slot == SLOT_OUT ? record->out.buffer : record->inputs[b->slot].buffer;
}

/* Memory for every buffer the step touches (plan.c's memory plan). */
static porta_status *materialize(const plan_step *step, trace_record *records) {
    if (step->kind != STEP_FUSED) {
        trace_record *record = &records[step->first];
        for (int i = 0; i < record->input_count; i++)
            PORTA_TRY(rt_buffer_materialize(record->inputs[i].buffer));
        PORTA_TRY(rt_buffer_materialize(record->out.buffer));
    }
    if (step->kind != STEP_ALONE)
        for (int a = 0; a < step->kernel->access_count; a++)
            PORTA_TRY(rt_buffer_materialize(bound_buffer(records, &step->bindings[a])));
    return NULL;
}

static porta_status *run_step(const plan_step *step, trace_record *records) {
    porta_status *status = materialize(step, records);
    if (status) return blame(status, &records[step->first]);
    if (step->kind == STEP_ALONE) {
        compiler_count(COUNTER_PRIMS_ALONE, 1);
        return run_alone(&records[step->first]);
    }
    kir_args args;
    bind_args(step, records, &args);
    trace_record *first = &records[step->first];
    porta_device *device = first->out.buffer->device;
    uint64_t begin = prof_begin();
    if (step->kind == STEP_MATMUL_EPILOGUE) {
        const porta_tensor *inputs[TRACE_MAX_INPUTS];
        for (int i = 0; i < first->input_count; i++) inputs[i] = &first->inputs[i];
        status = device->ops->run_matmul_epilogue(device, &first->prim, inputs,
                                                  first->input_count, &first->out,
                                                  step->program, &args);
    } else {
        status = device->ops->run_kernel(device, step->program, &args, step->work);
    }
    prof_end(PROF_KERNEL, device, step->summary,
             step->kind == STEP_MATMUL_EPILOGUE ? "matmul with its epilogue" : "fused kernel",
             -1, begin);
    if (status) return blame(status, first);
    compiler_count(COUNTER_KERNELS_RUN, 1);
    compiler_count(COUNTER_PRIMS_FUSED, (uint64_t)step->member_count);
    return NULL;
}

static void explain_plan(const plan *p, const trace_record *records, uint64_t hash,
                         bool cached) {
    bool with_source;
    if (!explain_active(&with_source)) return;
    explain_printf("trace %016" PRIx64 ": %d primitives -> %d kernels (%s)\n", hash,
                   p->record_count, p->kernel_count, cached ? "schedule reused" : "scheduled");
    for (int i = 0; i < p->step_count; i++) {
        const plan_step *step = &p->steps[i];
        if (step->kind == STEP_ALONE) {
            const trace_record *record = &records[step->first];
            const porta_tensor *inputs[TRACE_MAX_INPUTS];
            for (int k = 0; k < record->input_count; k++) inputs[k] = &record->inputs[k];
            porta_device *own = record->out.buffer->device;
            porta_device *placed =
                dev_runs(own, &record->prim, inputs, record->input_count)
                    ? NULL
                    : dev_placement_find(own, &record->prim, inputs, record->input_count);
            if (placed)
                explain_printf("  kernel %d: %s, placed on porta:%d (%s)\n", i,
                               ir_prim_name(&record->prim), placed->info.index,
                               placed->info.backend);
            else
                explain_printf("  kernel %d: %s\n", i, ir_prim_name(&record->prim));
            continue;
        }
        explain_printf("  kernel %d: %s\n", i, step->summary);
        /* the source the device compiles: C on host-memory devices, else OpenCL C */
        const porta_device *device = records[step->first].out.buffer->device;
        bool host = device->info.capabilities & PORTA_CAP_HOST_MEMORY;
        char *source = NULL;
        porta_status *rendered = NULL;
        if (with_source)
            rendered = host ? kir_render_c(step->kernel, &source)
                            : kir_render_cl(step->kernel, &source);
        bool ok = with_source && !rendered;
        porta_status_free(rendered);
        if (ok) {
            explain_printf("%s\n", source);
            free(source);
        }
    }
}

static bool log_recompiles(void) {
    static int enabled = -1;
    if (enabled < 0) {
        const char *log = getenv("PORTA_LOG");
        enabled = log && strstr(log, "recompiles");
    }
    return enabled;
}

/* The plan for this trace: cached, or built and cached now. */
static porta_status *find_plan(trace_record *records, int count, plan **out, uint64_t *hash,
                               bool *cached) {
    trace_facts facts;
    PORTA_TRY(trace_facts_build(records, count, &facts));
    trace_key key;
    porta_status *status = trace_key_build(records, count, &facts, &key);
    if (status) {
        trace_facts_free(&facts);
        return status;
    }
    *hash = key.hash;
    plan *p = plan_cache_find(&key);
    *cached = p != NULL;
    if (!p) {
        if (log_recompiles()) {
            char reason[512];
            plan_cache_explain_miss(records, count, &key, reason, sizeof reason);
            fprintf(stderr, "porta: compiling trace %016" PRIx64 " (%d primitives): %s\n",
                    key.hash, count, reason);
        }
        status = plan_build(records, count, &facts, &p);
        if (!status) {
            compiler_count(COUNTER_GRAPHS_COMPILED, 1);
            plan_cache_insert(&key, p);
        }
    } else {
        compiler_count(COUNTER_GRAPH_CACHE_HITS, 1);
    }
    trace_key_free(&key);
    trace_facts_free(&facts);
    *out = p;
    return status;
}

porta_status *trace_execute(trace_record *records, int count) {
    compiler_count(COUNTER_FLUSHES, 1);
    if (count == 1) { /* nothing to fuse */
        compiler_set_last_trace_kernels(1);
        compiler_count(COUNTER_PRIMS_ALONE, 1);
        plan_step alone = {.kind = STEP_ALONE};
        porta_status *status = materialize(&alone, records);
        return status ? blame(status, &records[0]) : run_alone(&records[0]);
    }
    plan *p;
    uint64_t hash;
    bool cached;
    PORTA_TRY(find_plan(records, count, &p, &hash, &cached));
    explain_plan(p, records, hash, cached);
    compiler_set_last_trace_kernels((uint64_t)p->kernel_count);
    for (int i = 0; i < p->step_count; i++) {
        const plan_step *step = &p->steps[i];
        PORTA_TRY(run_step(step, records));
        for (int k = 0; k < step->release_count; k++)
            rt_buffer_discard(bound_buffer(records, &step->release[k]));
    }
    return NULL;
}
