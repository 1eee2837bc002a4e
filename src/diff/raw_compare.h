// Comparing the ops of two traces straight from their mapped bytes, without decoding them into
// OpRecords: what lets the diff get through a step whose ops are mostly equal at the speed of
// reading it.
//
//   RawComparer comparer(ta.strings(), tb.strings());
//   uint64_t equal = comparer.EqualPrefix(*index_a, step_a, *index_b, step_b);
//   // ops [0, equal) of both steps are equal; decode and walk from there
//
// Two ops are equal here when the diff's walk would find nothing between them: the same op
// name and, slot by slot, the same kind with the same dtype, shape and digest (tensors) or text
// (scalars) — diff.cc's SameArgs. Fields the walk ignores (module, call site, node, phase,
// depth, argument names and labels, statistics) may differ. String ids are compared through a map
// from B's ids to A's, so runs whose tables assign different ids still compare.
//
// Both payloads are read with op_payload.h, the reader of the Op layout that DecodeOp walks too,
// so a pair found equal field by field has had both payloads checked as DecodeOp checks them. A
// pair whose payloads are byte-identical after the seq (and whose string ids can only name the
// same strings in both tables) is equal without being parsed, like a step skipped by its digest.
// Anything else, a malformed payload included, is "not equal": the caller decodes those ops,
// which reports damage properly.
//
// A collective op's values are in its Collective record (trace.md §5.6), which the reader
// attaches to the op, replacing its outputs once completed. So the prefix also stops at the first
// op with a Collective record in only one step, or in both with records that differ in what the
// walk could see: group, members, number, completion or outputs (the timing field
// ops_before_completion, argument names and statistics aside).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "trace/records.h"
#include "trace/trace_index.h"

namespace upguard {

class RawComparer {
 public:
  // The tables may grow (traces indexed on demand); EqualPrefix follows them.
  RawComparer(const StringTable& a, const StringTable& b) : a_(a), b_(b) {}

  // How many leading ops of a.steps()[step_a] and b.steps()[step_b] are equal.
  uint64_t EqualPrefix(const TraceIndex& a, size_t step_a, const TraceIndex& b, size_t step_b);
  // One pair of Op payloads; `ids_a` / `ids_b`: the strings defined before each.
  bool Equal(std::string_view a, uint32_t ids_a, std::string_view b, uint32_t ids_b) const;
  // One pair of Collective payloads, decoded (they are few).
  bool CollectiveEqual(const RawCollective& a, const RawCollective& b) const;
  // Takes in strings added to the tables since the last call.
  void Sync();

 private:
  // The first op index at which the two steps' Collective records stop the prefix.
  uint64_t CollectiveLimit(const TraceIndex& a, size_t step_a, const TraceIndex& b,
                           size_t step_b) const;

  const StringTable& a_;
  const StringTable& b_;
  size_t seen_a_ = 0;
  uint32_t common_ = 0;             // leading ids that name the same string in both tables
  std::vector<StringId> b_to_a_;    // B's id -> A's id of the same string, or kNoString
  std::vector<StringId> unmapped_;  // B's ids not (yet) in A's table
};

}  // namespace upguard
