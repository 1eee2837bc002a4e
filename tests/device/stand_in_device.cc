// A stand-in accelerator for tests: a PrivateUse1 backend ("standin" on torch 2.x,
// "privateuseone" on 1.13) whose device memory is host memory, and whose kernels upguard cannot
// see, as it cannot see a GPU's. tests/e2e/stand_in_device_train.py shows the Python side:
//
//   torch.ops.load_library("<build>/tests/device/libupguard_standin_device.so")
//   torch.utils.rename_privateuse1_backend("standin")   # torch 2.x, with a torch.standin module
//   model.to("standin")
//
// The device has kernels of its own for the factories and copies only (they have no CPU kernel
// to borrow). Ops that torch implements for every backend by composing others (linear, _to_copy,
// the foreach ops' loops, ...) run as they do on a GPU: at device level, through the dispatcher.
// Every other device op reaches one boxed fallback, which runs the op's CPU kernel on CPU
// aliases of the device tensors (the same memory, sizes, strides and offset) with RecordFunction
// turned off for its scope. The device op itself is recorded by the dispatcher before its kernel
// runs (its tensors are not CPU tensors, so upguard records them opaque, shape only); the CPU
// kernel and every op it calls stay invisible, as a GPU's kernels are. A Python
// __torch_dispatch__ wrapper would not do: its inner CPU ops reach RecordFunction.
//
// Results go back to the device: a result that is an input's alias (in-place, out=) is that
// input; a view of an input's memory is a new device tensor on the input's storage; anything
// else is copied into fresh device memory. A CPU kernel that grows an out= tensor gets new host
// memory for the alias; the fallback moves it into the device storage afterwards.

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#if __has_include(<ATen/detail/PrivateUse1HooksInterface.h>)
#include <ATen/detail/PrivateUse1HooksInterface.h>
#endif
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/library.h>
#include <torch/version.h>

#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

constexpr c10::DeviceType kStandIn = c10::DeviceType::PrivateUse1;
const c10::Device kDevice(kStandIn, 0);  // one device, index 0: what torch prints as "standin:0"

void FreeDeviceMemory(void* ptr) { c10::free_cpu(ptr); }

// Device memory is host memory from torch's CPU allocation routine, tagged with the device.
// 1.13's Allocator::allocate is const and has no copy_data; 2.x's is not const and requires it.
struct StandInAllocator final : c10::Allocator {
#if TORCH_VERSION_MAJOR >= 2
  c10::DataPtr allocate(size_t nbytes) override { return Allocate(nbytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t nbytes) const override { return Allocate(nbytes); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &FreeDeviceMemory; }

  static c10::DataPtr Allocate(size_t nbytes) {
    void* data = nbytes == 0 ? nullptr : c10::alloc_cpu(nbytes);
    return {data, data, &FreeDeviceMemory, kDevice};
  }
};

StandInAllocator& DeviceAllocator() {
  static StandInAllocator allocator;
  return allocator;
}

// The device runs each kernel to completion before returning: one stream, and an event is
// complete as soon as it is recorded (for what torch's stream and event guards ask).
struct StandInGuard final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kStandIn; }
  c10::Device exchangeDevice(c10::Device) const override { return kDevice; }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, kDevice);
  }
  c10::Stream getDefaultStream(c10::Device) const override {
    return c10::Stream(c10::Stream::DEFAULT, kDevice);
  }
  c10::Stream exchangeStream(c10::Stream) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, kDevice);
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void**, const c10::Stream&, const c10::DeviceIndex,
              const c10::EventFlag) const override {}
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
#if TORCH_VERSION_MAJOR >= 2  // the optimizers ask (torch.accelerator.current_stream())
  bool isStreamCapturing(const c10::Stream&) const override { return false; }
#endif
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, StandInGuard);

#if __has_include(<ATen/detail/PrivateUse1HooksInterface.h>)
// torch 2.x asks a PrivateUse1 backend's hooks too (the autograd engine: does the device have
// a context yet?). 1.13 has none.
struct StandInHooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
};

const bool kHooksRegistered = [] {
  static StandInHooks hooks;
  at::RegisterPrivateUse1HooksInterface(&hooks);
  return true;
}();
#endif

bool OnDevice(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == kStandIn;
}

// A tensor of dispatch key `key` on `storage` with the dtype, sizes, strides, offset and
// conj/neg bits of `like`.
at::Tensor OnStorage(c10::Storage storage, c10::DispatchKey key, const at::Tensor& like) {
  at::Tensor tensor = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(key), like.dtype());
  c10::TensorImpl* impl = tensor.unsafeGetTensorImpl();
  impl->set_sizes_and_strides(like.sizes(), like.strides());
  impl->set_storage_offset(like.storage_offset());
  impl->_set_conj(like.is_conj());
  impl->_set_neg(like.is_neg());
  return tensor;
}

bool SameGeometry(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.storage_offset() == b.storage_offset();
}

// The device and CPU sides of one kernel call's tensors. Each device storage gets one CPU
// storage on the same memory, so the CPU kernel sees the aliasing the device tensors have.
class CallTensors {
 public:
  // The CPU alias of a device tensor; any other tensor as it is.
  at::Tensor ToCpu(const at::Tensor& tensor) {
    if (!OnDevice(tensor)) {
      if (tensor.defined() && tensor.has_storage()) {
        cpu_inputs_.insert(tensor.storage().unsafeGetStorageImpl());
      }
      return tensor;
    }
    TORCH_CHECK(tensor.layout() == c10::kStrided && tensor.has_storage(),
                "the stand-in device holds strided tensors only, not ", tensor.layout());
    c10::StorageImpl* device_storage = tensor.storage().unsafeGetStorageImpl();
    auto found = cpu_storage_.find(device_storage);
    if (found == cpu_storage_.end()) {
      found = cpu_storage_.emplace(device_storage, CpuStorageOn(tensor.storage())).first;
      device_storage_.emplace(found->second.unsafeGetStorageImpl(), tensor.storage());
    }
    at::Tensor alias = OnStorage(found->second, c10::DispatchKey::CPU, tensor);
    aliases_.push_back({tensor, alias});
    return alias;
  }

  // After the CPU kernel: what it wrote into the aliases' memory and metadata, on the device.
  void WriteBack() {
    for (auto& [cpu_impl, device] : device_storage_) {
      if (cpu_impl->data() == device.data()) continue;
      // The kernel resized an alias (out=): its bytes now live in new host memory.
      const size_t nbytes = cpu_impl->nbytes();
      c10::DataPtr fresh = StandInAllocator::Allocate(nbytes);
      if (nbytes > 0) std::memcpy(fresh.get(), cpu_impl->data(), nbytes);
      device.unsafeGetStorageImpl()->set_data_ptr_noswap(std::move(fresh));
      device.unsafeGetStorageImpl()->set_nbytes(nbytes);
    }
    for (const Alias& alias : aliases_) {
      if (SameGeometry(alias.device, alias.cpu)) continue;
      c10::TensorImpl* impl = alias.device.unsafeGetTensorImpl();
      impl->set_sizes_and_strides(alias.cpu.sizes(), alias.cpu.strides());
      impl->set_storage_offset(alias.cpu.storage_offset());
    }
  }

  // A CPU kernel's result, on the device (after WriteBack).
  at::Tensor ToDevice(const at::Tensor& result) {
    if (!result.defined() || OnDevice(result)) return result;
    for (const Alias& alias : aliases_) {
      if (alias.cpu.unsafeGetTensorImpl() == result.unsafeGetTensorImpl()) return alias.device;
    }
    TORCH_CHECK(result.layout() == c10::kStrided && result.has_storage(),
                "the stand-in device holds strided tensors only, not ", result.layout());
    c10::StorageImpl* storage = result.storage().unsafeGetStorageImpl();
    auto found = device_storage_.find(storage);
    if (found != device_storage_.end()) {
      return OnStorage(found->second, c10::DispatchKey::PrivateUse1, result);
    }
    if (cpu_inputs_.count(storage) != 0) return result;  // a view of a CPU input stays on CPU
    const size_t nbytes = result.storage().nbytes();
    c10::DataPtr data = StandInAllocator::Allocate(nbytes);
    if (nbytes > 0) std::memcpy(data.get(), result.storage().data(), nbytes);
    c10::Storage device(c10::Storage::use_byte_size_t(), nbytes, std::move(data),
                        &DeviceAllocator(), /*resizable=*/true);
    return OnStorage(std::move(device), c10::DispatchKey::PrivateUse1, result);
  }

 private:
  struct Alias {
    at::Tensor device;
    at::Tensor cpu;
  };

  // A CPU storage on a device storage's memory that keeps the device storage alive. It is
  // resizable through the CPU allocator, so a kernel that grows it gets new host memory, which
  // WriteBack notices by the changed data pointer.
  static c10::Storage CpuStorageOn(const c10::Storage& device) {
    auto* owner = new c10::Storage(device);
    c10::DataPtr data(const_cast<void*>(device.data()), owner,
                      [](void* ctx) { delete static_cast<c10::Storage*>(ctx); }, at::kCPU);
    return c10::Storage(c10::Storage::use_byte_size_t(), device.nbytes(), std::move(data),
                        c10::GetCPUAllocator(), /*resizable=*/true);
  }

  std::vector<Alias> aliases_;
  std::unordered_map<c10::StorageImpl*, c10::Storage> cpu_storage_;     // device -> CPU alias
  std::unordered_map<c10::StorageImpl*, c10::Storage> device_storage_;  // CPU alias -> device
  std::unordered_set<c10::StorageImpl*> cpu_inputs_;
};

c10::IValue ArgToCpu(const c10::IValue& value, CallTensors* tensors) {
  if (value.isTensor()) return tensors->ToCpu(value.toTensor());
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) list.push_back(tensors->ToCpu(tensor));
    return list;
  }
  if (value.isList()) {  // Tensor?[] (index, index_put_): tensors and None
    c10::impl::GenericList list(value.toList().elementType());
    for (const c10::IValue& item : value.toList()) list.push_back(ArgToCpu(item, tensors));
    return list;
  }
  if (value.isDevice() && value.toDevice().type() == kStandIn) return c10::Device(at::kCPU);
  return value;
}

c10::IValue ResultToDevice(const c10::IValue& value, CallTensors* tensors) {
  if (value.isTensor()) return tensors->ToDevice(value.toTensor());
  if (value.isTensorList()) {
    c10::List<at::Tensor> list;
    for (const at::Tensor& tensor : value.toTensorList()) {
      list.push_back(tensors->ToDevice(tensor));
    }
    return list;
  }
  return value;
}

// Every device op without a kernel of its own: its CPU kernel on CPU aliases, unrecorded.
void RunOnCpu(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  at::RecordFunctionGuard record_off(/*is_enabled=*/false);
  const size_t num_args = op.schema().arguments().size();
  const size_t first_arg = stack->size() - num_args;
  CallTensors tensors;
  for (size_t arg_idx = first_arg; arg_idx < stack->size(); ++arg_idx) {
    (*stack)[arg_idx] = ArgToCpu((*stack)[arg_idx], &tensors);
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  tensors.WriteBack();
  const size_t num_returns = op.schema().returns().size();
  for (size_t ret_idx = stack->size() - num_returns; ret_idx < stack->size(); ++ret_idx) {
    (*stack)[ret_idx] = ResultToDevice((*stack)[ret_idx], &tensors);
  }
}

// Factories and copies have no CPU kernel to borrow: the device's own.
at::Tensor Empty(c10::IntArrayRef size, c10::optional<at::ScalarType> dtype,
                 c10::optional<at::Layout> layout, c10::optional<at::Device> device,
                 c10::optional<bool> pin_memory,
                 c10::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(size, &DeviceAllocator(),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor EmptyStrided(c10::IntArrayRef size, c10::IntArrayRef stride,
                        c10::optional<at::ScalarType> dtype, c10::optional<at::Layout> layout,
                        c10::optional<at::Device> device, c10::optional<bool> pin_memory) {
  return at::detail::empty_strided_generic(size, stride, &DeviceAllocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

// copy_ between the device and CPU (or within the device) ends here; CPU's copy_ does the work
// on the aliases, unrecorded.
at::Tensor CopyFrom(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::RecordFunctionGuard record_off(/*is_enabled=*/false);
  TORCH_CHECK(self.is_cpu() || OnDevice(self), "the stand-in device copies from CPU only, not ",
              self.device());
  TORCH_CHECK(dst.is_cpu() || OnDevice(dst), "the stand-in device copies to CPU only, not ",
              dst.device());
  CallTensors tensors;
  tensors.ToCpu(dst).copy_(tensors.ToCpu(self));
  tensors.WriteBack();
  return dst;
}

at::Tensor CopyFromAndResize(const at::Tensor& self, const at::Tensor& dst) {
  at::RecordFunctionGuard record_off(/*is_enabled=*/false);
  CallTensors tensors;
  at::Tensor cpu_dst = tensors.ToCpu(dst);
  cpu_dst.resize_(self.sizes());
  cpu_dst.copy_(tensors.ToCpu(self));
  tensors.WriteBack();
  return dst;
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", &Empty);
  m.impl("empty_strided", &EmptyStrided);
  m.impl("_copy_from", &CopyFrom);
  m.impl("_copy_from_and_resize", &CopyFromAndResize);
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&RunOnCpu>());
}

}  // namespace

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &DeviceAllocator());
