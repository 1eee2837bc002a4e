// Where backward ops come from: the module and call site of the top-level forward op that
// created their autograd node.
//
// Autograd numbers nodes in creation order (at::sequence_number). A top-level forward op that
// ran while the counter went from `first` to `end` created nodes [first, end); the node's
// record carries its number, so a backward op finds its forward op by binary search. One entry
// per top-level forward op, cleared at each step boundary. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string_view>
#include <vector>

namespace upguard::torch_adapter {

// Views into the string pool (string_pool.h).
struct Origin {
  std::string_view module;
  std::string_view call_site;
};

class OriginTable {
 public:
  void Add(uint64_t first, uint64_t end, Origin origin);
  // The origin of node `seq_nr`; empty if unknown (created outside recording, or AccumulateGrad).
  Origin Find(int64_t seq_nr) const;
  void Clear();

 private:
  struct Range {
    uint64_t first;
    uint64_t end;
    Origin origin;
  };
  mutable std::mutex mu_;
  std::vector<Range> ranges_;  // sorted by `first`: numbers only grow
};

}  // namespace upguard::torch_adapter
