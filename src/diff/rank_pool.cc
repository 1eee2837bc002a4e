#include "diff/rank_pool.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace upguard {
namespace {

Status CallCatching(const std::function<Status(size_t)>& work, size_t rank_idx) {
  std::string what;
  try {
    return work(rank_idx);
  } catch (const std::exception& error) {
    what = error.what();
  } catch (...) {
    what = "an exception that is not a std::exception";
  }
  return Internal("internal error at rank " + std::to_string(rank_idx) + ": " + what +
                  "; please report it with the command line");
}

}  // namespace

size_t RankThreads(int jobs, size_t count) {
  const size_t wanted =
      jobs > 0 ? static_cast<size_t>(jobs) : size_t{std::thread::hardware_concurrency()};
  return std::max<size_t>(1, std::min(wanted, count));
}

Status RunRanks(size_t count, int jobs, const std::function<Status(size_t)>& work) {
  // Invariant: every rank below `next` has been handed out; `failed` is the lowest rank whose
  // work failed so far (`count` while none has), and `error` its status.
  std::mutex mutex;
  size_t next = 0;
  size_t failed = count;
  Status error;
  const auto worker = [&] {
    while (true) {
      size_t rank_idx = 0;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (next >= failed) return;  // all handed out, or a failure makes the rest moot
        rank_idx = next++;
      }
      Status status = CallCatching(work, rank_idx);
      if (status.ok()) continue;
      std::lock_guard<std::mutex> lock(mutex);
      if (rank_idx < failed) {
        failed = rank_idx;
        error = std::move(status);
      }
    }
  };
  const size_t extra_threads = RankThreads(jobs, count) - 1;
  std::vector<std::thread> threads;
  threads.reserve(extra_threads);
  for (size_t thread_idx = 0; thread_idx < extra_threads; ++thread_idx) {
    try {
      threads.emplace_back(worker);
    } catch (const std::system_error&) {
      break;  // no thread to spare: the ones started (and this one) share the ranks
    }
  }
  worker();
  for (std::thread& thread : threads) thread.join();
  return failed < count ? error : Status::Ok();
}

}  // namespace upguard
