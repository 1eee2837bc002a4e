// Monitors on several hosts sharing what they see through a common directory (an NFS or other
// shared file system): each writes its host's summary (summary.h) there as <host>.json, and
// reads every other host's. Files only, renamed into place, so a reader never sees half of one;
// no protocol of our own. docs/watch.md, "Several hosts".
//
//   ASSIGN_OR_RETURN(auto exchange, Exchange::Open("/shared/w", "node3", RealtimeNs()));
//   every look:
//     exchange->Publish(local_looks, now);            // at most every 250 ms
//     for (RankLook& look : exchange->Others(now)) ...  // look.seen_by = "node7", seen_ns
//
// A host is known to be silent, not merely slow, by its summary no longer changing: the time a
// summary last changed is taken on this host's clock (seen_ns), so the hosts' clocks need not
// agree for that (they must for the analysis itself: see the doc).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "upguard/status.h"
#include "watch/summary.h"

namespace upguard::watch {

class Exchange {
 public:
  // Creates `dir` if needed. `host` names this host's file; it must differ between the
  // monitors that share `dir` (hosts that share a hostname, as network namespaces do, need a
  // name each).
  static StatusOr<std::unique_ptr<Exchange>> Open(std::string dir, std::string host,
                                                  uint64_t now_ns);

  // Writes this host's summary of `looks` (those read here) when 250 ms have passed since the
  // last one, or at once when a rank's process changed state or its ring closed.
  void Publish(const std::vector<RankLook>& looks, uint64_t now_ns);
  // Every rank the other hosts' summaries show, in rank order; a rank two summaries show is
  // taken from the newer one. Summaries last written a minute or more before this exchange was
  // opened are left over from an earlier job and ignored until they change.
  std::vector<RankLook> Others(uint64_t now_ns);
  // What went wrong since the last call, each message once: a summary that cannot be read or
  // written, another monitor writing this host's file.
  std::vector<std::string> TakeWarnings();

  const std::string& path() const { return path_; }

 private:
  Exchange(std::string dir, std::string host, uint64_t now_ns);
  void Warn(const std::string& message);

  struct Seen {
    ino_t inode = 0;
    int64_t mtime_ns = 0;
    uint64_t written_ns = 0;  // the summary's own write time (its host's clock)
    uint64_t seen_ns = 0;     // when it last changed, on this host's clock
    bool loaded = false;
    Summary summary;
  };

  std::string dir_;
  std::string host_;
  std::string path_;  // dir/<host>.json
  uint64_t opened_ns_;
  char hostname_[256] = {};
  uint64_t published_ns_ = 0;
  ino_t published_inode_ = 0;
  std::map<int, std::string> published_states_;  // rank -> process state (or "closed")
  std::map<std::string, Seen> seen_;             // by file name
  std::vector<std::string> warnings_;
  std::set<std::string> warned_;
};

}  // namespace upguard::watch
