#include "diff/align_summary.h"

#include <algorithm>
#include <unordered_map>

namespace upguard {
namespace {

constexpr size_t kMaxListedOps = 16;  // per side of a block
constexpr size_t kListedBlocks = 3;
constexpr size_t kMaxGroups = 32;
constexpr size_t kNoGroup = SIZE_MAX;

StructuralDivergence Describe(const StepOps& sa, const StepOps& sb, const OpBlock& block,
                              bool inside_clean) {
  StructuralDivergence structural;
  structural.step = sa.step;
  structural.index_a = block.index_a;
  structural.index_b = block.index_b;
  structural.only_a_count = block.count_a;
  structural.only_b_count = block.count_b;
  for (size_t op_idx = 0; op_idx < std::min(block.count_a, kMaxListedOps); ++op_idx) {
    structural.only_a.push_back(&sa.ops[block.index_a + op_idx]);
  }
  for (size_t op_idx = 0; op_idx < std::min(block.count_b, kMaxListedOps); ++op_idx) {
    structural.only_b.push_back(&sb.ops[block.index_b + op_idx]);
  }
  structural.realigned = block.aligned;
  structural.inside_clean_op = inside_clean;
  return structural;
}

}  // namespace

bool StructureBuilder::AddStep(const StepPair& pair, const std::vector<bool>& inside_clean,
                               const std::vector<bool>& skipped) {
  const StepOps& sa = pair.a().step;
  const StepOps& sb = pair.b().step;
  const StepAlignment& alignment = pair.alignment();
  bool keeps_pointers = false;
  for (size_t block_idx = 0; block_idx < alignment.blocks().size(); ++block_idx) {
    if (block_idx < skipped.size() && skipped[block_idx]) continue;
    const OpBlock& block = alignment.blocks()[block_idx];
    const bool clean = inside_clean[block_idx];
    if (summary_.blocks++ == 0) summary_.first_step = sa.step;
    summary_.last_step = sa.step;
    summary_.unaligned_blocks += block.aligned ? 0 : 1;
    summary_.only_a_count += block.count_a;
    summary_.only_b_count += block.count_b;
    if (clean) {
      summary_.inside_clean_a += block.count_a;
      summary_.inside_clean_b += block.count_b;
    }
    if (summary_.first_blocks.size() < kListedBlocks) {
      summary_.first_blocks.push_back(Describe(sa, sb, block, clean));
      keeps_pointers = true;
    }
    if (!clean && !first_counted_) {
      first_counted_ = Describe(sa, sb, block, clean);
      keeps_pointers = true;
    }
    ranges_.push_back(Range{sa.step,
                            {block.index_a, block.index_b},
                            {block.index_a + block.count_a, block.index_b + block.count_b}});
    Group(0, pair, block.index_a, block.count_a);
    Group(1, pair, block.index_b, block.count_b);
  }
  return keeps_pointers;
}

void StructureBuilder::Group(int side, const StepPair& pair, size_t begin, size_t count) {
  const RankTrace& trace = pair.side(side).trace;
  const StepOps& step = pair.side(side).step;
  const StepAlignment& alignment = pair.alignment();
  std::unordered_map<size_t, size_t> group_of_root;  // op index -> group (kNoGroup: unlisted)
  for (size_t op_idx = begin; op_idx < begin + count; ++op_idx) {
    // The outermost op without counterpart around this one: its group.
    size_t root = op_idx;
    std::optional<size_t> up = alignment.Parent(side, root);
    while (up && !alignment.Partner(side, *up)) {
      root = *up;
      up = alignment.Parent(side, root);
    }
    auto [root_it, new_root] = group_of_root.emplace(root, kNoGroup);
    if (new_root) root_it->second = GroupOf(trace, step.ops[root], up ? &step.ops[*up] : nullptr);
    if (root_it->second == kNoGroup) {
      ++(side == 0 ? summary_.other_a : summary_.other_b);
      continue;
    }
    StructuralGroup& group = summary_.groups[root_it->second];
    ++(side == 0 ? group.ops_a : group.ops_b);
    if (root != op_idx) continue;
    ++(side == 0 ? group.only_a : group.only_b);
    std::optional<StepIndex>& first = side == 0 ? group.first_a : group.first_b;
    if (!first) first = StepIndex{step.step, op_idx};
  }
}

size_t StructureBuilder::GroupOf(const RankTrace& trace, const OpRecord& root,
                                 const OpRecord* enclosing) {
  const std::string& module = trace.Str(root.module);
  const std::string& name = trace.Str(root.op);
  const std::string inside = enclosing != nullptr ? trace.Str(enclosing->op) : std::string();
  std::string key = module;
  key.append(1, '\0').append(name).append(1, '\0').append(inside);
  auto group_it = group_of_.find(key);
  if (group_it != group_of_.end()) return group_it->second;
  if (summary_.groups.size() == kMaxGroups) return kNoGroup;
  module_rank_.emplace(module, module_rank_.size());
  StructuralGroup group;
  group.module = module;
  group.op = name;
  group.inside = inside;
  summary_.groups.push_back(std::move(group));
  return group_of_.emplace(std::move(key), summary_.groups.size() - 1).first->second;
}

bool StructureBuilder::Unpaired(int side, uint32_t step, size_t index) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [&](const Range& range) {
    return range.step == step && range.begin[side] <= index && index < range.end[side];
  });
}

std::optional<StructuralSummary> StructureBuilder::Finish() {
  if (summary_.blocks == 0) return std::nullopt;
  std::stable_sort(summary_.groups.begin(), summary_.groups.end(),
                   [this](const StructuralGroup& x, const StructuralGroup& y) {
                     return module_rank_.at(x.module) < module_rank_.at(y.module);
                   });
  return summary_;
}

}  // namespace upguard
