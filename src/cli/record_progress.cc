#include "cli/record_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "base/file.h"
#include "base/text.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

constexpr auto kRedraw = std::chrono::milliseconds(250);
constexpr auto kRateWindow = std::chrono::seconds(10);

// "rank<N>.progress"
bool IsProgressName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank", kSuffix = ".progress";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return false;
  }
  const std::string digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

RecordProgress::RecordProgress(std::string dir, std::unique_ptr<BottomRow> row)
    : dir_(std::move(dir)), row_(std::move(row)), started_(std::chrono::steady_clock::now()) {}

std::unique_ptr<RecordProgress> RecordProgress::Begin(bool draw) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && tmp[0] != '\0' ? tmp : "/tmp") + "/upguard-progress-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return nullptr;
  std::unique_ptr<BottomRow> row =
      draw && isatty(STDERR_FILENO) == 1 ? BottomRow::Reserve() : nullptr;
  return std::unique_ptr<RecordProgress>(new RecordProgress(pattern, std::move(row)));
}

RecordProgress::~RecordProgress() {
  row_.reset();
  // Only what the ranks were asked to write, then the directory if that emptied it.
  if (StatusOr<std::vector<std::string>> names = ListDirectory(dir_); names.ok()) {
    for (const std::string& name : *names) {
      if (IsProgressName(name)) unlink((dir_ + "/" + name).c_str());
    }
  }
  rmdir(dir_.c_str());
}

std::string RecordProgress::Line(const std::vector<RankProgress>& ranks, double ops_per_second,
                                 double seconds) {
  if (ranks.empty()) {
    return "upguard record: waiting for the command to start recording (" +
           std::to_string(static_cast<int64_t>(seconds)) + " s)";
  }
  int64_t low = ranks.front().step, high = low;
  uint64_t recorded = 0, fingerprinted = 0, ops = 0, bytes = 0;
  size_t closed = 0;
  for (const RankProgress& rank : ranks) {
    low = std::min(low, rank.step);
    high = std::max(high, rank.step);
    recorded += rank.steps_recorded;
    fingerprinted += rank.steps_fingerprinted;
    ops += rank.ops;
    bytes += rank.trace_bytes;
    closed += rank.closed ? 1 : 0;
  }
  std::string line =
      "upguard record: " + std::to_string(ranks.size()) + (ranks.size() == 1 ? " rank" : " ranks");
  if (closed > 0) line += " (" + std::to_string(closed) + " done)";
  line += low == high ? ", step " + std::to_string(high)
                      : ", steps " + std::to_string(low) + ".." + std::to_string(high);
  line += ", " + GroupedThousands(recorded) + (recorded == 1 ? " step" : " steps") + " recorded";
  const size_t stopped = static_cast<size_t>(std::count_if(
      ranks.begin(), ranks.end(), [](const RankProgress& rank) { return rank.stopped; }));
  if (stopped > 0) line += " (recording stopped on " + std::to_string(stopped) + ")";
  if (fingerprinted > 0) line += ", " + GroupedThousands(fingerprinted) + " fingerprinted";
  line += ", " + GroupedThousands(ops) + " ops";
  if (ops_per_second >= 0) {
    line += " (" + GroupedThousands(static_cast<uint64_t>(ops_per_second + 0.5)) + " ops/s)";
  }
  return line + ", " + HumanBytes(bytes);
}

const std::vector<RankProgress>& RecordProgress::Read() {
  StatusOr<std::vector<std::string>> names = ListDirectory(dir_);
  if (names.ok()) {
    for (const std::string& name : *names) {
      if (!IsProgressName(name)) continue;
      StatusOr<RankProgress> read = ReadProgress(dir_ + "/" + name);
      if (!read.ok()) continue;  // not written yet, or read while rewritten: the last one holds
      auto it = std::find_if(ranks_.begin(), ranks_.end(),
                             [&](const RankProgress& r) { return r.rank == read->rank; });
      if (it == ranks_.end()) {
        ranks_.push_back(*read);
        std::sort(ranks_.begin(), ranks_.end(),
                  [](const RankProgress& x, const RankProgress& y) { return x.rank < y.rank; });
      } else {
        *it = *read;
      }
    }
  }
  return ranks_;
}

void RecordProgress::Poll() {
  if (row_ == nullptr) return;  // nothing to draw: the records are read at the end
  Read();
  const auto now = std::chrono::steady_clock::now();
  uint64_t ops = 0;
  for (const RankProgress& rank : ranks_) ops += rank.ops;
  // From the first record on: the time before it is the command's start, not recording.
  if (!ranks_.empty() && (samples_.empty() || samples_.back().second != ops)) {
    samples_.emplace_back(now, ops);
  }
  while (samples_.size() > 2 && now - samples_[1].first > kRateWindow) samples_.pop_front();
  if (now - last_draw_ < kRedraw) return;
  last_draw_ = now;
  double rate = -1;
  if (samples_.size() >= 2 && samples_.back().first > samples_.front().first) {
    rate = double(samples_.back().second - samples_.front().second) /
           std::chrono::duration<double>(samples_.back().first - samples_.front().first).count();
  }
  std::string line = Line(ranks_, rate, std::chrono::duration<double>(now - started_).count());
  if (line == drawn_) return;  // a terminal that is not redrawn for nothing
  row_->Draw(line);
  drawn_ = std::move(line);
}

std::string StoppedRanksNote(const std::vector<RankProgress>& ranks) {
  std::vector<std::string> stops;
  for (const RankProgress& rank : ranks) {
    if (!rank.stopped) continue;
    stops.push_back("rank " + std::to_string(rank.rank) + " stopped recording at step " +
                    std::to_string(rank.step) + " (" +
                    std::string(StopReasonPhrase(rank.stop_reason)) + ")");
  }
  if (stops.empty()) return "";
  std::string note = "incomplete: ";
  constexpr size_t kNamed = 4;  // a job of many ranks on one full disk: the first few
  for (size_t stop_idx = 0; stop_idx < stops.size() && stop_idx < kNamed; ++stop_idx) {
    note += (stop_idx > 0 ? ", " : "") + stops[stop_idx];
  }
  if (stops.size() > kNamed) note += " and " + std::to_string(stops.size() - kNamed) + " more";
  return note + (stops.size() == 1 ? ": its trace ends there" : ": each trace ends there");
}

}  // namespace upguard
