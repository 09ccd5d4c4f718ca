/* Which ops take complex operands, and how (complex.h). */
#include <string.h>

#include "aten/complex/complex.h"
#include "aten/fft/fft.h"
#include "core/status.h"

/* An op that serves complex calls: `fn` is its complex implementation, or
 * NULL where the op's own function serves them unchanged because it only
 * makes views, allocates, copies or fills (the primitives that handle
 * complex tensors themselves). */
typedef struct complex_entry {
    const char *name;
    aten_fn fn;
} complex_entry;

static const complex_entry entries[] = {
    /* views and shapes: layout arithmetic on the complex elements */
    {"alias", NULL},
    {"as_strided", NULL},
    {"diagonal", NULL},
    {"expand", NULL},
    {"flip", NULL},
    {"permute", NULL},
    {"select.int", NULL},
    {"slice.Tensor", NULL},
    {"squeeze", NULL},
    {"squeeze.dim", NULL},
    {"squeeze.dims", NULL},
    {"t", NULL},
    {"split_with_sizes", NULL},
    {"transpose.int", NULL},
    {"unfold", NULL},
    {"unsqueeze", NULL},
    {"view", NULL},
    {"view_as_complex", NULL},
    /* complex only: complex/construct.c */
    {"complex.out", NULL},
    {"conj_physical.out", NULL},
    {"polar.out", NULL},
    {"view_as_real", NULL},
    {"_reshape_alias", NULL},
    {"_unsafe_view", NULL},
    /* allocation, copies, casts, fills */
    {"as_strided_scatter", NULL},
    {"cat", NULL},
    {"cat.out", NULL},
    {"clone", NULL},
    {"copy", NULL},
    {"diagonal_scatter", NULL},
    {"empty.memory_format", NULL},
    {"empty_like", NULL},
    {"empty_strided", NULL},
    {"fill.Scalar", NULL},
    {"fill_.Scalar", NULL},
    {"fill_.Tensor", NULL},
    {"full", NULL},
    {"full_like", NULL},
    {"repeat", NULL},
    {"roll", NULL},
    {"scalar_tensor", NULL},
    {"select_scatter", NULL},
    {"slice_scatter", NULL},
    {"zero_", NULL},
    {"_efficientzerotensor", NULL},
    {"_to_copy", NULL},
    /* Fourier transforms (aten/fft): their pairs through view_as_real */
    {"_fft_c2c", NULL},
    {"_fft_c2r", NULL},
    /* torch.fft's zero-padding */
    {"constant_pad_nd", aten_fft_complex_constant_pad_nd},
};
enum { ENTRY_COUNT = sizeof entries / sizeof entries[0] };

static bool is_complex_tensor(const porta_tensor *t) {
    return t && porta_dtype_is_complex(porta_tensor_dtype(t));
}

bool aten_complex_involved(const porta_value *args, int arg_count) {
    for (int i = 0; i < arg_count; i++) {
        const porta_value *v = &args[i];
        if (v->kind == PORTA_VALUE_TENSOR && is_complex_tensor(v->tensor)) return true;
        if (v->kind == PORTA_VALUE_DTYPE && porta_dtype_is_complex(v->dtype)) return true;
        if (v->kind == PORTA_VALUE_TENSORS)
            for (int k = 0; k < v->tensors.count; k++)
                if (is_complex_tensor(v->tensors.items[k])) return true;
    }
    return false;
}

/* The complex dtype the call involves, for the error. */
static porta_dtype complex_dtype_of(const porta_value *args, int arg_count) {
    for (int i = 0; i < arg_count; i++) {
        const porta_value *v = &args[i];
        if (v->kind == PORTA_VALUE_TENSOR && is_complex_tensor(v->tensor))
            return porta_tensor_dtype(v->tensor);
        if (v->kind == PORTA_VALUE_DTYPE && porta_dtype_is_complex(v->dtype)) return v->dtype;
        if (v->kind == PORTA_VALUE_TENSORS)
            for (int k = 0; k < v->tensors.count; k++)
                if (is_complex_tensor(v->tensors.items[k]))
                    return porta_tensor_dtype(v->tensors.items[k]);
    }
    return PORTA_C64;
}

/* The ops with a complex implementation of their own. */
static const aten_op *const complex_tables[] = {aten_complex_arith_ops,
                                                aten_complex_elementary_ops,
                                                aten_complex_reduce_matmul_ops};

/* The function that runs `op` on complex operands, or NULL. */
static aten_fn complex_fn(const aten_op *op) {
    for (size_t t = 0; t < sizeof complex_tables / sizeof complex_tables[0]; t++)
        for (const aten_op *own = complex_tables[t]; own->name; own++)
            if (!strcmp(own->name, op->name)) return own->fn;
    for (int i = 0; i < ENTRY_COUNT; i++)
        if (!strcmp(entries[i].name, op->name)) return entries[i].fn ? entries[i].fn : op->fn;
    return NULL;
}

bool aten_complex_takes(const aten_op *op) { return complex_fn(op) != NULL; }

porta_status *aten_complex_run(const aten_op *op, const porta_value *args, int arg_count,
                               aten_results *results) {
    aten_fn fn = complex_fn(op);
    if (fn) return fn(args, results);
    return porta_error(PORTA_ERR_DTYPE, "aten::%s: not implemented for %s on porta", op->name,
                       porta_dtype_name(complex_dtype_of(args, arg_count)));
}
