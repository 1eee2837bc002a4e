#include "cli/watch_training_source.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace upguard {
namespace {

namespace fs = std::filesystem;

// The rank of "rank<R>.ring", or -1 for any other name (rank1.nccl.ring, a temporary file).
int RankOfRingName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank", kSuffix = ".ring";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return -1;
  }
  const std::string digits =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 9 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::atoi(digits.c_str());
}

StatusOr<int> ParseRank(const std::string& text, const std::string& whole) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 0 || value > 1'000'000) {
    return InvalidArgument("--ranks \"" + whole + "\": \"" + text +
                           "\" is not a rank (give ranks and ranges: 0,1,4-7)");
  }
  return static_cast<int>(value);
}

}  // namespace

StatusOr<std::set<int>> ParseRankList(const std::string& text) {
  std::set<int> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string part = text.substr(begin, comma - begin);
    const size_t dash = part.find('-');
    if (dash == std::string::npos) {
      ASSIGN_OR_RETURN(const int rank, ParseRank(part, text));
      out.insert(rank);
    } else {
      ASSIGN_OR_RETURN(const int first, ParseRank(part.substr(0, dash), text));
      ASSIGN_OR_RETURN(const int last, ParseRank(part.substr(dash + 1), text));
      if (last < first || last - first > 65536) {
        return InvalidArgument("--ranks \"" + text + "\": the range \"" + part +
                               "\" must run upward (4-7)");
      }
      for (int rank = first; rank <= last; ++rank) out.insert(rank);
    }
    begin = comma + 1;
  }
  return out;
}

StatusOr<std::unique_ptr<WatchTrainingSource>> WatchTrainingSource::Create(const std::string& dir,
                                                                           std::set<int> ranks) {
  if (dir.empty()) return InvalidArgument("--watch-dir needs the watch's directory");
  std::error_code error;
  if (fs::exists(dir, error) && !fs::is_directory(dir, error)) {
    return InvalidArgument("--watch-dir " + dir +
                           " is not a directory (give the DIR of `upguard watch -o DIR`)");
  }
  return std::unique_ptr<WatchTrainingSource>(
      new WatchTrainingSource((fs::path(dir) / "watch").string(), std::move(ranks)));
}

void WatchTrainingSource::Discover() {
  std::error_code error;
  for (const fs::directory_entry& file : fs::directory_iterator(ring_dir_, error)) {
    const int rank = RankOfRingName(file.path().filename().string());
    if (rank < 0 || (!ranks_.empty() && ranks_.count(rank) == 0)) continue;
    struct stat info {};
    if (stat(file.path().c_str(), &info) != 0) continue;
    auto known = rings_.find(rank);
    if (known != rings_.end() && known->second.inode == info.st_ino) continue;
    StatusOr<std::unique_ptr<watch::RingReader>> reader = watch::RingReader::Open(file.path());
    if (!reader.ok()) continue;  // not a ring yet (or not ours): look again next time
    OpenRing& ring = rings_[rank];
    ring.inode = info.st_ino;
    ring.reader = std::move(*reader);
    ring.last = machines::RankReading{rank, 0, 0, {}};
  }
}

std::vector<machines::MetricValue> WatchTrainingSource::Sample(double now) {
  Discover();
  std::vector<machines::RankReading> readings;
  for (auto& [rank, ring] : rings_) {
    const watch::RingSnapshot snapshot = ring.reader->Snapshot();
    if (snapshot.closed) continue;
    if (snapshot.activity.consistent) {
      ring.last.steps = snapshot.activity.step;
      ring.last.last_step_end_ns =
          snapshot.activity.step_ends.empty() ? 0 : snapshot.activity.step_ends.back();
    }
    machines::RankReading reading = ring.last;
    for (const watch::SlotView& slot : snapshot.slots) {
      if (slot.completed_ns == 0 && slot.state == watch::SlotState::kFailed) continue;
      reading.collectives.push_back({slot.issued_ns, slot.completed_ns});
    }
    readings.push_back(std::move(reading));
  }
  return metrics_.Update(static_cast<uint64_t>(now * 1e9), readings);
}

}  // namespace upguard
