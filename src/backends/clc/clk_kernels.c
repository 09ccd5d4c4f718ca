/* The kernel library as a whole: its primitives by kind, its programs. */
#include "backends/clc/clk_kernels.h"

#include "backends/clc/clk_kir.h"
#include "codegen/codegen_cl.h"
#include "core/status.h"

porta_status *clk_execute(const clk_launcher *launcher, porta_device *device,
                          const ir_prim *prim, const porta_tensor *const *inputs,
                          int input_count, porta_tensor *out) {
    clk_exec *exec;
    switch (prim->kind) {
    case PRIM_UNARY:
    case PRIM_BINARY:
    case PRIM_TERNARY:
    case PRIM_CAST:
    case PRIM_FILL:
    case PRIM_REDUCE: {
        bool done;
        PORTA_TRY(clk_kir_single(launcher, device, prim, inputs, input_count, out, &done));
        if (done) return NULL;
        exec = clk_exec_special;
        break;
    }
    case PRIM_PAD: exec = clk_exec_pad; break;
    case PRIM_GATHER:
    case PRIM_SCATTER:
    case PRIM_INDEX_SELECT: exec = clk_exec_index; break;
    case PRIM_MATMUL: exec = clk_exec_matmul; break;
    case PRIM_CONV: exec = clk_exec_conv; break;
    case PRIM_CONV_WEIGHT_GRAD: exec = clk_exec_conv_weight_grad; break;
    case PRIM_CONV_INPUT_GRAD: exec = clk_exec_conv_input_grad; break;
    case PRIM_RANDOM: exec = clk_exec_random; break;
    case PRIM_SORT: exec = clk_exec_sort; break;
    case PRIM_POOL_MAX: exec = clk_exec_pool; break;
    case PRIM_FACTOR: exec = clk_exec_factor; break;
    case PRIM_FFT: exec = clk_exec_fft; break;
    default:
        return porta_error(PORTA_ERR_INTERNAL, "%s: primitive %s is not executable",
                           device->info.backend, ir_prim_kind_name(prim->kind));
    }
    return exec(launcher, device, prim, inputs, input_count, out);
}

bool clk_has_kernel(const ir_prim *prim) {
    /* softmax rows are composed from reductions where a backend lacks them */
    if (prim->kind == PRIM_SOFTMAX) return false;
    /* the special functions the OpenCL renderer spells (codegen_cl_special.c) */
    if (prim->kind == PRIM_UNARY)
        return prim->op < PORTA_DIGAMMA || kir_cl_special_function(true, prim->op);
    if (prim->kind == PRIM_BINARY)
        return prim->op < PORTA_IGAMMA || kir_cl_special_function(false, prim->op);
    return true;
}

void clk_each_program(clk_program_visit visit, void *ctx) {
    clk_conv_programs(visit, ctx);
    clk_conv_weight_grad_programs(visit, ctx);
    clk_conv_input_grad_programs(visit, ctx);
    clk_factor_programs(visit, ctx);
    clk_fft_programs(visit, ctx);
    clk_index_programs(visit, ctx);
    clk_matmul_programs(visit, ctx);
    clk_pad_programs(visit, ctx);
    clk_pool_programs(visit, ctx);
    clk_random_programs(visit, ctx);
    clk_sort_programs(visit, ctx);
    clk_special_programs(visit, ctx);
}
