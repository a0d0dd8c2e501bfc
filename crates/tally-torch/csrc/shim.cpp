// The few libtorch calls tch 0.26 has no binding for: tensor identity and
// metadata for any dtype, TorchScript buffers, device synchronization with
// errors instead of aborts, and the caching device allocator's statistics.
//
// Every function is extern "C", catches every C++ exception (unwinding into
// Rust is undefined behaviour), writes the exception's message into `err`
// and returns nonzero on failure.

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Device.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/jit/api/module.h>

namespace {

void write_error(char* err, size_t err_len, const char* message) {
  if (err == nullptr || err_len == 0) {
    return;
  }
  std::strncpy(err, message, err_len - 1);
  err[err_len - 1] = '\0';
}

// c10::Error::what() carries a C++ backtrace; Python shows the message
// without it, and so do we.
template <typename F>
int guarded(char* err, size_t err_len, F&& body) {
  try {
    body();
    return 0;
  } catch (const c10::Error& error) {
    write_error(err, err_len, error.what_without_backtrace());
  } catch (const std::exception& error) {
    write_error(err, err_len, error.what());
  } catch (...) {
    write_error(err, err_len, "unknown C++ exception");
  }
  return 1;
}

}  // namespace

extern "C" {

struct tally_tensor_info {
  uintptr_t impl_id;
  int32_t defined;
  int32_t scalar_type;
  int64_t element_size;
  int64_t numel;
  int32_t device_type;
  int32_t device_index;
  int32_t requires_grad;
  char device_name[64];
};

int tally_tensor_describe(const void* tensor, tally_tensor_info* out, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    const auto& t = *static_cast<const at::Tensor*>(tensor);
    *out = tally_tensor_info{};
    out->defined = t.defined() ? 1 : 0;
    if (!t.defined()) {
      return;
    }
    out->impl_id = reinterpret_cast<uintptr_t>(t.unsafeGetTensorImpl());
    out->scalar_type = static_cast<int32_t>(t.scalar_type());
    out->element_size = static_cast<int64_t>(t.element_size());
    out->numel = static_cast<int64_t>(t.numel());
    out->device_type = static_cast<int32_t>(t.device().type());
    out->device_index = static_cast<int32_t>(t.device().index());
    out->requires_grad = t.requires_grad() ? 1 : 0;
    write_error(out->device_name, sizeof(out->device_name), t.device().str().c_str());
  });
}

int tally_module_named_buffers(void* module, void* data, void (*callback)(void*, const char*, void*), char* err,
                               size_t err_len) {
  return guarded(err, err_len, [&] {
    auto& m = *static_cast<torch::jit::Module*>(module);
    for (const auto& buffer : m.named_buffers(/*recurse=*/true)) {
      // Ownership of the new handle passes to the callback (tch's Tensor).
      callback(data, buffer.name.c_str(), new at::Tensor(buffer.value));
    }
  });
}

int tally_device_synchronize(int32_t device_type, int32_t device_index, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    auto type = static_cast<c10::DeviceType>(device_type);
    c10::impl::getDeviceGuardImpl(type)->synchronizeDevice(static_cast<c10::DeviceIndex>(device_index));
  });
}

struct tally_allocator_stats {
  int64_t allocated_current;
  int64_t allocated_peak;
  int64_t reserved_current;
  int64_t reserved_peak;
};

static c10::DeviceAllocator* initialized_allocator(int32_t device_type) {
  auto* allocator = c10::getDeviceAllocator(static_cast<c10::DeviceType>(device_type));
  TORCH_CHECK(allocator->initialized(), "The ", static_cast<c10::DeviceType>(device_type),
              " caching allocator is not initialized.");
  return allocator;
}

int tally_allocator_stats(int32_t device_type, int32_t device_index, tally_allocator_stats* out, char* err,
                          size_t err_len) {
  return guarded(err, err_len, [&] {
    auto stats = initialized_allocator(device_type)->getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
    constexpr auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    out->allocated_current = stats.allocated_bytes[aggregate].current;
    out->allocated_peak = stats.allocated_bytes[aggregate].peak;
    out->reserved_current = stats.reserved_bytes[aggregate].current;
    out->reserved_peak = stats.reserved_bytes[aggregate].peak;
  });
}

int tally_allocator_reset_peak(int32_t device_type, int32_t device_index, char* err, size_t err_len) {
  return guarded(err, err_len, [&] {
    initialized_allocator(device_type)->resetPeakStats(static_cast<c10::DeviceIndex>(device_index));
  });
}

}  // extern "C"

#include <torch/version.h>

extern "C" const char* tally_libtorch_version() {
  return TORCH_VERSION;
}
