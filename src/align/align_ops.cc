#include "align/align_ops.h"

#include <algorithm>

namespace upguard {

size_t OpKeyer::IdentityHash::operator()(const Identity& id) const {
  uint64_t h = (static_cast<uint64_t>(id.phase_depth) << 32) ^ id.module;
  h = h * 0x9E3779B97F4A7C15ull ^ ((static_cast<uint64_t>(id.op) << 32) | id.parent_op);
  return static_cast<size_t>(h * 0xC2B2AE3D27D4EB4Full >> 17);
}

uint32_t OpKeyer::Canonical(int side, StringId id) {
  std::vector<uint32_t>& cache = canonical_[side];
  if (id >= cache.size()) cache.resize(traces_[side]->strings().size(), 0);
  if (cache[id] == 0) {
    const auto [it, added] = strings_.emplace(traces_[side]->Str(id), strings_.size());
    cache[id] = it->second + 1;
  }
  return cache[id] - 1;
}

void OpKeyer::Keys(int side, const std::vector<OpRecord>& ops, size_t begin,
                   std::vector<uint32_t>* keys, std::vector<uint32_t>* parents) {
  // In completion order an op's enclosing op is the first later op that is shallower: walking
  // backwards, a stack of the ops still open gives it in O(1) amortized.
  parents->assign(ops.size() - begin, kNoParent);
  std::vector<uint32_t> open;
  for (size_t op_idx = ops.size(); op_idx-- > begin;) {
    while (!open.empty() && ops[open.back()].depth >= ops[op_idx].depth) open.pop_back();
    if (!open.empty()) (*parents)[op_idx - begin] = open.back();
    open.push_back(static_cast<uint32_t>(op_idx));
  }
  keys->resize(ops.size() - begin);
  for (size_t op_idx = begin; op_idx < ops.size(); ++op_idx) {
    const OpRecord& op = ops[op_idx];
    const uint32_t parent = (*parents)[op_idx - begin];
    Identity identity;
    identity.phase_depth = static_cast<uint32_t>(op.phase) << 24 | std::min(op.depth, 0xFFFFFFu);
    identity.module = Canonical(side, op.module);
    identity.op = Canonical(side, op.op);
    identity.parent_op = parent == kNoParent ? UINT32_MAX : Canonical(side, ops[parent].op);
    (*keys)[op_idx - begin] = keys_.emplace(identity, keys_.size()).first->second;
  }
}

StepAlignment StepAlignment::Positional(size_t start, size_t op_count) {
  StepAlignment alignment;
  alignment.start_ = start;
  alignment.op_count_ = op_count;
  return alignment;
}

StepAlignment StepAlignment::Align(OpKeyer* keyer, const StepOps& a, const StepOps& b, size_t start,
                                   const AlignOptions& options) {
  StepAlignment alignment;
  alignment.positional_ = false;
  alignment.start_ = start;
  std::vector<uint32_t> keys_a, keys_b;
  keyer->Keys(0, a.ops, start, &keys_a, &alignment.parents_[0]);
  keyer->Keys(1, b.ops, start, &keys_b, &alignment.parents_[1]);
  KeyAlignment keyed = AlignKeys(keys_a, keys_b, keyer->key_count(), options);
  alignment.pairs_ = std::move(keyed.matches);
  // The gaps between pairs are the blocks; one holding a region given up is not aligned.
  size_t next_a = 0, next_b = 0, unaligned_idx = 0;
  auto add_gap = [&](size_t end_a, size_t end_b) {
    if (end_a == next_a && end_b == next_b) return;
    OpBlock block{start + next_a, end_a - next_a, start + next_b, end_b - next_b, true};
    while (unaligned_idx < keyed.unaligned.size() &&
           keyed.unaligned[unaligned_idx].end_a <= end_a &&
           keyed.unaligned[unaligned_idx].end_b <= end_b) {
      block.aligned = false;
      ++unaligned_idx;
    }
    alignment.blocks_.push_back(block);
  };
  for (const KeyMatch& match : alignment.pairs_) {
    add_gap(match.a, match.b);
    next_a = match.a + 1;
    next_b = match.b + 1;
  }
  add_gap(keys_a.size(), keys_b.size());
  return alignment;
}

KeyMatch StepAlignment::pair(size_t pair_idx) const {
  const auto at = static_cast<uint32_t>(start_ + pair_idx);  // a step holds < 2^32 ops
  if (positional_) return KeyMatch{at, at};
  const auto start = static_cast<uint32_t>(start_);
  return KeyMatch{start + pairs_[pair_idx].a, start + pairs_[pair_idx].b};
}

std::optional<size_t> StepAlignment::Partner(int side, size_t index) const {
  if (positional_ || index < start_) return index;
  const uint32_t local = static_cast<uint32_t>(index - start_);
  const auto pos = std::lower_bound(
      pairs_.begin(), pairs_.end(), local,
      [side](const KeyMatch& match, uint32_t at) { return (side == 0 ? match.a : match.b) < at; });
  if (pos == pairs_.end() || (side == 0 ? pos->a : pos->b) != local) return std::nullopt;
  return start_ + (side == 0 ? pos->b : pos->a);
}

std::optional<size_t> StepAlignment::Parent(int side, size_t index) const {
  if (positional_ || index < start_) return std::nullopt;
  const uint32_t parent = parents_[side][index - start_];
  if (parent == OpKeyer::kNoParent) return std::nullopt;
  return parent;
}

bool SameOpNames(const RankTrace& ta, const StepOps& sa, const RankTrace& tb, const StepOps& sb,
                 size_t start) {
  if (sa.ops.size() != sb.ops.size()) return false;
  for (size_t op_idx = start; op_idx < sa.ops.size(); ++op_idx) {
    if (ta.Str(sa.ops[op_idx].op) != tb.Str(sb.ops[op_idx].op)) return false;
  }
  return true;
}

}  // namespace upguard
