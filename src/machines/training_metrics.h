// The training's own metrics on one machine, from what its ranks report (upguard's watch rings,
// read by src/cli/watch_training_source.h): the time a training step takes and the share of
// the time the ranks spend in collectives. In data-parallel training every rank runs the same
// steps, so a slow machine shows in both: its step time grows with its peers', but a straggler
// waits in collectives LESS than its peers (they wait for it), and a machine whose peers are
// slow waits more.
//
//   TrainingMetrics training;
//   training.Update(now_ns, readings);           // the first call opens the first interval
//   ... an interval later ...
//   for (const MetricValue& m : training.Update(now_ns, readings)) ...
//
// training_step_seconds (per interval, the slowest rank's):
//   A step is the rank's step counter advancing (the watch counts optimizer steps) and it ends
//   at the time the rank recorded. With S1 steps done and the last ending at E1 at the previous
//   call, and S2 ending at E2 now, S2 > S1 gives (E2 - E1) / (S2 - S1): the mean time of the
//   steps that ended in the interval, exact however many there were. When no step ended, the
//   step under way has taken now - E2 so far: the value is the larger of that and the last
//   value (a hung rank's step time keeps growing, a healthy slow step holds its last value).
//   No value until a step ends after one whose end the agent saw (the first step, with its
//   warm-up, is never measured).
// collective_wait_fraction (per interval, mean over the ranks, 0-1):
//   The part of the interval a rank had a collective in flight (issued, not yet completed):
//   the union of the collectives' [issued, completed) spans, a collective still in flight
//   counting up to now, clipped to the interval. No value before the second call or with no
//   rank.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "machines/host_counters.h"

namespace upguard::machines {

struct CollectiveSpan {
  uint64_t issued_ns = 0;
  uint64_t completed_ns = 0;  // 0: still in flight
};

// One rank as read now; times are CLOCK_MONOTONIC nanoseconds.
struct RankReading {
  int rank = 0;
  int64_t steps = 0;                        // steps finished
  uint64_t last_step_end_ns = 0;            // when step `steps` ended (0: none yet)
  std::vector<CollectiveSpan> collectives;  // the recent ones, any order
};

class TrainingMetrics {
 public:
  std::vector<MetricValue> Update(uint64_t now_ns, const std::vector<RankReading>& ranks);

 private:
  struct RankState {
    int64_t steps = 0;
    uint64_t last_step_end_ns = 0;
    double step_seconds = -1;  // < 0: none yet
  };
  // Updates the rank's state; its step time now, or < 0 when it has none.
  static double StepSeconds(uint64_t now_ns, const RankReading& reading, RankState& state);

  std::map<int, RankState> ranks_;
  uint64_t previous_ns_ = 0;  // 0: no call yet
};

// The fraction of (begin_ns, end_ns] covered by the union of `spans` (in flight up to end_ns).
double CoveredFraction(uint64_t begin_ns, uint64_t end_ns, std::vector<CollectiveSpan> spans);

}  // namespace upguard::machines
