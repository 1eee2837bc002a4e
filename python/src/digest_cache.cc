#include "digest_cache.h"

namespace upguard::torch_adapter {
namespace {

constexpr size_t kMaxEntries = 1 << 16;
constexpr size_t kMaxPerStorage = 8;

bool Cacheable(const at::Tensor& tensor) {
  return tensor.defined() && tensor.has_storage() && tensor.layout() == c10::kStrided &&
         tensor.device().is_cpu() && !tensor.is_inference() && !tensor.is_nested();
}

}  // namespace

DigestCache& Digests() {
  static auto* cache = new DigestCache();  // lives until exit; callbacks may run late
  return *cache;
}

bool DigestCache::Entry::Matches(const at::Tensor& tensor) const {
  return offset == tensor.storage_offset() && dtype == tensor.scalar_type() &&
         version == tensor._version() && tensor.sizes().equals(sizes) &&
         tensor.strides().equals(strides);
}

std::optional<CachedDigest> DigestCache::Find(const at::Tensor& tensor) {
  if (!Cacheable(tensor)) return std::nullopt;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_storage_.find(tensor.storage().unsafeGetStorageImpl());
  if (it == by_storage_.end()) return std::nullopt;
  for (Entry& entry : it->second) {
    if (!entry.Matches(tensor)) continue;
    if (entry.pending != nullptr && entry.pending->done()) {
      const StatusOr<TensorDigest>& made = entry.pending->Wait();
      if (!made.ok()) return std::nullopt;  // the recorder reports it with the op it was for
      entry.digest = *made;
      entry.pending.reset();
    }
    return CachedDigest{entry.digest, entry.pending};
  }
  return std::nullopt;
}

void DigestCache::Put(const at::Tensor& tensor, const TensorDigest& digest,
                      std::shared_ptr<const PendingDigest> pending) {
  if (!Cacheable(tensor)) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto& entries = by_storage_[tensor.storage().unsafeGetStorageImpl()];
  for (const Entry& entry : entries) {
    if (entry.Matches(tensor)) return;
  }
  if (entries.size() >= kMaxPerStorage) {
    entries_ -= entries.size();
    entries.clear();
  }
  Entry entry{c10::weak_intrusive_ptr<c10::StorageImpl>(tensor.storage().getWeakStorageImpl())};
  entry.offset = tensor.storage_offset();
  entry.dtype = tensor.scalar_type();
  entry.version = tensor._version();
  entry.sizes.assign(tensor.sizes().begin(), tensor.sizes().end());
  entry.strides.assign(tensor.strides().begin(), tensor.strides().end());
  entry.digest = digest;
  entry.pending = std::move(pending);
  entries.push_back(std::move(entry));
  ++entries_;
}

void DigestCache::Invalidate(const at::Tensor& tensor) {
  if (!Cacheable(tensor)) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_storage_.find(tensor.storage().unsafeGetStorageImpl());
  if (it == by_storage_.end()) return;
  entries_ -= it->second.size();
  by_storage_.erase(it);
}

void DigestCache::Trim() {
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_ > kMaxEntries) {
    by_storage_.clear();
    entries_ = 0;
    return;
  }
  for (auto it = by_storage_.begin(); it != by_storage_.end();) {
    if (!it->second.empty() && it->second.front().storage.expired()) {
      entries_ -= it->second.size();
      it = by_storage_.erase(it);
    } else {
      ++it;
    }
  }
}

void DigestCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  by_storage_.clear();
  entries_ = 0;
}

}  // namespace upguard::torch_adapter
