#include "cli/progress_line.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/text.h"

namespace upguard {
namespace {

bool Interactive() {
  const char* term = std::getenv("TERM");
  return isatty(STDERR_FILENO) == 1 && !(term != nullptr && std::strcmp(term, "dumb") == 0);
}

}  // namespace

ProgressLine::ProgressLine(std::string what)
    : what_(std::move(what)), active_(Interactive()), started_(std::chrono::steady_clock::now()) {}

std::string ProgressLine::Format(const std::string& what, size_t ranks, uint32_t last_step,
                                 uint64_t steps, uint64_t ops, double seconds) {
  char rate[32];
  const double per_second = seconds > 0 ? double(ops) / seconds : 0;
  if (per_second >= 1e6) {
    std::snprintf(rate, sizeof(rate), "%.1f M ", per_second / 1e6);
  } else {
    std::snprintf(rate, sizeof(rate), "%.0f ", per_second);
  }
  return what + ": " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") + ", step " +
         std::to_string(last_step) + ", " + GroupedThousands(steps) +
         (steps == 1 ? " step" : " steps") + " compared, " + GroupedThousands(ops) + " ops (" +
         rate + "ops/s)";
}

void ProgressLine::Step(int rank, uint32_t step, uint64_t ops) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ranks_[rank] = step;
  ++steps_;
  ops_ += ops;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  drawn_ = true;
  uint32_t last = 0;
  for (const auto& [r, s] : ranks_) last = std::max(last, s);
  const double seconds = std::chrono::duration<double>(now - started_).count();
  std::fprintf(stderr, "\r\033[K%s",
               Format(what_, ranks_.size(), last, steps_, ops_, seconds).c_str());
  std::fflush(stderr);
}

void ProgressLine::Done() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!drawn_) return;
  drawn_ = false;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace upguard
