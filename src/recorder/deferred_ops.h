// Op records whose digests the hash pool is still making (issue 19, part 3), written in the
// order they were recorded: a record waits behind the one before it even when its own digests
// are done, so seq, the step digest and every reader see the same order as without the pool.
//
//   if (!deferred.empty() || DeferredOps::HasPending(record)) deferred.Push(std::move(record));
//   RETURN_IF_ERROR(deferred.WriteReady(writer, /*all=*/false));  // after each op
//   RETURN_IF_ERROR(deferred.WriteReady(writer, /*all=*/true));   // before a step ends
#pragma once

#include <cstddef>
#include <deque>

#include "trace/records.h"
#include "trace/writer.h"
#include "upguard/status.h"

namespace upguard {

// Puts `arg`'s pool digest (arg->pending, not null) into the record, waiting for it if needed,
// and drops the pending one; a digest that failed is its error, and the record is left as it was.
Status ResolvePendingArg(ArgRecord* arg);

// ResolvePendingArg for each pool digest of `args`; a digest that failed is an error naming
// `side` ("input", "output") and the argument's index.
Status ResolvePending(const char* side, std::vector<ArgRecord>* args);

class DeferredOps {
 public:
  // Records beyond this wait for the oldest (its tensors are held until it is written).
  static constexpr size_t kMaxRecords = 1024;

  static bool HasPending(const OpRecord& record);

  bool empty() const { return ops_.empty(); }
  size_t size() const { return ops_.size(); }
  void Push(OpRecord record) { ops_.push_back(std::move(record)); }
  // Writes the oldest records whose digests are done, stopping at the first that is not; with
  // `all`, waits for each. Beyond kMaxRecords, waits until half are written. A digest that
  // failed fails the write (the record is dropped).
  Status WriteReady(TraceWriter* writer, bool all);

 private:
  std::deque<OpRecord> ops_;
};

}  // namespace upguard
