#include "undeclared_writes.h"

namespace upguard::torch_adapter {

const std::vector<UndeclaredWrite>& UndeclaredWrites() {
  // Measured on torch 1.13.1 (Debian); the composite ops that call a writing kernel write too.
  static const auto* table = new std::vector<UndeclaredWrite>{
      {"aten::batch_norm", "running_mean", "training-mode running statistics"},
      {"aten::batch_norm", "running_var", "training-mode running statistics"},
      {"aten::_batch_norm_impl_index", "running_mean", "training-mode running statistics"},
      {"aten::_batch_norm_impl_index", "running_var", "training-mode running statistics"},
      {"aten::native_batch_norm", "running_mean", "training-mode running statistics"},
      {"aten::native_batch_norm", "running_var", "training-mode running statistics"},
      {"aten::instance_norm", "running_mean", "running statistics averaged over the batch"},
      {"aten::instance_norm", "running_var", "running statistics averaged over the batch"},
      {"aten::rrelu_with_noise", "noise", "the random slopes drawn in training mode"},
      {"aten::rrelu_with_noise_", "noise", "the random slopes drawn in training mode"},
  };
  return *table;
}

bool IsUndeclaredWrite(std::string_view op, std::string_view arg) {
  for (const UndeclaredWrite& write : UndeclaredWrites()) {
    if (write.op == op && write.arg == arg) return true;
  }
  return false;
}

}  // namespace upguard::torch_adapter
