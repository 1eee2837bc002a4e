#include "watch/report.h"

#include <algorithm>
#include <cstdio>

namespace upguard::watch {
namespace {

constexpr size_t kRecent = 24;  // collectives of each rank in the report's `recent`

const char* ProcessName(const RankLook& look) {
  if (look.ring.closed) return "ended";
  return ProcessStateName(look.process);
}

double Ago(const RingSnapshot& ring, uint64_t monotonic_ns, uint64_t now_ns) {
  const uint64_t at = RingRealtime(ring, monotonic_ns);
  return double(now_ns - std::min(now_ns, at)) / 1e9;
}

// The collectives the rank has issued and not completed, oldest first.
std::vector<const SlotView*> InFlight(const RingSnapshot& ring) {
  std::vector<const SlotView*> out;
  for (const SlotView& slot : ring.slots) {
    if (slot.state == SlotState::kIssued || slot.state == SlotState::kStarted) {
      out.push_back(&slot);
    }
  }
  return out;
}

std::string GroupName(const RingSnapshot& ring, const SlotView& slot) {
  return slot.group < ring.groups.size() ? ring.groups[slot.group].name : "?";
}

}  // namespace

std::string RenderWatchText(const std::vector<Alert>& findings, const std::vector<RankLook>& ranks,
                            uint64_t now_ns) {
  std::string out = "upguard watch: " + std::to_string(ranks.size()) + " rank" +
                    (ranks.size() == 1 ? "" : "s") + ", " +
                    (findings.empty() ? std::string("no findings")
                                      : std::to_string(findings.size()) + " finding" +
                                            (findings.size() == 1 ? "" : "s")) +
                    "\n";
  for (const Alert& alert : findings) out += "  " + AlertLine(alert).substr(15) + "\n";
  out += "ranks:\n";
  char line[512];
  for (const RankLook& look : ranks) {
    const RingSnapshot& ring = look.ring;
    std::snprintf(line, sizeof(line), "  rank %d  pid %d  %s  step %lld", ring.rank, ring.pid,
                  ProcessName(look), static_cast<long long>(ring.activity.step));
    out += line;
    if (!ring.activity.last_op.empty()) {
      std::snprintf(line, sizeof(line), "  last op %s %.1f s ago", ring.activity.last_op.c_str(),
                    Ago(ring, ring.activity.last_op_ns, now_ns));
      out += line;
    }
    for (const SlotView* slot : InFlight(ring)) {
      std::snprintf(line, sizeof(line), "  in %s (group %s, seq %llu) for %.1f s", slot->op.c_str(),
                    GroupName(ring, *slot).c_str(), static_cast<unsigned long long>(slot->seq),
                    Ago(ring, slot->issued_ns, now_ns));
      out += line;
    }
    out += "\n";
  }
  return out;
}

nlohmann::ordered_json WatchToJson(const std::string& dir, const std::vector<Alert>& findings,
                                   const std::vector<RankLook>& ranks, uint64_t now_ns) {
  nlohmann::ordered_json out;
  out["schema"] = "upguard.watch/1";
  out["dir"] = dir;
  out["time"] = IsoTime(now_ns);
  out["findings"] = nlohmann::ordered_json::array();
  for (const Alert& alert : findings) {
    out["findings"].push_back(nlohmann::ordered_json::parse(AlertJson(alert)));
  }
  out["ranks"] = nlohmann::ordered_json::array();
  for (const RankLook& look : ranks) {
    const RingSnapshot& ring = look.ring;
    nlohmann::ordered_json rank;
    rank["rank"] = ring.rank;
    rank["pid"] = ring.pid;
    rank["host"] = ring.hostname;
    rank["process"] = ProcessName(look);
    rank["step"] = ring.activity.step;
    rank["last_op"] = ring.activity.last_op;
    rank["collectives"] = ring.entries;
    rank["in_flight"] = nlohmann::ordered_json::array();
    for (const SlotView* slot : InFlight(ring)) {
      rank["in_flight"].push_back({{"op", slot->op},
                                   {"group", GroupName(ring, *slot)},
                                   {"seq", slot->seq},
                                   {"dtype", slot->dtype},
                                   {"count", slot->count},
                                   {"call_site", slot->call_site},
                                   {"seconds", Ago(ring, slot->issued_ns, now_ns)}});
    }
    // The recent collectives, oldest first: the page's timeline (report_html.h).
    rank["recent"] = nlohmann::ordered_json::array();
    const size_t first = ring.slots.size() > kRecent ? ring.slots.size() - kRecent : 0;
    for (size_t idx = first; idx < ring.slots.size(); ++idx) {
      const SlotView& slot = ring.slots[idx];
      if (slot.state == SlotState::kEmpty || slot.issued_ns == 0) continue;
      const bool done = slot.completed_ns != 0 && slot.state != SlotState::kIssued &&
                        slot.state != SlotState::kStarted;
      rank["recent"].push_back(
          {{"op", slot.op},
           {"group", GroupName(ring, slot)},
           {"seq", slot.seq},
           {"issued", Ago(ring, slot.issued_ns, now_ns)},
           {"completed", done ? nlohmann::ordered_json(Ago(ring, slot.completed_ns, now_ns))
                              : nlohmann::ordered_json(nullptr)},
           {"call_site", slot.call_site}});
    }
    out["ranks"].push_back(rank);
  }
  return out;
}

}  // namespace upguard::watch
