#include "watch/analyzer.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "watch/job_view.h"

namespace upguard::watch {
namespace {

double Seconds(uint64_t ns) { return double(ns) / 1e9; }

// How long a stall alert on a rank in Python waits for the rank's stack (Stalls).
constexpr double kStackWaitS = 1.5;

}  // namespace

const char* ProcessStateName(ProcessState state) {
  switch (state) {
    case ProcessState::kRunning:
      return "running";
    case ProcessState::kStopped:
      return "stopped";
    case ProcessState::kGone:
      return "gone";
    case ProcessState::kUnknown:
      break;
  }
  return "unknown";
}

uint64_t RingRealtime(const RingSnapshot& ring, uint64_t monotonic_ns) {
  return ring.start_realtime_ns + (monotonic_ns - ring.start_monotonic_ns);
}

std::vector<Alert> Analyzer::Look(const std::vector<RankLook>& ranks, uint64_t now_ns) {
  current_.clear();
  for (const RankLook& look : ranks) {
    const uint64_t bytes = look.ring.net.tx_bytes + look.ring.net.rx_bytes;
    // Bytes "moved" when the counters changed within the last 2 s: one look may come before
    // the rank's next sample, and a quiet link must not be named for that.
    constexpr uint64_t kQuietNs = 2'000'000'000ull;
    auto last = last_net_.find(look.ring.rank);
    if (last == last_net_.end() || last->second.first != bytes) {
      last_net_[look.ring.rank] = {bytes, now_ns};
    }
    net_moved_[look.ring.rank] =
        now_ns - std::min(now_ns, last_net_[look.ring.rank].second) < kQuietNs;
    auto seen = throttled_.find(look.ring.rank);
    if (seen != throttled_.end() && look.ring.net.throttled > seen->second) {
      throttled_at_[look.ring.rank] = now_ns;
    }
    throttled_[look.ring.rank] = look.ring.net.throttled;
  }
  Mismatches(ranks);
  Dead(ranks, now_ns);
  Stalls(ranks, now_ns);
  Stragglers(ranks);
  Throughput(ranks, now_ns);
  std::vector<Alert> fresh;
  for (Alert& alert : current_) {
    alert.time_ns = now_ns;
    if (reported_.insert(alert.key).second) fresh.push_back(alert);
  }
  return fresh;
}

void Analyzer::Mismatches(const std::vector<RankLook>& ranks) {
  for (const auto& [key, collective] : Collectives(ranks)) {
    if (collective.by_rank.size() < 2) continue;
    // The first rank's signature is the reference: on a tie the higher ranks are named.
    const SlotView& reference = *collective.by_rank.begin()->second;
    std::map<std::string, std::vector<int>> by_signature;
    for (const auto& [rank, slot] : collective.by_rank) {
      const bool counts = !CountsMayDiffer(slot->op) && !CountsMayDiffer(reference.op);
      by_signature[Signature(*slot, counts)].push_back(rank);
    }
    if (by_signature.size() < 2) continue;
    const bool counts = !CountsMayDiffer(reference.op);
    const std::string reference_signature = Signature(reference, counts);
    size_t best = by_signature[reference_signature].size();
    std::string majority = reference_signature;
    for (const auto& [signature, members] : by_signature) {
      if (members.size() > best) best = members.size(), majority = signature;
    }
    std::vector<int> odd;
    std::string others;
    for (const auto& [signature, members] : by_signature) {
      if (signature == majority) continue;
      odd.insert(odd.end(), members.begin(), members.end());
      others += (others.empty() ? "" : "; ") + RankList(members) + " issued " + signature;
    }
    std::sort(odd.begin(), odd.end());
    Alert alert;
    alert.trigger = "mismatch";
    alert.cause = "mismatch";
    alert.ranks = odd;
    alert.collective = Describe(collective.group, reference);
    alert.detail = "seq " + std::to_string(collective.seq) + " of group " + collective.group +
                   ": " + RankList(by_signature[majority]) + " issued " + majority + ", " + others;
    alert.key = "mismatch:" + collective.group + ":" + std::to_string(collective.seq);
    current_.push_back(alert);
  }
}

void Analyzer::Dead(const std::vector<RankLook>& ranks, uint64_t now_ns) {
  for (const RankLook& look : ranks) {
    if (look.ring.closed) continue;
    Doing doing = WhatItDoes(look, now_ns, options_);
    if (doing.cause != "exited" && doing.cause != "stopped" && doing.cause != "unresponsive") {
      continue;
    }
    Alert alert;
    alert.trigger = "dead";
    alert.cause = doing.cause;
    alert.ranks = {look.ring.rank};
    alert.detail = "rank " + std::to_string(look.ring.rank) + ": " + doing.detail;
    alert.key = "dead:" + std::to_string(look.ring.rank) + ":" + doing.cause;
    current_.push_back(alert);
  }
}

void Analyzer::Stalls(const std::vector<RankLook>& ranks, uint64_t now_ns) {
  // Recent durations per (group, op), every rank's completed collectives.
  std::map<std::pair<std::string, std::string>, std::vector<double>> durations;
  for (const RankLook& look : ranks) {
    for (const SlotView& slot : look.ring.slots) {
      if (!Done(slot) || slot.group >= look.ring.groups.size()) continue;
      durations[{look.ring.groups[slot.group].name, slot.op}].push_back(
          Seconds(slot.completed_ns - slot.issued_ns));
    }
  }
  std::set<std::string> stalled_groups;
  for (const auto& [key, collective] : Collectives(ranks)) {
    if (stalled_groups.count(collective.group)) continue;  // its oldest stall only
    const SlotView* oldest = nullptr;
    double age = 0;
    std::vector<int> waiting;
    for (const auto& [rank, slot] : collective.by_rank) {
      if (Done(*slot)) continue;
      const RankLook* look = RankOf(ranks, rank);
      if (Unseen(*look, now_ns, options_)) continue;  // its wait is not seen now
      const double waited =
          Seconds(now_ns - std::min(now_ns, RingRealtime(look->ring, slot->issued_ns)));
      std::vector<double>& recent = durations[{collective.group, slot->op}];
      const double threshold =
          std::max(options_.stall_floor_s, options_.stall_factor * Percentile95(recent));
      if (waited < threshold) continue;
      waiting.push_back(rank);
      if (waited > age) age = waited, oldest = slot;
    }
    if (oldest == nullptr) continue;
    stalled_groups.insert(collective.group);
    // Who never issued it. A rank unseen since before it completed there may have: it is
    // named only when no rank in sight never issued it.
    std::vector<int> missing, unseen;
    for (int member : Members(ranks, collective.group)) {
      const RankLook* look = RankOf(ranks, member);
      const GroupView* group = look ? FindGroup(look->ring, collective.group) : nullptr;
      if (look == nullptr || group == nullptr || group->issued_seq < collective.seq) {
        (look && Unseen(*look, now_ns, options_) ? unseen : missing).push_back(member);
      } else if (Unseen(*look, now_ns, options_) && group->completed_seq < collective.seq) {
        unseen.push_back(member);
      }
    }
    const std::vector<int> named = missing.empty() ? unseen : missing;
    missing.insert(missing.end(), unseen.begin(), unseen.end());
    Alert alert;
    alert.trigger = "stall";
    alert.collective = Describe(collective.group, *oldest);
    alert.key = "stall:" + collective.group + ":" + std::to_string(collective.seq);
    const std::string waits =
        RankList(waiting) + " wait" + (waiting.size() == 1 ? "s " : " ") + Duration(age) + " in it";
    if (!missing.empty()) {
      alert.ranks = named;
      std::string doing_text;
      for (int member : missing) {
        const RankLook* look = RankOf(ranks, member);
        Doing doing = look ? WhatItDoes(*look, now_ns, options_)
                           : Doing{"no_ring",
                                   "it wrote no watch ring (not started, or "
                                   "started without upguard)",
                                   {}};
        const bool is_named = std::count(named.begin(), named.end(), member) > 0;
        const bool in_sight = std::count(unseen.begin(), unseen.end(), member) == 0;
        if (alert.cause.empty() && is_named) alert.cause = doing.cause, alert.stack = doing.stack;
        doing_text += "; rank " + std::to_string(member) +
                      (in_sight ? " never issued it: " : " may not have issued it: ") +
                      doing.detail;
      }
      alert.detail = waits + doing_text;
      // A rank in Python answers the monitor's request for its stack within milliseconds, or
      // later when its machine is loaded: the alert waits for the answer (at most kStackWaitS)
      // so that it names the line the rank runs.
      const RankLook* culprit = named.empty() ? nullptr : RankOf(ranks, named.front());
      if (alert.cause == "python" && alert.stack.empty() && culprit != nullptr &&
          culprit->ring.stack.request != culprit->ring.stack.answered) {
        const uint64_t since = stack_wait_.emplace(alert.key, now_ns).first->second;
        if (Seconds(now_ns - std::min(now_ns, since)) < kStackWaitS) continue;
      }
    } else {
      // Every member issued it: a member that cannot take part any more (stopped, gone, its
      // heartbeat stale) holds it; else the transfer itself does not finish.
      std::vector<int> down, quiet, halted;
      std::string halted_text;
      for (int member : Members(ranks, collective.group)) {
        const RankLook* look = RankOf(ranks, member);
        if (look == nullptr || Unseen(*look, now_ns, options_)) continue;
        Doing doing = WhatItDoes(*look, now_ns, options_);
        if (doing.cause == "stopped" || doing.cause == "exited" || doing.cause == "unresponsive") {
          if (halted.empty()) alert.cause = doing.cause;
          halted.push_back(member);
          halted_text += "; rank " + std::to_string(member) + " cannot finish it: " + doing.detail;
          continue;
        }
        if (look->ring.net.links > 0 && look->ring.net.links_up < look->ring.net.links) {
          down.push_back(member);
        } else if (!net_moved_[member]) {
          quiet.push_back(member);
        }
      }
      if (!halted.empty()) {
        alert.ranks = halted;
        alert.detail = waits + "; every rank issued it" + halted_text;
      } else if (!down.empty()) {
        alert.cause = "link_down";
        alert.ranks = down;
        alert.detail =
            waits + "; every rank issued it; the network link of " + RankList(down) + " is down";
      } else if (std::vector<int> throttled = Throttled(ranks, now_ns); !throttled.empty()) {
        alert.cause = "link_throttled";
        alert.ranks = throttled;
        alert.detail = waits + "; every rank issued it; the link of " + RankList(throttled) +
                       " holds packets back (a rate limit or a full queue)";
      } else {
        alert.cause = "network";
        alert.ranks = quiet.empty() ? Members(ranks, collective.group) : quiet;
        alert.detail = waits + "; every rank issued it and none completed" +
                       (quiet.empty() ? "" : "; no bytes moved on the links of " + RankList(quiet));
      }
      if (halted.empty())
        alert.detail += ChannelProgress(ranks, Members(ranks, collective.group), *oldest);
    }
    current_.push_back(alert);
  }
}

void Analyzer::Stragglers(const std::vector<RankLook>& ranks) {
  std::map<std::string, std::vector<const Collective*>> by_group;
  const auto collectives = Collectives(ranks);
  for (const auto& [key, collective] : collectives)
    by_group[collective.group].push_back(&collective);
  for (const auto& [group, list] : by_group) {
    const std::vector<int> members = Members(ranks, group);
    if (members.size() < 2) continue;
    // The group's recent collectives every member still holds, newest last.
    std::vector<const Collective*> full;
    for (const Collective* collective : list) {
      if (collective->by_rank.size() == members.size()) full.push_back(collective);
    }
    if (full.size() < options_.straggler_window / 2) continue;
    if (full.size() > options_.straggler_window) {
      full.erase(full.begin(), full.end() - long(options_.straggler_window));
    }
    std::map<int, std::vector<double>> lateness;  // rank -> how late, when it was last
    for (const Collective* collective : full) {
      int last = -1;
      uint64_t last_time = 0;
      std::vector<double> others;
      for (const auto& [rank, slot] : collective->by_rank) {
        const uint64_t issued = RingRealtime(RankOf(ranks, rank)->ring, slot->issued_ns);
        if (last < 0 || issued > last_time) last = rank, last_time = issued;
      }
      for (const auto& [rank, slot] : collective->by_rank) {
        if (rank == last) continue;
        const uint64_t issued = RingRealtime(RankOf(ranks, rank)->ring, slot->issued_ns);
        others.push_back(Seconds(last_time - std::min(last_time, issued)));
      }
      lateness[last].push_back(Median(others));
    }
    for (const auto& [rank, late] : lateness) {
      const double share = double(late.size()) / double(full.size());
      const double margin = Median(late);
      if (share < options_.straggler_share || margin < options_.straggler_min_s) continue;
      // Compute or communication: the peers wait for it to enter (its work before the
      // collective: compute or data) longer than for the transfer once all have entered, or
      // not. A rank slowed as a whole (a CPU quota) also completes late; its entering last is
      // still the larger part.
      std::vector<double> transfers;
      for (const Collective* collective : full) {
        uint64_t last_in = 0, done_at = 0;
        bool done = true;
        for (const auto& [member, slot] : collective->by_rank) {
          const RingSnapshot& ring = RankOf(ranks, member)->ring;
          last_in = std::max(last_in, RingRealtime(ring, slot->issued_ns));
          done = done && Done(*slot);
          if (Done(*slot)) done_at = std::max(done_at, RingRealtime(ring, slot->completed_ns));
        }
        if (done) transfers.push_back(Seconds(done_at - std::min(done_at, last_in)));
      }
      const double transfer = Median(transfers);
      const bool compute = margin >= transfer;
      Alert alert;
      alert.trigger = "straggler";
      alert.cause = compute ? "slow_compute" : "slow_communication";
      alert.ranks = {rank};
      alert.collective = Describe(group, *full.back()->by_rank.at(rank));
      alert.detail = "rank " + std::to_string(rank) + " entered last in " +
                     std::to_string(late.size()) + " of the " + std::to_string(full.size()) +
                     " latest collectives of group " + group + ", by " + Duration(margin) +
                     " (median); once every rank has entered, the transfer takes " +
                     Duration(transfer) +
                     (compute ? ": slow in compute (or data) before its collectives"
                              : ": slow in communication");
      alert.key = "straggler:" + std::to_string(rank);
      current_.push_back(alert);
    }
  }
}

std::vector<int> Analyzer::Throttled(const std::vector<RankLook>& ranks, uint64_t now_ns) const {
  constexpr uint64_t kLately = 10'000'000'000ull;
  std::vector<int> out;
  for (const RankLook& look : ranks) {
    auto at = throttled_at_.find(look.ring.rank);
    if (at != throttled_at_.end() && now_ns - std::min(now_ns, at->second) < kLately) {
      out.push_back(look.ring.rank);
    }
  }
  return out;
}

void Analyzer::Throughput(const std::vector<RankLook>& ranks, uint64_t now_ns) {
  const RankLook* lead = nullptr;  // the rank with the most steps seen
  for (const RankLook& look : ranks) {
    if (Unseen(look, now_ns, options_)) continue;  // its steps stopped with its host's reports
    if (lead == nullptr ||
        look.ring.activity.step_ends.size() > lead->ring.activity.step_ends.size()) {
      lead = &look;
    }
  }
  if (lead == nullptr) return;
  const std::vector<uint64_t>& ends = lead->ring.activity.step_ends;
  if (ends.size() < options_.throughput_min_steps + 1) return;
  std::vector<double> steps;
  for (size_t idx = 1; idx < ends.size(); ++idx)
    steps.push_back(Seconds(ends[idx] - ends[idx - 1]));
  constexpr size_t kRecent = 3;
  const std::vector<double> before(steps.begin(), steps.end() - kRecent);
  const std::vector<double> recent(steps.end() - kRecent, steps.end());
  // The healthy step time is learnt while the steps are healthy and kept during a drop (the
  // ring's last 32 steps fill with slow ones).
  const double now = Median(recent);
  if (!slow_steps_ && slow_since_ns_ == 0) base_step_s_ = Median(before);
  const double base = base_step_s_;
  if (base <= 0) return;
  if (now < options_.throughput_factor * base) {
    slow_since_ns_ = 0;
    if (slow_steps_ && now < 1.5 * base) slow_steps_ = false;  // recovered: a later drop is new
    if (!slow_steps_) return;
  } else if (!slow_steps_) {
    // A drop lasts: the slow steps at the end span the persistence time, or the steps were
    // slow at every look for that long. A hiccup of a few short steps (another process took
    // the core for 20 ms) is not a drop.
    if (slow_since_ns_ == 0) slow_since_ns_ = now_ns;
    double trailing = 0;
    for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
      if (*step < options_.throughput_factor * base) break;
      trailing += *step;
    }
    if (trailing < options_.throughput_persist_s &&
        Seconds(now_ns - slow_since_ns_) < options_.throughput_persist_s) {
      return;
    }
    slow_steps_ = true;
    ++drops_;
  }
  // Where the time went. A collective's time on a rank is the wait for the last rank to enter
  // plus the transfer once every rank has: only the transfer is communication. The waits
  // belong to whoever entered last (its compute, or its data).
  const uint64_t recent_from = RingRealtime(lead->ring, ends[ends.size() - 1 - kRecent]);
  const uint64_t window_from = RingRealtime(lead->ring, ends.front());
  double comm_recent = 0, comm_before = 0;
  std::map<int, int> last_recent;  // rank -> recent collectives it entered last
  for (const auto& [key, collective] : Collectives(ranks)) {
    auto own = collective.by_rank.find(lead->ring.rank);
    if (own == collective.by_rank.end() || !Done(*own->second)) continue;
    const uint64_t issued = RingRealtime(lead->ring, own->second->issued_ns);
    if (issued < window_from) continue;
    uint64_t last_in = 0;
    int last_rank = -1;
    for (const auto& [rank, slot] : collective.by_rank) {
      const uint64_t entered = RingRealtime(RankOf(ranks, rank)->ring, slot->issued_ns);
      if (entered >= last_in) last_in = entered, last_rank = rank;
    }
    const uint64_t completed = RingRealtime(lead->ring, own->second->completed_ns);
    const double transfer = Seconds(completed - std::min(completed, last_in));
    (issued >= recent_from ? comm_recent : comm_before) += transfer;
    if (issued >= recent_from && collective.by_rank.size() > 1) ++last_recent[last_rank];
  }
  comm_recent /= double(kRecent);
  comm_before /= double(before.size());
  const bool communication = comm_recent - comm_before >= 0.5 * (now - base);
  Alert alert;
  alert.trigger = "throughput";
  alert.cause = communication ? "communication" : "compute";
  std::vector<int> all;
  for (const RankLook& look : ranks) all.push_back(look.ring.rank);
  std::vector<int> down;
  for (const RankLook& look : ranks) {
    if (Unseen(look, now_ns, options_)) continue;
    if (look.ring.net.links > 0 && look.ring.net.links_up < look.ring.net.links) {
      down.push_back(look.ring.rank);
    }
  }
  const std::vector<int> throttled = Throttled(ranks, now_ns);
  std::vector<int> late;  // the rank last in most recent collectives: where compute lags
  int most = 0;
  int counted = 0;
  for (const auto& [rank, count] : last_recent) {
    counted += count;
    if (count > most) most = count, late = {rank};
  }
  // A rank is where the time goes only when it entered last into two thirds of the recent
  // collectives or more (and there were at least 3): who enters last otherwise is chance, and
  // in the first second of a slowdown the recent collectives are mostly from before it (a
  // plurality named a healthy rank 0 while rank 1's CPU quota was cut).
  const bool one_late = !late.empty() && counted >= 3 && 3 * most >= 2 * counted;
  // Slow transfers with no link down or held back, and one rank late that often: that rank is
  // slow on its CPU (a quota cut, a noisy neighbour), and gloo's transfers run on the CPU too,
  // so its peers' transfers wait on it. A network slowdown leaves the last rank to enter to
  // chance.
  const bool lagging = communication && down.empty() && throttled.empty() && one_late;
  alert.ranks = !communication       ? (one_late ? late : all)
                : !down.empty()      ? down
                : !throttled.empty() ? throttled
                : lagging            ? late
                                     : all;
  alert.detail =
      "steps take " + Duration(now) + " against " + Duration(base) + " before (" +
      Fixed(now / base) + "x); transfers (once every rank entered) take " + Duration(comm_recent) +
      " of a step against " + Duration(comm_before) + " before" +
      (communication
           ? ": the time goes to communication"
           : ": the time goes to compute between collectives" +
                 (one_late ? ", on " + RankList(late) + " (last to enter " + std::to_string(most) +
                                 " of the " + std::to_string(counted) + " recent collectives)"
                  : late.empty() ? std::string()
                                 : std::string("; no rank entered last into two thirds "
                                               "of the recent collectives yet")));
  if (communication && !down.empty()) {
    alert.detail += "; the network link of " + RankList(down) + " is down";
  } else if (communication && !throttled.empty()) {
    alert.detail += "; the link of " + RankList(throttled) +
                    " holds packets back (its queue discipline is over its limit: a rate limit "
                    "or a full queue)";
  } else if (lagging) {
    alert.detail += "; no link is down or held back, and " + RankList(late) +
                    " entered last into " + std::to_string(most) + " of the " +
                    std::to_string(counted) +
                    " recent collectives: a rank slow on its CPU is slow in its transfers too";
  }
  alert.key = "throughput:" + std::to_string(drops_);
  current_.push_back(alert);
}

}  // namespace upguard::watch
