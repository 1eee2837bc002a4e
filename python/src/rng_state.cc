#include "rng_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>

#include <cstring>
#include <mutex>
#include <vector>

namespace upguard::torch_adapter {
namespace {

template <typename T>
void Put(const T& value, std::vector<uint8_t>* out) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&value);
  out->insert(out->end(), bytes, bytes + sizeof(T));
}

// The CPU generator's state, field by field. Not get_state(): its bytes are a C struct whose
// padding is uninitialized memory, so two identical generators would digest differently.
at::Tensor StateOf(const at::Generator& generator) {
  at::Generator locked = generator;  // shares the impl; mutex() is non-const
  std::lock_guard<std::mutex> lock(locked.mutex());
  auto* impl = locked.get<at::CPUGeneratorImpl>();
  const at::mt19937_data_pod engine = impl->engine().data();
  std::vector<uint8_t> bytes;
  Put(engine.seed_, &bytes);
  Put(static_cast<int32_t>(engine.left_), &bytes);
  Put(static_cast<uint8_t>(engine.seeded_), &bytes);
  Put(engine.next_, &bytes);
  for (uint32_t word : engine.state_) Put(word, &bytes);
  const c10::optional<float> next_float = impl->next_float_normal_sample();
  Put(static_cast<uint8_t>(next_float.has_value()), &bytes);
  Put(next_float.value_or(0.0f), &bytes);
  const c10::optional<double> next_double = impl->next_double_normal_sample();
  Put(static_cast<uint8_t>(next_double.has_value()), &bytes);
  Put(next_double.value_or(0.0), &bytes);
  at::Tensor state = at::empty({static_cast<int64_t>(bytes.size())}, at::kByte);
  std::memcpy(state.data_ptr(), bytes.data(), bytes.size());
  return state;
}

bool OnCpu(c10::ArrayRef<const c10::IValue> inputs) {
  for (const c10::IValue& value : inputs) {
    if (value.isTensor() && value.toTensor().defined() && !value.toTensor().device().is_cpu()) {
      return false;
    }
    if (value.isDevice() && !value.toDevice().is_cpu()) return false;
  }
  return true;
}

}  // namespace

at::Tensor DefaultCpuGeneratorState() { return StateOf(at::detail::getDefaultCPUGenerator()); }

Arg GeneratorStateArg(std::string_view name, const at::Tensor& state) {
  return Arg::Tensor(name, ViewOf(state));
}

void AppendGeneratorState(const OpInfo& info, c10::ArrayRef<const c10::IValue> inputs,
                          ArgBatch* batch) {
  if (info.generator_arg < 0 || static_cast<size_t>(info.generator_arg) >= inputs.size()) return;
  const c10::IValue& value = inputs[info.generator_arg];
  at::Tensor state;
  if (value.isGenerator()) {
    const at::Generator& generator = value.toGenerator();
    if (generator.device().is_cpu()) state = StateOf(generator);
  } else if (OnCpu(inputs)) {
    state = DefaultCpuGeneratorState();
  }
  if (!state.defined() || state.scalar_type() != at::kByte || !state.is_contiguous()) return;
  const std::string_view name = info.input_names[info.generator_arg];
  for (size_t arg_idx = 0; arg_idx < batch->args.size(); ++arg_idx) {
    if (batch->args[arg_idx].name != name) continue;
    batch->owned.push_back(std::move(state));
    batch->args[arg_idx] = GeneratorStateArg(name, batch->owned.back());
    batch->tensors[arg_idx] = nullptr;  // an ephemeral copy: not for the digest cache
    return;
  }
}

}  // namespace upguard::torch_adapter
