/* Primitives and kernels on a PJRT device, as StableHLO modules
 * (codegen/codegen_stablehlo.h) the plugin compiles.
 *
 * Elementwise ops, casts, fills and reductions run as their one-primitive
 * kernel (kir_single.h), fused groups as their kernel (the compiler's
 * prepare_kernel / run_kernel), MATMUL as a dot_general, in fused mode
 * with its elementwise epilogue in the same module (run_matmul_epilogue);
 * PAD, GATHER, INDEX_SELECT, SCATTER, SORT, POOL_MAX and the convolutions
 * as their own modules (shlo_render_prim; index values checked on the
 * host first, as the CPU checks them); every other primitive (RANDOM) is
 * refused by supports() and placed on another device (devices/placement.h).
 *
 * StableHLO shapes are static, so a kernel has one module per layout of
 * its run (sizes, strides, buffer sizes): each prepared kernel keeps its
 * modules by layout, and the runtime caches compiled programs by text.
 * Offsets and parameters travel in a small scalar buffer uploaded per run
 * (only for modules that read them), so they never cause a compile. PORTA_LOG=recompiles names the shape that
 * made a kernel compile again. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pjrt/pjrt_runtime.h"
#include "codegen/codegen_c.h"
#include "codegen/codegen_stablehlo.h"
#include "codegen/kir_built.h"
#include "codegen/kir_layout.h"
#include "core/status.h"
#include "ir/infer_elementwise.h"
#include "runtime/compile_stats.h"
#include "runtime/tensor.h"

/* ---- modules of a kernel, one per layout ---- */

typedef struct pjrt_module {
    struct pjrt_module *next;
    shlo_layout layout;
    pjrt_program *program;
    bool takes_scalars; /* the scalar buffer follows the storages */
} pjrt_module;

typedef struct pjrt_kernel {
    kir_kernel kernel;
    pthread_mutex_t lock;
    pjrt_module *modules; /* kept for the life of the process, as programs are */
} pjrt_kernel;

/* Read at each recompile (rare), so a test can set it at any time. */
static bool log_recompiles(void) {
    const char *log = getenv("PORTA_LOG");
    return log && strstr(log, "recompiles") != NULL;
}

static void print_sizes(FILE *f, const int64_t *sizes, int rank) {
    fputc('[', f);
    for (int d = 0; d < rank; d++) fprintf(f, "%s%" PRId64, d ? ", " : "", sizes[d]);
    fputc(']', f);
}

/* What changed from the layout compiled before: the domain, a stride or a
 * buffer's size. */
static void report_recompile(const pjrt_kernel *pk, const shlo_layout *before,
                             const shlo_layout *now) {
    const kir_kernel *k = &pk->kernel;
    fprintf(stderr, "porta: compiling kernel %016" PRIx64 " (%d values) again for pjrt: ",
            kir_hash(k), k->value_count);
    if (memcmp(before->sizes, now->sizes, sizeof now->sizes) != 0) {
        fputs("domain ", stderr);
        print_sizes(stderr, before->sizes, k->rank);
        fputs(" -> ", stderr);
        print_sizes(stderr, now->sizes, k->rank);
    } else if (memcmp(before->strides, now->strides, sizeof now->strides) != 0) {
        int a = 0;
        while (memcmp(before->strides[a], now->strides[a], sizeof now->strides[a]) == 0) a++;
        fprintf(stderr, "access %d strides ", a);
        print_sizes(stderr, before->strides[a], k->rank);
        fputs(" -> ", stderr);
        print_sizes(stderr, now->strides[a], k->rank);
    } else {
        fputs("buffers ", stderr);
        print_sizes(stderr, before->buffer_bytes, before->buffer_count);
        fputs(" -> ", stderr);
        print_sizes(stderr, now->buffer_bytes, now->buffer_count);
        fputs(" bytes", stderr);
    }
    fputc('\n', stderr);
}

/* Each access's buffer among the distinct storages of the run. */
static void bind_buffers(const kir_kernel *k, const kir_args *args, shlo_layout *layout,
                         pjrt_storage **storages) {
    for (int a = 0; a < k->access_count; a++) {
        pjrt_storage *s = args->data[a];
        int b = 0;
        while (b < layout->buffer_count && storages[b] != s) b++;
        if (b == layout->buffer_count) {
            storages[b] = s;
            layout->buffer_bytes[b] = (int64_t)s->bytes;
            layout->buffer_count++;
        }
        layout->buffer[a] = b;
    }
}

static porta_status *module_for(porta_device *device, pjrt_kernel *pk, const shlo_layout *layout,
                                const pjrt_module **out) {
    pthread_mutex_lock(&pk->lock);
    pjrt_module *m = pk->modules;
    while (m && memcmp(&m->layout, layout, sizeof *layout) != 0) m = m->next;
    pjrt_module *previous = pk->modules;
    pthread_mutex_unlock(&pk->lock);
    if (m) {
        *out = m;
        return NULL;
    }
    char *text = NULL;
    bool takes_scalars;
    PORTA_TRY(kir_render_stablehlo(&pk->kernel, layout, &text, &takes_scalars));
    pjrt_program *program;
    porta_status *status = pjrt_program_get(device, text, strlen(text), &program);
    free(text);
    if (status) return status;
    m = calloc(1, sizeof *m);
    if (!m) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT: a kernel's module entry");
    m->layout = *layout;
    m->program = program;
    m->takes_scalars = takes_scalars;
    if (previous && log_recompiles()) report_recompile(pk, &previous->layout, layout);
    pthread_mutex_lock(&pk->lock);
    m->next = pk->modules;
    pk->modules = m;
    pthread_mutex_unlock(&pk->lock);
    *out = m;
    return NULL;
}

/* Runs the module's program on the storages, then, where it takes them,
 * the offsets and parameters uploaded as the scalar buffer (most eager ops
 * read whole buffers and need none). */
static porta_status *run_program(porta_device *device, const pjrt_module *module,
                                 pjrt_storage **storages, int count, const bool *stored,
                                 const int64_t *offsets, int access_count,
                                 const double *params) {
    pjrt_storage *args[KIR_MAX_ACCESSES + 1], *results[KIR_MAX_ACCESSES];
    int result_count = 0;
    for (int b = 0; b < count; b++) {
        args[b] = storages[b];
        if (stored[b]) results[result_count++] = storages[b];
    }
    if (!module->takes_scalars)
        return pjrt_program_run(device, module->program, args, count, results, result_count);
    int64_t slots[SHLO_SCALAR_SLOTS];
    shlo_pack_scalars(offsets, access_count, params, slots);
    void *handle;
    PORTA_TRY(device->ops->buffer_alloc(device, SHLO_SCALAR_BYTES, &handle));
    porta_status *status = device->ops->buffer_write(device, handle, 0, slots, sizeof slots);
    if (!status) {
        args[count] = handle;
        status = pjrt_program_run(device, module->program, args, count + 1, results,
                                  result_count);
    }
    device->ops->buffer_free(device, handle);
    return status;
}

static porta_status *pjrt_run_kernel(porta_device *device, void *program, const kir_args *args,
                                     int64_t work) {
    if (!program || !args || work < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "PJRT run_kernel: bad arguments");
    if (work == 0) return NULL;
    pjrt_kernel *pk = ((kir_built *)program)->handle;
    const kir_kernel *k = &pk->kernel;
    shlo_layout layout;
    memset(&layout, 0, sizeof layout);
    memcpy(layout.sizes, args->sizes, (size_t)k->rank * sizeof *args->sizes);
    for (int a = 0; a < k->access_count; a++) {
        int rank = k->accesses[a].space == KIR_OUTER ? k->outer_rank : k->rank;
        memcpy(layout.strides[a], args->strides[a], (size_t)rank * sizeof *args->strides[a]);
    }
    pjrt_storage *storages[KIR_MAX_ACCESSES];
    bind_buffers(k, args, &layout, storages);
    const pjrt_module *module = NULL;
    PORTA_TRY(module_for(device, pk, &layout, &module));
    bool stored[KIR_MAX_ACCESSES];
    for (int b = 0; b < layout.buffer_count; b++) stored[b] = shlo_buffer_stored(k, &layout, b);
    return run_program(device, module, storages, layout.buffer_count, stored, args->offsets,
                       k->access_count, args->params);
}

/* Found again by structure (kir_built), else checked and recorded: no
 * module is rendered before a run gives the shapes. */
static porta_status *prepare(porta_device *device, const kir_kernel *kernel, bool count_hit,
                             kir_built **out) {
    uint64_t hash = kir_hash(kernel);
    if ((*out = kir_built_find(device, kernel, hash))) {
        if (count_hit) compiler_count(COUNTER_KERNEL_MEMORY_HITS, 1);
        return NULL;
    }
    PORTA_TRY(kir_check(kernel));
    for (int id = 0; id < kernel->value_count; id++) {
        const kir_value *v = &kernel->values[id];
        bool op = v->kind != KIR_LOAD && v->kind != KIR_CONST && v->kind != KIR_PARAM;
        if (op && !shlo_supports(v, kernel->values[v->args[0]].dtype))
            return porta_error(PORTA_ERR_UNSUPPORTED,
                               "PJRT: kernel value %d (kind %d, op %d) has no StableHLO "
                               "spelling; expected an op the C renderer spells",
                               id, (int)v->kind, v->op);
    }
    pjrt_kernel *pk = calloc(1, sizeof *pk);
    if (!pk) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT: a prepared kernel");
    pk->kernel = *kernel;
    pthread_mutex_init(&pk->lock, NULL);
    porta_status *status = kir_built_add(device, kernel, hash, pk, out);
    if (status) {
        pthread_mutex_destroy(&pk->lock);
        free(pk);
    }
    return status;
}

static porta_status *pjrt_prepare_kernel(porta_device *device, const kir_kernel *kernel,
                                         void **program) {
    kir_built *built;
    PORTA_TRY(prepare(device, kernel, true, &built));
    *program = built;
    return NULL;
}

/* ---- primitives ---- */

/* The dtype the primitive's contract gives its result (ir/prim.h). */
static porta_dtype result_dtype(const ir_prim *prim, const porta_tensor *const *inputs) {
    switch (prim->kind) {
    case PRIM_UNARY:
        switch (prim->op) {
        case PORTA_ISNAN: case PORTA_ISINF: case PORTA_ISFINITE: case PORTA_LOGICAL_NOT:
            return PORTA_BOOL;
        default: return inputs[0]->dtype;
        }
    case PRIM_BINARY:
        return ir_binary_gives_bool((porta_binary_op)prim->op) ? PORTA_BOOL : inputs[0]->dtype;
    case PRIM_TERNARY: return prim->op == PORTA_WHERE ? inputs[1]->dtype : inputs[0]->dtype;
    default: return prim->dtype; /* casts */
    }
}

static bool reduce_supported(const ir_prim *prim, porta_dtype in) {
    int op = prim->op;
    if (in == PORTA_BOOL && op == PORTA_REDUCE_MAX) op = PORTA_REDUCE_ANY;
    if (in == PORTA_BOOL && op == PORTA_REDUCE_MIN) op = PORTA_REDUCE_ALL;
    bool logical = op == PORTA_REDUCE_ANY || op == PORTA_REDUCE_ALL;
    kir_value v = {.kind = KIR_REDUCE, .op = op, .dtype = logical ? PORTA_BOOL : in,
                   .space = KIR_OUTER};
    return shlo_supports(&v, in);
}

bool pjrt_supports(porta_device *device, const ir_prim *prim, const porta_tensor *const *inputs,
                   int input_count) {
    (void)device;
    switch (prim->kind) {
    case PRIM_FILL: return true;
    case PRIM_REDUCE: return input_count == 1 && reduce_supported(prim, inputs[0]->dtype);
    case PRIM_MATMUL:
        return input_count == 2 && porta_dtype_is_float(inputs[0]->dtype);
    case PRIM_UNARY: case PRIM_BINARY: case PRIM_TERNARY: case PRIM_CAST: break;
    default: {
        if (input_count < 1 || input_count >= SHLO_PRIM_MAX_OPERANDS) return false;
        porta_dtype dtypes[SHLO_PRIM_MAX_OPERANDS];
        int ranks[SHLO_PRIM_MAX_OPERANDS];
        for (int i = 0; i < input_count; i++) {
            dtypes[i] = inputs[i]->dtype;
            ranks[i] = inputs[i]->rank;
        }
        return shlo_prim_supported(prim, dtypes, ranks, input_count);
    }
    }
    if (input_count < 1 || input_count > 3) return false;
    static const kir_value_kind kinds[] = {[PRIM_UNARY] = KIR_UNARY, [PRIM_BINARY] = KIR_BINARY,
                                           [PRIM_TERNARY] = KIR_TERNARY, [PRIM_CAST] = KIR_CAST};
    kir_value v = {.kind = kinds[prim->kind], .op = prim->op,
                   .dtype = result_dtype(prim, inputs), .space = KIR_FULL};
    return shlo_supports(&v, inputs[0]->dtype);
}

/* A tensor's storage, given memory first (a deferred buffer has none). */
static porta_status *storage_of(const porta_tensor *t, pjrt_storage **out) {
    PORTA_TRY(rt_buffer_materialize(t->buffer));
    *out = t->buffer->handle;
    return NULL;
}

/* Storage s's index among storages[0..*count), added when new; -1 when
 * there is no room. */
static int storage_index(pjrt_storage **storages, int64_t *bytes, int *count, pjrt_storage *s) {
    int b = 0;
    while (b < *count && storages[b] != s) b++;
    if (b == *count) {
        if (b == KIR_MAX_ACCESSES) return -1;
        storages[b] = s;
        bytes[b] = (int64_t)s->bytes;
        (*count)++;
    }
    return b;
}

/* out = a @ b as one module, followed in it by `epilogue` (a prepared
 * elementwise kernel over out's domain, with its run's args) when given.
 * *done false, nothing run, when the buffers or the operands' offset
 * slots do not fit one module. */
static porta_status *run_matmul(porta_device *device, const porta_tensor *const *inputs,
                                porta_tensor *out, const pjrt_kernel *epilogue,
                                const kir_args *args, bool *done) {
    *done = false;
    shlo_matmul m;
    memset(&m, 0, sizeof m);
    m.dtype = out->dtype;
    m.rank = out->rank;
    shlo_layout *kl = &m.epilogue_layout;
    pjrt_storage *storages[KIR_MAX_ACCESSES];
    int count = 0, base = 0;
    int64_t offsets[KIR_MAX_ACCESSES + 3];
    double params[KIR_MAX_PARAMS] = {0};
    if (epilogue) {
        const kir_kernel *k = &epilogue->kernel;
        if (k->access_count + 3 > KIR_MAX_ACCESSES) return NULL; /* no slots for a, b, out */
        m.epilogue = k;
        base = k->access_count;
        memcpy(kl->sizes, args->sizes, (size_t)k->rank * sizeof *args->sizes);
        for (int a = 0; a < k->access_count; a++) {
            memcpy(kl->strides[a], args->strides[a], (size_t)k->rank * sizeof *args->strides[a]);
            kl->buffer[a] = storage_index(storages, kl->buffer_bytes, &count, args->data[a]);
            offsets[a] = args->offsets[a];
        }
        memcpy(params, args->params, sizeof params);
    }
    const porta_tensor *operands[3] = {inputs[0], inputs[1], out};
    int64_t *sizes[3] = {m.a_sizes, m.b_sizes, m.out_sizes};
    for (int i = 0; i < 3; i++) {
        const porta_tensor *t = operands[i];
        if (t->rank != m.rank)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "PJRT matmul: operand %d has rank %d; expected %d", i, t->rank,
                               m.rank);
        memcpy(sizes[i], t->sizes, (size_t)t->rank * sizeof *t->sizes);
        memcpy(m.layout.strides[i], t->strides, (size_t)t->rank * sizeof *t->strides);
        pjrt_storage *s;
        PORTA_TRY(storage_of(t, &s));
        m.layout.buffer[i] = storage_index(storages, kl->buffer_bytes, &count, s);
        offsets[base + i] = t->offset;
    }
    for (int a = 0; a < base; a++)
        if (kl->buffer[a] < 0) return NULL;
    for (int i = 0; i < 3; i++)
        if (m.layout.buffer[i] < 0) return NULL;
    kl->buffer_count = m.layout.buffer_count = count;
    memcpy(m.layout.buffer_bytes, kl->buffer_bytes, sizeof kl->buffer_bytes);
    bool stored[KIR_MAX_ACCESSES];
    for (int b = 0; b < count; b++)
        stored[b] = b == m.layout.buffer[2] || (epilogue && shlo_buffer_stored(m.epilogue, kl, b));
    /* the runtime finds the program again by the module's text */
    char *text = NULL;
    pjrt_module module = {0};
    PORTA_TRY(shlo_render_matmul(&m, &text, &module.takes_scalars));
    porta_status *status = pjrt_program_get(device, text, strlen(text), &module.program);
    free(text);
    if (status) return status;
    *done = true;
    return run_program(device, &module, storages, count, stored, offsets, base + 3, params);
}

static porta_status *execute_matmul(porta_device *device, const porta_tensor *const *inputs,
                                    porta_tensor *out) {
    bool done;
    return run_matmul(device, inputs, out, NULL, NULL, &done); /* 3 buffers always fit */
}

/* A float32 matmul and its elementwise epilogue as one module, so the
 * plugin's compiler fuses them; where their buffers do not fit one module,
 * one after the other. */
static porta_status *pjrt_run_matmul_epilogue(porta_device *device, const ir_prim *prim,
                                              const porta_tensor *const *inputs,
                                              int input_count, porta_tensor *out,
                                              void *program, const kir_args *args) {
    if (prim->kind != PRIM_MATMUL || input_count != 2 || !program || !args)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "PJRT matmul epilogue: expected a MATMUL of 2 inputs and a kernel, "
                           "got kind %d with %d inputs",
                           (int)prim->kind, input_count);
    const pjrt_kernel *pk = ((kir_built *)program)->handle;
    bool done;
    PORTA_TRY(run_matmul(device, inputs, out, pk, args, &done));
    if (done) return NULL;
    PORTA_TRY(execute_matmul(device, inputs, out));
    int64_t work = args->sizes[0] * args->sizes[1];
    return pjrt_run_kernel(device, program, args, work);
}

/* Every value of the int64 tensor `index` lies in [0, limit), else the
 * CPU kernel's error for the first that does not (row-major order). A
 * module cannot raise an error, so the values are read back first: a sync
 * the CPU's check does not cost, the price of the same error. */
static porta_status *check_index(porta_device *device, const ir_prim *prim,
                                 const porta_tensor *index, int64_t limit) {
    int64_t numel = porta_tensor_numel(index);
    if (numel == 0) return NULL;
    int64_t first = index->offset, last = index->offset;
    for (int d = 0; d < index->rank; d++) {
        int64_t reach = (index->sizes[d] - 1) * index->strides[d];
        if (reach < 0) first += reach; else last += reach;
    }
    pjrt_storage *s;
    PORTA_TRY(storage_of(index, &s));
    size_t count = (size_t)(last - first + 1);
    int64_t *values = malloc(count * sizeof *values);
    if (!values) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT: %s's index values",
                                    ir_prim_name(prim));
    porta_status *status = device->ops->buffer_read(device, s, (size_t)first * sizeof *values,
                                                    values, count * sizeof *values);
    int64_t coords[PORTA_MAX_RANK] = {0};
    for (int64_t i = 0; i < numel && !status; i++) {
        int64_t at = index->offset - first;
        for (int d = 0; d < index->rank; d++) at += coords[d] * index->strides[d];
        if ((uint64_t)values[at] >= (uint64_t)limit)
            status = porta_error(PORTA_ERR_OUT_OF_RANGE,
                                 "%s: index %lld is out of bounds for dimension %d with size "
                                 "%lld",
                                 ir_prim_name(prim), (long long)values[at], prim->axis,
                                 (long long)limit);
        for (int d = index->rank - 1; d >= 0 && ++coords[d] == index->sizes[d]; d--)
            coords[d] = 0;
    }
    free(values);
    return status;
}

/* What shlo_render_prim spells: one module over the operands' views. */
static porta_status *execute_prim(porta_device *device, const ir_prim *prim,
                                  const porta_tensor *const *inputs, int input_count,
                                  porta_tensor *out) {
    if (prim->kind == PRIM_GATHER || prim->kind == PRIM_INDEX_SELECT ||
        prim->kind == PRIM_SCATTER) {
        const porta_tensor *x = inputs[0];
        PORTA_TRY(check_index(device, prim, inputs[1], x->rank ? x->sizes[prim->axis] : 1));
    }
    shlo_prim p;
    memset(&p, 0, sizeof p);
    p.prim = *prim;
    p.count = input_count + 1;
    pjrt_storage *storages[KIR_MAX_ACCESSES];
    int64_t offsets[SHLO_PRIM_MAX_OPERANDS];
    int count = 0;
    for (int i = 0; i < p.count; i++) {
        const porta_tensor *t = i < input_count ? inputs[i] : out;
        p.dtype[i] = t->dtype;
        p.rank[i] = t->rank;
        memcpy(p.sizes[i], t->sizes, (size_t)t->rank * sizeof *t->sizes);
        memcpy(p.layout.strides[i], t->strides, (size_t)t->rank * sizeof *t->strides);
        pjrt_storage *s;
        PORTA_TRY(storage_of(t, &s));
        p.layout.buffer[i] = storage_index(storages, p.layout.buffer_bytes, &count, s);
        offsets[i] = t->offset;
    }
    p.layout.buffer_count = count;
    bool stored[KIR_MAX_ACCESSES] = {false};
    stored[p.layout.buffer[input_count]] = true;
    /* the runtime finds the program again by the module's text */
    char *text = NULL;
    pjrt_module module = {0};
    PORTA_TRY(shlo_render_prim(&p, &text, &module.takes_scalars));
    porta_status *status = pjrt_program_get(device, text, strlen(text), &module.program);
    free(text);
    if (status) return status;
    double params[KIR_MAX_PARAMS] = {0};
    return run_program(device, &module, storages, count, stored, offsets, p.count, params);
}

porta_status *pjrt_execute(porta_device *device, const ir_prim *prim,
                           const porta_tensor *const *inputs, int input_count,
                           porta_tensor *out) {
    if (!pjrt_supports(device, prim, inputs, input_count))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "PJRT: %s is not supported on %s; expected placement to run it on "
                           "another device",
                           ir_prim_name(prim), device->info.name);
    if (porta_tensor_numel(out) == 0) return NULL;
    if (prim->kind == PRIM_MATMUL) return execute_matmul(device, inputs, out);
    if (prim->kind != PRIM_UNARY && prim->kind != PRIM_BINARY && prim->kind != PRIM_TERNARY &&
        prim->kind != PRIM_CAST && prim->kind != PRIM_FILL && prim->kind != PRIM_REDUCE)
        return execute_prim(device, prim, inputs, input_count, out);
    static _Thread_local kir_kernel kernel; /* 20 KB: off the stack */
    kir_args args;
    int64_t work;
    if (!kir_single(prim, inputs, input_count, out, &kernel, &args, &work))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "PJRT: %s has no single-primitive kernel; expected placement to "
                           "run it on another device",
                           ir_prim_name(prim));
    for (int i = 0; i < input_count; i++) {
        PORTA_TRY(rt_buffer_materialize(inputs[i]->buffer));
        kir_bind_tensor(&args, i, inputs[i]);
    }
    PORTA_TRY(rt_buffer_materialize(out->buffer));
    kir_bind_tensor(&args, input_count, out);
    kir_built *built;
    PORTA_TRY(prepare(device, &kernel, false, &built));
    return pjrt_run_kernel(device, built, &args, work);
}

void pjrt_add_compiler_entries(rt_backend_ops *ops) {
    ops->prepare_kernel = pjrt_prepare_kernel;
    ops->run_kernel = pjrt_run_kernel;
    ops->run_matmul_epilogue = pjrt_run_matmul_epilogue;
}
