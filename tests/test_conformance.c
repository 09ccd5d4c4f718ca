/* The cross-backend conformance suite: every case of the table
 * (test_conformance_cases.c) runs through the public API on every device,
 * eagerly and fused (recorded, then run by the compiler at porta_flush),
 * and is compared with the CPU device's eager result: integers and bool
 * exactly, floats within the case's tolerance, NaN equal to NaN. Where the
 * CPU rejects a case the device must give the same error code. A device
 * without float64 runs float64 cases too: they are placed on another device
 * (devices/placement.c), so their results must match as well. With only
 * the CPU present the cases still run fused against the CPU's eager
 * results, so the suite is never empty. PORTA_CONFORMANCE=quick|full sets
 * how much runs (run_mode below). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dtype.h"
#include "core/status.h"
#include "test.h"
#include "test_conformance_cases.h"

/* Cases a backend is known to fail: still run, but their mismatch is only
 * listed at each run, not recorded, until the backend is fixed; an entry
 * whose case conforms again fails the test, so the list stays true. Match:
 * the backend, "eager" or "fused" (NULL: both), and the case's full name. */
typedef struct known_failure {
    const char *backend, *mode, *case_name, *reason;
} known_failure;

static const known_failure known_failures[] = {
    {NULL, NULL, NULL, NULL} /* end */
};

static const known_failure *known(const char *backend, bool fused, const conf_case *c) {
    for (const known_failure *k = known_failures; k->backend; k++)
        if (strcmp(k->backend, backend) == 0 && strcmp(k->case_name, c->name) == 0 &&
            (!k->mode || strcmp(k->mode, fused ? "fused" : "eager") == 0))
            return k;
    return NULL;
}

/* ---- devices ---- */

typedef struct conf_device {
    porta_device *device;
    porta_device_info info;
} conf_device;

/* Backends Porta has or plans; those without a device are named once. */
static const char *const known_backends[] = {"cpu", "opencl", "cuda", "pjrt"};

/* Every device; the reference (the first CPU one) in *reference. */
static int conf_devices(conf_device *out, int cap, int *reference) {
    int count = 0;
    *reference = -1;
    for (int i = 0; i < porta_device_count() && count < cap; i++) {
        conf_device d;
        porta_status *status = porta_device_get(i, &d.device);
        if (!status) status = porta_device_info_get(d.device, &d.info);
        if (status) {
            test_fail(__FILE__, __LINE__, "device %d: %s", i, porta_status_message(status));
            porta_status_free(status);
            continue;
        }
        if (*reference < 0 && strcmp(d.info.backend, "cpu") == 0) *reference = count;
        out[count++] = d;
    }
    static bool told;
    for (size_t b = 0; !told && b < sizeof known_backends / sizeof known_backends[0]; b++) {
        bool found = false;
        for (int i = 0; i < count; i++) found |= strcmp(out[i].info.backend, known_backends[b]) == 0;
        if (!found) fprintf(stderr, "conformance: no %s device; its backend is not tested\n",
                            known_backends[b]);
    }
    told = true;
    return count;
}

/* ---- running one case ---- */

typedef struct outcome {
    porta_status *status; /* the first error, NULL on success */
    porta_tensor *results[2];
    int result_count;
} outcome;

static void outcome_release(outcome *o) {
    porta_status_free(o->status);
    for (int i = 0; i < o->result_count; i++) porta_tensor_release(o->results[i]);
    memset(o, 0, sizeof *o);
}

/* Input i on `device`: the host values as its dtype, uploaded in their
 * stored layout, then viewed transposed where the case says so. */
static porta_status *upload(const conf_case *c, int i, porta_device *device, porta_tensor **out) {
    const conf_input *in = &c->inputs[i];
    int64_t numel = 0, stored[PORTA_MAX_RANK];
    double *values = conf_input_values(c, i, &numel);
    size_t elem = porta_dtype_size(in->dtype);
    char *bytes = malloc((size_t)(numel > 0 ? numel : 1) * elem);
    if (!values || !bytes) {
        free(values);
        free(bytes);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "conformance: host inputs");
    }
    for (int64_t k = 0; k < numel; k++)
        core_store_from_double(in->dtype, bytes + (size_t)k * elem, values[k]);
    free(values);
    memcpy(stored, in->sizes, sizeof stored);
    int dims[PORTA_MAX_RANK];
    for (int d = 0; d < in->rank; d++) dims[d] = d;
    if (in->transposed) {
        stored[in->rank - 2] = in->sizes[in->rank - 1];
        stored[in->rank - 1] = in->sizes[in->rank - 2];
        dims[in->rank - 2] = in->rank - 1;
        dims[in->rank - 1] = in->rank - 2;
    }
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(device, in->dtype, in->rank, stored, bytes, &t);
    free(bytes);
    if (status) return status;
    if (!in->transposed) {
        *out = t;
        return NULL;
    }
    status = porta_permute(t, dims, out);
    porta_tensor_release(t);
    return status;
}

/* The public call that runs the case's primitive. */
static porta_status *run_op(const conf_case *c, porta_device *device, porta_tensor *const *in,
                            outcome *o) {
    porta_tensor **r = o->results;
    o->result_count = 1;
    switch (c->kind) {
    case PRIM_UNARY: return porta_unary(c->op, in[0], &r[0]);
    case PRIM_BINARY: return porta_binary(c->op, in[0], in[1], &r[0]);
    case PRIM_TERNARY: return porta_ternary(c->op, in[0], in[1], in[2], &r[0]);
    case PRIM_CAST: return porta_cast(in[0], c->dtype, &r[0]);
    case PRIM_FILL:
        PORTA_TRY(porta_tensor_empty(device, c->dtype, c->rank, c->sizes, &r[0]));
        return porta_fill(r[0], c->value);
    case PRIM_REDUCE:
        return porta_reduce(c->op, in[0], c->axes, c->axis_count, c->keepdim, &r[0]);
    case PRIM_PAD: return porta_pad(in[0], c->pads, c->value, &r[0]);
    case PRIM_GATHER: return porta_gather(in[0], c->axis, in[1], &r[0]);
    case PRIM_SCATTER: return porta_scatter(in[0], c->axis, in[1], in[2], c->op, &r[0]);
    case PRIM_INDEX_SELECT: return porta_index_select(in[0], c->axis, in[1], &r[0]);
    case PRIM_MATMUL: return porta_matmul(in[0], in[1], &r[0]);
    case PRIM_CONV:
        return porta_conv(in[0], in[1], c->input_count > 2 ? in[2] : NULL, &c->conv, &r[0]);
    case PRIM_CONV_WEIGHT_GRAD:
        return porta_conv_weight_grad(in[0], in[1], &c->conv, c->sizes, &r[0]);
    case PRIM_CONV_INPUT_GRAD:
        return porta_conv_input_grad(in[0], in[1], &c->conv, c->sizes, &r[0]);
    case PRIM_RANDOM:
        PORTA_TRY(porta_tensor_empty(device, c->dtype, c->rank, c->sizes, &r[0]));
        return c->normal ? porta_random_normal(r[0], c->seed, 5, c->value, c->value2)
                         : porta_random_uniform(r[0], c->seed, 5, c->value, c->value2);
    case PRIM_SORT:
        o->result_count = 2;
        return porta_sort(in[0], c->axis, c->op, &r[0], &r[1]);
    case PRIM_POOL_MAX:
        return porta_max_pool_indices(in[0], c->sizes, c->conv.stride, c->conv.padding,
                                      c->conv.dilation, (porta_pool_rounding)c->op, &r[0]);
    case PRIM_SOFTMAX:
        return porta_softmax((porta_softmax_op)c->op, in[0], c->input_count > 1 ? in[1] : NULL,
                             &r[0]);
    case PRIM_FACTOR:
        return porta_factor(c->op, c->axis, in[0], c->input_count > 1 ? in[1] : NULL, &r[0]);
    case PRIM_FFT: {
        porta_fft_params p = {.kind = (porta_fft_kind)c->op, .inverse = c->normal,
                              .norm = (porta_fft_norm)c->axis, .axis_count = c->axis_count,
                              .last_size = c->sizes[0]};
        memcpy(p.axes, c->axes, sizeof p.axes);
        return porta_fft(in[0], &p, &r[0]);
    }
    default:
        return porta_error(PORTA_ERR_INTERNAL, "conformance: no call for %s",
                           ir_prim_kind_name(c->kind));
    }
}

/* Fused, each result is copied into a new tensor before the flush: a trace
 * of one record runs that record alone, two make the compiler fuse the op
 * with the copy (an elementwise epilogue) into a kernel of its own. */
static porta_status *copy_results(outcome *o) {
    for (int r = 0; r < o->result_count; r++) {
        porta_tensor *copy = NULL, *t = o->results[r];
        PORTA_TRY(porta_tensor_empty(porta_tensor_device(t), porta_tensor_dtype(t),
                                     porta_tensor_rank(t), porta_tensor_sizes(t), &copy));
        porta_status *status = porta_copy(t, copy);
        if (status) {
            porta_tensor_release(copy);
            return status;
        }
        porta_tensor_release(t);
        o->results[r] = copy;
    }
    return NULL;
}

/* Runs the case on `device`, fused or eagerly; results stay on the device. */
static void run_case(const conf_case *c, porta_device *device, bool fused, bool epilogue,
                     outcome *o) {
    memset(o, 0, sizeof *o);
    porta_tensor *in[CONF_MAX_INPUTS] = {NULL};
    porta_status *status = NULL;
    for (int i = 0; i < c->input_count && !status; i++) status = upload(c, i, device, &in[i]);
    if (!status && fused) status = porta_set_fusion(true);
    if (!status) {
        status = run_op(c, device, in, o);
        if (!status && epilogue) status = copy_results(o);
        if (!status && fused) status = porta_flush();
    }
    if (fused) {
        porta_status *off = porta_set_fusion(false); /* flushes anything left */
        if (!status) status = off;
        else porta_status_free(off);
    }
    for (int i = 0; i < c->input_count; i++) porta_tensor_release(in[i]);
    if (status) {
        for (int i = 0; i < o->result_count; i++) porta_tensor_release(o->results[i]);
        memset(o->results, 0, sizeof o->results);
        o->result_count = 0;
    }
    o->status = status;
}

/* ---- comparing ---- */

static void shape_text(const porta_tensor *t, char *out, size_t cap) {
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int d = 0; d < porta_tensor_rank(t) && n < cap; d++)
        n += (size_t)snprintf(out + n, cap - n, "%s%lld", d ? "," : "",
                              (long long)porta_tensor_sizes(t)[d]);
    if (n < cap) snprintf(out + n, cap - n, "]");
}

static double *host_values(const porta_tensor *t, porta_status **status) {
    int64_t numel = porta_tensor_numel(t);
    size_t elem = porta_dtype_size(porta_tensor_dtype(t));
    char *bytes = malloc((size_t)(numel > 0 ? numel : 1) * elem);
    double *values = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *values);
    *status = bytes && values ? porta_tensor_to_host(t, bytes, (size_t)numel * elem)
                              : porta_error(PORTA_ERR_OUT_OF_MEMORY, "conformance: results");
    if (!*status)
        for (int64_t k = 0; k < numel; k++)
            values[k] = core_load_as_double(porta_tensor_dtype(t), bytes + (size_t)k * elem);
    free(bytes);
    if (*status) {
        free(values);
        return NULL;
    }
    return values;
}

/* The first element where got differs from want, or -1. */
static int64_t first_mismatch(const double *got, const double *want, int64_t n, bool floats,
                              double rtol, double atol) {
    for (int64_t k = 0; k < n; k++) {
        double g = got[k], w = want[k];
        bool match;
        if (!floats)
            match = g == w;
        else if (isnan(w) || isnan(g))
            match = isnan(w) && isnan(g);
        else if (isinf(w) || isinf(g))
            match = g == w;
        else
            match = fabs(g - w) <= atol + rtol * fabs(w);
        if (!match) return k;
    }
    return -1;
}

/* Where the check runs: "porta:1 opencl fused". */
typedef struct where {
    const conf_device *d;
    bool fused;
    bool quiet; /* a known failure: mismatches are expected, not recorded */
} where;

/* Records a failure naming the device, backend, mode and case. */
static void conf_fail(int line, where at, const conf_case *c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void conf_fail(int line, where at, const conf_case *c, const char *fmt, ...) {
    if (at.quiet) return;
    char detail[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(detail, sizeof detail, fmt, args);
    va_end(args);
    test_fail(__FILE__, line, "porta:%d %s %s, case \"%s\": %s", at.d->info.index,
              at.d->info.backend, at.fused ? "fused" : "eager", c->name, detail);
}
#define CONF_FAIL(at, c, ...) conf_fail(__LINE__, at, c, __VA_ARGS__)

/* Whether the device's outcome conforms to the reference's. */
static bool conforms(const conf_case *c, where at, const outcome *want, const outcome *got) {
    if (want->status || got->status) {
        if (want->status && got->status &&
            porta_status_code(want->status) == porta_status_code(got->status))
            return true;
        CONF_FAIL(at, c, "the CPU says %s%s%s, the device %s%s%s",
                  want->status ? porta_code_name(porta_status_code(want->status)) : "OK",
                  want->status ? ": " : "", want->status ? porta_status_message(want->status) : "",
                  got->status ? porta_code_name(porta_status_code(got->status)) : "OK",
                  got->status ? ": " : "", got->status ? porta_status_message(got->status) : "");
        return false;
    }
    for (int r = 0; r < want->result_count; r++) {
        const porta_tensor *g = got->results[r], *w = want->results[r];
        char g_shape[96], w_shape[96];
        shape_text(g, g_shape, sizeof g_shape);
        shape_text(w, w_shape, sizeof w_shape);
        if (porta_tensor_dtype(g) != porta_tensor_dtype(w) || strcmp(g_shape, w_shape) != 0) {
            CONF_FAIL(at, c, "result %d is %s %s, the CPU's %s %s", r,
                      porta_dtype_name(porta_tensor_dtype(g)), g_shape,
                      porta_dtype_name(porta_tensor_dtype(w)), w_shape);
            return false;
        }
        porta_status *status = NULL;
        double *gv = host_values(g, &status), *wv = NULL;
        if (!status) wv = host_values(w, &status);
        if (status) {
            CONF_FAIL(at, c, "reading result %d: %s", r, porta_status_message(status));
            porta_status_free(status);
            free(gv);
            return false;
        }
        porta_dtype dtype = porta_tensor_dtype(w);
        bool floats = porta_dtype_is_float(dtype);
        double rtol = c->exact ? 0 : conf_tolerance(dtype) * c->rtol_scale;
        double atol = c->exact ? 0 : conf_tolerance(dtype) * c->atol_scale;
        int64_t k = first_mismatch(gv, wv, porta_tensor_numel(w), floats, rtol, atol);
        if (k >= 0)
            CONF_FAIL(at, c, "result %d (%s %s): element %lld is %.9g, the CPU's %.9g "
                      "(rtol %g, atol %g)", r, porta_dtype_name(porta_tensor_dtype(w)), w_shape,
                      (long long)k, gv[k], wv[k], rtol, atol);
        free(gv);
        free(wv);
        if (k >= 0) return false;
    }
    return true;
}

/* ---- the suite ---- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CONF_MAX_DEVICES 16

/* How much to run, from PORTA_CONFORMANCE: "quick" runs only the cases
 * that go through the compiler (every op and every dtype once, about a
 * fifth of the table: for a cold kernel cache on a slow device compiler);
 * "full" sends every case through the compiler and also runs the reference
 * device fused beside others; anything else (unset), the default: every
 * case eagerly and fused, the chosen ones through the compiler. */
typedef enum conf_mode { CONF_QUICK, CONF_DEFAULT, CONF_FULL } conf_mode;

static conf_mode run_mode(void) {
    const char *mode = getenv("PORTA_CONFORMANCE");
    if (mode && strcmp(mode, "quick") == 0) return CONF_QUICK;
    if (mode && strcmp(mode, "full") == 0) return CONF_FULL;
    return CONF_DEFAULT;
}

/* Which cases run fused with the copy epilogue, through the compiler's
 * generated kernels; the others run fused as a trace of one record (the
 * recording and memory plan, then the device's own kernel). Each fused
 * kernel is a compiler run on the CPU and on each device, so by default
 * only the first case of each (kind, op) and of each (kind, dtype) goes
 * through the compiler: every op and every dtype once. */
static bool *through_compiler(const conf_case *cases, int count) {
    bool *compiled = calloc((size_t)(count > 0 ? count : 1), sizeof *compiled);
    if (!compiled) {
        fprintf(stderr, "conformance: out of memory\n");
        exit(2);
    }
    for (int i = 0; i < count; i++) {
        bool new_op = true, new_dtype = true;
        for (int j = 0; j < i && (new_op || new_dtype); j++) {
            if (cases[j].kind != cases[i].kind) continue;
            new_op &= cases[j].op != cases[i].op;
            new_dtype &= cases[j].dtype != cases[i].dtype;
        }
        compiled[i] = run_mode() == CONF_FULL || new_op || new_dtype;
    }
    return compiled;
}

/* Every case of `kind` on every device, eager and fused, against the
 * reference's eager outcome. The reference device itself runs fused only
 * when it is alone (so the suite is never empty) or in a full run: its
 * compiler is checked against its eager kernels bit for bit by
 * test_codegen.c, and each of its fused kernels costs a C compiler run. */
static void conformance(ir_prim_kind kind) {
    conf_device devices[CONF_MAX_DEVICES];
    int reference;
    int device_count = conf_devices(devices, CONF_MAX_DEVICES, &reference);
    if (reference < 0) {
        test_fail(__FILE__, __LINE__,
                  "no CPU device to compare with (does PORTA_VISIBLE_DEVICES hide it?)");
        return;
    }
    int count;
    const conf_case *cases = conf_cases(&count);
    double seconds[CONF_MAX_DEVICES][2] = {{0}};
    int ran[CONF_MAX_DEVICES][2] = {{0}}, failed[CONF_MAX_DEVICES][2] = {{0}};
    bool *compiled = through_compiler(cases, count);
    conf_mode mode = run_mode();
    bool check_reference = device_count == 1 || mode == CONF_FULL;
    porta_compiler_stats before, after;
    porta_compiler_stats_get(&before);
    test_cache_begin(); /* every run compiles its kernels afresh */
    for (int i = 0; i < count; i++) {
        const conf_case *c = &cases[i];
        if (c->kind != kind || (mode == CONF_QUICK && !compiled[i])) continue;
        outcome want;
        run_case(c, devices[reference].device, false, false, &want);
        for (int d = 0; d < device_count; d++) {
            if (d == reference && !check_reference) continue;
            for (int fused = d == reference; fused < 2; fused++) {
                const known_failure *k = known(devices[d].info.backend, fused, c);
                where at = {&devices[d], fused, k != NULL};
                double start = now();
                outcome got;
                run_case(c, devices[d].device, fused, fused && compiled[i], &got);
                bool ok = conforms(c, at, &want, &got);
                if (k && ok)
                    CONF_FAIL((where){&devices[d], fused, false}, c,
                              "listed in known_failures[] but conforms now: remove the entry");
                else if (k)
                    fprintf(stderr, "conformance: known failure: porta:%d %s %s \"%s\": %s\n",
                            devices[d].info.index, devices[d].info.backend,
                            fused ? "fused" : "eager", c->name, k->reason);
                failed[d][fused] += !ok && !k;
                outcome_release(&got);
                seconds[d][fused] += now() - start;
                ran[d][fused]++;
            }
        }
        outcome_release(&want);
    }
    test_cache_end();
    free(compiled);
    porta_compiler_stats_get(&after);
    fprintf(stderr, "conformance %s: %llu primitives ran inside fused kernels\n",
            ir_prim_kind_name(kind),
            (unsigned long long)(after.prims_fused - before.prims_fused));
    for (int d = 0; d < device_count; d++)
        for (int fused = d == reference; fused < 2 && (d != reference || check_reference); fused++)
            fprintf(stderr, "conformance %s: porta:%d %s %s: %d cases, %d failed, %.2f s\n",
                    ir_prim_kind_name(kind), devices[d].info.index, devices[d].info.backend,
                    fused ? "fused" : "eager", ran[d][fused], failed[d][fused],
                    seconds[d][fused]);
}

/* The table covers every primitive a backend executes, each with cases. */
TEST(test_conformance_table_covers_every_computing_primitive) {
    int count, per_kind[PRIM_KIND_COUNT] = {0};
    const conf_case *cases = conf_cases(&count);
    for (int i = 0; i < count; i++) per_kind[cases[i].kind]++;
    for (int kind = PRIM_UNARY; kind < PRIM_RESHAPE; kind++)
        CHECK_MSG(per_kind[kind] > 0, "no conformance case for %s",
                  ir_prim_kind_name((ir_prim_kind)kind));
    /* Names identify cases in reports and in known_failures[]: unique. */
    for (int i = 0; i < count; i++)
        for (int j = i + 1; j < count; j++)
            CHECK_MSG(strcmp(cases[i].name, cases[j].name) != 0, "two cases named \"%s\"",
                      cases[i].name);
}

#define CONFORMANCE_TEST(name, kind) \
    TEST(test_conformance_##name) { conformance(kind); }

CONFORMANCE_TEST(unary, PRIM_UNARY)
CONFORMANCE_TEST(binary, PRIM_BINARY)
CONFORMANCE_TEST(ternary, PRIM_TERNARY)
CONFORMANCE_TEST(cast, PRIM_CAST)
CONFORMANCE_TEST(fill, PRIM_FILL)
CONFORMANCE_TEST(reduce, PRIM_REDUCE)
CONFORMANCE_TEST(pad, PRIM_PAD)
CONFORMANCE_TEST(gather, PRIM_GATHER)
CONFORMANCE_TEST(scatter, PRIM_SCATTER)
CONFORMANCE_TEST(index_select, PRIM_INDEX_SELECT)
CONFORMANCE_TEST(matmul, PRIM_MATMUL)
CONFORMANCE_TEST(conv, PRIM_CONV)
CONFORMANCE_TEST(conv_weight_grad, PRIM_CONV_WEIGHT_GRAD)
CONFORMANCE_TEST(conv_input_grad, PRIM_CONV_INPUT_GRAD)
CONFORMANCE_TEST(random, PRIM_RANDOM)
CONFORMANCE_TEST(sort, PRIM_SORT)
CONFORMANCE_TEST(pool_max, PRIM_POOL_MAX)
CONFORMANCE_TEST(factor, PRIM_FACTOR)
CONFORMANCE_TEST(fft, PRIM_FFT)
CONFORMANCE_TEST(softmax, PRIM_SOFTMAX)
