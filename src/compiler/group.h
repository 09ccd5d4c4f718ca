/* Building one fused group (schedule.h states the fusion rule): records
 * join one at a time while they fit, each adding its values to the
 * kernel being built; group_close decides the stores and finishes the
 * kernel's sizes and strides. */
#ifndef PORTA_COMPILER_GROUP_H
#define PORTA_COMPILER_GROUP_H

#include "compiler/schedule.h"

#define GROUP_MAX_BUFFERS KIR_MAX_VALUES

typedef enum group_kind { GROUP_ELEMENTWISE = 0, GROUP_REDUCE, GROUP_MATMUL } group_kind;

/* The one-element fill whose value a buffer holds, while no other record
 * has written the buffer since. */
typedef struct trace_constant {
    bool known;
    int record;
} trace_constant;

typedef struct group_buffer {
    int buffer;
    porta_tensor view;  /* every access of a written buffer uses this view */
    bool several_views; /* read through more than one view: never written */
    bool written;
    bool in_register;   /* written by a member: `value` holds it */
    bool in_memory;     /* written by the MATMUL itself */
    int value;
    kir_space space;
    int record;         /* the member that wrote it last */
} group_buffer;

typedef struct group {
    group_kind kind;
    porta_device *device;
    int first;         /* the first member */
    int member_count;  /* records computing something (constants excluded);
                          records moved ahead of the group may lie between */
    int members[KIR_MAX_VALUES];
    int rank, reduced; /* the domain; reduced dims are its trailing ones */
    int64_t sizes[PORTA_MAX_RANK];
    kir_kernel kernel; /* values and loads so far; stores added on close */
    access_binding bindings[KIR_MAX_ACCESSES];
    int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK]; /* over the domain; OUTER: outer dims */
    int64_t access_offsets[KIR_MAX_ACCESSES];
    int access_buffers[KIR_MAX_ACCESSES];
    int param_count;
    int param_records[KIR_MAX_PARAMS]; /* the fill each KIR_PARAM comes from */
    int buffer_count;
    group_buffer buffers[GROUP_MAX_BUFFERS];
    /* Entries the record being added changed (one record names at most
     * TRACE_MAX_INPUTS + 1 buffers), restored if it does not fit. */
    int undo_count, undo_limit;
    int undo_index[TRACE_MAX_INPUTS + 1];
    group_buffer undo_saved[TRACE_MAX_INPUTS + 1];
} group;

/* Starts a group with record `index`; false when it cannot start one. */
bool group_start(group *g, const trace_record *records, int index, const trace_facts *facts,
                 const trace_constant *constants);
/* Adds record `index` (after every member) when it fits; false leaves g
 * as it was. */
bool group_try_add(group *g, const trace_record *records, int index, const trace_facts *facts,
                   const trace_constant *constants);
/* Whether record `index` may run before the whole group although it comes
 * after some members: it reads nothing the group writes, and writes
 * nothing the group touches. Such a record does not end the group. */
bool group_independent(const group *g, const trace_record *records, int index,
                       const trace_facts *facts);
/* Whether a one-element fill of `buffer` may join (nothing in g touched it). */
bool group_accepts_constant(const group *g, int buffer);
/* Adds the stores the rest of the trace needs, merges dims, and fills the
 * step's kernel, bindings and arguments. */
porta_status *group_close(group *g, const trace_facts *facts, const trace_record *records,
                          plan_step *step);

/* A fill of a whole one-element buffer: becomes a constant of the records
 * reading it. */
bool record_is_constant(const trace_record *record);

#endif
