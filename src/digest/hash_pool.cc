#include "digest/hash_pool.h"

#include <algorithm>

namespace upguard {

const StatusOr<TensorDigest>& PendingDigest::Wait() const {
  if (!done()) pool_->Wait(this);
  return result_;
}

HashPool::HashPool(int threads, const DigestOptions& options)
    : options_{options.stats, /*threads=*/1, options.stats_version} {
  for (int idx = 0; idx < std::max(threads, 1); ++idx) workers_.emplace_back([this] { Work(); });
}

HashPool::~HashPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

std::shared_ptr<const PendingDigest> HashPool::Submit(const TensorView& view,
                                                      std::shared_ptr<const void> owner,
                                                      const void* key) {
  auto task = std::make_unique<Task>();
  task->result.reset(new PendingDigest(this));
  std::shared_ptr<const PendingDigest> handle = task->result;
  if (view.ndim < 0 || view.ndim > kMaxDigestDims) {  // DigestTensor's own error, at once
    task->result->result_ = DigestTensor(view, options_);
    task->result->done_.store(true, std::memory_order_release);
    return handle;
  }
  task->owner = std::move(owner);
  task->key = key;
  task->dtype = view.dtype;
  task->ndim = view.ndim;
  std::copy(view.sizes, view.sizes + view.ndim, task->sizes);
  std::copy(view.strides, view.strides + view.ndim, task->strides);
  task->data = view.data;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++keys_pending_[key];
    pending_.fetch_add(1, std::memory_order_release);
    queue_.push_back(std::move(task));
    wake = sleeping_ > 0;
  }
  if (wake) work_cv_.notify_one();
  return handle;
}

void HashPool::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    if (queue_.empty()) {
      if (stop_) return;
      ++sleeping_;
      work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      --sleeping_;
      continue;
    }
    std::unique_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Run(std::move(task));
    lock.lock();
  }
}

void HashPool::Run(std::unique_ptr<Task> task) {
  const TensorView view{task->dtype, task->sizes, task->strides, task->ndim, task->data};
  task->result->result_ = DigestTensor(view, options_);
  task->owner.reset();  // the memory may go as soon as its digest is made
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    task->result->done_.store(true, std::memory_order_release);
    auto found = keys_pending_.find(task->key);
    if (found != keys_pending_.end() && --found->second == 0) keys_pending_.erase(found);
    pending_.fetch_sub(1, std::memory_order_release);
    notify = waiters_ > 0;
  }
  if (notify) done_cv_.notify_all();
}

std::unique_ptr<HashPool::Task> HashPool::TakeQueued(const PendingDigest* result, const void* key) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (result != nullptr ? (*it)->result.get() == result : (*it)->key == key) {
      std::unique_ptr<Task> task = std::move(*it);
      queue_.erase(it);
      return task;
    }
  }
  return nullptr;
}

template <typename Until, typename Take>
void HashPool::HelpUntil(Until until, Take take) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!until()) {
    if (std::unique_ptr<Task> task = take()) {  // not started: run it here
      lock.unlock();
      Run(std::move(task));
      lock.lock();
      continue;
    }
    ++waiters_;  // a worker runs it now
    done_cv_.wait(lock);
    --waiters_;
  }
}

void HashPool::Wait(const PendingDigest* result) {
  HelpUntil([result] { return result->done(); }, [&] { return TakeQueued(result, nullptr); });
}

void HashPool::WaitFor(const void* key) {
  if (pending_.load(std::memory_order_acquire) == 0) return;
  HelpUntil([&] { return keys_pending_.count(key) == 0; },
            [&] { return TakeQueued(nullptr, key); });
}

void HashPool::WaitAll() {
  if (pending_.load(std::memory_order_acquire) == 0) return;
  HelpUntil([this] { return pending_.load(std::memory_order_acquire) == 0; },
            [this] {
              std::unique_ptr<Task> task;
              if (!queue_.empty()) {
                task = std::move(queue_.front());
                queue_.pop_front();
              }
              return task;
            });
}

}  // namespace upguard
