// Collects the structural differences a diff finds, step after step, into a
// StructuralSummary: totals, the first blocks with their ops, the ops grouped by module, and
// where every block is (to tell whether an op has a counterpart).
//
//   StructureBuilder builder;
//   for each step aligned:
//     if (builder.AddStep(pair, inside_clean)) hold both steps;   // pair: a StepPair
//   builder.Unpaired(1, step, index);                  // op `index` of B: in a block?
//   std::optional<StructuralSummary> summary = builder.Finish();
//
// Memory: the groups (bounded), the first blocks' op pointers, and one range per block.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "align/align_ops.h"
#include "diff/diff.h"
#include "diff/step_pair.h"

namespace upguard {

class StructureBuilder {
 public:
  // Adds the blocks of one step (alignment.blocks(); inside_clean[k]: block k's ops are all
  // nested inside clean paired top-level ops; skipped[k]: block k is left out, as a block of
  // input-pipeline ops is). Returns true when the summary keeps pointers
  // into sa's and sb's ops: the caller must keep those steps alive.
  bool AddStep(const StepPair& pair, const std::vector<bool>& inside_clean,
               const std::vector<bool>& skipped = {});
  // Whether op `index` of step `step` of run `side` (0: A, 1: B) is in a block added so far.
  bool Unpaired(int side, uint32_t step, size_t index) const;
  // The first block not inside a clean op.
  const std::optional<StructuralDivergence>& first_counted() const { return first_counted_; }
  // Everything added; nullopt when no block was.
  std::optional<StructuralSummary> Finish();

 private:
  struct Range {
    uint32_t step;
    size_t begin[2];
    size_t end[2];
  };

  // Adds the ops of one side (0: A, 1: B) of a block to their groups.
  void Group(int side, const StepPair& pair, size_t begin, size_t count);
  // The group of an outermost op without counterpart (`enclosing`: the op around it, or null);
  // kNoGroup once kMaxGroups groups exist and it is in none of them.
  size_t GroupOf(const RankTrace& trace, const OpRecord& root, const OpRecord* enclosing);

  StructuralSummary summary_;
  std::optional<StructuralDivergence> first_counted_;
  std::vector<Range> ranges_;
  std::map<std::string, size_t> group_of_;     // "module\0op\0inside" -> index into summary_.groups
  std::map<std::string, size_t> module_rank_;  // order of first appearance
};

}  // namespace upguard
