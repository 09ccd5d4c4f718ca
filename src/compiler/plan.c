/* Building a trace's plan: the records grouped (group.c), each group's
 * kernel prepared on its device, and the one-element fills that only
 * fused kernels read dropped (the kernels take their values as
 * parameters). */
#include <stdlib.h>
#include <string.h>

#include "compiler/group.h"
#include "core/status.h"
#include "runtime/device.h"
#include "porta_progress.h"
#include "runtime/profiler.h"

/* An entry of the plan under construction, in execution order. */
typedef enum item_kind { ITEM_ALONE = 0, ITEM_CONSTANT, ITEM_GROUP } item_kind;
typedef struct item {
    item_kind kind;
    int record;     /* ALONE, CONSTANT */
    plan_step step; /* GROUP */
} item;

/* Several groups may be open at once, pairwise independent (none reads
 * or writes what another writes, or writes what another reads), so they
 * may run in any order: a record joins the newest group that accepts it,
 * and groups it depends on are closed (run) first. Independent work that
 * comes interleaved — a layer norm's weight casts amid its rows, an
 * optimizer's updates of many parameters one op at a time — still fuses. */
#define OPEN_GROUPS 32

typedef struct builder {
    const trace_record *records;
    int count;
    trace_facts facts; /* the caller's */
    trace_constant *constants; /* by buffer */
    item *items;
    int item_count;
    group *open[OPEN_GROUPS]; /* oldest first */
    int open_count;
    group *spare[OPEN_GROUPS]; /* large: allocated once, reused */
    int spare_count;
} builder;

static void free_step(plan_step *step) {
    free(step->kernel);
    free(step->summary);
    free(step->release);
    free(step->members);
    memset(step, 0, sizeof *step);
}

static item *push(builder *b, item_kind kind, int record) {
    item *it = &b->items[b->item_count++]; /* room for one item per record */
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->record = record;
    return it;
}

/* Closes open group i: one fused step, or its records alone when it fused
 * nothing. The group's constants were pushed as they came. */
static porta_status *close_group(builder *b, int i) {
    group *g = b->open[i];
    memmove(&b->open[i], &b->open[i + 1], (size_t)(b->open_count - i - 1) * sizeof *b->open);
    b->open_count--;
    b->spare[b->spare_count++] = g;
    if (g->member_count < 2) {
        for (int m = 0; m < g->member_count; m++) push(b, ITEM_ALONE, g->members[m]);
        return NULL;
    }
    item *it = push(b, ITEM_GROUP, g->first);
    return group_close(g, &b->facts, b->records, &it->step);
}

/* Closes every open group record r depends on, except `keep`. */
static porta_status *close_dependencies(builder *b, int r, const group *keep) {
    for (int i = 0; i < b->open_count;) {
        group *g = b->open[i];
        if (g != keep && !group_independent(g, b->records, r, &b->facts))
            PORTA_TRY(close_group(b, i));
        else
            i++;
    }
    return NULL;
}

static porta_status *add_constant_record(builder *b, int r, int out) {
    for (int i = 0; i < b->open_count;) {
        if (!group_accepts_constant(b->open[i], out))
            PORTA_TRY(close_group(b, i));
        else
            i++;
    }
    b->constants[out] = (trace_constant){.known = true, .record = r};
    push(b, ITEM_CONSTANT, r);
    return NULL;
}

static porta_status *start_group(builder *b, int r) {
    if (b->open_count == OPEN_GROUPS) PORTA_TRY(close_group(b, 0));
    group *g = b->spare_count ? b->spare[--b->spare_count] : malloc(sizeof *g);
    if (!g) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory for a group");
    if (group_start(g, b->records, r, &b->facts, b->constants)) {
        b->open[b->open_count++] = g;
    } else {
        b->spare[b->spare_count++] = g;
        push(b, ITEM_ALONE, r);
    }
    return NULL;
}

static porta_status *add_record(builder *b, int r) {
    for (int i = b->open_count - 1; i >= 0; i--) {
        group *g = b->open[i];
        if (group_try_add(g, b->records, r, &b->facts, b->constants))
            return close_dependencies(b, r, g); /* they run before g */
    }
    PORTA_TRY(close_dependencies(b, r, NULL));
    return start_group(b, r);
}

static porta_status *group_records(builder *b) {
    for (int r = 0; r < b->count; r++) {
        int out = facts_buffer(&b->facts, r, SLOT_OUT);
        if (record_is_constant(&b->records[r])) {
            PORTA_TRY(add_constant_record(b, r, out));
            continue;
        }
        PORTA_TRY(add_record(b, r));
        b->constants[out].known = false; /* written: no longer the fill's value */
    }
    while (b->open_count) PORTA_TRY(close_group(b, 0));
    return NULL;
}

static int stores(const kir_kernel *kernel) {
    int n = 0;
    for (int a = 0; a < kernel->access_count; a++) n += kernel->accesses[a].store;
    return n;
}

/* The device's program for a step. A kernel built or loaded from disk (not
 * one found in memory) is a compile event in the profile. */
static porta_status *prepare_one(porta_device *device, plan_step *step) {
    uint64_t begin = prof_begin();
    porta_compiler_stats before, after;
    if (begin) porta_compiler_stats_get(&before);
    porta_status *status = device->ops->prepare_kernel(device, step->kernel, &step->program);
    if (begin) {
        porta_compiler_stats_get(&after);
        const char *how = status ? "failed"
                          : after.kernels_compiled > before.kernels_compiled ? "compiled"
                          : after.kernel_disk_hits > before.kernel_disk_hits
                              ? "loaded from the disk cache"
                              : NULL;
        if (how) prof_end(PROF_COMPILE, device, step->summary, how, -1, begin);
    }
    return status;
}

static int64_t kernels_to_prepare(const builder *b) {
    int64_t n = 0;
    for (int i = 0; i < b->item_count; i++)
        n += b->items[i].kind == ITEM_GROUP && stores(b->items[i].step.kernel);
    return n;
}

/* Prepares every group's kernel; a kernel the device cannot build (no
 * compiler, an op its renderer lacks) makes the group's records run alone,
 * and so does a matrix multiply whose epilogue stores nothing. A large
 * graph's first build takes a while: a progress line shows it
 * (porta_progress.h). */
static porta_status *prepare_each(builder *b, porta_progress *progress) {
    for (int i = 0; i < b->item_count; i++) {
        item *it = &b->items[i];
        if (it->kind != ITEM_GROUP) continue;
        if (stores(it->step.kernel)) {
            porta_device *device = b->records[it->step.first].out.buffer->device;
            porta_status *status = prepare_one(device, &it->step);
            porta_progress_advance(progress, 1);
            if (!status) continue;
            porta_code code = porta_status_code(status);
            if (code != PORTA_ERR_UNAVAILABLE && code != PORTA_ERR_UNSUPPORTED)
                return porta_error_context(status, "preparing the %s (first primitive issued "
                                           "at %s)", it->step.summary,
                                           b->records[it->step.first].site[0]
                                               ? b->records[it->step.first].site
                                               : "an unknown site");
            porta_status_free(status);
        } else if (it->step.kind == STEP_FUSED) {
            continue; /* dead: finish() drops it */
        }
        /* Demote in place: the group's records, alone and in order. */
        plan_step step = it->step;
        int extra = step.member_count;
        memmove(&b->items[i + extra], &b->items[i + 1],
                (size_t)(b->item_count - i - 1) * sizeof *b->items);
        b->item_count += extra - 1;
        for (int m = 0; m < step.member_count; m++)
            b->items[i + m] = (item){.kind = ITEM_ALONE, .record = step.members[m]};
        free_step(&step);
        i += extra - 1;
    }
    return NULL;
}

static porta_status *prepare_kernels(builder *b) {
    porta_progress progress;
    porta_progress_begin(&progress, "building kernels", kernels_to_prepare(b));
    porta_status *status = prepare_each(b, &progress);
    porta_progress_end(&progress);
    return status;
}

/* Whether a one-element fill must really run: its buffer outlives the
 * trace, or a record that is not inside a fused kernel reads it. */
static bool constant_needed(const builder *b, int record, const bool *fused) {
    int buffer = facts_buffer(&b->facts, record, SLOT_OUT);
    if (b->facts.external[buffer]) return true;
    for (int r = record + 1; r <= b->facts.last_reader[buffer]; r++) {
        for (int i = 0; i < b->records[r].input_count; i++)
            if (facts_buffer(&b->facts, r, i) == buffer && !fused[r]) return true;
        if (facts_buffer(&b->facts, r, SLOT_OUT) == buffer) return false;
    }
    return false;
}

/* Calls visit(ctx, record, slot) for each tensor step touches in memory. */
static void step_tensors(const builder *b, const plan_step *step,
                         void (*visit)(void *ctx, int record, int slot), void *ctx) {
    if (step->kind != STEP_FUSED) { /* a record alone, or the matmul itself */
        const trace_record *record = &b->records[step->first];
        for (int i = 0; i < record->input_count; i++) visit(ctx, step->first, i);
        visit(ctx, step->first, SLOT_OUT);
    }
    if (step->kind != STEP_ALONE)
        for (int a = 0; a < step->kernel->access_count; a++)
            visit(ctx, step->bindings[a].record, step->bindings[a].slot);
}

typedef struct last_use {
    const trace_facts *facts;
    int *last_step; /* by buffer */
    int step;
    plan_step *target;
    bool failed;
} last_use;

static void note_use(void *ctx, int record, int slot) {
    last_use *u = ctx;
    u->last_step[facts_buffer(u->facts, record, slot)] = u->step;
}

static void note_release(void *ctx, int record, int slot) {
    last_use *u = ctx;
    int buffer = facts_buffer(u->facts, record, slot);
    if (u->facts->external[buffer] || u->last_step[buffer] != u->step) return;
    u->last_step[buffer] = -1; /* listed once */
    plan_step *step = u->target;
    access_binding *grown = realloc(step->release, (size_t)(step->release_count + 1) *
                                                       sizeof *grown);
    if (!grown) {
        u->failed = true;
        return;
    }
    step->release = grown;
    step->release[step->release_count++] = (access_binding){.record = record, .slot = slot};
}

/* The memory plan: each buffer the trace alone holds is given memory when a
 * step first needs it (rt_buffer_materialize) and back after the last
 * step that uses it, so later steps reuse it through the block cache. */
static porta_status *plan_releases(builder *b, plan *p) {
    last_use u = {.facts = &b->facts};
    u.last_step = malloc(((size_t)b->facts.buffer_count + 1) * sizeof *u.last_step);
    if (!u.last_step) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory");
    for (int i = 0; i < b->facts.buffer_count; i++) u.last_step[i] = -1;
    for (u.step = 0; u.step < p->step_count; u.step++)
        step_tensors(b, &p->steps[u.step], note_use, &u);
    for (u.step = 0; u.step < p->step_count && !u.failed; u.step++) {
        u.target = &p->steps[u.step];
        step_tensors(b, u.target, note_release, &u);
    }
    free(u.last_step);
    return u.failed ? porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory") : NULL;
}

static porta_status *finish(builder *b, plan *p) {
    bool *fused = calloc((unsigned)b->count, sizeof *fused);
    p->steps = calloc((unsigned)b->item_count + 1u, sizeof *p->steps);
    if (!fused || !p->steps) {
        free(fused);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory for the plan");
    }
    for (int i = 0; i < b->item_count; i++) {
        const item *it = &b->items[i];
        if (it->kind != ITEM_GROUP) continue;
        int first = it->step.kind == STEP_MATMUL_EPILOGUE; /* the matmul reads memory */
        for (int m = first; m < it->step.member_count; m++) fused[it->step.members[m]] = true;
    }
    for (int i = 0; i < b->item_count; i++) {
        item *it = &b->items[i];
        plan_step *step = &p->steps[p->step_count];
        if (it->kind == ITEM_GROUP && it->step.kind == STEP_FUSED && !stores(it->step.kernel)) {
            continue; /* every value it computes is dead */
        } else if (it->kind == ITEM_GROUP) {
            *step = it->step;
            memset(&it->step, 0, sizeof it->step); /* the plan owns it now */
        } else if (it->kind == ITEM_ALONE || constant_needed(b, it->record, fused)) {
            step->kind = STEP_ALONE;
            step->first = it->record;
        } else {
            continue; /* a constant only fused kernels read */
        }
        p->step_count++;
    }
    p->record_count = b->count;
    p->kernel_count = p->step_count;
    free(fused);
    return plan_releases(b, p);
}

void plan_free(plan *p) {
    if (!p) return;
    for (int i = 0; i < p->step_count; i++) free_step(&p->steps[i]);
    free(p->steps);
    free(p);
}

size_t plan_memory_bytes(const plan *p) {
    size_t bytes = sizeof *p + ((size_t)p->step_count + 1) * sizeof *p->steps;
    for (int i = 0; i < p->step_count; i++) {
        const plan_step *step = &p->steps[i];
        if (step->kernel) bytes += sizeof *step->kernel;
        if (step->summary) bytes += strlen(step->summary) + 1;
        bytes += (size_t)step->release_count * sizeof *step->release;
        bytes += (size_t)step->member_count * sizeof *step->members;
    }
    return bytes;
}

porta_status *plan_build(const trace_record *records, int count, const trace_facts *facts,
                         plan **out) {
    builder b = {.records = records, .count = count, .facts = *facts};
    plan *p = calloc(1, sizeof *p);
    porta_status *status = NULL;

    b.constants = calloc((size_t)b.facts.buffer_count + 1, sizeof *b.constants);
    b.items = malloc((size_t)count * sizeof *b.items);
    if (!p || !b.constants || !b.items) {
        status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "schedule: no memory for %d records", count);
        goto done;
    }
    CORE_TRY_GOTO(status, group_records(&b), done);
    CORE_TRY_GOTO(status, prepare_kernels(&b), done);
    CORE_TRY_GOTO(status, finish(&b, p), done);
done:
    if (b.items)
        for (int i = 0; i < b.item_count; i++)
            if (b.items[i].kind == ITEM_GROUP) free_step(&b.items[i].step);
    free(b.items);
    free(b.constants);
    for (int i = 0; i < b.open_count; i++) free(b.open[i]);
    for (int i = 0; i < b.spare_count; i++) free(b.spare[i]);
    if (status) {
        plan_free(p);
        return status;
    }
    *out = p;
    return NULL;
}
