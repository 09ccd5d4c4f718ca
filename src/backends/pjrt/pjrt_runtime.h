/* The PJRT backend's internal interface: every addressable device of every
 * PJRT plugin (an XLA CPU plugin, libtpu, a GPU vendor's plugin) is a porta
 * device. The plugin compiles StableHLO modules (codegen/codegen_stablehlo.h
 * renders them) and runs them on buffers that live on its device.
 *
 * Memory: a porta buffer's handle on a PJRT device is a pjrt_storage, the
 * buffer's bytes as one PJRT array of `bytes` ui8. PJRT arrays are
 * immutable, so a program that writes a buffer returns the buffer's new
 * bytes as a result and the storage takes the new array in place of the
 * old one; views (offsets, strides, other dtypes) are the module's business
 * (bitcasts, slices, gathers, scatters), never the runtime's. */
#ifndef PORTA_BACKENDS_PJRT_PJRT_RUNTIME_H
#define PORTA_BACKENDS_PJRT_PJRT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/device.h"

struct PJRT_Buffer;

typedef struct pjrt_storage {
    /* tensor<bytes x ui8> on the device; NULL until first written (a
     * program reading it then sees zeros) */
    struct PJRT_Buffer *array;
    size_t bytes;
} pjrt_storage;

/* A compiled module, owned by its device's program cache (valid for the
 * life of the process). */
typedef struct pjrt_program pjrt_program;

/* The module `text` (StableHLO in MLIR's text form, `length` bytes) compiled
 * for `device`, from the device's program cache (keyed by the text itself),
 * else compiled now; a module the plugin rejects gives an error carrying the
 * plugin's message. Thread-safe. */
porta_status *pjrt_program_get(porta_device *device, const char *text, size_t length,
                               pjrt_program **out);

/* Runs `program`. Its @main takes one tensor<N x ui8> per storage in `args`
 * (N = that storage's bytes) and returns one tensor<N x ui8> per storage in
 * `results` (N = that storage's bytes), in order; result i becomes
 * results[i]'s array and the array it replaces is released. A storage may
 * be both an argument and a result; only then may the module donate its
 * array to a result (tf.aliasing_output on the argument, saving a copy of
 * a buffer updated in place): the runtime keeps every other argument's
 * array whatever the module says. The results may still be computing when
 * it returns: later programs and reads of a storage wait for them (the
 * plugin orders them), pjrt_synchronize waits for all. */
porta_status *pjrt_program_run(porta_device *device, pjrt_program *program,
                               pjrt_storage *const *args, int arg_count,
                               pjrt_storage *const *results, int result_count);

/* Waits until every program run on `device` so far has finished and
 * reports the first failure among them. */
porta_status *pjrt_synchronize(porta_device *device);

/* ---- what executes primitives (pjrt_execute.c) ---- */

/* The device operations of rt_backend_ops (runtime/device.h) that run
 * primitives, with their meaning there: whether execute accepts `prim`
 * with these inputs, and running it. */
bool pjrt_supports(porta_device *device, const ir_prim *prim, const porta_tensor *const *inputs,
                   int input_count);
porta_status *pjrt_execute(porta_device *device, const ir_prim *prim,
                           const porta_tensor *const *inputs, int input_count,
                           porta_tensor *out);
/* Fills in the compiler's entries of the backend's table (prepare_kernel,
 * run_kernel, ...) where there are any; called once, before the first
 * device is added. */
void pjrt_add_compiler_entries(rt_backend_ops *ops);

#endif
