#include "watch/monitor.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "watch/ring_layout.h"

namespace upguard::watch {
namespace {

namespace fs = std::filesystem;

constexpr double kAskAfterIdleS = 0.5;  // a rank without an op this long is asked for its stack
constexpr double kAskEveryS = 1.0;

// "rank<N>.ring" (the adapter's) or "rank<N>.nccl.ring" (the NCCL profiler plugin's).
bool IsRingName(const std::string& name) {
  if (name.rfind("rank", 0) != 0) return false;
  const size_t dot = name.find('.');
  if (dot == std::string::npos || dot == 4) return false;
  const std::string suffix = name.substr(dot);
  if (suffix != ".ring" && suffix != ".nccl.ring") return false;
  return std::all_of(name.begin() + 4, name.begin() + long(dot),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

bool IsNcclRing(const std::string& name) {
  return name.size() > 10 && name.compare(name.size() - 10, 10, ".nccl.ring") == 0;
}

}  // namespace

ProcessState LocalProcessState(int pid) {
  if (pid <= 0) return ProcessState::kUnknown;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return ProcessState::kGone;
  const size_t paren = text.rfind(')');  // the command name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= text.size()) return ProcessState::kUnknown;
  const char state = text[paren + 2];
  if (state == 'Z' || state == 'X') return ProcessState::kGone;
  if (state == 'T' || state == 't') return ProcessState::kStopped;
  return ProcessState::kRunning;
}

StatusOr<std::unique_ptr<Monitor>> Monitor::Open(MonitorOptions options) {
  std::unique_ptr<Monitor> monitor(new Monitor(std::move(options)));
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  monitor->hostname_ = host;
  if (!monitor->options_.exchange_dir.empty() && !monitor->options_.post_mortem) {
    const std::string name =
        monitor->options_.host_name.empty() ? monitor->hostname_ : monitor->options_.host_name;
    ASSIGN_OR_RETURN(monitor->exchange_,
                     Exchange::Open(monitor->options_.exchange_dir, name, RealtimeNs()));
  }
  return monitor;
}

Status Monitor::OpenNewRings() {
  const fs::path dir = fs::path(options_.dir) / "watch";
  std::error_code error;
  if (!fs::is_directory(dir, error)) return Status::Ok();  // no rank started yet
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (!IsRingName(name) || readers_.count(name)) continue;
    auto reader = RingReader::Open(entry.path().string());
    if (!reader.ok()) {
      if (reader.status().code() == StatusCode::kNotFound) continue;  // gone meanwhile
      return reader.status();
    }
    readers_[name] = std::move(*reader);
  }
  return Status::Ok();
}

void Monitor::AskIdleForStacks(uint64_t now_ns) {
  for (auto& [name, reader] : readers_) {
    (void)name;
    const RingSnapshot* ring = nullptr;
    for (const RankLook& look : ranks_) {
      if (look.seen_by.empty() && look.ring.path == reader->path()) ring = &look.ring;
    }
    if (ring == nullptr || ring->closed || ring->hostname != hostname_) continue;
    const double idle =
        double(now_ns - std::min(now_ns, RingRealtime(*ring, ring->activity.last_op_ns))) / 1e9;
    const double since_asked = double(now_ns - std::min(now_ns, asked_ns_[ring->rank])) / 1e9;
    if (idle >= kAskAfterIdleS && since_asked >= kAskEveryS &&
        ring->stack.answered == ring->stack.request) {
      if (reader->RequestStack()) asked_ns_[ring->rank] = now_ns;
    }
  }
}

StatusOr<std::vector<Alert>> Monitor::Poll() {
  RETURN_IF_ERROR(OpenNewRings());
  ranks_.clear();
  uint64_t latest_beat = 0;
  std::vector<RingSnapshot> nccl;
  for (const auto& [name, reader] : readers_) {
    if (IsNcclRing(name)) {
      nccl.push_back(reader->Snapshot());
      continue;
    }
    RankLook look;
    look.ring = reader->Snapshot();
    look.process =
        look.ring.hostname == hostname_ ? LocalProcessState(look.ring.pid) : ProcessState::kUnknown;
    latest_beat = std::max(latest_beat, RingRealtime(look.ring, look.ring.heartbeat_ns));
    ranks_.push_back(std::move(look));
  }
  // The plugin's ring joins its process's look (it has no heartbeat of its own to be judged
  // by; a process with the plugin and without the adapter is not watched).
  for (RingSnapshot& ring : nccl) {
    for (RankLook& look : ranks_) {
      if (look.ring.rank != ring.rank || look.ring.pid != ring.pid) continue;
      for (SlotView& slot : ring.slots) {
        std::string comm = slot.group < ring.groups.size() ? ring.groups[slot.group].name : "?";
        look.nccl.push_back({std::move(comm), std::move(slot)});
      }
    }
  }
  const uint64_t now = options_.post_mortem ? latest_beat : RealtimeNs();
  if (exchange_ != nullptr) {
    exchange_->Publish(ranks_, now);
    // A rank whose ring is read here is seen better here than through a summary.
    std::set<int> local;
    for (const RankLook& look : ranks_) local.insert(look.ring.rank);
    for (RankLook& look : exchange_->Others(now)) {
      if (!local.count(look.ring.rank)) ranks_.push_back(std::move(look));
    }
  }
  std::sort(ranks_.begin(), ranks_.end(),
            [](const RankLook& a, const RankLook& b) { return a.ring.rank < b.ring.rank; });
  last_look_ns_ = now;
  std::vector<Alert> fresh = analyzer_.Look(ranks_, now);
  reported_.insert(reported_.end(), fresh.begin(), fresh.end());
  if (!options_.post_mortem) {
    AskIdleForStacks(now);
    if (!fresh.empty()) {
      const std::string path = (fs::path(options_.dir) / "alerts.jsonl").string();
      std::ofstream out(path, std::ios::app);
      for (const Alert& alert : fresh) out << AlertJson(alert) << "\n";
      if (!out) return IoError("cannot append to " + path + " (is the run directory writable?)");
    }
  }
  return fresh;
}

std::vector<std::string> Monitor::TakeWarnings() {
  if (exchange_ == nullptr) return {};
  return exchange_->TakeWarnings();
}

bool Monitor::AllClosed() const {
  if (ranks_.empty()) return false;
  return std::all_of(ranks_.begin(), ranks_.end(),
                     [](const RankLook& look) { return look.ring.closed; });
}

}  // namespace upguard::watch
