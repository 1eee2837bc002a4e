#include "origins.h"

#include <algorithm>

namespace upguard::torch_adapter {
namespace {
constexpr size_t kMaxRanges = 1 << 20;  // a bound if steps are never marked
}  // namespace

void OriginTable::Add(uint64_t first, uint64_t end, Origin origin) {
  if (end <= first) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (ranges_.size() >= kMaxRanges) ranges_.clear();
  if (!ranges_.empty() && ranges_.back().first > first) ranges_.clear();  // counter reset
  ranges_.push_back(Range{first, end, origin});
}

Origin OriginTable::Find(int64_t seq_nr) const {
  if (seq_nr < 0) return {};
  const uint64_t seq = static_cast<uint64_t>(seq_nr);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), seq,
                             [](uint64_t value, const Range& r) { return value < r.first; });
  if (it == ranges_.begin()) return {};
  --it;
  return seq < it->end ? it->origin : Origin{};
}

void OriginTable::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  ranges_.clear();
}

}  // namespace upguard::torch_adapter
