// The monitor: every rank's ring under DIR/watch/, looked at every 100 ms (rings that appear
// later are picked up), analyzed (analyzer.h), new findings appended to DIR/alerts.jsonl.
// It asks idle ranks for their Python stacks, so that a finding about a rank stuck in Python
// can show where. With an exchange directory, it shares what it sees with the monitors of the
// other hosts (exchange.h) and analyzes their ranks too.
//
//   ASSIGN_OR_RETURN(auto monitor, Monitor::Open({"runs/w"}));
//   while (training runs) {
//     ASSIGN_OR_RETURN(std::vector<Alert> fresh, monitor->Poll());
//     sleep(100 ms);
//   }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "upguard/status.h"
#include "watch/analyzer.h"
#include "watch/exchange.h"
#include "watch/ring_reader.h"

namespace upguard::watch {

struct MonitorOptions {
  std::string dir;  // the run directory: rings in dir/watch/, alerts to dir/alerts.jsonl
  AnalyzerOptions analyzer;
  // After the job (`upguard watch --analyze`): the look is at the last heartbeat of any rank,
  // nothing is written and no rank is asked for its stack.
  bool post_mortem = false;
  // Several hosts (exchange.h): each look also writes this host's summary into exchange_dir
  // and adds the ranks of the other hosts' summaries. Live only.
  std::string exchange_dir;
  std::string host_name;  // this host's summary's name there; empty: the hostname
};

class Monitor {
 public:
  static StatusOr<std::unique_ptr<Monitor>> Open(MonitorOptions options);

  // One look; returns the new findings (already appended to alerts.jsonl).
  StatusOr<std::vector<Alert>> Poll();
  // The ranks as of the last Poll, in rank order.
  const std::vector<RankLook>& ranks() const { return ranks_; }
  const Analyzer& analyzer() const { return analyzer_; }
  // Every finding reported so far, in order (as alerts.jsonl holds them).
  const std::vector<Alert>& reported() const { return reported_; }
  // When the last Poll looked (CLOCK_REALTIME).
  uint64_t last_look_ns() const { return last_look_ns_; }
  // True when every ring seen says its process ended normally.
  bool AllClosed() const;
  // Problems that did not stop the look (the exchange's), each once, since the last call.
  std::vector<std::string> TakeWarnings();

 private:
  explicit Monitor(MonitorOptions options)
      : options_(std::move(options)), analyzer_(options_.analyzer) {}
  Status OpenNewRings();
  void AskIdleForStacks(uint64_t now_ns);

  MonitorOptions options_;
  Analyzer analyzer_;
  std::map<std::string, std::unique_ptr<RingReader>> readers_;  // by file name
  std::map<int, uint64_t> asked_ns_;  // rank -> when its stack was last asked for
  std::vector<RankLook> ranks_;
  std::vector<Alert> reported_;
  uint64_t last_look_ns_ = 0;
  std::string hostname_;
  std::unique_ptr<Exchange> exchange_;  // null without exchange_dir
};

// The state of process `pid` on this host: running, stopped (state T/t) or gone (none, or a
// zombie).
ProcessState LocalProcessState(int pid);

}  // namespace upguard::watch
