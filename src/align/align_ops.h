// How the ops of one step of two runs correspond: op identity keys, the alignment of the two
// op streams by those keys (align.h), and the blocks of ops that have no counterpart.
//
//   OpKeyer keyer(ta, tb);                       // one per rank: maps both string tables
//   StepAlignment alignment = SameOpNames(ta, sa, tb, sb, start)
//       ? StepAlignment::Positional(start, sa.ops.size())
//       : StepAlignment::Align(&keyer, sa, sb, start, AlignOptions{});
//   for (size_t k = 0; k < alignment.pair_count(); ++k) { KeyMatch pair = alignment.pair(k); }
//   for (const OpBlock& block : alignment.blocks()) ... ops only in A / only in B ...
//
// The identity of an op is its key (phase, module path, op name, depth, name of the enclosing
// op): ops with equal keys may be paired, and the alignment pairs as many as a longest common
// subsequence of the two key streams does. The k-th occurrence of a key in a step is thereby
// paired with an occurrence of the same key in order, but the occurrence number itself is not
// in the key: one inserted `aten::copy_` would renumber every later copy_ of its module, and
// each would then be paired with the wrong op. Left out on purpose, because they differ
// between runs of the same program: the call site (a line added above shifts every line
// number), the autograd node (measured: `.contiguous()` on a tensor turns the backward of a
// later reshape from UnsafeViewBackward0 into ReshapeAliasBackward0) and the argument values.
// The depth and enclosing op keep an op nested in one composite op from being paired with the
// same op nested in another (a copy_ inside aten::sum is not a copy_ inside aten::clone).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "align/align.h"
#include "run/run_loader.h"

namespace upguard {

// A maximal run of ops without counterpart between two paired ops (or a step's ends): ops
// [index_a, index_a + count_a) of A and [index_b, index_b + count_b) of B.
struct OpBlock {
  size_t index_a = 0;
  size_t count_a = 0;
  size_t index_b = 0;
  size_t count_b = 0;
  bool aligned = true;  // false: the alignment gave up on (part of) it, see AlignOptions
};

// Gives the ops of two traces keys that are equal exactly when the ops' identities are.
class OpKeyer {
 public:
  OpKeyer(const RankTrace& a, const RankTrace& b) : traces_{&a, &b} {}

  // The keys of ops [begin, ops.size()) of run `side` (0: A, 1: B) into *keys, and the index of
  // each one's enclosing op (or kNoParent) into *parents.
  static constexpr uint32_t kNoParent = UINT32_MAX;
  void Keys(int side, const std::vector<OpRecord>& ops, size_t begin, std::vector<uint32_t>* keys,
            std::vector<uint32_t>* parents);
  uint32_t key_count() const { return static_cast<uint32_t>(keys_.size()); }

 private:
  struct Identity {
    uint32_t phase_depth;  // phase in the top 8 bits
    uint32_t module;       // canonical string ids
    uint32_t op;
    uint32_t parent_op;
    bool operator==(const Identity& other) const {
      return phase_depth == other.phase_depth && module == other.module && op == other.op &&
             parent_op == other.parent_op;
    }
  };
  struct IdentityHash {
    size_t operator()(const Identity& id) const;
  };

  // The same number for the same string in either trace.
  uint32_t Canonical(int side, StringId id);

  const RankTrace* traces_[2];
  std::vector<uint32_t> canonical_[2];  // by StringId: canonical id + 1, 0 = not seen yet
  std::unordered_map<std::string, uint32_t> strings_;
  std::unordered_map<Identity, uint32_t, IdentityHash> keys_;
};

class StepAlignment {
 public:
  // Both steps hold the same op names in the same order: op k is paired with op k.
  static StepAlignment Positional(size_t start, size_t op_count);
  // Ops before `start` are equal in both steps and paired in place; the rest are aligned by
  // their keys.
  static StepAlignment Align(OpKeyer* keyer, const StepOps& a, const StepOps& b, size_t start,
                             const AlignOptions& options);

  // The pairs from `start` on, in order: op pair(k).a of A with op pair(k).b of B.
  size_t pair_count() const { return positional_ ? op_count_ - start_ : pairs_.size(); }
  KeyMatch pair(size_t pair_idx) const;
  // The op of the other run paired with op `index` of run `side` (0: A, 1: B), if any.
  std::optional<size_t> Partner(int side, size_t index) const;
  bool Paired(size_t index_a, size_t index_b) const { return Partner(0, index_a) == index_b; }
  // The op enclosing op `index` of run `side`; known for ops past `start` of an aligned step.
  std::optional<size_t> Parent(int side, size_t index) const;
  const std::vector<OpBlock>& blocks() const { return blocks_; }

 private:
  bool positional_ = true;
  size_t start_ = 0;
  size_t op_count_ = 0;               // positional: of each step
  std::vector<KeyMatch> pairs_;       // aligned: past start_, increasing in a and b
  std::vector<uint32_t> parents_[2];  // aligned: by index - start_
  std::vector<OpBlock> blocks_;
};

// Whether the two steps hold the same op names in the same order from `start` on.
bool SameOpNames(const RankTrace& ta, const StepOps& sa, const RankTrace& tb, const StepOps& sb,
                 size_t start);

}  // namespace upguard
