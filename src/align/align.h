// Sequence alignment of two streams reduced to integer keys: which elements of `a` and `b`
// correspond, as a longest common subsequence pairs them, in memory linear in the input. The
// diff aligns the op streams of one step with it (align_ops.h makes the keys).
//
//   KeyAlignment alignment = AlignKeys(keys_a, keys_b, key_count, AlignOptions{});
//   for (const KeyMatch& match : alignment.matches) ... a[match.a] is b[match.b] ...
//   // elements in no match were inserted (b) or removed (a); alignment.unaligned lists the
//   // regions given up (no element there is matched)
//
// Algorithm: patience diff with Myers in between (git's `--patience`). A region is first
// trimmed of its common prefix and suffix. Keys that occur exactly once in both sides of the
// region are anchors; the longest chain of anchors in the same order on both sides (patience
// sorting, O(k log k)) is matched, and each gap between two anchors is aligned the same way,
// recursively, up to kMaxPatienceDepth levels. A region without anchors is aligned by Myers'
// O(ND) difference algorithm in its linear-space form (the middle snake, bisected): time
// O((n + m) * D), memory O(n + m), where D is the number of inserted plus removed elements. D is
// capped per region, at AlignOptions::max_edit_distance or, for a region of n + m elements, at
// work_budget / (n + m) when that is more (a small region may be aligned exactly at any D that
// costs no more than the budget): a region whose D exceeds its cap is left unaligned after
// O((n + m) * cap) work (reported in `unaligned`, every element there unmatched).
// Total memory: the keys, the matches, and scratch linear in the key count and the cap.
#pragma once

#include <cstdint>
#include <vector>

namespace upguard {

struct KeyMatch {
  uint32_t a = 0;
  uint32_t b = 0;
};

// [begin_a, end_a) of `a` against [begin_b, end_b) of `b`.
struct KeyRegion {
  uint32_t begin_a = 0;
  uint32_t end_a = 0;
  uint32_t begin_b = 0;
  uint32_t end_b = 0;
};

struct AlignOptions {
  // The most inserted plus removed elements Myers looks for in one region without an anchor;
  // beyond it the region is left unaligned.
  uint32_t max_edit_distance = 2048;
  // Myers' work on one region, in elements times differences, that is spent whatever D is: a
  // region of n + m elements may have up to work_budget / (n + m) differences when that is more
  // than max_edit_distance. 2^28 is about half a second on one core; 0 turns it off. The cap
  // never exceeds kMaxEditDistanceCeiling.
  uint64_t work_budget = uint64_t{1} << 28;
};

inline constexpr uint32_t kMaxEditDistanceCeiling = 1u << 17;

struct KeyAlignment {
  std::vector<KeyMatch> matches;     // increasing in both a and b
  std::vector<KeyRegion> unaligned;  // regions given up, in order
};

// Keys are dense: every key < key_count. Equal keys may be matched; unequal ones never are.
KeyAlignment AlignKeys(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                       uint32_t key_count, const AlignOptions& options);

}  // namespace upguard
