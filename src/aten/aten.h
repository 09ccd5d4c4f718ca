/* The aten layer's internals: how an op is declared, how its arguments are
 * checked and how it returns results. Each op family lives in its own
 * folder (amp/, elementwise/, index/, nn/, ...), each file of it exporting a
 * table; dispatch/op_table.c joins the tables. */
#ifndef PORTA_ATEN_ATEN_H
#define PORTA_ATEN_ATEN_H

#include "porta.h"

/* Results collected by an op (grown as needed). */
typedef struct aten_results {
    porta_value *items;
    int count, capacity;
} aten_results;

typedef porta_status *(*aten_fn)(const porta_value *args, aten_results *results);

/* The most arguments an op takes (PyTorch's widest schemas have ~20). */
#define ATEN_MAX_ARGS 32

/*
 * An op: its aten overload name, the kinds of its arguments in schema order,
 * and its function. The registry checks every argument against `args`
 * before calling, so functions can trust the kinds:
 *   T tensor (a number becomes a rank-0 tensor of its default dtype)
 *   t tensor or none (likewise)
 *   N tensor or number (numbers promote as Python scalars do)
 *   n tensor, number or none
 *   L list of tensors                          i int       j int or none
 *   O list of tensors or nones (Tensor?[]: a NONE entry is a NULL pointer)
 *   I list of ints                             J list of ints or none
 *   f float (int accepted)                     g float, int or none
 *   b bool                                     c bool or none
 *   s scalar: int, float or bool               S scalar or none
 *   d dtype or none                            D device index or none
 *   r string or none                           m memory format or none (an INT
 *                                                porta_memory_format)
 *   F list of floats or none
 *   x ignored (layout, pin_memory, non_blocking, ...)
 */
typedef struct aten_op {
    const char *name;
    const char *args;
    aten_fn fn;
} aten_op;

/* Each family's table (one per file under the family's folder), terminated
 * by an entry whose name is NULL. */
extern const aten_op aten_amp_grad_scaling_ops[];
extern const aten_op aten_complex_construct_ops[];
extern const aten_op aten_complex_views_ops[];
extern const aten_op aten_elementwise_activation_ops[];
extern const aten_op aten_elementwise_arithmetic_ops[];
extern const aten_op aten_elementwise_compare_ops[];
extern const aten_op aten_elementwise_heaviside_hypot_signbit_sinc_nextafter_ops[];
extern const aten_op aten_elementwise_logaddexp_xlogy_angle_frexp_ops[];
extern const aten_op aten_elementwise_pointwise_ops[];
extern const aten_op aten_elementwise_special_ops[];
extern const aten_op aten_elementwise_unary_ops[];
extern const aten_op aten_factory_ops[];
extern const aten_op aten_fft_ops[];
extern const aten_op aten_factory_range_ops[];
extern const aten_op aten_index_advanced_ops[];
extern const aten_op aten_index_copy_repeat_ops[];
extern const aten_op aten_index_embedding_ops[];
extern const aten_op aten_index_fill_ops[];
extern const aten_op aten_index_gather_scatter_ops[];
extern const aten_op aten_index_masked_ops[];
extern const aten_op aten_index_nonzero_static_ops[];
extern const aten_op aten_index_segment_reduce_ops[];
extern const aten_op aten_index_unique_ops[];
extern const aten_op aten_linalg_cholesky_triangular_ops[];
extern const aten_op aten_linalg_cross_ops[];
extern const aten_op aten_linalg_ldl_ops[];
extern const aten_op aten_linalg_lstsq_ops[];
extern const aten_op aten_linalg_lu_ops[];
extern const aten_op aten_linalg_matrix_exp_ops[];
extern const aten_op aten_linalg_products_ops[];
extern const aten_op aten_linalg_qr_ops[];
extern const aten_op aten_linalg_spectral_ops[];
extern const aten_op aten_linalg_trace_ops[];
extern const aten_op aten_linalg_vdot_addbmm_ops[];
extern const aten_op aten_nn_batch_norm_update_ops[];
extern const aten_op aten_nn_conv_ops[];
extern const aten_op aten_nn_distance_ops[];
extern const aten_op aten_nn_dropout_ops[];
extern const aten_op aten_nn_glu_shrink_ops[];
extern const aten_op aten_nn_loss_huber_smooth_l1_ops[];
extern const aten_op aten_nn_loss_ops[];
extern const aten_op aten_nn_loss_ctc_ops[];
extern const aten_op aten_nn_loss_multi_margin_ops[];
extern const aten_op aten_nn_loss_multilabel_margin_ops[];
extern const aten_op aten_nn_norm_ops[];
extern const aten_op aten_nn_pad_ops[];
extern const aten_op aten_nn_pool_adaptive_ops[];
extern const aten_op aten_nn_pool_fractional_ops[];
extern const aten_op aten_nn_prelu_rrelu_shuffle_ops[];
extern const aten_op aten_nn_pool_max_ops[];
extern const aten_op aten_nn_pool_ops[];
extern const aten_op aten_nn_renorm_ops[];
extern const aten_op aten_nn_rnn_ops[];
extern const aten_op aten_nn_sample_ops[];
extern const aten_op aten_nn_upsample_linear_ops[];
extern const aten_op aten_nn_upsample_nearest_ops[];
extern const aten_op aten_nn_upsample_ops[];
extern const aten_op aten_nn_upsample_exact_cubic_aa_ops[];
extern const aten_op aten_optim_fused_ops[];
extern const aten_op aten_random_ops[];
extern const aten_op aten_random_distributions_ops[];
extern const aten_op aten_reduce_ops[];
extern const aten_op aten_reduce_cumulative_extremes_ops[];
extern const aten_op aten_reduce_extremes_nansum_count_equal_ops[];
extern const aten_op aten_reduce_logcumsumexp_ops[];
extern const aten_op aten_reduce_moments_ops[];
extern const aten_op aten_reduce_norm_ops[];
extern const aten_op aten_reduce_scan_ops[];
extern const aten_op aten_reduce_softmax_ops[];
extern const aten_op aten_shape_ops[];
extern const aten_op aten_shape_backward_ops[];
extern const aten_op aten_shape_cat_ops[];
extern const aten_op aten_shape_copy_ops[];
extern const aten_op aten_shape_layout_ops[];
extern const aten_op aten_shape_reorder_ops[];
extern const aten_op aten_shape_triangle_ops[];
extern const aten_op aten_sort_ops[];
extern const aten_op aten_sort_isin_histc_mode_ops[];
extern const aten_op aten_sort_histogram_ops[];
extern const aten_op aten_sort_searchsorted_ops[];
extern const aten_op aten_export_tensor_metadata_ops[];

/* Appending results; a TENSOR result's reference passes to the results. */
porta_status *aten_push_tensor(aten_results *results, porta_tensor *tensor);
porta_status *aten_push_int(aten_results *results, int64_t value);
porta_status *aten_push_float(aten_results *results, double value);
porta_status *aten_push_bool(aten_results *results, bool value);
/* A None result: an optional output the op was asked not to compute. */
porta_status *aten_push_none(aten_results *results);

/* ---- argument helpers shared by the families ---- */

static inline bool aten_is_number(const porta_value *v) {
    return v->kind == PORTA_VALUE_INT || v->kind == PORTA_VALUE_FLOAT ||
           v->kind == PORTA_VALUE_BOOL;
}
/* A number's value as a double (ints and bools included). */
double aten_number(const porta_value *v);
/* The dtype PyTorch gives a number standing alone: int64, float32 (the
 * default dtype), bool. */
porta_dtype aten_number_dtype(const porta_value *v);
/* torch.result_type over operands that are tensors or numbers (NONE
 * values are skipped). */
porta_dtype aten_result_type(const porta_value *const *operands, int count);
/* A new reference to the operand as a tensor: the tensor itself, or for a
 * number a rank-0 tensor of `dtype` on `device`. */
porta_status *aten_operand(const porta_value *v, porta_device *device, porta_dtype dtype,
                           porta_tensor **out);
/* The tensor argument v, or NULL for None (an optional Tensor?). */
static inline const porta_tensor *aten_optional_tensor(const porta_value *v) {
    return v->kind == PORTA_VALUE_TENSOR ? v->tensor : NULL;
}
/* t as a TENSOR argument, for calling another op (scope_call). */
static inline porta_value aten_tensor_value(const porta_tensor *t) {
    return (porta_value){.kind = PORTA_VALUE_TENSOR, .tensor = (porta_tensor *)t};
}
/* PyTorch's error for a kernel without integer and bool variants:
 * "<kernel>" not implemented for '<dtype>'; NULL for a float x. */
porta_status *aten_check_float(const char *kernel, const porta_tensor *x);
/* The dtype an op computes in: float32 for float16 and bfloat16 (PyTorch's
 * "opmath": their sums and formulas lose too much, so results are rounded
 * once at the end), the dtype itself otherwise. */
porta_dtype aten_compute_dtype(porta_dtype dtype);
/* The device of the first tensor among the operands (porta:0 if none). */
porta_device *aten_device_of(const porta_value *const *operands, int count);
/* The device a 'D' argument names. */
porta_status *aten_device_arg(const porta_value *v, porta_device **out);

#endif
