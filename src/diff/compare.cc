#include "diff/compare.h"

#include <algorithm>

namespace upguard {
namespace {

bool SameName(const OpRecord& a, const RankTrace& ta, const OpRecord& b, const RankTrace& tb) {
  return ta.Str(a.op) == tb.Str(b.op);
}

// Do `window` ops starting at (ia, ib) agree by name? Running off both ends together agrees.
bool Agrees(const std::vector<OpRecord>& a, size_t ia, const RankTrace& ta,
            const std::vector<OpRecord>& b, size_t ib, const RankTrace& tb, size_t window) {
  for (size_t k = 0; k < window; ++k) {
    const bool end_a = ia + k >= a.size(), end_b = ib + k >= b.size();
    if (end_a || end_b) return end_a && end_b;
    if (!SameName(a[ia + k], ta, b[ib + k], tb)) return false;
  }
  return true;
}

}  // namespace

bool ArgsEqual(const ArgRecord& a, const ArgRecord& b, bool* compared) {
  *compared = true;
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case ArgKind::kTensor:
      return a.dtype == b.dtype && a.shape == b.shape && a.digest == b.digest;
    case ArgKind::kScalar:
      return a.digest == b.digest;
    case ArgKind::kNone:
      return true;
    case ArgKind::kAlias:
    case ArgKind::kUninit:
    case ArgKind::kOpaque:
      *compared = false;
      return a.dtype == b.dtype && a.shape == b.shape;
  }
  return false;
}

bool SameArgs(const OpRecord& a, const OpRecord& b) {
  if (a.inputs.size() != b.inputs.size() || a.outputs.size() != b.outputs.size()) return false;
  bool compared = false;
  for (size_t idx = 0; idx < a.inputs.size(); ++idx) {
    if (!ArgsEqual(a.inputs[idx], b.inputs[idx], &compared)) return false;
  }
  for (size_t idx = 0; idx < a.outputs.size(); ++idx) {
    if (!ArgsEqual(a.outputs[idx], b.outputs[idx], &compared)) return false;
  }
  return true;
}

std::vector<ArgComparison> CompareArgs(const std::vector<ArgRecord>& a,
                                       const std::vector<ArgRecord>& b, bool is_input,
                                       const RankTrace& trace_a) {
  std::vector<ArgComparison> slots(std::max(a.size(), b.size()));
  for (size_t idx = 0; idx < slots.size(); ++idx) {
    ArgComparison& slot = slots[idx];
    slot.is_input = is_input;
    slot.index = idx;
    slot.a = idx < a.size() ? &a[idx] : nullptr;
    slot.b = idx < b.size() ? &b[idx] : nullptr;
    if (slot.a != nullptr) slot.name = trace_a.Str(slot.a->name);
    if (slot.name.empty()) slot.name = (is_input ? "in" : "out") + std::to_string(idx);
    slot.equal =
        slot.a != nullptr && slot.b != nullptr && ArgsEqual(*slot.a, *slot.b, &slot.compared);
  }
  return slots;
}

Realignment FindRealignment(const std::vector<OpRecord>& a, size_t start_a, const RankTrace& ta,
                            const std::vector<OpRecord>& b, size_t start_b, const RankTrace& tb,
                            size_t lookahead, size_t window) {
  // Try every split of `total` skipped ops, smallest total first: the least edit wins.
  for (size_t total = 1; total <= lookahead; ++total) {
    for (size_t skip_a = 0; skip_a <= total; ++skip_a) {
      const size_t skip_b = total - skip_a;
      if (start_a + skip_a > a.size() || start_b + skip_b > b.size()) continue;
      if (Agrees(a, start_a + skip_a, ta, b, start_b + skip_b, tb, window)) {
        return Realignment{true, skip_a, skip_b};
      }
    }
  }
  return Realignment{};
}

}  // namespace upguard
