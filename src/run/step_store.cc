#include "run/step_store.h"

#include <algorithm>

namespace upguard {

Status DamageError(const TraceDamage& damage) {
  return DataLoss(damage.message + "; to compare the readable part anyway, pass --allow-damaged");
}

std::shared_ptr<StepStore> StepStore::FromDecoded(std::vector<StepOps> steps, StringTable strings,
                                                  bool complete,
                                                  std::optional<StoppedRecord> stopped,
                                                  std::optional<TraceDamage> damage,
                                                  bool allow_damaged) {
  auto store = std::make_shared<StepStore>();
  store->allow_damaged_ = allow_damaged;
  for (StepOps& step : steps) {
    store->steps_.push_back(StepInfo{step.step, step.ops.size(), step.end});
    store->decoded_.push_back(std::make_shared<StepOps>(std::move(step)));
  }
  store->strings_ = std::move(strings);
  store->complete_ = complete;
  store->stopped_ = std::move(stopped);
  store->damage_ = std::move(damage);
  return store;
}

std::shared_ptr<StepStore> StepStore::FromIndex(std::unique_ptr<TraceIndex> index,
                                                bool allow_damaged) {
  auto store = std::make_shared<StepStore>();
  store->index_ = std::move(index);
  store->allow_damaged_ = allow_damaged;
  store->Sync();
  return store;
}

void StepStore::Sync() {
  const std::vector<StepSpan>& spans = index_->steps();
  const size_t known = index_->final_steps();
  for (size_t step_idx = steps_.size(); step_idx < known; ++step_idx) {
    const StepSpan& span = spans[step_idx];
    steps_.push_back(StepInfo{span.step, span.op_count, span.end});
  }
}

StatusOr<bool> StepStore::HasStep(size_t step_idx) {
  if (index_ != nullptr && step_idx >= steps_.size()) {
    ASSIGN_OR_RETURN(bool exists, index_->IndexStep(step_idx));
    (void)exists;
    Sync();
  }
  return step_idx < steps_.size();
}

StatusOr<std::optional<size_t>> StepStore::FindStep(uint32_t step) {
  if (index_ != nullptr && !index_->indexed_all() &&
      (steps_.empty() || steps_.back().step <= step)) {
    RETURN_IF_ERROR(index_->IndexThrough(step));
    Sync();
  }
  auto it = std::lower_bound(steps_.begin(), steps_.end(), step,
                             [](const StepInfo& s, uint32_t value) { return s.step < value; });
  if (it == steps_.end() || it->step != step) return std::optional<size_t>();
  return std::optional<size_t>(static_cast<size_t>(it - steps_.begin()));
}

Status StepStore::IndexAll() {
  if (index_ != nullptr) {
    RETURN_IF_ERROR(index_->IndexAll());
    Sync();
  }
  if (damage() && !allow_damaged_) return DamageError(*damage());
  return Status::Ok();
}

StatusOr<std::shared_ptr<const StepOps>> StepStore::Ops(size_t step_idx) {
  if (index_ == nullptr) return std::shared_ptr<const StepOps>(decoded_[step_idx]);
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if (it->step_idx == step_idx) {
      cache_.splice(cache_.begin(), cache_, it);
      return std::shared_ptr<const StepOps>(cache_.front().ops);
    }
  }
  // Reuse the least recently used cached step nobody holds; drop held ones beyond the limit.
  std::shared_ptr<StepOps> ops;
  for (auto it = cache_.rbegin(); it != cache_.rend(); ++it) {
    if (it->ops.use_count() == 1) {
      ops = std::move(it->ops);
      cache_.erase(std::next(it).base());
      break;
    }
  }
  while (cache_.size() >= kCachedSteps) cache_.pop_back();
  if (ops == nullptr) ops = std::make_shared<StepOps>();
  const StepInfo& info = steps_[step_idx];
  ops->step = info.step;
  ops->end = info.end;
  std::optional<TraceDamage> damage = index_->ReadStep(step_idx, &ops->ops);
  if (damage) {
    if (!allow_damaged_) return DamageError(*damage);
    index_->Truncate(step_idx, ops->ops.size(), std::move(*damage));
    steps_.clear();
    Sync();
    cache_.clear();
    ++cuts_;
    ops->end.reset();
    return std::shared_ptr<const StepOps>(std::move(ops));
  }
  cache_.push_front(Cached{step_idx, ops});
  return std::shared_ptr<const StepOps>(std::move(ops));
}

}  // namespace upguard
