/* Finishing a group: the stores the rest of the trace needs, then the
 * domain's dims merged where every access walks them as one, which makes
 * the kernel's loops fewer and its innermost runs longer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/kir_layout.h"
#include "compiler/group.h"
#include "core/status.h"

static bool add_store(group *g, const group_buffer *gb, const trace_record *records) {
    if (g->kernel.access_count == KIR_MAX_ACCESSES) return false;
    int access = g->kernel.access_count++;
    const porta_tensor *out = &records[gb->record].out;
    g->kernel.accesses[access] = (kir_access){
        .dtype = out->dtype, .space = gb->space, .store = true, .value = gb->value};
    g->bindings[access] = (access_binding){.record = gb->record, .slot = SLOT_OUT};
    memset(g->strides[access], 0, sizeof g->strides[access]);
    if (gb->space == KIR_FULL) {
        memcpy(g->strides[access], out->strides, (size_t)g->rank * sizeof(int64_t));
    } else {
        /* An OUTER out has the outer shape up to dims of size 1. */
        int j = 0;
        for (int d = 0; d < g->rank - g->reduced; d++) {
            if (g->sizes[d] == 1) continue;
            while (out->sizes[j] == 1) j++;
            g->strides[access][d] = out->strides[j++];
        }
    }
    return true;
}

/* Sizes and strides into args and the kernel's ranks (kir_layout.c); a
 * matmul's epilogue tiles [M, N] as they are. */
static void merge_dims(group *g, kir_args *args) {
    if (g->kind != GROUP_MATMUL) {
        kir_merge_dims(&g->kernel, g->rank, g->kind == GROUP_REDUCE ? g->reduced : 0, g->sizes,
                       g->strides, args);
        return;
    }
    memset(args, 0, sizeof *args);
    memcpy(args->sizes, g->sizes, 2 * sizeof *args->sizes);
    for (int a = 0; a < g->kernel.access_count; a++)
        memcpy(args->strides[a], g->strides[a], 2 * sizeof(int64_t));
    g->kernel.rank = g->kernel.outer_rank = 2;
    kir_classify_last(&g->kernel, args);
}

static char *describe(const group *g, const trace_record *records) {
    size_t cap = 64 + (size_t)g->member_count * 40, used = 0;
    char *text = malloc(cap);
    if (!text) return NULL;
    const char *what = g->kind == GROUP_MATMUL   ? "matmul with fused epilogue"
                       : g->kind == GROUP_REDUCE ? "fused reduction"
                                                 : "fused elementwise";
    used += (size_t)snprintf(text, cap, "%s [", what);
    for (int m = 0; m < g->member_count && used < cap; m++)
        used += (size_t)snprintf(text + used, cap - used, "%s%s", m ? ", " : "",
                                 ir_prim_name(&records[g->members[m]].prim));
    char shape[CORE_SHAPE_STR_CAP];
    core_format_shape(shape, sizeof shape, g->rank, g->sizes);
    if (used < cap) snprintf(text + used, cap - used, "] over %s", shape);
    return text;
}

static bool is_member(const group *g, int record) {
    int low = 0, high = g->member_count - 1; /* members are in program order */
    while (low <= high) {
        int mid = (low + high) / 2;
        if (g->members[mid] == record) return true;
        if (g->members[mid] < record) low = mid + 1;
        else high = mid - 1;
    }
    return false;
}

/* Whether a record outside the group reads the buffer gb's member wrote
 * (records moved ahead of another group may lie among the members). */
static bool read_outside(const group *g, const trace_record *records, const trace_facts *facts,
                         const group_buffer *gb) {
    for (int r = gb->record + 1; r <= facts->last_reader[gb->buffer]; r++) {
        if (is_member(g, r)) continue;
        for (int i = 0; i < records[r].input_count; i++)
            if (facts_buffer(facts, r, i) == gb->buffer) return true;
    }
    return false;
}

porta_status *group_close(group *g, const trace_facts *facts, const trace_record *records,
                          plan_step *step) {
    for (int i = 0; i < g->buffer_count; i++) {
        const group_buffer *gb = &g->buffers[i];
        if (!gb->in_register) continue;
        bool needed = facts->external[gb->buffer] || read_outside(g, records, facts, gb);
        if (needed && !add_store(g, gb, records))
            return porta_error(PORTA_ERR_INTERNAL, "schedule: a group has more stores than room");
    }
    memset(step, 0, sizeof *step);
    step->kind = g->kind == GROUP_MATMUL ? STEP_MATMUL_EPILOGUE : STEP_FUSED;
    step->first = g->first;
    step->member_count = g->member_count;
    step->members = malloc((size_t)g->member_count * sizeof *step->members);
    merge_dims(g, &step->args);
    int64_t work = 1;
    for (int d = 0; d < g->kernel.outer_rank; d++) work *= step->args.sizes[d];
    step->work = work;
    memcpy(step->bindings, g->bindings, sizeof step->bindings);
    step->param_count = g->param_count;
    memcpy(step->param_records, g->param_records, sizeof step->param_records);
    step->kernel = malloc(sizeof *step->kernel);
    step->summary = describe(g, records);
    if (!step->kernel || !step->summary || !step->members) {
        free(step->kernel);
        free(step->summary);
        free(step->members);
        step->kernel = NULL;
        step->summary = NULL;
        step->members = NULL;
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory for a kernel");
    }
    *step->kernel = g->kernel;
    memcpy(step->members, g->members, (size_t)g->member_count * sizeof *step->members);
    return NULL;
}
