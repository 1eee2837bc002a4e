#include "undeclared_writes.h"

#include <torch/version.h>

namespace upguard::torch_adapter {

const std::vector<UndeclaredWrite>& UndeclaredWrites() {
  // Measured on torch 1.13.1 (Debian) and 2.15.0 (PyPI); the composite ops that call a
  // writing kernel write too. The table is compiled for the adapter's torch.
  static const auto* table = [] {
    auto* writes = new std::vector<UndeclaredWrite>{
        {"aten::batch_norm", "running_mean", "training-mode running statistics"},
        {"aten::batch_norm", "running_var", "training-mode running statistics"},
        {"aten::_batch_norm_impl_index", "running_mean", "training-mode running statistics"},
        {"aten::_batch_norm_impl_index", "running_var", "training-mode running statistics"},
        {"aten::native_batch_norm", "running_mean", "training-mode running statistics"},
        {"aten::native_batch_norm", "running_var", "training-mode running statistics"},
        {"aten::instance_norm", "running_mean", "running statistics averaged over the batch"},
        {"aten::instance_norm", "running_var", "running statistics averaged over the batch"},
    };
    if (TORCH_VERSION_MAJOR < 2) {
      // 2.x declares these: rrelu_with_noise(Tensor self, Tensor(b!) noise, ...).
      writes->push_back(
          {"aten::rrelu_with_noise", "noise", "the random slopes drawn in training mode"});
      writes->push_back(
          {"aten::rrelu_with_noise_", "noise", "the random slopes drawn in training mode"});
    } else {
      // 2.x only (1.13 has no such op).
      writes->push_back({"aten::mkldnn_rnn_layer_backward", "workspace",
                         "oneDNN's LSTM/GRU backward reuses the forward's workspace as scratch"});
    }
    return writes;
  }();
  return *table;
}

bool IsUndeclaredWrite(std::string_view op, std::string_view arg) {
  for (const UndeclaredWrite& write : UndeclaredWrites()) {
    if (write.op == op && write.arg == arg) return true;
  }
  return false;
}

}  // namespace upguard::torch_adapter
