// Comparing one op's arguments across two runs.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

#include "diff/diff.h"
#include "run/run_loader.h"

namespace upguard {

// True when both slots hold the same value. Kinds without values (views, uninitialized,
// opaque) compare by dtype and shape only and set *compared = false.
bool ArgsEqual(const ArgRecord& a, const ArgRecord& b, bool* compared);

// True when every input and output slot of `a` and `b` holds the same value (ArgsEqual): then
// the walk finds no divergence at the pair. False says nothing more: a differing scalar input
// with equal outputs is no divergence either.
bool SameArgs(const OpRecord& a, const OpRecord& b);

// Slot-by-slot comparison of `a` and `b` (inputs or outputs of one op in each run).
std::vector<ArgComparison> CompareArgs(const std::vector<ArgRecord>& a,
                                       const std::vector<ArgRecord>& b, bool is_input,
                                       const RankTrace& trace_a);

// Judges each tensor slot that is not equal against the op's tolerance (sets `tolerated`).
void JudgeSlots(const ToleranceJudge& judge, std::string_view op, std::string_view module,
                std::string_view phase, std::vector<ArgComparison>* slots);

// The op enclosing ops[index]: in completion order, the first later op that is shallower.
std::optional<size_t> ParentIndex(const std::vector<OpRecord>& ops, size_t index);

}  // namespace upguard
