#include "watch/exchange.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "base/file.h"

namespace upguard::watch {
namespace {

constexpr uint64_t kPublishEveryNs = 250'000'000ull;
constexpr uint64_t kLeftoverNs = 60'000'000'000ull;

bool IsSummaryName(const std::string& name) {
  return name.size() > 5 && name[0] != '.' && name.compare(name.size() - 5, 5, ".json") == 0;
}

int64_t ModifiedNs(const struct stat& st) {
  return int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

// What must reach the other hosts at once: a rank's process stopped, gone, or its ring closed.
std::map<int, std::string> States(const std::vector<RankLook>& looks) {
  std::map<int, std::string> states;
  for (const RankLook& look : looks) {
    states[look.ring.rank] = look.ring.closed ? "closed" : ProcessStateName(look.process);
  }
  return states;
}

}  // namespace

Exchange::Exchange(std::string dir, std::string host, uint64_t now_ns)
    : dir_(std::move(dir)), host_(std::move(host)), opened_ns_(now_ns) {
  path_ = dir_ + "/" + host_ + ".json";
  gethostname(hostname_, sizeof(hostname_) - 1);
}

StatusOr<std::unique_ptr<Exchange>> Exchange::Open(std::string dir, std::string host,
                                                   uint64_t now_ns) {
  if (host.empty() || host[0] == '.' || host.find('/') != std::string::npos) {
    return InvalidArgument("'" + host +
                           "' cannot name a host's summary file: give a name without '/' that "
                           "does not start with '.'");
  }
  RETURN_IF_ERROR(MakeDirectories(dir));
  return std::unique_ptr<Exchange>(new Exchange(std::move(dir), std::move(host), now_ns));
}

void Exchange::Warn(const std::string& message) {
  if (warned_.insert(message).second) warnings_.push_back(message);
}

std::vector<std::string> Exchange::TakeWarnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

void Exchange::Publish(const std::vector<RankLook>& looks, uint64_t now_ns) {
  std::vector<RankLook> mine = SummaryRanks(looks);
  std::map<int, std::string> states = States(mine);
  const bool due = published_ns_ == 0 || now_ns < published_ns_ ||
                   now_ns - published_ns_ >= kPublishEveryNs || states != published_states_;
  if (!due) return;
  struct stat st = {};
  if (published_inode_ != 0 && stat(path_.c_str(), &st) == 0 && st.st_ino != published_inode_) {
    Warn("another monitor writes " + path_ +
         " too: give each monitor that shares the exchange directory a name of its own "
         "(--host-name)");
  }
  const Summary summary{host_, hostname_, int(getpid()), now_ns, std::move(mine)};
  if (Status written = WriteFileAtomically(path_, SummaryToJson(summary)); !written.ok()) {
    Warn("cannot publish this host's summary (the other hosts no longer see its ranks): " +
         written.message());
    return;
  }
  published_ns_ = now_ns;
  published_states_ = std::move(states);
  if (stat(path_.c_str(), &st) == 0) published_inode_ = st.st_ino;
}

std::vector<RankLook> Exchange::Others(uint64_t now_ns) {
  auto names = ListDirectory(dir_);
  if (!names.ok()) {
    Warn("cannot read the exchange directory: " + names.status().message());
    names = std::vector<std::string>();
  }
  for (const std::string& name : *names) {
    if (!IsSummaryName(name) || name == host_ + ".json") continue;
    const std::string file = dir_ + "/" + name;
    struct stat st = {};
    if (stat(file.c_str(), &st) != 0) continue;  // replaced meanwhile: the next look reads it
    Seen& seen = seen_[name];
    if (seen.inode == st.st_ino && seen.mtime_ns == ModifiedNs(st)) continue;  // unchanged
    seen.inode = st.st_ino;
    seen.mtime_ns = ModifiedNs(st);
    auto summary = ReadSummary(file);
    if (!summary.ok()) {
      // The last good one stays, and ages: its ranks become `unseen`.
      Warn("skipping a summary: " + summary.status().message());
      continue;
    }
    if (seen.loaded && summary->written_ns == seen.written_ns) continue;
    if (!seen.loaded && summary->written_ns + kLeftoverNs < opened_ns_) continue;
    // A summary seen for the first time may come from a monitor already gone: its own write
    // time says since when it is silent.
    seen.seen_ns = seen.loaded ? now_ns : std::min(now_ns, summary->written_ns);
    seen.written_ns = summary->written_ns;
    seen.summary = std::move(*summary);
    seen.loaded = true;
  }
  // A file removed meanwhile keeps its last summary: its ranks age into `unseen`, which is
  // what this host knows of them.
  std::map<int, std::pair<const Seen*, const RankLook*>> by_rank;
  for (const auto& [name, seen] : seen_) {
    if (!seen.loaded) continue;
    for (const RankLook& look : seen.summary.ranks) {
      auto& best = by_rank[look.ring.rank];
      if (best.first == nullptr || seen.written_ns > best.first->written_ns) {
        best = {&seen, &look};
      }
    }
  }
  std::vector<RankLook> out;
  for (const auto& [rank, found] : by_rank) {
    RankLook look = *found.second;
    look.seen_by = found.first->summary.host;
    look.seen_ns = found.first->seen_ns;
    look.written_ns = found.first->written_ns;
    out.push_back(std::move(look));
  }
  return out;
}

}  // namespace upguard::watch
