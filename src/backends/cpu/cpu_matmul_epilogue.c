/* A float32 matmul fused with the elementwise kernel that consumes its
 * product: cpu_sgemm hands each block of out to the kernel's tile entry as
 * soon as the block's last depth step is accumulated, so the product is
 * read back from cache instead of from memory. The tile entry reads out's
 * block as one of its loads, so a kernel that rewrites out in place (bias,
 * activation) works as well as one that stores elsewhere. */
#include "backends/cpu/cpu_matmul_epilogue.h"

#include "backends/cpu/cpu_jit.h"
#include "backends/cpu/gemm/gemm.h"
#include "core/status.h"

typedef struct tile_epilogue {
    cpu_kernel_tile tile;
    const kir_args *args;
    const kir_runtime *runtime;
} tile_epilogue;

static void run_tile(void *ctx, int64_t row0, int64_t rows, int64_t col0, int64_t cols) {
    const tile_epilogue *e = ctx;
    e->tile(e->args, e->runtime, row0, rows, col0, cols);
}

static bool is_matrix_f32(const porta_tensor *t) { return t->rank == 2 && t->dtype == PORTA_F32; }

porta_status *cpu_run_matmul_epilogue(porta_device *device, const ir_prim *prim,
                                      const porta_tensor *const *inputs, int input_count,
                                      porta_tensor *out, void *program, const kir_args *args) {
    if (prim->kind != PRIM_MATMUL || input_count != 2)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "cpu matmul epilogue: expected a MATMUL of 2 inputs, got kind %d "
                           "with %d inputs",
                           (int)prim->kind, input_count);
    const porta_tensor *a = inputs[0], *b = inputs[1];
    if (!is_matrix_f32(a) || !is_matrix_f32(b) || !is_matrix_f32(out))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "cpu matmul epilogue: expected rank-2 float32 operands, got "
                           "a %s rank %d, b %s rank %d, out %s rank %d",
                           porta_dtype_name(a->dtype), a->rank, porta_dtype_name(b->dtype),
                           b->rank, porta_dtype_name(out->dtype), out->rank);
    const cpu_program *compiled = program;
    if (!compiled || !compiled->tile)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "cpu matmul epilogue: expected a kernel with a tile entry, got one "
                           "without");
    int64_t m = out->sizes[0], n = out->sizes[1], k = a->sizes[1];
    if (a->sizes[0] != m || b->sizes[0] != k || b->sizes[1] != n)
        return porta_error(PORTA_ERR_INTERNAL,
                           "cpu matmul epilogue: expected a [%lld, K] @ [K, %lld], got "
                           "[%lld, %lld] @ [%lld, %lld]",
                           (long long)m, (long long)n, (long long)a->sizes[0],
                           (long long)a->sizes[1], (long long)b->sizes[0],
                           (long long)b->sizes[1]);
    tile_epilogue ctx = {compiled->tile, args, cpu_kir_runtime()};
    cpu_gemm_epilogue epilogue = {run_tile, &ctx};
    /* k == 0 writes zeros (an empty sum) and still runs the epilogue. */
    return cpu_sgemm_with_epilogue(m, n, k, (const float *)core_tensor_data(a), a->strides[0],
                                   a->strides[1], (const float *)core_tensor_data(b),
                                   b->strides[0], b->strides[1], 0.0f,
                                   (float *)core_tensor_data(out), out->strides[0],
                                   out->strides[1], &epilogue);
}
