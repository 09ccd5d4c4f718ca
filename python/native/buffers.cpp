// buffers.cpp - torch storages on porta buffers: the device allocator, the
// per-device memory statistics torch.porta reports, storage resizing, and
// the allocator of pinned host memory for DataLoader(pin_memory=True).
#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_set>

#include "native.h"

namespace porta_native {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceStats {
    std::atomic<int64_t> allocated{0}, peak{0};
};
std::array<DeviceStats, kMaxDevices> stats;

void count(c10::DeviceIndex index, int64_t bytes) {
    DeviceStats &s = stats.at(index);
    int64_t now = s.allocated.fetch_add(bytes) + bytes;
    int64_t peak = s.peak.load();
    while (now > peak && !s.peak.compare_exchange_weak(peak, now)) {
    }
}

// Every porta storage's deleter: the stats forget the buffer's bytes and
// the storage's reference goes.
void release_buffer(void *context) {
    auto *buffer = static_cast<porta_buffer *>(context);
    count(index_of(porta_buffer_device(buffer)), -(int64_t)porta_buffer_size(buffer));
    porta_buffer_release(buffer);
}

c10::DataPtr data_ptr_for(porta_buffer *buffer, c10::DeviceIndex index) {
    count(index, (int64_t)porta_buffer_size(buffer));
    return c10::DataPtr(buffer, buffer, &release_buffer, c10::Device(c10::kPrivateUse1, index));
}

struct BufferAllocator final : c10::Allocator {
    c10::DataPtr allocate(size_t bytes) override {
        c10::DeviceIndex index = current_device();
        porta_buffer *buffer = nullptr;
        check(porta_buffer_alloc(device_at(index), bytes, &buffer));
        return data_ptr_for(buffer, index);
    }
    c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
    // The bytes of one buffer to another: both pointers are buffer handles
    // (a storage's data pointer), copied through the host.
    void copy_data(void *dest, const void *src, std::size_t count) const override {
        if (!count)
            return;
        std::vector<uint8_t> staged(count);
        check(porta_buffer_read(static_cast<const porta_buffer *>(src), 0, staged.data(), count));
        check(porta_buffer_write(static_cast<porta_buffer *>(dest), 0, staged.data(), count));
    }
};

BufferAllocator allocator;
// What PyTorch allocates porta memory with (torch.UntypedStorage(n,
// device="porta"), empty_generic, storage resizing).
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &allocator);

// Pinned host memory: porta's devices read host memory directly or copy it
// synchronously, so any host memory will do; what matters to PyTorch is
// that is_pinned() knows the pointers this allocator gave out.
struct PinnedHostAllocator final : c10::Allocator {
    std::mutex mutex;
    std::unordered_set<const void *> live;

    static void free_pinned(void *data);
    c10::DataPtr allocate(size_t bytes) override {
        void *data = nullptr;
        if (bytes && posix_memalign(&data, 64, bytes) != 0)
            TORCH_CHECK_WITH(OutOfMemoryError, false, "porta: cannot allocate ", bytes,
                             " bytes of pinned host memory");
        if (data) {
            std::lock_guard<std::mutex> lock(mutex);
            live.insert(data);
        }
        return c10::DataPtr(data, data, &free_pinned, c10::Device(c10::kCPU));
    }
    c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
    void copy_data(void *dest, const void *src, std::size_t count) const override {
        default_copy_data(dest, src, count);
    }
};

PinnedHostAllocator pinned;

void PinnedHostAllocator::free_pinned(void *data) {
    if (!data)
        return;
    {
        std::lock_guard<std::mutex> lock(pinned.mutex);
        pinned.live.erase(data);
    }
    std::free(data);
}

} // namespace

c10::Allocator *buffer_allocator() { return &allocator; }
c10::Allocator *pinned_host_allocator() { return &pinned; }

bool is_pinned_host_pointer(const void *data) {
    std::lock_guard<std::mutex> lock(pinned.mutex);
    return pinned.live.count(data) != 0;
}

c10::Storage storage_for(porta_buffer *buffer) {
    porta_buffer_retain(buffer);
    c10::DeviceIndex index = index_of(porta_buffer_device(buffer));
    return c10::Storage(c10::make_intrusive<c10::StorageImpl>(
        c10::StorageImpl::use_byte_size_t(), porta_buffer_size(buffer),
        data_ptr_for(buffer, index), &allocator, /*resizable=*/true));
}

porta_buffer *buffer_of(const c10::Storage &storage) {
    const c10::DataPtr &data = storage.data_ptr();
    if (data.get_deleter() != &release_buffer) {
        // A fake tensor's meta storage reaching a kernel means the op has no
        // meta kernel: NotImplementedError (not RuntimeError) tells
        // FakeTensorMode so, and it takes its fallback for such ops (see
        // torch_porta/kernels/meta.py for where that fallback is not enough).
        TORCH_CHECK_NOT_IMPLEMENTED(data.device().type() != c10::DeviceType::Meta,
                                    "porta: no meta kernel for this op (a storage on meta)");
        TORCH_CHECK(false, "porta: expected a storage on a porta buffer, got one on ",
                    data.device());
    }
    return static_cast<porta_buffer *>(data.get_context());
}

void resize_storage(const c10::Storage &storage, size_t bytes) {
    porta_buffer *old = buffer_of(storage);
    c10::DeviceIndex index = storage.device().index();
    porta_buffer *fresh = nullptr;
    check(porta_buffer_alloc(porta_buffer_device(old), bytes, &fresh));
    c10::DataPtr data = data_ptr_for(fresh, index);
    size_t kept = std::min(bytes, porta_buffer_size(old));
    if (kept)
        allocator.copy_data(fresh, old, kept);
    storage.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(data));
    storage.unsafeGetStorageImpl()->set_nbytes(bytes);
}

MemoryStats memory_stats(c10::DeviceIndex index) {
    const DeviceStats &s = stats.at(index);
    return {s.allocated.load(), s.peak.load()};
}

void reset_peak(c10::DeviceIndex index) {
    DeviceStats &s = stats.at(index);
    s.peak.store(s.allocated.load());
}

} // namespace porta_native
