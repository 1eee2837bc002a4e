#include "watch/job_view.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace upguard::watch {
namespace {

double Seconds(uint64_t ns) { return double(ns) / 1e9; }

// The main thread's stack from the rank's last answer, innermost frame last; empty when it
// never answered.
std::vector<std::string> MainStack(const RingSnapshot& ring);

}  // namespace

std::string Fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

// "120 ms" or "3.4 s".
std::string Duration(double seconds) {
  return seconds < 1.0 ? Fixed(seconds * 1e3, 0) + " ms" : Fixed(seconds) + " s";
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double Percentile95(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, values.size() * 95 / 100)];
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t idx = 0; idx < ranks.size(); ++idx) {
    out += (idx ? "," : "") + std::to_string(ranks[idx]);
  }
  return out;
}

bool Done(const SlotView& slot) {
  return slot.state == SlotState::kCompleted || slot.state == SlotState::kFailed;
}

const GroupView* FindGroup(const RingSnapshot& ring, const std::string& name) {
  for (const GroupView& group : ring.groups) {
    if (group.name == name) return &group;
  }
  return nullptr;
}

std::map<CollectiveKey, Collective> Collectives(const std::vector<RankLook>& ranks) {
  std::map<CollectiveKey, Collective> out;
  for (const RankLook& look : ranks) {
    for (const SlotView& slot : look.ring.slots) {
      if (slot.group >= look.ring.groups.size()) continue;
      const std::string& group = look.ring.groups[slot.group].name;
      Collective& entry = out[{group, slot.seq}];
      entry.group = group;
      entry.seq = slot.seq;
      entry.by_rank[look.ring.rank] = &slot;
    }
  }
  return out;
}

std::string Describe(const std::string& group, const SlotView& slot) {
  std::string out = slot.op;
  if (!slot.dtype.empty()) out += " " + slot.dtype + "[" + std::to_string(slot.count) + "]";
  out += " in group " + group + ", seq " + std::to_string(slot.seq);
  if (!slot.call_site.empty()) out += " (" + slot.call_site + ")";
  return out;
}

std::string Signature(const SlotView& slot, bool with_count) {
  std::string out = slot.op + " " + slot.dtype;
  if (with_count) out += "[" + std::to_string(slot.count) + "]";
  return out;
}

// Collectives whose inputs may differ between ranks by design (a root's list, split sizes).
bool CountsMayDiffer(const std::string& op) {
  for (const char* kind : {"gather", "scatter", "alltoall", "alltoallbase", "send", "recv",
                           "recvanysource", "allgathercoalesced", "allreducecoalesced"}) {
    if (op == kind) return true;
  }
  return false;
}

// The group's members: the global ranks any ring lists for it (sorted), else every ring.
std::vector<int> Members(const std::vector<RankLook>& ranks, const std::string& group) {
  for (const RankLook& look : ranks) {
    const GroupView* view = FindGroup(look.ring, group);
    if (view != nullptr && !view->members.empty() && view->members.size() == view->size) {
      std::vector<int> members = view->members;
      std::sort(members.begin(), members.end());
      return members;
    }
  }
  std::vector<int> all;
  for (const RankLook& look : ranks) all.push_back(look.ring.rank);
  return all;
}

const RankLook* RankOf(const std::vector<RankLook>& ranks, int rank) {
  for (const RankLook& look : ranks) {
    if (look.ring.rank == rank) return &look;
  }
  return nullptr;
}

std::string ChannelProgress(const std::vector<RankLook>& ranks, const std::vector<int>& members,
                            const SlotView& slot) {
  std::string text;
  for (int member : members) {
    const RankLook* look = RankOf(ranks, member);
    if (look == nullptr) continue;
    for (const NcclCall& call : look->nccl) {
      if (Done(call.slot) || call.slot.op != slot.op || call.slot.bytes != slot.bytes) continue;
      std::string channels;
      for (const ChannelView& channel : call.slot.channels) {
        if (channel.send_done >= channel.send_steps && channel.recv_done >= channel.recv_steps) {
          continue;
        }
        channels += std::string(channels.empty() ? "" : ", ") + "channel " +
                    std::to_string(channel.channel) + " sent " + std::to_string(channel.send_done) +
                    " of " + std::to_string(channel.send_steps) + " steps, received " +
                    std::to_string(channel.recv_done) + " of " + std::to_string(channel.recv_steps);
      }
      text += "; NCCL on rank " + std::to_string(member) + " (" + call.comm + " " + call.slot.op +
              "): " + (channels.empty() ? "every channel done" : channels);
      break;
    }
  }
  return text;
}

namespace {

std::vector<std::string> MainStack(const RingSnapshot& ring) {
  std::vector<std::string> frames;
  std::istringstream text(ring.stack.text);
  std::string line;
  bool main = false;
  while (std::getline(text, line)) {
    if (line.rfind("thread ", 0) == 0) {
      if (main) break;
      main = line.find("MainThread") != std::string::npos;
      continue;
    }
    // A line may be cut (the text is read while the rank may be writing a new answer).
    const size_t text_at = line.find_first_not_of(' ');
    if (main && text_at != std::string::npos) frames.push_back(line.substr(text_at));
  }
  return frames;
}

}  // namespace

bool Unseen(const RankLook& look, uint64_t now_ns, const AnalyzerOptions& options) {
  return look.seen_ns != 0 && Seconds(now_ns - std::min(now_ns, look.seen_ns)) > options.stale_s;
}

Doing WhatItDoes(const RankLook& look, uint64_t now_ns, const AnalyzerOptions& options) {
  const RingSnapshot& ring = look.ring;
  const ActivityView& act = ring.activity;
  const std::string where = "at step " + std::to_string(act.step) +
                            (act.last_op.empty() ? "" : ", last op " + act.last_op);
  if (Unseen(look, now_ns, options)) {
    return {"unseen",
            "the monitor of its host " + look.seen_by + " has not reported for " +
                Duration(Seconds(now_ns - std::min(now_ns, look.seen_ns))) +
                " (that host or its monitor is gone): what it does now is unknown; last seen " +
                where,
            {}};
  }
  // A rank on another host as its host's monitor last saw it, timed on that host's clock: no
  // delay of the exchange and no offset between the hosts' clocks enters its ages.
  const uint64_t at = look.seen_by.empty() ? now_ns : look.written_ns;
  const std::string pid = "process " + std::to_string(ring.pid);
  const double beat_age = Seconds(at - std::min(at, RingRealtime(ring, ring.heartbeat_ns)));
  if (look.process == ProcessState::kGone) {
    return {"exited", pid + " is gone without closing its ring (killed or crashed) " + where, {}};
  }
  if (look.process == ProcessState::kStopped) {
    return {"stopped", pid + " is stopped (SIGSTOP or a debugger) " + where, {}};
  }
  if (beat_age > options.stale_s) {
    return {"unresponsive", "its heartbeat stopped " + Duration(beat_age) + " ago " + where, {}};
  }
  for (const SlotView& slot : ring.slots) {
    if (!Done(slot) && slot.group < ring.groups.size()) {
      const double age = Seconds(at - std::min(at, RingRealtime(ring, slot.issued_ns)));
      return {"waiting",
              "it waits " + Duration(age) + " in " + Describe(ring.groups[slot.group].name, slot),
              {}};
    }
  }
  if (act.dataloader_since_ns != 0) {
    const double waited = Seconds(at - std::min(at, RingRealtime(ring, act.dataloader_since_ns)));
    return {"dataloader",
            "it waits " + Duration(waited) + " for a batch from its DataLoader " + where,
            {}};
  }
  const double idle = Seconds(at - std::min(at, RingRealtime(ring, act.last_op_ns)));
  if (act.ops > 0 && idle < options.idle_s) {
    return {"compute",
            "it computes (last op " + act.last_op + " " + Duration(idle) + " ago) at step " +
                std::to_string(act.step),
            {}};
  }
  Doing python{"python", "it runs Python code and no op for " + Duration(idle) + " " + where,
               MainStack(ring)};
  if (!python.stack.empty()) python.detail += "; innermost frame " + python.stack.back();
  return python;
}

}  // namespace upguard::watch
