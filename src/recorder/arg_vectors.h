// Argument record vectors a thread reuses from op to op: an op's records are written and then
// dropped, and the next op of the thread needs as many again. A vector given back keeps its
// records (and their shape vectors' memory); whoever takes it resets each record it fills
// (ResetKeepingShape). Per thread, a few vectors at most.
//
//   std::vector<ArgRecord> records = TakeArgVector();   // DigestArgs
//   GiveBackArgVector(std::move(record.inputs));         // once the op is written
#pragma once

#include <utility>
#include <vector>

#include "upguard/arg_record.h"

namespace upguard {

std::vector<ArgRecord> TakeArgVector();
void GiveBackArgVector(std::vector<ArgRecord>&& records);

// `record` as a default ArgRecord, its shape vector's memory kept.
inline void ResetKeepingShape(ArgRecord* record) {
  std::vector<int64_t> shape = std::move(record->shape);
  shape.clear();
  *record = ArgRecord{};
  record->shape = std::move(shape);
}

}  // namespace upguard
