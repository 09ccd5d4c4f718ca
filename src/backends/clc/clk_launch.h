/* How the kernel library launches its kernels without knowing the backend
 * that runs them. The kernels are OpenCL C; the OpenCL backend builds them
 * as they are and the CUDA backend compiles the same text behind its
 * dialect prelude. Each kernel's host code describes a launch once: the
 * program source and entry, the arguments in order (device buffers,
 * tensors as buffer plus element offset, values), and the work sizes. The
 * backend that calls into the library passes its clk_launcher, which gets
 * kernels from the backend's program cache and runs them. */
#ifndef PORTA_BACKENDS_CLC_CLK_LAUNCH_H
#define PORTA_BACKENDS_CLC_CLK_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/clc/clk_buffers.h"
#include "runtime/tensor.h"
#include "runtime/device.h"

typedef struct clk_arg {
    bool buffer; /* a device buffer (handle), else `size` bytes of value */
    size_t size;
    clk_mem handle;
    unsigned char value[8];
} clk_arg;

struct kir_kernel;

/* What a backend gives the library: each function is thread-safe. */
typedef struct clk_launcher {
    /* Entry `name` of `source` (the backend's prelude first), from the
     * device's program cache; valid for the process. */
    porta_status *(*kernel_get)(porta_device *device, const char *source, const char *name,
                                void **kernel);
    /* Runs the kernel. local NULL: over global[0] items in one dimension,
     * in groups of the backend's choosing (kernels check their index
     * against a count); else over global[0] x global[1] items in groups of
     * local[0] x local[1] (global a multiple of local). */
    porta_status *(*launch)(porta_device *device, void *kernel, const clk_arg *args, int count,
                            const size_t global[2], const size_t local[2]);
    size_t (*max_group)(porta_device *device); /* work items per group, at most */
    /* Refuses a kernel-IR kernel the device cannot run, before it is
     * rendered (clk_kir.h); NULL: the device runs them all. */
    porta_status *(*kir_check)(porta_device *device, const struct kir_kernel *kernel);
} clk_launcher;

/* One launch's arguments, in the kernel's order. */
#define CLK_MAX_ARGS 16
typedef struct clk_args {
    const clk_launcher *launcher;
    porta_device *device;
    void *kernel;
    int count; /* past CLK_MAX_ARGS: reported by the launch */
    clk_arg args[CLK_MAX_ARGS];
} clk_args;

/* Begins a launch of entry `name` of `source` on `device`: gets the kernel
 * and leaves `args` empty for the arguments. */
porta_status *clk_begin(const clk_launcher *launcher, porta_device *device, const char *source,
                        const char *name, clk_args *args);
/* A value of `size` bytes (at most 8: long, int, ulong, float, double). */
void clk_arg_value(clk_args *args, size_t size, const void *value);
void clk_arg_long(clk_args *args, int64_t value);
void clk_arg_buffer(clk_args *args, clk_mem buffer);
/* A tensor's buffer, then its element offset (long). */
void clk_arg_tensor(clk_args *args, const porta_tensor *tensor);
/* Over `work` items in one dimension (nothing for none). */
porta_status *clk_launch(clk_args *args, int64_t work);
/* Over global[0] x global[1] items in groups of local[0] x local[1]. */
porta_status *clk_launch_2d(clk_args *args, const size_t global[2], const size_t local[2]);

/* float64 needs a device with fp64 (PORTA_CAP_F64); otherwise a
 * PORTA_ERR_DTYPE naming the device and the op. */
porta_status *clk_check_dtype(porta_device *device, const char *op, porta_dtype dtype);

#endif
