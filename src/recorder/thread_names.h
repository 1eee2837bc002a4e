// A thread's own memo of the ids its ops' argument names, labels and scalar texts got, in front
// of the recorder's lock: an op whose names the thread has seen before gets its argument
// records named without taking the lock. The ids come from the recorder's string table, under
// its lock, which writes each String record before any op can use the id; a memo holds the ids
// of one recorder (`recorder`, its serial) and starts again for the next.
//
//   ThreadNames& memo = ThreadNamesFor(serial);
//   if (!NamesFromMemo(args, memo, &records)) { lock; intern; memo.Learn(...); }
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "recorder/intern_cache.h"
#include "upguard/recorder.h"

namespace upguard {

// Whether an argument has a text to intern: a scalar's value, an unread tensor's detail.
inline bool HasText(const Arg& arg) {
  return arg.kind == ArgKind::kScalar || arg.kind == ArgKind::kUnread;
}

struct ThreadNames {
  uint64_t recorder = 0;
  InternCache names;                                // names and labels, by address
  std::unordered_map<std::string, StringId> texts;  // scalar texts, by text

  // What the recorder's table gave `arg` (in `rec`).
  void Learn(const Arg& arg, const ArgRecord& rec);
};

// The calling thread's memo for the recorder with this serial (emptied if it held another's).
ThreadNames& ThreadNamesFor(uint64_t recorder);

// Names `out`'s records from the memo, without a lock; false when some name is not there.
bool NamesFromMemo(const std::vector<Arg>& args, const ThreadNames& memo,
                   std::vector<ArgRecord>* out);

}  // namespace upguard
