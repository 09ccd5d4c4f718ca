/* Merging a kernel's dims (kir_layout.h). */
#include "codegen/kir_layout.h"

#include <string.h>

#include "runtime/device.h"

/* Whether dim d can fold into the kept dim before it for every access.
 * OUTER accesses do not move along reduced dims, so only FULL ones count
 * there. */
static bool mergeable(const kir_kernel *k, const int64_t *sizes,
                      int64_t (*strides)[PORTA_MAX_RANK], int kept, int d, bool inner) {
    for (int a = 0; a < k->access_count; a++) {
        if (inner && k->accesses[a].space == KIR_OUTER) continue;
        if (strides[a][kept] != strides[a][d] * sizes[d]) return false;
    }
    return true;
}

void kir_merge_dims(kir_kernel *k, int rank, int reduced, const int64_t *sizes,
                    const int64_t (*given)[PORTA_MAX_RANK], kir_args *args) {
    int64_t strides[KIR_MAX_ACCESSES][PORTA_MAX_RANK];
    int count = k->access_count;
    memcpy(strides, given, (size_t)count * sizeof strides[0]);
    int outer = rank - reduced, kept = 0, new_outer = 0;
    memset(args, 0, sizeof *args);
    for (int region = 0; region < 2; region++) {
        int begin = region ? outer : 0, end = region ? rank : outer;
        int start = kept;
        for (int d = begin; d < end; d++) {
            if (sizes[d] == 1) continue;
            if (kept > start && mergeable(k, sizes, strides, kept - 1, d, region == 1)) {
                args->sizes[kept - 1] *= sizes[d];
                for (int a = 0; a < count; a++) strides[a][kept - 1] = strides[a][d];
                continue;
            }
            args->sizes[kept] = sizes[d];
            for (int a = 0; a < count; a++) strides[a][kept] = strides[a][d];
            kept++;
        }
        /* A reduction keeps one reduced dim even when all have size 1. */
        if (region == 1 && reduced && kept == start) {
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
    for (int a = 0; a < count; a++) {
        bool outer_access = k->accesses[a].space == KIR_OUTER;
        for (int d = 0; d < kept; d++)
            args->strides[a][d] = outer_access && d >= new_outer ? 0 : strides[a][d];
    }
    k->rank = kept;
    k->outer_rank = reduced ? new_outer : kept;
    kir_classify_last(k, args);
}

void kir_classify_last(kir_kernel *k, const kir_args *args) {
    int last_dim = k->rank - 1;
    for (int a = 0; a < k->access_count; a++) {
        kir_access *access = &k->accesses[a];
        int64_t last = args->strides[a][last_dim];
        /* A last dim of size 1 is only ever indexed at 0: any stride will do. */
        if (args->sizes[last_dim] == 1) last = 1;
        access->last = access->space == KIR_OUTER ? KIR_LAST_ANY
                       : last == 1                ? KIR_LAST_UNIT
                       : last == 0                ? KIR_LAST_ZERO
                                                  : KIR_LAST_ANY;
    }
}

void kir_bind_tensor(kir_args *args, int access, const porta_tensor *t) {
    if (t->buffer->device->info.capabilities & PORTA_CAP_HOST_MEMORY) {
        args->data[access] = core_tensor_data(t);
        args->offsets[access] = 0;
    } else {
        args->data[access] = t->buffer->handle;
        args->offsets[access] = t->offset;
    }
}
