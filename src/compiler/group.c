/* One fused group: records join while the fusion rule of schedule.h
 * holds, each adding its values to the kernel under construction. */
#include "compiler/group.h"

#include <stdlib.h>
#include <string.h>

#include "codegen/codegen_c.h"
#include "core/status.h"
#include "devices/placement.h"
#include "runtime/device.h"

/* A reduction that leaves fewer rows than this keeps most threads idle in
 * a fused kernel (rows are its unit of parallel work); unless its rows are
 * short, the device's own reduction kernel does better alone. */
#define FUSED_REDUCE_MIN_ROWS 16
#define FUSED_REDUCE_SHORT_ROW 65536

/* The constant is known per buffer, so a fill of one element of a larger
 * buffer (a complex number's real part) is not one: its readers at other
 * offsets would take the fill's value for theirs. */
bool record_is_constant(const trace_record *record) {
    const porta_tensor *out = &record->out;
    return record->prim.kind == PRIM_FILL && core_shape_numel(out->rank, out->sizes) == 1 &&
           out->buffer->size == porta_dtype_size(out->dtype);
}

static bool same_view(const porta_tensor *a, const porta_tensor *b) {
    if (a->dtype != b->dtype || a->rank != b->rank || a->offset != b->offset) return false;
    for (int d = 0; d < a->rank; d++) {
        if (a->sizes[d] != b->sizes[d]) return false;
        if (a->sizes[d] != 1 && a->strides[d] != b->strides[d]) return false;
    }
    return true;
}

static bool has_domain_shape(const group *g, const porta_tensor *t) {
    return t->rank == g->rank &&
           (!g->rank || !memcmp(t->sizes, g->sizes, (size_t)g->rank * sizeof *t->sizes));
}

static int outer_rank(const group *g) { return g->rank - g->reduced; }

/* The strides over the domain's outer dims of a view shaped like them, up
 * to dims of size 1 (a reduction's result with or without keepdim). */
static bool outer_strides(const group *g, const porta_tensor *view, int64_t *strides) {
    int j = 0;
    for (int d = 0; d < outer_rank(g); d++) {
        strides[d] = 0;
        if (g->sizes[d] == 1) continue;
        while (j < view->rank && view->sizes[j] == 1) j++;
        if (j == view->rank || view->sizes[j] != g->sizes[d]) return false;
        strides[d] = view->strides[j++];
    }
    for (; j < view->rank; j++)
        if (view->sizes[j] != 1) return false;
    return true;
}

/* Whether a FULL reader's view reads an OUTER value where it was written:
 * the same element for every outer index, broadcast over the reduced dims. */
static bool reads_broadcast(const group *g, const group_buffer *gb, const porta_tensor *view) {
    int64_t written[PORTA_MAX_RANK];
    if (!has_domain_shape(g, view) || view->offset != gb->view.offset ||
        !outer_strides(g, &gb->view, written))
        return false;
    for (int d = 0; d < g->rank; d++) {
        if (g->sizes[d] == 1) continue;
        int64_t expected = d < outer_rank(g) ? written[d] : 0;
        if (view->strides[d] != expected) return false;
    }
    return true;
}

static bool reads_outer_identity(const group *g, const group_buffer *gb,
                                 const porta_tensor *view) {
    int64_t a[PORTA_MAX_RANK], b[PORTA_MAX_RANK];
    if (view->offset != gb->view.offset || view->dtype != gb->view.dtype ||
        !outer_strides(g, view, a) || !outer_strides(g, &gb->view, b))
        return false;
    for (int d = 0; d < outer_rank(g); d++)
        if (g->sizes[d] != 1 && a[d] != b[d]) return false;
    return true;
}

static group_buffer *find_buffer(group *g, int buffer) {
    for (int i = 0; i < g->buffer_count; i++)
        if (g->buffers[i].buffer == buffer) return &g->buffers[i];
    return NULL;
}

static int add_value(group *g, const kir_value *value) {
    if (g->kernel.value_count == KIR_MAX_VALUES) return -1;
    g->kernel.values[g->kernel.value_count] = *value;
    return g->kernel.value_count++;
}

/* The value of one-element fill `record`, a parameter of the kernel so
 * that a new value (the next step's learning rate) reuses the kernel. */
static int add_param(group *g, const trace_record *records, int record, kir_space space) {
    int param = 0;
    while (param < g->param_count && g->param_records[param] != record) param++;
    if (param == g->param_count) {
        if (param == KIR_MAX_PARAMS) return -1;
        g->param_records[g->param_count++] = record;
    }
    kir_value v = {.kind = KIR_PARAM, .dtype = records[record].out.dtype, .space = space,
                   .param = param};
    return add_value(g, &v);
}

/* A load of record `r`'s input `slot` (or its out), reusing an equal one. */
static int add_load(group *g, int r, int slot, int buffer, const porta_tensor *view,
                    kir_space space) {
    int64_t strides[PORTA_MAX_RANK] = {0};
    if (space == KIR_FULL) {
        if (!has_domain_shape(g, view)) return -1;
        memcpy(strides, view->strides, (size_t)g->rank * sizeof *strides);
    } else if (!outer_strides(g, view, strides)) {
        return -1;
    }
    for (int v = 0; v < g->kernel.value_count; v++) {
        const kir_value *value = &g->kernel.values[v];
        if (value->kind != KIR_LOAD || value->space != space) continue;
        const kir_access *a = &g->kernel.accesses[value->access];
        if (a->dtype == view->dtype && !memcmp(g->strides[value->access], strides, sizeof strides) &&
            g->access_offsets[value->access] == view->offset &&
            g->access_buffers[value->access] == buffer)
            return v;
    }
    if (g->kernel.access_count == KIR_MAX_ACCESSES) return -1;
    int access = g->kernel.access_count;
    g->kernel.accesses[access] = (kir_access){.dtype = view->dtype, .space = space};
    g->bindings[access] = (access_binding){.record = r, .slot = slot};
    memcpy(g->strides[access], strides, sizeof strides);
    g->access_offsets[access] = view->offset;
    g->access_buffers[access] = buffer;
    kir_value v = {.kind = KIR_LOAD, .dtype = view->dtype, .space = space, .access = access};
    int id = add_value(g, &v);
    if (id < 0) return -1;
    g->kernel.access_count++;
    return id;
}

/* Keeps gb's state before a record changes it, so a record that does not
 * fit leaves the group as it was (entries it appended are dropped by count). */
static void save_for_undo(group *g, const group_buffer *gb) {
    int index = (int)(gb - g->buffers);
    if (index >= g->undo_limit) return; /* appended by this record */
    for (int i = 0; i < g->undo_count; i++)
        if (g->undo_index[i] == index) return;
    g->undo_index[g->undo_count] = index;
    g->undo_saved[g->undo_count++] = *gb;
}

static group_buffer *note_buffer(group *g, int buffer, const porta_tensor *view) {
    group_buffer *gb = find_buffer(g, buffer);
    if (gb) {
        if (!same_view(&gb->view, view) && !gb->several_views) {
            save_for_undo(g, gb);
            gb->several_views = true;
        }
        return gb;
    }
    if (g->buffer_count == GROUP_MAX_BUFFERS) return NULL;
    gb = &g->buffers[g->buffer_count++];
    memset(gb, 0, sizeof *gb);
    gb->buffer = buffer;
    gb->view = *view;
    gb->value = -1;
    return gb;
}

/* The value record r's input `slot` reads, in `space`; -1 when the record
 * cannot read it inside this group. */
static int resolve_input(group *g, const trace_record *records, int r, int slot,
                         const trace_facts *facts, const trace_constant *constants,
                         kir_space space) {
    int buffer = facts_buffer(facts, r, slot);
    const porta_tensor *view = &records[r].inputs[slot];
    if (constants[buffer].known) return add_param(g, records, constants[buffer].record, space);
    group_buffer *gb = find_buffer(g, buffer);
    if (gb && gb->in_register) {
        if (gb->space == KIR_FULL)
            return space == KIR_FULL && same_view(view, &gb->view) ? gb->value : -1;
        if (space == KIR_OUTER) return reads_outer_identity(g, gb, view) ? gb->value : -1;
        return reads_broadcast(g, gb, view) ? gb->value : -1;
    }
    if (gb && gb->written && !same_view(view, &gb->view)) return -1;
    if (!note_buffer(g, buffer, view)) return -1;
    return add_load(g, r, slot, buffer, view, space);
}

/* Records r's out as written by value `value` in `space`. */
static bool write_output(group *g, const trace_record *records, int r, const trace_facts *facts,
                         int value, kir_space space) {
    int buffer = facts_buffer(facts, r, SLOT_OUT);
    const porta_tensor *out = &records[r].out;
    int64_t strides[PORTA_MAX_RANK];
    if (space == KIR_FULL ? !has_domain_shape(g, out) : !outer_strides(g, out, strides))
        return false;
    group_buffer *gb = find_buffer(g, buffer);
    if (gb && (gb->several_views || !same_view(&gb->view, out))) return false;
    if (!gb && !(gb = note_buffer(g, buffer, out))) return false;
    save_for_undo(g, gb);
    gb->written = true;
    gb->in_register = value >= 0;
    gb->in_memory = value < 0;
    gb->value = value;
    gb->space = space;
    gb->record = r;
    return true;
}

/* Values that may need a store when the group closes: their buffer
 * outlives the trace or a record after r reads it. */
static int possible_stores(const group *g, const trace_facts *facts, int r) {
    int n = 0;
    for (int i = 0; i < g->buffer_count; i++) {
        const group_buffer *gb = &g->buffers[i];
        n += gb->in_register &&
             (facts->external[gb->buffer] || facts->last_reader[gb->buffer] > r);
    }
    return n;
}

static bool supported_reduce(const trace_record *record, int *reduced) {
    const ir_prim *prim = &record->prim;
    if (prim->op == PORTA_REDUCE_ARGMAX || prim->op == PORTA_REDUCE_ARGMIN) return false;
    const porta_tensor *x = &record->inputs[0];
    if (prim->axis_count < 1) return false;
    for (int i = 0; i < prim->axis_count; i++)
        if (prim->axes[i] != x->rank - prim->axis_count + i) return false; /* trailing only */
    int64_t rows = core_shape_numel(x->rank - prim->axis_count, x->sizes);
    int64_t row = core_shape_numel(prim->axis_count, x->sizes + x->rank - prim->axis_count);
    if (rows < FUSED_REDUCE_MIN_ROWS && row > FUSED_REDUCE_SHORT_ROW) return false;
    *reduced = prim->axis_count;
    return true;
}

/* Whether the record's device runs it itself: one it cannot run stays out
 * of the device's kernels and runs alone, placed on another device
 * (devices/placement.h), with copies at the boundary. */
static bool runs_on_device(const trace_record *record) {
    const porta_tensor *inputs[TRACE_MAX_INPUTS];
    for (int i = 0; i < record->input_count; i++) inputs[i] = &record->inputs[i];
    return dev_runs(record->out.buffer->device, &record->prim, inputs,
                             record->input_count);
}

/* Adds record r's values; false on anything that does not fit (the caller
 * restores the group). */
static bool add_record(group *g, const trace_record *records, int r, const trace_facts *facts,
                       const trace_constant *constants) {
    const trace_record *record = &records[r];
    const ir_prim *prim = &record->prim;
    if (record->out.buffer->device != g->device || !runs_on_device(record)) return false;
    kir_value value = {.op = prim->op, .dtype = record->out.dtype};
    porta_dtype arg_dtype = record->input_count ? record->inputs[0].dtype : record->out.dtype;
    if (prim->kind == PRIM_REDUCE) {
        int reduced;
        if (g->kind == GROUP_MATMUL || !supported_reduce(record, &reduced) ||
            !has_domain_shape(g, &record->inputs[0]))
            return false;
        if (g->kind == GROUP_ELEMENTWISE) {
            g->kind = GROUP_REDUCE;
            g->reduced = reduced;
        } else if (g->reduced != reduced) {
            return false;
        }
        value.kind = KIR_REDUCE;
        value.space = KIR_OUTER;
        if ((value.args[0] = resolve_input(g, records, r, 0, facts, constants, KIR_FULL)) < 0 ||
            g->kernel.values[value.args[0]].space != KIR_FULL) /* a reduction of a broadcast */
            return false;
    } else {
        switch (prim->kind) {
        case PRIM_UNARY: value.kind = KIR_UNARY; break;
        case PRIM_BINARY: value.kind = KIR_BINARY; break;
        case PRIM_TERNARY: value.kind = KIR_TERNARY; break;
        case PRIM_CAST: value.kind = KIR_CAST; break;
        case PRIM_FILL: value.kind = KIR_CONST; value.constant = prim->value; break;
        default: return false;
        }
        int64_t unused[PORTA_MAX_RANK];
        if (has_domain_shape(g, &record->out))
            value.space = KIR_FULL;
        else if (g->kind == GROUP_REDUCE && outer_strides(g, &record->out, unused))
            value.space = KIR_OUTER;
        else
            return false;
        for (int i = 0; i < record->input_count; i++)
            if ((value.args[i] = resolve_input(g, records, r, i, facts, constants, value.space)) < 0)
                return false;
    }
    if (!kir_c_supports(&value, arg_dtype)) return false;
    int id = add_value(g, &value);
    if (id < 0 || !write_output(g, records, r, facts, id, value.space)) return false;
    return g->kernel.access_count + possible_stores(g, facts, r) <= KIR_MAX_ACCESSES;
}

bool group_try_add(group *g, const trace_record *records, int index, const trace_facts *facts,
                   const trace_constant *constants) {
    /* Rolling back is restoring what was appended to, and the buffer table. */
    int values = g->kernel.value_count, accesses = g->kernel.access_count;
    int params = g->param_count;
    group_kind kind = g->kind;
    int reduced = g->reduced, buffer_count = g->buffer_count;
    g->undo_count = 0;
    g->undo_limit = buffer_count;
    if (g->member_count < KIR_MAX_VALUES && add_record(g, records, index, facts, constants)) {
        g->members[g->member_count++] = index;
        return true;
    }
    g->kernel.value_count = values;
    g->kernel.access_count = accesses;
    g->param_count = params;
    g->kind = kind;
    g->reduced = reduced;
    g->buffer_count = buffer_count;
    for (int i = 0; i < g->undo_count; i++) g->buffers[g->undo_index[i]] = g->undo_saved[i];
    return false;
}

bool group_start(group *g, const trace_record *records, int index, const trace_facts *facts,
                 const trace_constant *constants) {
    const trace_record *record = &records[index];
    porta_device *device = record->out.buffer->device;
    if (!device->ops->prepare_kernel || !device->ops->run_kernel || !runs_on_device(record))
        return false;
    memset(g, 0, sizeof *g);
    g->device = device;
    g->first = index;
    const ir_prim *prim = &record->prim;
    const porta_tensor *shape = &record->out;
    if (prim->kind == PRIM_MATMUL) {
        if (!device->ops->run_matmul_epilogue || record->out.dtype != PORTA_F32 ||
            record->out.rank != 2)
            return false;
        g->kind = GROUP_MATMUL;
        g->rank = 2;
        memcpy(g->sizes, shape->sizes, 2 * sizeof *g->sizes);
        /* The GEMM reads its operands from memory: nothing may move ahead
         * of the group and overwrite them. */
        for (int i = 0; i < record->input_count; i++)
            if (!note_buffer(g, facts_buffer(facts, index, i), &record->inputs[i])) return false;
        if (!write_output(g, records, index, facts, -1, KIR_FULL)) return false;
        g->members[g->member_count++] = index;
        return true;
    }
    if (prim->kind == PRIM_REDUCE) {
        if (!supported_reduce(record, &g->reduced)) return false;
        shape = &record->inputs[0];
        g->kind = GROUP_REDUCE;
    } else if (prim->kind < PRIM_UNARY || prim->kind > PRIM_FILL) {
        return false;
    }
    g->rank = shape->rank;
    memcpy(g->sizes, shape->sizes, (size_t)shape->rank * sizeof *g->sizes);
    if (core_shape_numel(g->rank, g->sizes) <= 0) return false;
    return group_try_add(g, records, index, facts, constants);
}

bool group_accepts_constant(const group *g, int buffer) {
    return !find_buffer((group *)g, buffer);
}

bool group_independent(const group *g, const trace_record *records, int index,
                       const trace_facts *facts) {
    for (int i = 0; i < records[index].input_count; i++) {
        const group_buffer *gb = find_buffer((group *)g, facts_buffer(facts, index, i));
        if (gb && gb->written) return false;
    }
    return !find_buffer((group *)g, facts_buffer(facts, index, SLOT_OUT));
}
