// A small persistent pool of threads that digests tensors while their caller goes on (issue 19,
// part 3): the recorder hands a large tensor over, gets a PendingDigest back at once, and writes
// the op's record when the digest is done, in order.
//
// The caller promises that the tensor's memory stays alive and unchanged until its digest is
// done: `owner` keeps the memory alive (a reference to the framework's buffer), and before
// anything writes the memory named `key` (the framework's storage) the writer calls
// WaitFor(key). A task not yet started when someone waits for it runs on the waiting thread, so
// a wait never sits behind a sleeping worker's wake-up (60-100 us on a virtual machine,
// measured).
//
//   HashPool pool(/*threads=*/2, options);
//   std::shared_ptr<const PendingDigest> pending = pool.Submit(view, owner, storage);
//   ...                          // the caller goes on
//   pool.WaitFor(storage);       // before a write to the storage
//   const StatusOr<TensorDigest>& digest = pending->Wait();
//
// A digest made here equals DigestTensor's on the calling thread: the same function, run with
// one thread (the digest does not depend on the thread count).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "digest/digest.h"

namespace upguard {

class HashPool;

// The digest of a tensor handed to a HashPool: done once, read-only after.
class PendingDigest {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Blocks until the digest is done (running it here when no worker has started it).
  const StatusOr<TensorDigest>& Wait() const;

 private:
  friend class HashPool;
  explicit PendingDigest(HashPool* pool) : pool_(pool) {}
  HashPool* pool_;
  std::atomic<bool> done_{false};
  StatusOr<TensorDigest> result_{TensorDigest{}};
};

class HashPool {
 public:
  // `threads` >= 1 workers; `options.threads` is ignored (each digest runs on one thread).
  HashPool(int threads, const DigestOptions& options);
  // Finishes every task first.
  ~HashPool();
  HashPool(const HashPool&) = delete;
  HashPool& operator=(const HashPool&) = delete;

  // Digests `view` on a worker. Its sizes and strides are copied; its memory is read later:
  // `owner` keeps it alive until then, `key` names it for WaitFor.
  std::shared_ptr<const PendingDigest> Submit(const TensorView& view,
                                              std::shared_ptr<const void> owner, const void* key);
  // Returns when no digest of memory named `key` is pending; one atomic load when none at all is.
  void WaitFor(const void* key);
  // Returns when every digest submitted so far is done.
  void WaitAll();
  // Digests submitted and not yet done.
  uint64_t pending() const { return pending_.load(std::memory_order_acquire); }

 private:
  friend class PendingDigest;
  struct Task {
    std::shared_ptr<PendingDigest> result;
    std::shared_ptr<const void> owner;
    const void* key = nullptr;
    DType dtype = DType::kInvalid;
    int ndim = 0;
    int64_t sizes[kMaxDigestDims] = {};
    int64_t strides[kMaxDigestDims] = {};
    const void* data = nullptr;
  };

  void Work();
  // Requires mu_ held by `lock`: takes the queued task of `result` (or of `key` when `result` is
  // null) off the queue; null when none is queued.
  std::unique_ptr<Task> TakeQueued(const PendingDigest* result, const void* key);
  // Digests `task` without the lock, then marks it done.
  void Run(std::unique_ptr<Task> task);
  void Wait(const PendingDigest* result);
  // Until `until()` (checked under mu_): runs what `take()` (under mu_) gives, else sleeps
  // until a task is done.
  template <typename Until, typename Take>
  void HelpUntil(Until until, Take take);

  const DigestOptions options_;
  std::mutex mu_;
  std::condition_variable work_cv_;                    // a task was queued, or the pool stops
  std::condition_variable done_cv_;                    // a task is done
  std::deque<std::unique_ptr<Task>> queue_;            // guarded by mu_
  std::unordered_map<const void*, int> keys_pending_;  // guarded by mu_: queued or running
  int sleeping_ = 0;                                   // guarded by mu_: workers waiting
  int waiters_ = 0;                                    // guarded by mu_: threads in done_cv_
  bool stop_ = false;                                  // guarded by mu_
  std::atomic<uint64_t> pending_{0};
  std::vector<std::thread> workers_;
};

}  // namespace upguard
