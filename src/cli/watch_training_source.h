// The agent's training metrics from upguard's watch rings: `upguard machines agent --watch-dir
// DIR` reads DIR/watch/rank<R>.ring of the ranks on this machine (docs/formats/watch-ring.md)
// and turns them into training_step_seconds and collective_wait_fraction
// (src/machines/training_metrics.h says how).
//
// It sits in cli, not in machines, because machines and watch are libraries of one layer and
// neither may link the other (cmake/upguard_layers.cmake): cli links both, and this adapter is
// the only place where they meet. The machines library sees a MetricSource.
//
//   ASSIGN_OR_RETURN(auto training, WatchTrainingSource::Create("runs/w", {}));
//   options.sources.push_back(training.get());   // the agent samples it every interval
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "machines/metric_source.h"
#include "machines/training_metrics.h"
#include "upguard/status.h"
#include "watch/ring_reader.h"

namespace upguard {

// "0,1,4-7" -> {0, 1, 4, 5, 6, 7}; InvalidArgument naming the bad part.
StatusOr<std::set<int>> ParseRankList(const std::string& text);

class WatchTrainingSource : public machines::MetricSource {
 public:
  // `dir` is the watch's run directory (`upguard watch -o DIR`, UPGUARD_WATCH_DIR); its rings
  // may appear later (the training not started yet). `ranks` empty: every ring there.
  static StatusOr<std::unique_ptr<WatchTrainingSource>> Create(const std::string& dir,
                                                               std::set<int> ranks);

  // Reads every ring of the chosen ranks (opening new ones, reopening one a new run made again
  // under the same name) and returns the interval's training metrics. A ring whose rank ended
  // the watch (closed) is left out: a finished training has no step time.
  std::vector<machines::MetricValue> Sample(double now) override;

 private:
  struct OpenRing {
    ino_t inode = 0;
    std::unique_ptr<watch::RingReader> reader;
    machines::RankReading last;  // the last consistent reading of the rank's steps
  };
  WatchTrainingSource(std::string ring_dir, std::set<int> ranks)
      : ring_dir_(std::move(ring_dir)), ranks_(std::move(ranks)) {}
  // Opens the rings that appeared or were made again since the last look.
  void Discover();

  std::string ring_dir_;  // DIR/watch
  std::set<int> ranks_;
  std::map<int, OpenRing> rings_;  // by rank
  machines::TrainingMetrics metrics_;
};

}  // namespace upguard
