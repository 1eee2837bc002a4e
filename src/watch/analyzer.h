// The root cause of a hang or a slowdown, from every rank's ring (ring_reader.h): the same
// analysis live (monitor.h, every 100 ms) and post mortem (`upguard watch --analyze`, on the
// files the ranks left). docs/watch.md explains each trigger and cause.
//
// Triggers, checked at each look:
//   mismatch    two ranks issued the same collective (group, sequence number) with another op,
//               dtype or element count;
//   dead        a rank's ring is stale: its process is gone without closing it, stopped, or (on
//               another host) its heartbeat stopped;
//   stall       a collective in flight longer than max(floor, factor x the 95th percentile of
//               that group's and op's recent durations); the cause is the rank that never issued
//               it and what it does instead, or, when every rank issued it, the network;
//   straggler   one rank entered last in most of a group's recent collectives, by a margin;
//               slow in compute or in communication;
//   throughput  the recent steps take factor x longer than the earlier ones, for at least
//               throughput_persist_s (the slow steps span it, or it held at every look);
//               whether the time went to collectives (communication) or between them
//               (compute).
//
//   Analyzer analyzer(options);
//   for (const Alert& alert : analyzer.Look(ranks, RealtimeNs())) Print(alert);
//
// Only the alert keys (a finding is reported once), the last network counters and the healthy
// step time carry from one look to the next; everything else is read from the rings each time.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "watch/alert.h"
#include "watch/ring_reader.h"

namespace upguard::watch {

enum class ProcessState : uint8_t {
  kRunning,
  kStopped,  // SIGSTOP, a debugger
  kGone,     // no such process (or a zombie)
  kUnknown,  // on another host, or the monitor may not look
};

// "running", "stopped", "gone", "unknown": the word the report and the summary use.
const char* ProcessStateName(ProcessState state);

// A collective as NCCL saw it in a rank's process (the profiler plugin's ring): its
// communicator's group name ("nccl:<hash>") and the entry with its channel progress.
struct NcclCall {
  std::string comm;
  SlotView slot;
};

struct RankLook {
  RingSnapshot ring;
  ProcessState process = ProcessState::kUnknown;
  // A rank on another host, seen through its monitor's summary (summary.h, exchange.h): that
  // host's name, when its summary last changed (this host's CLOCK_REALTIME) and when it was
  // written (that host's). Empty and 0 for a ring read here. A summary unchanged for longer
  // than `stale_s` means that host's monitor is gone: what the rank does now is unknown (cause
  // `unseen`).
  std::string seen_by;
  uint64_t seen_ns = 0;
  uint64_t written_ns = 0;
  // The NCCL profiler plugin's ring of the same process (rank<N>.nccl.ring,
  // src/watch/nccl/): NCCL's view of the same collectives, with per-channel progress. Only
  // the network cause reads it; its collectives are not counted twice.
  std::vector<NcclCall> nccl;
};

struct AnalyzerOptions {
  double stall_floor_s = 2.0;
  double stall_factor = 5.0;
  double stale_s = 1.5;  // a heartbeat older than this: the ring is stale
  double idle_s = 1.0;   // no op for this long: the rank is not computing
  double straggler_min_s = 0.05;
  size_t straggler_window = 16;
  double straggler_share = 0.75;
  double throughput_factor = 2.0;
  size_t throughput_min_steps = 8;
  double throughput_persist_s = 1.0;  // a drop must last this long (throughput, in analyzer.cc)
};

class Analyzer {
 public:
  explicit Analyzer(AnalyzerOptions options = {}) : options_(options) {}

  // One look at every rank at `now_ns` (CLOCK_REALTIME); returns the findings not reported
  // before.
  std::vector<Alert> Look(const std::vector<RankLook>& ranks, uint64_t now_ns);
  // Every finding of the look, reported or not (the post-mortem report).
  const std::vector<Alert>& current() const { return current_; }

 private:
  void Mismatches(const std::vector<RankLook>& ranks);
  void Dead(const std::vector<RankLook>& ranks, uint64_t now_ns);
  void Stalls(const std::vector<RankLook>& ranks, uint64_t now_ns);
  void Stragglers(const std::vector<RankLook>& ranks);
  void Throughput(const std::vector<RankLook>& ranks, uint64_t now_ns);

  AnalyzerOptions options_;
  std::vector<Alert> current_;
  std::set<std::string> reported_;
  // rank -> (tx + rx bytes, when they last changed: CLOCK_REALTIME)
  std::map<int, std::pair<uint64_t, uint64_t>> last_net_;
  std::map<int, bool> net_moved_;         // the bytes changed within the last 2 s
  double base_step_s_ = 0;                // the healthy step time
  bool slow_steps_ = false;               // a throughput drop is on
  uint64_t slow_since_ns_ = 0;            // the steps are slow since this look, not yet a drop
  int drops_ = 0;                         // throughput drops so far: each one is a new finding
  std::map<int, uint64_t> throttled_;     // rank -> its queue disciplines' count at the last look
  std::map<int, uint64_t> throttled_at_;  // rank -> when that count last grew (CLOCK_REALTIME)
  std::map<std::string, uint64_t> stack_wait_;  // alert key -> when it first waited for a stack
  // The ranks whose own link held packets back lately (a rate limit, a full queue).
  std::vector<int> Throttled(const std::vector<RankLook>& ranks, uint64_t now_ns) const;
};

// The time of `t` (the ring's CLOCK_MONOTONIC) on CLOCK_REALTIME, through the ring's start pair.
uint64_t RingRealtime(const RingSnapshot& ring, uint64_t monotonic_ns);

}  // namespace upguard::watch
