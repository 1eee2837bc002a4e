#include "tensor_names.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "string_pool.h"

namespace upguard::torch_adapter {
namespace {

struct Entry {
  c10::weak_intrusive_ptr<c10::StorageImpl> storage;  // holds the address, not the data
  int64_t offset = 0;
  int64_t numel = 0;
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  std::string_view name;  // pooled
};

using Table = std::unordered_map<const c10::StorageImpl*, std::vector<Entry>>;

std::mutex g_mu;
std::shared_ptr<const Table> g_table;  // replaced whole, read under g_mu
std::atomic<bool> g_any{false};        // the table has an entry: skip the lock when not

std::shared_ptr<const Table> Current() {
  if (!g_any.load(std::memory_order_acquire)) return nullptr;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_table;
}

std::string_view Find(const Table& table, const at::Tensor& tensor) {
  if (!tensor.defined() || tensor.is_nested() || !tensor.has_storage()) return {};
  const c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
  auto found = table.find(storage);
  if (found == table.end()) return {};
  for (const Entry& entry : found->second) {
    if (entry.offset == tensor.storage_offset() && entry.numel == tensor.numel() &&
        entry.dtype == tensor.scalar_type()) {
      return entry.name;
    }
  }
  return {};
}

}  // namespace

void ResetTensorNames(const std::vector<NamedTensor>& tensors) {
  auto table = std::make_shared<Table>();
  for (const NamedTensor& named : tensors) {
    const at::Tensor& tensor = named.tensor;
    if (!tensor.defined() || tensor.is_nested() || !tensor.has_storage()) continue;
    const c10::StorageImpl* storage = tensor.storage().unsafeGetStorageImpl();
    Entry entry{c10::weak_intrusive_ptr<c10::StorageImpl>(tensor.storage().getWeakStorageImpl()),
                tensor.storage_offset(), tensor.numel(), tensor.scalar_type(), Pooled(named.name)};
    (*table)[storage].push_back(std::move(entry));
  }
  const bool any = !table->empty();
  std::lock_guard<std::mutex> lock(g_mu);
  g_table = std::move(table);
  g_any.store(any, std::memory_order_release);
}

void ClearTensorNames() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_table.reset();
  g_any.store(false, std::memory_order_release);
}

size_t LabelArgs(ArgBatch* batch) {
  const std::shared_ptr<const Table> table = Current();
  size_t unnamed = 0;
  for (size_t idx = 0; idx < batch->args.size() && idx < batch->tensors.size(); ++idx) {
    Arg& arg = batch->args[idx];
    if (batch->tensors[idx] == nullptr || arg.kind == ArgKind::kNone ||
        arg.kind == ArgKind::kScalar) {
      continue;
    }
    if (table != nullptr) arg.label = Find(*table, *batch->tensors[idx]);
    if (arg.label.empty() && arg.kind == ArgKind::kTensor) ++unnamed;
  }
  return unnamed;
}

}  // namespace upguard::torch_adapter
