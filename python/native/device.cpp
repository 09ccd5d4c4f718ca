// device.cpp - the "porta" device as PyTorch's C++ core sees it: the
// PrivateUse1 backend's device guard (current device, streams and
// events) and its hooks (device count, generators, pinned host memory).
//
// libporta runs every op to completion when it is issued (fused mode runs a
// trace at the next sync point, which a device synchronize is), so a stream
// is an ordering PyTorch already has: streams are handed out and switched as
// CUDA's are, synchronizing one synchronizes its device, and an event
// records the time its device was done.
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <chrono>
#include <mutex>
#include <vector>

#include "native.h"

namespace porta_native {

namespace {

thread_local c10::DeviceIndex current_index = 0;

// The current stream id of each device, per thread (0: the default stream).
thread_local std::vector<c10::StreamId> current_streams;
std::atomic<c10::StreamId> next_stream_id{1};

std::vector<porta_device *> &devices() {
    static std::vector<porta_device *> all = [] {
        std::vector<porta_device *> found;
        for (int i = 0; i < porta_device_count(); i++) {
            porta_device *device = nullptr;
            check(porta_device_get(i, &device));
            found.push_back(device);
        }
        return found;
    }();
    return all;
}

void check_index(c10::DeviceIndex index) {
    TORCH_CHECK_INDEX(index >= 0 && index < device_count(), "porta:", (int)index,
                      " does not exist (porta has ", (int)device_count(), " device",
                      device_count() == 1 ? "" : "s", ")");
}

// An event: the moment its device had finished what was issued before it.
struct Event {
    std::chrono::steady_clock::time_point when;
};

void synchronize(c10::DeviceIndex index) { check(porta_device_synchronize(device_at(index))); }

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
    c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
    c10::Device exchangeDevice(c10::Device device) const override {
        c10::Device old = getDevice();
        setDevice(device);
        return old;
    }
    c10::Device getDevice() const override {
        return c10::Device(c10::DeviceType::PrivateUse1, current_index);
    }
    void setDevice(c10::Device device) const override {
        check_index(device.index());
        current_index = device.index();
    }
    void uncheckedSetDevice(c10::Device device) const noexcept override {
        current_index = device.index();
    }
    c10::Stream getStream(c10::Device device) const override {
        c10::DeviceIndex index = device.index() < 0 ? current_index : device.index();
        c10::StreamId id = (size_t)index < current_streams.size() ? current_streams[index] : 0;
        return c10::Stream(c10::Stream::UNSAFE, c10::Device(c10::kPrivateUse1, index), id);
    }
    c10::Stream getDefaultStream(c10::Device device) const override {
        return c10::Stream(c10::Stream::DEFAULT, device);
    }
    c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override {
        return getNewStream(device, 0);
    }
    c10::Stream getNewStream(c10::Device device, int) const override {
        return c10::Stream(c10::Stream::UNSAFE, device, next_stream_id++);
    }
    c10::Stream exchangeStream(c10::Stream stream) const override {
        c10::Stream old = getStream(stream.device());
        c10::DeviceIndex index = stream.device_index();
        if ((size_t)index >= current_streams.size())
            current_streams.resize(index + 1, 0);
        current_streams[index] = stream.id();
        return old;
    }
    c10::DeviceIndex deviceCount() const noexcept override { return device_count(); }

    void record(void **event, const c10::Stream &stream, const c10::DeviceIndex,
                const c10::EventFlag) const override {
        synchronize(stream.device_index());
        if (!*event)
            *event = new Event();
        static_cast<Event *>(*event)->when = std::chrono::steady_clock::now();
    }
    void block(void *, const c10::Stream &) const override {}
    bool queryEvent(void *) const override { return true; }
    void destroyEvent(void *event, const c10::DeviceIndex) const noexcept override {
        delete static_cast<Event *>(event);
    }
    bool queryStream(const c10::Stream &) const override { return true; }
    void synchronizeStream(const c10::Stream &stream) const override {
        synchronize(stream.device_index());
    }
    void synchronizeEvent(void *) const override {}
    void synchronizeDevice(const c10::DeviceIndex index) const override { synchronize(index); }
    void recordDataPtrOnStream(const c10::DataPtr &, const c10::Stream &) const override {}
    double elapsedTime(void *start, void *end, const c10::DeviceIndex) const override {
        TORCH_CHECK(start && end, "porta: elapsed_time needs two recorded events");
        auto span = static_cast<Event *>(end)->when - static_cast<Event *>(start)->when;
        return std::chrono::duration<double, std::milli>(span).count();
    }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);

struct Hooks final : at::PrivateUse1HooksInterface {
    bool isBuilt() const override { return true; }
    bool isAvailable() const override { return device_count() > 0; }
    bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
    void init() const override {}
    c10::DeviceIndex deviceCount() const override { return device_count(); }
    void setCurrentDevice(c10::DeviceIndex index) const override {
        check_index(index);
        current_index = index;
    }
    c10::DeviceIndex getCurrentDevice() const override { return current_index; }
    c10::DeviceIndex exchangeDevice(c10::DeviceIndex index) const override {
        c10::DeviceIndex old = current_index;
        setCurrentDevice(index);
        return old;
    }
    c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex index) const override {
        return index >= 0 && index < device_count() ? exchangeDevice(index) : current_index;
    }
    const at::Generator &getDefaultGenerator(c10::DeviceIndex index) const override {
        return default_generator(index < 0 ? current_index : index);
    }
    at::Generator getNewGenerator(c10::DeviceIndex index) const override {
        return new_generator(index < 0 ? current_index : index);
    }
    at::Device getDeviceFromPtr(void *data) const override {
        return c10::Device(c10::kPrivateUse1,
                           index_of(porta_buffer_device(static_cast<porta_buffer *>(data))));
    }
    bool isPinnedPtr(const void *data) const override { return is_pinned_host_pointer(data); }
    at::Allocator *getPinnedMemoryAllocator() const override { return pinned_host_allocator(); }
    void resizePrivateUse1Bytes(const c10::Storage &storage, size_t bytes) const override {
        resize_storage(storage, bytes);
    }
};

} // namespace

porta_device *device_at(c10::DeviceIndex index) {
    check_index(index);
    return devices()[index];
}

c10::DeviceIndex index_of(porta_device *device) {
    const std::vector<porta_device *> &all = devices();
    for (size_t i = 0; i < all.size(); i++)
        if (all[i] == device)
            return (c10::DeviceIndex)i;
    TORCH_INTERNAL_ASSERT(false, "porta: a buffer on a device libporta does not list");
}

c10::DeviceIndex device_count() { return (c10::DeviceIndex)devices().size(); }

c10::DeviceIndex current_device() { return current_index; }

void check(porta_status *status) {
    if (!status)
        return;
    std::string message = porta_status_message(status);
    porta_code code = porta_status_code(status);
    porta_status_free(status);
    switch (code) {
    case PORTA_ERR_OUT_OF_RANGE:
        TORCH_CHECK_INDEX(false, message);
    case PORTA_ERR_OUT_OF_MEMORY:
        TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    case PORTA_ERR_DEVICE_LOST:
        // torch.AcceleratorError, as a CUDA device's failures raise, with
        // the porta code as its error_code (torch_porta.is_device_lost)
        throw c10::AcceleratorError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                    static_cast<int32_t>(code), message);
    default:
        TORCH_CHECK(false, message);
    }
}

// Runs when the extension loads (torch_porta names the backend "porta"
// before, from Python, so that torch's Python side knows the name too).
void register_device() {
    static Hooks hooks;
    at::RegisterPrivateUse1HooksInterface(&hooks);
}

} // namespace porta_native
