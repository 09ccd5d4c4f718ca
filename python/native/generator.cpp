// generator.cpp - torch.Generator("porta"): a Philox (seed, offset) pair,
// as libporta's random ops draw from. A device's default generator is
// libporta's own per-device state; any other generator keeps its pair and
// lends it to libporta for the duration of an op that names it.
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "native.h"

namespace porta_native {
namespace {

// The state as bytes: seed then offset, 8 bytes each, little-endian (the
// layout torch.cuda.get_rng_state uses).
constexpr size_t kStateBytes = 16;

struct PortaGenerator final : c10::GeneratorImpl {
    PortaGenerator(c10::DeviceIndex index, bool is_default)
        : c10::GeneratorImpl(c10::Device(c10::kPrivateUse1, index),
                             c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
          is_default_(is_default) {}

    void set_current_seed(uint64_t seed) override { store(seed, 0); }
    void set_offset(uint64_t offset) override { store(current_seed(), offset); }
    uint64_t get_offset() const override { return load().second; }
    uint64_t current_seed() const override { return load().first; }
    uint64_t seed() override {
        uint64_t random = c10::detail::getNonDeterministicRandom(true);
        set_current_seed(random);
        return random;
    }
    void set_state(const c10::TensorImpl &state) override {
        TORCH_CHECK_TYPE(state.dtype() == caffe2::TypeMeta::Make<uint8_t>() &&
                             state.numel() == (int64_t)kStateBytes && state.is_contiguous() &&
                             state.device().is_cpu(),
                         "porta generator state: expected a contiguous CPU uint8 tensor of ",
                         kStateBytes, " bytes (seed, offset), got ", state.numel(),
                         " elements of ", state.dtype().name(), " on ", state.device());
        uint64_t words[2];
        std::memcpy(words, state.data(), kStateBytes);
        store(words[0], words[1]);
    }
    c10::intrusive_ptr<c10::TensorImpl> get_state() const override {
        auto [seed_value, offset] = load();
        at::Tensor state = at::empty({(int64_t)kStateBytes}, at::kByte);
        uint64_t words[2] = {seed_value, offset};
        std::memcpy(state.data_ptr(), words, kStateBytes);
        return state.getIntrusivePtr();
    }
    bool is_default() const { return is_default_; }

  private:
    PortaGenerator *clone_impl() const override {
        auto *copy = new PortaGenerator(device().index(), false);
        auto [seed_value, offset] = load();
        copy->store(seed_value, offset);
        return copy;
    }
    std::pair<uint64_t, uint64_t> load() const {
        if (!is_default_)
            return {seed_, offset_};
        uint64_t seed_value = 0, offset = 0;
        check(porta_generator_get_state(device().index(), &seed_value, &offset));
        return {seed_value, offset};
    }
    void store(uint64_t seed_value, uint64_t offset) {
        if (is_default_) {
            check(porta_generator_set_state(device().index(), seed_value, offset));
            return;
        }
        seed_ = seed_value;
        offset_ = offset;
    }

    bool is_default_;
    // A default generator's state lives in libporta; these are the others'.
    uint64_t seed_ = 67280421310721ull, offset_ = 0;

    friend void porta_native::with_generator_state(const at::Generator &,
                                                  const std::function<void()> &);
};

} // namespace

const at::Generator &default_generator(c10::DeviceIndex index) {
    static std::mutex mutex;
    static std::deque<at::Generator> defaults; // stable addresses as it grows
    std::lock_guard<std::mutex> lock(mutex);
    if (defaults.empty())
        for (c10::DeviceIndex i = 0; i < device_count(); i++)
            defaults.push_back(at::make_generator<PortaGenerator>(i, true));
    TORCH_CHECK_INDEX(index >= 0 && (size_t)index < defaults.size(),
                      "porta: no default generator for device index ", (int)index);
    return defaults[index];
}

at::Generator new_generator(c10::DeviceIndex index) {
    return at::make_generator<PortaGenerator>(index, false);
}

void with_generator_state(const at::Generator &generator, const std::function<void()> &call) {
    TORCH_CHECK(generator.device().type() == c10::kPrivateUse1,
                "Expected a 'porta' device type for generator but found '",
                c10::DeviceTypeName(generator.device().type(), true), "'");
    auto *impl = static_cast<PortaGenerator *>(generator.unsafeGetGeneratorImpl());
    if (impl->is_default()) {
        call();
        return;
    }
    std::lock_guard<std::mutex> lock(impl->mutex_);
    int index = generator.device().index();
    uint64_t saved_seed = 0, saved_offset = 0;
    check(porta_generator_get_state(index, &saved_seed, &saved_offset));
    check(porta_generator_set_state(index, impl->seed_, impl->offset_));
    auto restore = [&] {
        porta_status_free(porta_generator_get_state(index, &impl->seed_, &impl->offset_));
        porta_status_free(porta_generator_set_state(index, saved_seed, saved_offset));
    };
    try {
        call();
    } catch (...) {
        restore();
        throw;
    }
    restore();
}

} // namespace porta_native
