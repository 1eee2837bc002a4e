#include "diff/compare.h"

#include <algorithm>

namespace upguard {

bool ArgsEqual(const ArgRecord& a, const ArgRecord& b, bool* compared) {
  *compared = true;
  // Version 5 wrote opaque where version 6 writes unread, and also for a view, an out= buffer
  // or a meta tensor that version 6 records as alias or uninit: none has values to compare.
  const auto shape_only = [](ArgKind kind) {
    return kind == ArgKind::kAlias || kind == ArgKind::kUninit || kind == ArgKind::kUnread;
  };
  // A tensor read in one run and not in the other (a CPU run against a GPU one) is not
  // compared either: nothing says its values differ.
  const bool unread_against_tensor = (IsUnreadKind(a.kind) && b.kind == ArgKind::kTensor) ||
                                     (IsUnreadKind(b.kind) && a.kind == ArgKind::kTensor);
  if ((a.kind == ArgKind::kOpaque && (shape_only(b.kind) || b.kind == ArgKind::kOpaque)) ||
      (b.kind == ArgKind::kOpaque && shape_only(a.kind)) ||
      (a.kind == ArgKind::kUnread && b.kind == ArgKind::kUnread) || unread_against_tensor) {
    *compared = false;
    return a.dtype == b.dtype && a.shape == b.shape;
  }
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
    case ArgKind::kUnread:
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

void JudgeSlots(const ToleranceJudge& judge, std::string_view op, std::string_view module,
                std::string_view phase, std::vector<ArgComparison>* slots) {
  for (ArgComparison& slot : *slots) {
    if (slot.equal || slot.a == nullptr || slot.b == nullptr || slot.a->kind != ArgKind::kTensor ||
        slot.b->kind != ArgKind::kTensor) {
      continue;
    }
    slot.tolerated = judge.Judge(*slot.a, *slot.b, op, module, phase);
  }
}

std::optional<size_t> ParentIndex(const std::vector<OpRecord>& ops, size_t index) {
  for (size_t next = index + 1; next < ops.size(); ++next) {
    if (ops[next].depth < ops[index].depth) return next;
  }
  return std::nullopt;
}

}  // namespace upguard
