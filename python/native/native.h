// native.h - what the C++ glue between PyTorch and libporta shares.
//
// The glue implements only what PyTorch's C++ API asks of a device
// (allocator, device guard, hooks, generator, streams, dispatcher
// registration); every op's semantics are libporta's. A porta tensor is a
// PrivateUse1 TensorImpl whose storage's DataPtr holds one reference to a
// porta_buffer: the buffer handle is both the data pointer and the context,
// so data_ptr() is unique per buffer even on devices whose memory the host
// cannot address.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>

extern "C" {
#include "porta.h"
}

namespace porta_native {

// The porta device of index `index`; throws for one that does not exist.
porta_device *device_at(c10::DeviceIndex index);
// porta:N of a libporta device.
c10::DeviceIndex index_of(porta_device *device);
c10::DeviceIndex device_count();
c10::DeviceIndex current_device();

// Throws the c10 error matching the status (IndexError for out of range,
// OutOfMemoryError for memory, ...) after freeing it; no-op for NULL.
void check(porta_status *status);

// ---- buffers and storages (buffers.cpp) ----
c10::Allocator *buffer_allocator();
c10::Allocator *pinned_host_allocator();
bool is_pinned_host_pointer(const void *data);
// A storage holding a new reference to `buffer`.
c10::Storage storage_for(porta_buffer *buffer);
// The buffer a porta storage holds (borrowed); throws for other storages.
porta_buffer *buffer_of(const c10::Storage &storage);
// Gives a storage `bytes` bytes, keeping the first min(old, new) bytes.
void resize_storage(const c10::Storage &storage, size_t bytes);
struct MemoryStats {
    int64_t allocated, peak;
};
MemoryStats memory_stats(c10::DeviceIndex index);
void reset_peak(c10::DeviceIndex index);

// ---- tensors (tensors.cpp) ----
c10::ScalarType scalar_type_of(porta_dtype dtype);
// The porta dtype of a torch dtype; throws TypeError for dtypes porta lacks.
porta_dtype to_porta_dtype(c10::ScalarType type);
// A new porta view with the torch tensor's sizes, strides, offset and dtype.
porta_tensor *view_of(const at::Tensor &tensor);
// A torch tensor for a porta tensor (the reference stays the caller's): on
// `storage` when given (it must hold the tensor's buffer), else on a new
// storage of its own.
at::Tensor wrap(porta_tensor *tensor, const c10::Storage *storage = nullptr);
// Points `tensor` at porta tensor `source`'s buffer and geometry.
void rebind(const at::Tensor &tensor, porta_tensor *source);

// ---- generators (generator.cpp) ----
const at::Generator &default_generator(c10::DeviceIndex index);
at::Generator new_generator(c10::DeviceIndex index);
// Runs `call` with libporta's default generator of the generator's device
// holding the generator's state; the state it leaves is the generator's.
void with_generator_state(const at::Generator &generator, const std::function<void()> &call);

// ---- ops (kernels.cpp) ----
void register_kernels();

} // namespace porta_native
