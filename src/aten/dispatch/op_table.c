/* The aten op table: joins the families' tables into one list sorted by
 * name, checks each call's arguments against the op's declared kinds, and
 * collects results. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "aten/aten.h"
#include "aten/complex/complex.h"
#include "aten/dispatch/pointwise_layout.h"
#include "core/status.h"

static const aten_op *const family_tables[] = {
    aten_amp_grad_scaling_ops,
    aten_complex_construct_ops, aten_complex_views_ops,
    aten_elementwise_activation_ops, aten_elementwise_arithmetic_ops,
    aten_elementwise_compare_ops, aten_elementwise_heaviside_hypot_signbit_sinc_nextafter_ops,
    aten_elementwise_logaddexp_xlogy_angle_frexp_ops, aten_elementwise_pointwise_ops,
    aten_elementwise_special_ops, aten_elementwise_unary_ops,
    aten_factory_ops, aten_factory_range_ops, aten_fft_ops,
    aten_index_advanced_ops, aten_index_copy_repeat_ops, aten_index_embedding_ops,
    aten_index_fill_ops, aten_index_gather_scatter_ops, aten_index_masked_ops,
    aten_index_unique_ops, aten_index_nonzero_static_ops,
    aten_index_segment_reduce_ops,
    aten_linalg_cholesky_triangular_ops, aten_linalg_cross_ops, aten_linalg_ldl_ops,
    aten_linalg_lstsq_ops, aten_linalg_lu_ops, aten_linalg_matrix_exp_ops,
    aten_linalg_products_ops, aten_linalg_qr_ops, aten_linalg_spectral_ops,
    aten_linalg_trace_ops, aten_linalg_vdot_addbmm_ops,
    aten_nn_conv_ops, aten_nn_distance_ops, aten_nn_dropout_ops, aten_nn_glu_shrink_ops,
    aten_nn_loss_huber_smooth_l1_ops, aten_nn_loss_ops, aten_nn_loss_multi_margin_ops,
    aten_nn_norm_ops, aten_nn_pad_ops,
    aten_nn_pool_adaptive_ops, aten_nn_pool_max_ops, aten_nn_pool_ops, aten_nn_rnn_ops,
    aten_nn_sample_ops, aten_nn_upsample_linear_ops, aten_nn_upsample_nearest_ops,
    aten_nn_upsample_ops, aten_nn_upsample_exact_cubic_aa_ops, aten_nn_prelu_rrelu_shuffle_ops,
    aten_nn_renorm_ops, aten_nn_loss_multilabel_margin_ops, aten_nn_batch_norm_update_ops,
    aten_nn_pool_fractional_ops, aten_nn_loss_ctc_ops,
    aten_optim_fused_ops,
    aten_random_ops, aten_random_distributions_ops,
    aten_reduce_ops, aten_reduce_cumulative_extremes_ops,
    aten_reduce_extremes_nansum_count_equal_ops, aten_reduce_logcumsumexp_ops,
    aten_reduce_moments_ops, aten_reduce_norm_ops, aten_reduce_scan_ops, aten_reduce_softmax_ops,
    aten_shape_ops, aten_shape_backward_ops, aten_shape_cat_ops, aten_shape_copy_ops,
    aten_shape_layout_ops, aten_shape_reorder_ops, aten_shape_triangle_ops,
    aten_sort_ops, aten_sort_isin_histc_mode_ops, aten_sort_searchsorted_ops,
    aten_sort_histogram_ops,
    aten_export_tensor_metadata_ops,
};

/* The tables of pointwise ops, whose results follow a channels-last
 * operand's layout (pointwise_layout.h). */
static const aten_op *const pointwise_tables[] = {
    aten_elementwise_activation_ops, aten_elementwise_arithmetic_ops,
    aten_elementwise_compare_ops, aten_elementwise_heaviside_hypot_signbit_sinc_nextafter_ops,
    aten_elementwise_logaddexp_xlogy_angle_frexp_ops, aten_elementwise_pointwise_ops,
    aten_elementwise_special_ops, aten_elementwise_unary_ops,
};

static const aten_op **ops; /* sorted by name */
static bool *pointwise;     /* by op id */
static int op_count;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;
/* Set (release) once the index is built, so calls after the first skip
 * pthread_once's function call. */
static atomic_bool ops_built;

static int compare_ops(const void *a, const void *b) {
    return strcmp((*(const aten_op *const *)a)->name, (*(const aten_op *const *)b)->name);
}

/* The id of `name` among the sorted ops, or -1. */
static int find_sorted(const char *name) {
    int low = 0, high = op_count - 1;
    while (name && low <= high) {
        int mid = (low + high) / 2, cmp = strcmp(name, ops[mid]->name);
        if (!cmp) return mid;
        if (cmp < 0) high = mid - 1;
        else low = mid + 1;
    }
    return -1;
}

static void build_index(void) {
    int total = 0;
    for (size_t f = 0; f < sizeof family_tables / sizeof family_tables[0]; f++)
        for (const aten_op *op = family_tables[f]; op->name; op++) total++;
    ops = malloc((size_t)(total ? total : 1) * sizeof *ops);
    if (!ops) return; /* no memory: the layer shows no ops */
    for (size_t f = 0; f < sizeof family_tables / sizeof family_tables[0]; f++)
        for (const aten_op *op = family_tables[f]; op->name; op++) ops[op_count++] = op;
    qsort(ops, (size_t)op_count, sizeof *ops, compare_ops);
    pointwise = calloc((size_t)(op_count ? op_count : 1), sizeof *pointwise);
    if (!pointwise) {
        op_count = 0;
        return;
    }
    for (size_t f = 0; f < sizeof pointwise_tables / sizeof pointwise_tables[0]; f++)
        for (const aten_op *op = pointwise_tables[f]; op->name; op++) {
            int id = find_sorted(op->name);
            if (id >= 0) pointwise[id] = true;
        }
    atomic_store_explicit(&ops_built, true, memory_order_release);
}

int porta_aten_op_count(void) {
    if (!atomic_load_explicit(&ops_built, memory_order_acquire))
        pthread_once(&ops_once, build_index);
    return op_count;
}

const char *porta_aten_op_name(int id) {
    return id >= 0 && id < porta_aten_op_count() ? ops[id]->name : NULL;
}

const char *porta_aten_op_args(int id) {
    return id >= 0 && id < porta_aten_op_count() ? ops[id]->args : NULL;
}

bool porta_aten_op_takes_complex(int id) {
    return id >= 0 && id < porta_aten_op_count() && aten_complex_takes(ops[id]);
}

int porta_aten_op_find(const char *name) {
    porta_aten_op_count();
    return find_sorted(name);
}

static const char *kind_name(porta_value_kind kind) {
    static const char *const names[] = {"None", "Tensor", "Tensor[]", "int", "float",
                                        "bool", "int[]",  "dtype",    "str",  "float[]"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "invalid value";
}

static bool accepts(char code, porta_value_kind kind) {
    bool none = kind == PORTA_VALUE_NONE;
    bool number = kind == PORTA_VALUE_INT || kind == PORTA_VALUE_FLOAT || kind == PORTA_VALUE_BOOL;
    switch (code) {
    case 'T': return kind == PORTA_VALUE_TENSOR || number;
    case 't': return kind == PORTA_VALUE_TENSOR || number || none;
    case 'N': return kind == PORTA_VALUE_TENSOR || number;
    case 'n': return kind == PORTA_VALUE_TENSOR || number || none;
    case 'L': return kind == PORTA_VALUE_TENSORS;
    case 'O': return kind == PORTA_VALUE_TENSORS;
    case 'i': return kind == PORTA_VALUE_INT;
    case 'j': return kind == PORTA_VALUE_INT || none;
    case 'I': return kind == PORTA_VALUE_INTS;
    case 'J': return kind == PORTA_VALUE_INTS || none;
    case 'f': return kind == PORTA_VALUE_FLOAT || kind == PORTA_VALUE_INT;
    case 'g': return kind == PORTA_VALUE_FLOAT || kind == PORTA_VALUE_INT || none;
    case 'b': return kind == PORTA_VALUE_BOOL;
    case 'c': return kind == PORTA_VALUE_BOOL || none;
    case 's': return number;
    case 'S': return number || none;
    case 'd': return kind == PORTA_VALUE_DTYPE || none;
    case 'D': return kind == PORTA_VALUE_INT || none;
    case 'r': return kind == PORTA_VALUE_STRING || none;
    case 'F': return kind == PORTA_VALUE_FLOATS || none;
    case 'm': return kind == PORTA_VALUE_INT || none;
    case 'x': return true;
    }
    return false;
}

static porta_status *check_args(const aten_op *op, const porta_value *args, int arg_count) {
    int expected = (int)strlen(op->args);
    if (arg_count != expected)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "aten::%s: expected %d arguments, got %d",
                           op->name, expected, arg_count);
    for (int i = 0; i < arg_count; i++) {
        if (!accepts(op->args[i], args[i].kind))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "aten::%s: argument %d has kind %s, which the op does not take there",
                               op->name, i, kind_name(args[i].kind));
        if (op->args[i] == 'm' && args[i].kind == PORTA_VALUE_INT &&
            (args[i].i < PORTA_MEMORY_CONTIGUOUS || args[i].i > PORTA_MEMORY_CHANNELS_LAST_3D))
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "aten::%s: argument %d is memory format %lld, expected 0..%d",
                               op->name, i, (long long)args[i].i, PORTA_MEMORY_CHANNELS_LAST_3D);
        if (args[i].kind == PORTA_VALUE_TENSOR && !args[i].tensor)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT, "aten::%s: argument %d is a NULL tensor",
                               op->name, i);
        if (args[i].kind == PORTA_VALUE_TENSORS && op->args[i] != 'O')
            for (int k = 0; k < args[i].tensors.count; k++)
                if (!args[i].tensors.items[k])
                    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                       "aten::%s: tensor %d of argument %d is NULL", op->name, k, i);
    }
    return NULL;
}

void porta_aten_results_free(porta_value *results, int count) {
    if (!results) return;
    for (int i = 0; i < count; i++)
        if (results[i].kind == PORTA_VALUE_TENSOR) porta_tensor_release(results[i].tensor);
    free(results);
}

/* Whether a number stands in a 'T'/'t' slot, so the call needs tensors
 * made for it (most calls pass tensors only and skip that). */
static bool has_number_for_tensor(const aten_op *op, const porta_value *args, int arg_count) {
    for (int i = 0; i < arg_count; i++)
        if ((op->args[i] == 'T' || op->args[i] == 't') && aten_is_number(&args[i])) return true;
    return false;
}

/* Numbers in 'T'/'t' slots (CPU zero-dim tensors reach the binding as
 * numbers) become rank-0 tensors of the number's default dtype on the
 * call's device, so ops there can rely on getting tensors. made[] is all
 * NULL or a tensor on return, even on error. */
static porta_status *tensors_for_numbers(const aten_op *op, const porta_value *args,
                                         int arg_count, porta_value *local,
                                         porta_tensor **made) {
    porta_device *device = NULL;
    for (int i = 0; i < arg_count; i++) {
        local[i] = args[i];
        made[i] = NULL;
        if (args[i].kind == PORTA_VALUE_TENSOR && !device)
            device = porta_tensor_device(args[i].tensor);
        if (args[i].kind == PORTA_VALUE_TENSORS)
            for (int k = 0; k < args[i].tensors.count && !device; k++)
                if (args[i].tensors.items[k])
                    device = porta_tensor_device(args[i].tensors.items[k]);
    }
    if (!device) PORTA_TRY(porta_device_get(0, &device));
    for (int i = 0; i < arg_count; i++) {
        if ((op->args[i] != 'T' && op->args[i] != 't') || !aten_is_number(&args[i])) continue;
        PORTA_TRY(porta_tensor_full(device, aten_number_dtype(&args[i]), 0, NULL,
                                    aten_number(&args[i]), &made[i]));
        local[i] = (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = made[i]};
    }
    return NULL;
}

/* Runs op `id` on args, pointwise ops through their layout rule. */
static porta_status *run(int id, const porta_value *args, int arg_count, aten_results *collected) {
    const aten_op *op = ops[id];
    if (aten_complex_involved(args, arg_count))
        return aten_complex_run(op, args, arg_count, collected);
    return pointwise[id] ? aten_call_pointwise(op->fn, op->name, args, arg_count, collected)
                         : op->fn(args, collected);
}

/* Runs op `id` on args, with tensors made for numbers in tensor slots. */
static porta_status *call_with_tensors(int id, const porta_value *args, int arg_count,
                                       aten_results *collected) {
    const aten_op *op = ops[id];
    porta_value local[ATEN_MAX_ARGS];
    porta_tensor *made[ATEN_MAX_ARGS];
    porta_status *status = tensors_for_numbers(op, args, arg_count, local, made);
    if (!status) status = run(id, local, arg_count, collected);
    for (int i = 0; i < arg_count; i++) porta_tensor_release(made[i]);
    return status;
}

porta_status *porta_aten_call(int id, const porta_value *args, int arg_count,
                              porta_value **results, int *result_count) {
    if (id < 0 || id >= porta_aten_op_count())
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "aten: op id %d is not one of the %d ops",
                           id, porta_aten_op_count());
    if (!results || !result_count || (arg_count > 0 && !args))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "aten::%s: NULL argument", ops[id]->name);
    const aten_op *op = ops[id];
    PORTA_TRY(check_args(op, args, arg_count));
    if (arg_count > ATEN_MAX_ARGS)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "aten::%s: more than %d arguments",
                           op->name, ATEN_MAX_ARGS);
    aten_results collected = {0};
    porta_status *status = has_number_for_tensor(op, args, arg_count)
                               ? call_with_tensors(id, args, arg_count, &collected)
                               : run(id, args, arg_count, &collected);
    if (status) {
        porta_aten_results_free(collected.items, collected.count);
        return status;
    }
    *results = collected.items;
    *result_count = collected.count;
    return NULL;
}

static porta_status *push(aten_results *results, porta_value value) {
    if (results->count == results->capacity) {
        int capacity = results->capacity ? results->capacity * 2 : 4;
        porta_value *grown = realloc(results->items, (size_t)capacity * sizeof *grown);
        if (!grown) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "aten: no memory for results");
        results->items = grown;
        results->capacity = capacity;
    }
    results->items[results->count++] = value;
    return NULL;
}

porta_status *aten_push_tensor(aten_results *results, porta_tensor *tensor) {
    porta_status *status = push(results, (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = tensor});
    if (status) porta_tensor_release(tensor);
    return status;
}

porta_status *aten_push_int(aten_results *results, int64_t value) {
    return push(results, (porta_value){.kind = PORTA_VALUE_INT, .i = value});
}

porta_status *aten_push_float(aten_results *results, double value) {
    return push(results, (porta_value){.kind = PORTA_VALUE_FLOAT, .f = value});
}

porta_status *aten_push_bool(aten_results *results, bool value) {
    return push(results, (porta_value){.kind = PORTA_VALUE_BOOL, .b = value});
}

porta_status *aten_push_none(aten_results *results) {
    return push(results, (porta_value){.kind = PORTA_VALUE_NONE});
}
