/* Random aten ops that fill a tensor in place: uniform_, normal_,
 * exponential_, bernoulli_, random_; and the factories rand, randn. Each reserves its stream positions from
 * the device's generator (random/state.h), so results depend only on the
 * seed and the sequence of draws, on every backend. A torch.Generator
 * argument ('x') never reaches here: the binding rejects it, as porta has
 * no generator objects yet. */
#include <math.h>

#include "aten/factory/factory.h"
#include "aten/dispatch/op_reuse.h"
#include "core/alloc.h"
#include "core/philox.h"
#include "aten/random/state.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* PyTorch's name of a dtype in kernel-dispatch errors ('Long'). */
static const char *kernel_type_name(porta_dtype dtype) {
    static const char *const names[PORTA_DTYPE_COUNT] = {
        "Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float", "Double",
        "ComplexFloat", "ComplexDouble"};
    return names[dtype];
}

static porta_status *push_self(porta_tensor *self, aten_results *r) {
    porta_tensor_retain(self);
    return aten_push_tensor(r, self);
}

/* A new contiguous tensor shaped like `like`, of dtype, filled with
 * U[low, high) (the source of the discrete and derived draws). */
static porta_status *uniform_like(const porta_tensor *like, porta_dtype dtype, double low,
                                  double high, porta_tensor **out) {
    porta_tensor *u = NULL;
    PORTA_TRY(porta_tensor_empty(like->buffer->device, dtype, like->rank, like->sizes, &u));
    porta_status *status = aten_random_fill(u, false, low, high);
    if (status) {
        porta_tensor_release(u);
        return status;
    }
    *out = u;
    return NULL;
}

/* uniform_(self, from, to, generator) */
static porta_status *uniform_(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor;
    double from = aten_number(&args[1]), to = aten_number(&args[2]);
    PORTA_TRY(aten_check_float("check_uniform_bounds", self));
    if (from > to)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "uniform_ expects to return a [from, to) range, but found from=%g > "
                           "to=%g",
                           from, to);
    PORTA_TRY(aten_random_fill(self, false, from, to));
    return push_self(self, r);
}

/* normal_(self, mean, std, generator) */
static porta_status *normal_(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor;
    double std = aten_number(&args[2]);
    PORTA_TRY(aten_check_float("normal_kernel_cpu", self));
    if (!(std >= 0.0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "normal expects std >= 0.0, but found std %g",
                           std);
    PORTA_TRY(aten_random_fill(self, true, aten_number(&args[1]), std));
    return push_self(self, r);
}

/* exponential_(self, lambd, generator): -log(1 - u) / lambd. */
static porta_status *exponential_(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor;
    double lambd = aten_number(&args[1]);
    if (!porta_dtype_is_float(self->dtype))
        return porta_error(PORTA_ERR_DTYPE,
                           "Exponential distribution is a continuous probability distribution. "
                           "dtype must be a floating point but you specified %s",
                           kernel_type_name(self->dtype));
    if (!(lambd > 0.0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "exponential_ expects lambda > 0.0, but found lambda=%g", lambd);
    porta_dtype work = aten_compute_dtype(self->dtype); /* a float dtype here */
    porta_tensor *u = NULL, *scale = NULL, *log = NULL, *x = NULL;
    porta_status *status;
    /* U[-1, 0) so that log1p(u) = log(1 - |u|) never sees log(0). */
    CORE_TRY_GOTO(status, uniform_like(self, work, -1.0, 0.0, &u), done);
    CORE_TRY_GOTO(status, porta_unary(PORTA_LOG1P, u, &log), done);
    CORE_TRY_GOTO(status, porta_tensor_full(self->buffer->device, work, 0, NULL, -1.0 / lambd,
                                             &scale),
                   done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_MUL, log, scale, &x), done);
    CORE_TRY_GOTO(status, porta_copy(x, self), done);
    status = push_self(self, r);
done:
    porta_tensor_release(u);
    porta_tensor_release(scale);
    porta_tensor_release(log);
    porta_tensor_release(x);
    return status;
}

/* self = (u < p) for u ~ U[0, 1), p a tensor broadcast to self's shape. */
static porta_status *bernoulli_into(porta_tensor *self, const porta_tensor *p) {
    porta_tensor *expanded = NULL, *u = NULL, *mask = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, porta_expand(p, self->rank, self->sizes, &expanded), done);
    CORE_TRY_GOTO(status, uniform_like(self, PORTA_F64, 0.0, 1.0, &u), done);
    CORE_TRY_GOTO(status, porta_binary(PORTA_LT, u, expanded, &mask), done);
    status = porta_copy(mask, self);
done:
    porta_tensor_release(expanded);
    porta_tensor_release(u);
    porta_tensor_release(mask);
    return status;
}

static porta_status *bernoulli_number(porta_tensor *self, double p) {
    if (!(p >= 0.0 && p <= 1.0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "bernoulli_ expects p to be in [0, 1], but got p=%g", p);
    porta_tensor *tp = NULL;
    PORTA_TRY(porta_tensor_full(self->buffer->device, PORTA_F64, 0, NULL, p, &tp));
    porta_status *status = bernoulli_into(self, tp);
    porta_tensor_release(tp);
    return status;
}

/* bernoulli_.float(self, p, generator) */
static porta_status *bernoulli_float_(const porta_value *args, aten_results *r) {
    PORTA_TRY(bernoulli_number(args[0].tensor, aten_number(&args[1])));
    return push_self(args[0].tensor, r);
}

/* bernoulli_.Tensor(self, p, generator): p broadcasts to self. */
static porta_status *bernoulli_tensor_(const porta_value *args, aten_results *r) {
    if (args[1].kind != PORTA_VALUE_TENSOR) return bernoulli_float_(args, r);
    PORTA_TRY(bernoulli_into(args[0].tensor, args[1].tensor));
    return push_self(args[0].tensor, r);
}

/* bernoulli.p(self, p, generator): a new tensor like self. */
static porta_status *bernoulli_p(const porta_value *args, aten_results *r) {
    const porta_tensor *self = args[0].tensor;
    porta_tensor *out = NULL;
    PORTA_TRY(porta_tensor_empty(self->buffer->device, self->dtype, self->rank, self->sizes, &out));
    porta_status *status = bernoulli_number(out, aten_number(&args[1]));
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(r, out);
}

/* A new tensor of `sizes` filled with U[0, 1) (rand) or N(0, 1) (randn):
 * (size, dtype, layout, device, pin_memory). */
static porta_status *random_factory(const porta_value *args, bool normal, aten_results *r) {
    porta_tensor *out = NULL;
    PORTA_TRY(aten_new_tensor(&args[0], aten_dtype_or_default(&args[1]), &args[3], &out));
    porta_status *status = aten_check_float(normal ? "normal_kernel_cpu" : "check_uniform_bounds", out);
    if (!status) status = aten_random_fill(out, normal, 0.0, 1.0);
    if (status) {
        porta_tensor_release(out);
        return status;
    }
    return aten_push_tensor(r, out);
}

static porta_status *rand_uniform(const porta_value *args, aten_results *r) {
    return random_factory(args, false, r);
}

static porta_status *rand_normal(const porta_value *args, aten_results *r) {
    return random_factory(args, true, r);
}

/* ---- normal with tensor mean or std ---- */

/* mean + std * z, z ~ N(0, 1) of the broadcast shape of mean and std, in
 * `dtype` (that of the tensor operand: mean's when both are tensors). */
static porta_status *normal_of(const porta_value *mean, const porta_value *std, porta_dtype dtype,
                               aten_results *r) {
    if (!porta_dtype_is_float(dtype))
        return porta_error(PORTA_ERR_DTYPE, "\"normal_kernel_cpu\" not implemented for '%s'",
                           kernel_type_name(dtype));
    if (std->kind != PORTA_VALUE_TENSOR && !(aten_number(std) >= 0.0))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "normal expects std >= 0.0, but found std %g",
                           aten_number(std));
    const porta_value *operands[2] = {mean, std};
    porta_device *device = aten_device_of(operands, 2);
    porta_tensor *tm = NULL, *ts = NULL, *zero = NULL, *shape = NULL, *out = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, aten_operand(mean, device, dtype, &tm), done);
    CORE_TRY_GOTO(status, aten_operand(std, device, dtype, &ts), done);
    /* mean * 0 + std * 0 has the broadcast shape (and rejects shapes that do
     * not broadcast, naming them); it becomes the destination of z. */
    CORE_TRY_GOTO(status, porta_tensor_full(device, dtype, 0, NULL, 0.0, &zero), done);
    CORE_TRY_GOTO(status, porta_ternary(PORTA_FMA, tm, zero, ts, &shape), done);
    CORE_TRY_GOTO(status, porta_tensor_empty(device, dtype, shape->rank, shape->sizes, &out),
                   done);
    CORE_TRY_GOTO(status, aten_random_fill(out, true, 0.0, 1.0), done);
    CORE_TRY_GOTO(status, porta_ternary(PORTA_FMA, out, ts, tm, &out), done);
    status = aten_push_tensor(r, out);
    out = NULL;
done:
    porta_tensor_release(tm);
    porta_tensor_release(ts);
    porta_tensor_release(zero);
    porta_tensor_release(shape);
    porta_tensor_release(out);
    return status;
}

/* normal.Tensor_float(mean, std, generator) */
static porta_status *normal_tensor_float(const porta_value *args, aten_results *r) {
    porta_dtype dtype = args[0].kind == PORTA_VALUE_TENSOR ? args[0].tensor->dtype
                                                           : aten_default_dtype();
    return normal_of(&args[0], &args[1], dtype, r);
}

/* normal.float_Tensor(mean, std, generator) */
static porta_status *normal_float_tensor(const porta_value *args, aten_results *r) {
    porta_dtype dtype = args[1].kind == PORTA_VALUE_TENSOR ? args[1].tensor->dtype
                                                           : aten_default_dtype();
    return normal_of(&args[0], &args[1], dtype, r);
}

/* ---- random_: integers uniform in [from, to) ---- */

/* The C++ type name PyTorch's random_ bounds errors use. */
static const char *bounds_type_name(porta_dtype dtype) {
    static const char *const names[PORTA_DTYPE_COUNT] = {
        "bool", "unsigned char", "signed char", "short", "int", "long",
        "c10::Half", "c10::BFloat16", "float", "double",
        "c10::complex<float>", "c10::complex<double>"};
    return names[dtype];
}

/* Bounds of the values random_ may give a dtype: integers' own range; for
 * floats the integers the mantissa holds exactly, [0, 2^digits]. */
static void random_range(porta_dtype dtype, double *min, double *max) {
    static const double digits[PORTA_DTYPE_COUNT] = {
        [PORTA_F16] = 11, [PORTA_BF16] = 8, [PORTA_F32] = 24, [PORTA_F64] = 53};
    static const double int_max[PORTA_DTYPE_COUNT] = {
        [PORTA_BOOL] = 1, [PORTA_U8] = 255, [PORTA_I8] = 127, [PORTA_I16] = 32767,
        [PORTA_I32] = 2147483647.0, [PORTA_I64] = 9223372036854775807.0};
    if (porta_dtype_is_float(dtype)) {
        *max = ldexp(1.0, (int)digits[dtype]);
        *min = -*max;
    } else {
        *max = int_max[dtype];
        *min = dtype == PORTA_BOOL || dtype == PORTA_U8 ? 0 : -int_max[dtype] - 1;
    }
}

/* self = floor(U[from, to)), cast to self's dtype. */
static porta_status *random_between(porta_tensor *self, double from, double to) {
    porta_tensor *u = NULL, *k = NULL;
    porta_status *status;
    CORE_TRY_GOTO(status, uniform_like(self, PORTA_F64, from, to, &u), done);
    CORE_TRY_GOTO(status, porta_unary(PORTA_FLOOR, u, &k), done);
    status = porta_copy(k, self);
done:
    porta_tensor_release(u);
    porta_tensor_release(k);
    return status;
}

/* random_.from(self, from, to, generator): to None means up to the dtype's
 * largest value, inclusive. */
static porta_status *random_from(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor;
    double min, max, from = (double)args[1].i;
    random_range(self->dtype, &min, &max);
    double to = args[2].kind == PORTA_VALUE_INT ? (double)args[2].i : max + 1;
    if (from >= to)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "random_ expects 'from' to be less than 'to', but got from=%lld >= "
                           "to=%lld",
                           (long long)args[1].i, (long long)to);
    if (!porta_dtype_is_float(self->dtype)) {
        if (from < min || from > max)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "from is out of bounds for %s",
                               bounds_type_name(self->dtype));
        if (to - 1 < min || to - 1 > max)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "to - 1 is out of bounds for %s",
                               bounds_type_name(self->dtype));
    }
    PORTA_TRY(random_between(self, from, to));
    return push_self(self, r);
}

/* random_.to(self, to, generator): [0, to). */
static porta_status *random_to(const porta_value *args, aten_results *r) {
    porta_value from_to[4] = {args[0], {.kind = PORTA_VALUE_INT, .i = 0}, args[1], args[2]};
    return random_from(from_to, r);
}

/* random_(self, generator): [0, the dtype's largest value]. */
static porta_status *random_default(const porta_value *args, aten_results *r) {
    porta_tensor *self = args[0].tensor;
    double min, max;
    random_range(self->dtype, &min, &max);
    PORTA_TRY(random_between(self, 0, max + 1));
    return push_self(self, r);
}

/* ---- randperm: a Fisher-Yates shuffle on the host ---- */

/* The largest n randperm accepts for a float dtype: every index exact. */
static porta_status *check_perm_size(int64_t n, porta_dtype dtype) {
    static const int digits[PORTA_DTYPE_COUNT] = {
        [PORTA_F16] = 11, [PORTA_BF16] = 8, [PORTA_F32] = 24, [PORTA_F64] = 53};
    if (dtype == PORTA_BOOL)
        return porta_error(PORTA_ERR_DTYPE, "\"randperm\" not implemented for 'Bool'");
    if (porta_dtype_is_float(dtype)) {
        int64_t max = ((int64_t)1 << digits[dtype]) + 1;
        if (n > max)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "n cannot be greater than %lld for %s type.", (long long)max,
                               kernel_type_name(dtype));
        return NULL;
    }
    porta_value last = {.kind = PORTA_VALUE_INT, .i = n - 1};
    return n ? aten_check_fits(&last, dtype) : NULL;
}

/* A random permutation of 0..n-1, the same on every backend: step i of the
 * shuffle (swapping element n-1-i with one of the first n-i) draws a 64-bit
 * number from stream positions offset + 2i and offset + 2i + 1. */
static porta_status *make_randperm(int64_t n, porta_dtype dtype, porta_device *device,
                                   porta_tensor **out) {
    if (n < 0)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "Trying to create tensor with negative dimension %lld: [%lld]",
                           (long long)n, (long long)n);
    PORTA_TRY(check_perm_size(n, dtype));
    int64_t *perm;
    PORTA_TRY(core_host_alloc((size_t)(n ? n : 1) * sizeof *perm, "randperm", (void **)&perm));
    uint64_t seed, offset;
    porta_status *status = aten_generator_next(device, 2 * (uint64_t)n, &seed, &offset);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = 0; !status && i + 1 < n; i++) {
        uint64_t position = offset + 2 * (uint64_t)i; /* even, so both words share a block */
        core_philox_words words = core_philox_block(seed, position / 4);
        uint64_t r = (uint64_t)words.x[position % 4] << 32 | words.x[position % 4 + 1];
        int64_t last = n - 1 - i, pick = (int64_t)(r % (uint64_t)(last + 1));
        int64_t swap = perm[last];
        perm[last] = perm[pick];
        perm[pick] = swap;
    }
    porta_tensor *staged = NULL;
    if (!status) status = porta_tensor_from_host(device, PORTA_I64, 1, &n, perm, &staged);
    if (!status) status = porta_cast(staged, dtype, out);
    porta_tensor_release(staged);
    core_host_free(perm);
    return status;
}

/* randperm(n, dtype, layout, device, pin_memory) */
static porta_status *randperm(const porta_value *args, aten_results *r) {
    porta_device *device;
    PORTA_TRY(aten_factory_device(&args[3], &device));
    porta_tensor *out = NULL;
    porta_dtype dtype = args[1].kind == PORTA_VALUE_DTYPE ? args[1].dtype : PORTA_I64;
    PORTA_TRY(make_randperm(args[0].i, dtype, device, &out));
    return aten_push_tensor(r, out);
}

/* randperm.generator_out(n, generator, out) */
static porta_status *randperm_out(const porta_value *args, aten_results *r) {
    porta_tensor *out = args[2].tensor, *result = NULL;
    PORTA_TRY(make_randperm(args[0].i, out->dtype, out->buffer->device, &result));
    return aten_into_out(result, out, r);
}

const aten_op aten_random_ops[] = {
    {"uniform_", "Tffx", uniform_},
    {"normal_", "Tffx", normal_},
    {"exponential_", "Tfx", exponential_},
    {"bernoulli_.float", "Tfx", bernoulli_float_},
    {"bernoulli_.Tensor", "TTx", bernoulli_tensor_},
    {"bernoulli.p", "Tfx", bernoulli_p},
    {"random_", "Tx", random_default},
    {"random_.from", "Tijx", random_from},
    {"random_.to", "Tix", random_to},
    {"normal.Tensor_float", "Tfx", normal_tensor_float},
    {"normal.float_Tensor", "fTx", normal_float_tensor},
    {"normal.Tensor_Tensor", "TTx", normal_tensor_float},
    {"rand", "IdxDx", rand_uniform},
    {"randn", "IdxDx", rand_normal},
    {"randperm", "idxDx", randperm},
    {"randperm.generator_out", "ixT", randperm_out},
    {NULL, NULL, NULL},
};
