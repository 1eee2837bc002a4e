#include "machines/training_metrics.h"

#include <algorithm>

namespace upguard::machines {

double CoveredFraction(uint64_t begin_ns, uint64_t end_ns, std::vector<CollectiveSpan> spans) {
  if (end_ns <= begin_ns) return 0;
  for (CollectiveSpan& span : spans) {
    if (span.completed_ns == 0 || span.completed_ns > end_ns) span.completed_ns = end_ns;
    span.issued_ns = std::max(span.issued_ns, begin_ns);
  }
  std::sort(spans.begin(), spans.end(), [](const CollectiveSpan& a, const CollectiveSpan& b) {
    return a.issued_ns < b.issued_ns;
  });
  uint64_t covered = 0;
  uint64_t reached = begin_ns;  // the union so far ends here
  for (const CollectiveSpan& span : spans) {
    const uint64_t from = std::max(span.issued_ns, reached);
    if (span.completed_ns <= from) continue;
    covered += span.completed_ns - from;
    reached = span.completed_ns;
  }
  return static_cast<double>(covered) / static_cast<double>(end_ns - begin_ns);
}

double TrainingMetrics::StepSeconds(uint64_t now_ns, const RankReading& reading, RankState& state) {
  const bool ended = reading.steps > state.steps && reading.last_step_end_ns > 0;
  if (ended && state.last_step_end_ns > 0 && reading.last_step_end_ns > state.last_step_end_ns) {
    state.step_seconds = static_cast<double>(reading.last_step_end_ns - state.last_step_end_ns) /
                         1e9 / static_cast<double>(reading.steps - state.steps);
  }
  if (ended || reading.steps < state.steps) {  // fewer: a new run's ring; start again
    if (reading.steps < state.steps) state.step_seconds = -1;
    state.steps = reading.steps;
    state.last_step_end_ns = reading.last_step_end_ns;
    return state.step_seconds;
  }
  if (state.step_seconds < 0 || state.last_step_end_ns == 0 || now_ns <= state.last_step_end_ns) {
    return state.step_seconds;
  }
  return std::max(state.step_seconds, static_cast<double>(now_ns - state.last_step_end_ns) / 1e9);
}

std::vector<MetricValue> TrainingMetrics::Update(uint64_t now_ns,
                                                 const std::vector<RankReading>& ranks) {
  double step_seconds = -1;
  double wait_sum = 0;
  for (const RankReading& reading : ranks) {
    auto [it, fresh] = ranks_.try_emplace(reading.rank);
    if (fresh) {  // first sight: what it did before is no interval's
      it->second.steps = reading.steps;
      it->second.last_step_end_ns = reading.last_step_end_ns;
    } else {
      step_seconds = std::max(step_seconds, StepSeconds(now_ns, reading, it->second));
    }
    if (previous_ns_ > 0) wait_sum += CoveredFraction(previous_ns_, now_ns, reading.collectives);
  }
  std::vector<MetricValue> out;
  if (step_seconds >= 0) out.push_back({"training_step_seconds", "", step_seconds});
  if (previous_ns_ > 0 && !ranks.empty()) {
    out.push_back({"collective_wait_fraction", "", wait_sum / static_cast<double>(ranks.size())});
  }
  previous_ns_ = now_ns;
  return out;
}

}  // namespace upguard::machines
