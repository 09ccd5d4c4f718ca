/* Finishing a group: the stores the rest of the trace needs, then the
 * domain's dims merged where every access walks them as one, which makes
 * the kernel's loops fewer and its innermost runs longer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Whether dim d can fold into the kept dim before it for every access.
 * OUTER accesses do not move along reduced dims, so only FULL ones count
 * there. */
static bool mergeable(const group *g, int64_t (*strides)[PORTA_MAX_RANK], int kept, int d,
                      bool inner) {
    for (int a = 0; a < g->kernel.access_count; a++) {
        if (inner && g->kernel.accesses[a].space == KIR_OUTER) continue;
        if (strides[a][kept] != strides[a][d] * g->sizes[d]) return false;
    }
    return true;
}

/* Merges dims into args (sizes and strides) and sets the kernel's ranks. */
static void merge_dims(group *g, kir_args *args) {
    int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK];
    memcpy(strides, g->strides, sizeof strides);
    int count = g->kernel.access_count;
    int outer = g->rank - g->reduced;
    int kept = 0;
    memset(args, 0, sizeof *args);
    if (g->kind == GROUP_MATMUL) { /* the epilogue tiles [M, N] as they are */
        kept = 2;
        memcpy(args->sizes, g->sizes, 2 * sizeof *args->sizes);
        for (int a = 0; a < count; a++) memcpy(args->strides[a], strides[a], 2 * sizeof(int64_t));
        outer = 2;
    } else {
        int new_outer = 0;
        for (int region = 0; region < 2; region++) {
            int begin = region ? outer : 0, end = region ? g->rank : outer;
            int start = kept;
            for (int d = begin; d < end; d++) {
                if (g->sizes[d] == 1) continue;
                if (kept > start && mergeable(g, strides, kept - 1, d, region == 1)) {
                    args->sizes[kept - 1] *= g->sizes[d];
                    for (int a = 0; a < count; a++) strides[a][kept - 1] = strides[a][d];
                    continue;
                }
                args->sizes[kept] = g->sizes[d];
                for (int a = 0; a < count; a++) strides[a][kept] = strides[a][d];
                kept++;
            }
            /* A reduction keeps one reduced dim even when all have size 1. */
            if (region == 1 && g->reduced && kept == start) {
                args->sizes[kept] = 1;
                for (int a = 0; a < count; a++) strides[a][kept] = 0;
                kept++;
            }
            if (region == 0) new_outer = kept;
        }
        if (!kept) { /* a scalar domain */
            args->sizes[0] = 1;
            for (int a = 0; a < count; a++) strides[a][0] = 0;
            kept = new_outer = 1;
        }
        outer = new_outer;
        for (int a = 0; a < count; a++) {
            bool outer_access = g->kernel.accesses[a].space == KIR_OUTER;
            for (int d = 0; d < kept; d++)
                args->strides[a][d] = outer_access && d >= outer ? 0 : strides[a][d];
        }
    }
    g->kernel.rank = kept;
    g->kernel.outer_rank = g->kind == GROUP_REDUCE ? outer : kept;
    for (int a = 0; a < count; a++) {
        kir_access *access = &g->kernel.accesses[a];
        int64_t last = args->strides[a][kept - 1];
        /* A last dim of size 1 is only ever indexed at 0: any stride will do. */
        if (args->sizes[kept - 1] == 1) last = 1;
        access->last = access->space == KIR_OUTER ? KIR_LAST_ANY
                       : last == 1                ? KIR_LAST_UNIT
                       : last == 0                ? KIR_LAST_ZERO
                                                  : KIR_LAST_ANY;
    }
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
                                 porta_prim_name(&records[g->members[m]].prim));
    char shape[PORTA_SHAPE_STR_CAP];
    porta_format_shape(shape, sizeof shape, g->rank, g->sizes);
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
