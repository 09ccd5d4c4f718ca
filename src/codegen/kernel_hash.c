/* kir_hash: FNV-1a over the fields of a kernel that its source depends on,
 * fed field by field (never whole structs, whose padding and unused slots
 * hold anything), so equal kernels hash alike in every process; and
 * kir_same_kernel, the exact comparison of the same fields. */
#include <string.h>

#include "ir/kernel_ir.h"

/* Bumped whenever the renderer's output for the same kernel changes shape
 * in a way the fields below cannot see. */
#define KIR_HASH_VERSION 1

typedef struct hasher {
    uint64_t h;
} hasher;

static void feed(hasher *s, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        s->h ^= (v >> (8 * i)) & 0xff;
        s->h *= 0x100000001b3ull;
    }
}

static void feed_double(hasher *s, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    feed(s, bits);
}

static int arg_count(const kir_value *v) {
    switch (v->kind) {
    case KIR_UNARY: case KIR_CAST: case KIR_REDUCE: return 1;
    case KIR_BINARY: return 2;
    case KIR_TERNARY: return 3;
    default: return 0;
    }
}

uint64_t kir_hash(const kir_kernel *kernel) {
    hasher s = {0xcbf29ce484222325ull};
    feed(&s, KIR_HASH_VERSION);
    feed(&s, (uint64_t)kernel->rank);
    feed(&s, (uint64_t)kernel->outer_rank);
    feed(&s, (uint64_t)kernel->value_count);
    for (int i = 0; i < kernel->value_count && i < KIR_MAX_VALUES; i++) {
        const kir_value *v = &kernel->values[i];
        feed(&s, (uint64_t)v->kind);
        feed(&s, (uint64_t)v->dtype);
        feed(&s, (uint64_t)v->space);
        if (v->kind != KIR_LOAD && v->kind != KIR_CONST && v->kind != KIR_CAST &&
            v->kind != KIR_PARAM)
            feed(&s, (uint64_t)(int64_t)v->op);
        for (int a = 0; a < arg_count(v); a++) feed(&s, (uint64_t)(int64_t)v->args[a]);
        if (v->kind == KIR_LOAD) feed(&s, (uint64_t)(int64_t)v->access);
        if (v->kind == KIR_CONST) feed_double(&s, v->constant);
        if (v->kind == KIR_PARAM) feed(&s, (uint64_t)(int64_t)v->param);
    }
    feed(&s, (uint64_t)kernel->access_count);
    for (int i = 0; i < kernel->access_count && i < KIR_MAX_ACCESSES; i++) {
        const kir_access *a = &kernel->accesses[i];
        feed(&s, (uint64_t)a->dtype);
        feed(&s, (uint64_t)a->space);
        feed(&s, (uint64_t)a->last);
        feed(&s, (uint64_t)a->store);
        if (a->store) feed(&s, (uint64_t)(int64_t)a->value);
    }
    return s.h;
}

static bool same_value(const kir_value *a, const kir_value *b) {
    return a->kind == b->kind && a->op == b->op && a->dtype == b->dtype &&
           a->space == b->space && !memcmp(a->args, b->args, sizeof a->args) &&
           a->access == b->access && a->param == b->param &&
           (a->kind != KIR_CONST || !memcmp(&a->constant, &b->constant, sizeof a->constant));
}

bool kir_same_kernel(const kir_kernel *a, const kir_kernel *b) {
    if (a->rank != b->rank || a->outer_rank != b->outer_rank ||
        a->value_count != b->value_count || a->access_count != b->access_count)
        return false;
    for (int i = 0; i < a->value_count; i++)
        if (!same_value(&a->values[i], &b->values[i])) return false;
    for (int i = 0; i < a->access_count; i++) {
        const kir_access *x = &a->accesses[i], *y = &b->accesses[i];
        if (x->dtype != y->dtype || x->space != y->space || x->last != y->last ||
            x->store != y->store || (x->store && x->value != y->value))
            return false;
    }
    return true;
}
