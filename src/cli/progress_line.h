// A progress line on stderr for long commands (`upguard diff`): the ranks and steps reached and
// the ops per second, redrawn in place at most 10 times a second, and erased when done. Only
// when stderr is a terminal (not dumb): logs and pipes get nothing.
//
//   ProgressLine progress("upguard diff");
//   options.diff.progress = progress.Callback();
//   ... ConcludeDiff(a, b, options) ...
//   progress.Done();
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace upguard {

class ProgressLine {
 public:
  explicit ProgressLine(std::string what);
  ~ProgressLine() { Done(); }

  // Whether anything is drawn (stderr is a terminal).
  bool active() const { return active_; }
  // Thread-safe: a step of `rank` holding `ops` ops was compared.
  void Step(int rank, uint32_t step, uint64_t ops);
  std::function<void(int, uint32_t, uint64_t)> Callback() {
    return [this](int rank, uint32_t step, uint64_t ops) { Step(rank, step, ops); };
  }
  // Erases the line (once).
  void Done();

  // The line for these counts (tested without a terminal).
  static std::string Format(const std::string& what, size_t ranks, uint32_t last_step,
                            uint64_t steps, uint64_t ops, double seconds);

 private:
  std::string what_;
  bool active_ = false;
  bool drawn_ = false;
  std::mutex mu_;
  std::map<int, uint32_t> ranks_;  // the last step of each rank seen
  uint64_t steps_ = 0, ops_ = 0;
  std::chrono::steady_clock::time_point started_, last_draw_;
};

}  // namespace upguard
