// The diff on a step whose op streams differ in many places: 2,000 reductions, a third of them
// with two extra nested ops in run B (as more threads add), and a culprit near the end. Every
// extra op is found and counted, the culprit among the paired ops is named, and with a cap
// smaller than the differences the documented fallback (unaligned blocks, nothing compared
// there) is what the report says.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "diff/diff.h"
#include "trace/text_format.h"

namespace upguard {
namespace {

namespace fs = std::filesystem;

constexpr int kLayers = 2000;
constexpr int kCulpritLayer = 1500;

bool HasCopies(int layer) { return layer % 3 == 0; }
std::string Module(int layer) { return "blocks." + std::to_string(layer % 4); }

// One step of kLayers x (mul, sum, top-level copy_); run B adds empty + copy_ inside the sums
// of HasCopies layers, and its gelu at kCulpritLayer uses another `approximate`.
std::string StepText(bool b) {
  std::string text;
  for (int layer = 0; layer < kLayers; ++layer) {
    const std::string x = "@x" + std::to_string(layer);
    const std::string head = "op step=0 phase=forward module=" + Module(layer) + " ";
    text += head + "name=aten::mul\n  in self tensor float32[64] digest=" + x +
            "\n  out tensor float32[64] digest=" + x + "m\n";
    if (b && HasCopies(layer)) {
      text += head + "depth=1 name=aten::empty\n  in size scalar '[2]'\n  out uninit float32[2]\n";
      text += head +
              "depth=1 name=aten::copy_\n  in self alias float32[2]\n"
              "  in src tensor float32[2] digest=@zero\n  out tensor float32[2] digest=@zero\n";
    }
    text += head + "name=aten::sum\n  in self tensor float32[64] digest=" + x +
            "m\n  out tensor float32[] digest=" + x + "s\n";
    text += head +
            "name=aten::copy_\n  in self alias float32[]\n  in src tensor float32[] digest=" + x +
            "s\n  out tensor float32[] digest=" + x + "s\n";
    if (layer == kCulpritLayer) {
      text += head + "name=aten::gelu\n  in self tensor float32[64] digest=" + x +
              "m\n  in approximate scalar " + (b ? "tanh" : "none") +
              "\n  out tensor float32[64] digest=" + (b ? "@tanh" : "@none") + "\n";
    }
  }
  return text + "stepend 0\nend\n";
}

class AlignDiffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("upguard_align_diff_" + std::to_string(::getpid()));
    for (const char* run : {"a", "b"}) {
      fs::create_directories(dir_ / run);
      const Status status =
          WriteTraceFromText(StepText(run[0] == 'b'), run, (dir_ / run / "rank0.ugt").string());
      ASSERT_TRUE(status.ok()) << status.ToString();
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  DiffResult Diff(const DiffOptions& options) {
    LoadOptions load;
    load.index_on_demand = true;
    StatusOr<upguard::Run> a = LoadRun((dir_ / "a").string(), load);
    StatusOr<upguard::Run> b = LoadRun((dir_ / "b").string(), load);
    EXPECT_TRUE(a.ok() && b.ok());
    runs_ = {std::move(*a), std::move(*b)};
    StatusOr<DiffResult> result = DiffRuns(runs_[0], runs_[1], options);
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    return std::move(*result);
  }

  fs::path dir_;
  std::vector<upguard::Run> runs_;  // qualified: Test::Run is a member
};

TEST_F(AlignDiffTest, ScatteredInsertionsAreCountedAndTheCulpritIsNamed) {
  const DiffResult result = Diff(DiffOptions{});
  ASSERT_EQ(result.ranks.size(), 1u);
  const RankDiff& rank = result.ranks[0];
  EXPECT_EQ(result.verdict, Verdict::kCulprit);
  ASSERT_TRUE(rank.numeric);
  // Layer L's ops start at 3 L in A (+1 for the gelu after kCulpritLayer), and B has two more
  // for each earlier layer with copies.
  int copies_before = 0;
  for (int layer = 0; layer <= kCulpritLayer; ++layer) copies_before += HasCopies(layer) ? 1 : 0;
  EXPECT_EQ(runs_[0].ranks[0].Str(rank.numeric->a.op->op), "aten::gelu");
  EXPECT_EQ(rank.numeric->a.index, 3u * kCulpritLayer + 3);
  EXPECT_EQ(rank.numeric->b.index, 3u * kCulpritLayer + 3 + 2 * copies_before);
  EXPECT_FALSE(rank.structural);  // every extra op is inside a sum that matches

  ASSERT_TRUE(rank.structure);
  const StructuralSummary& s = *rank.structure;
  int with_copies = 0;
  std::map<std::string, size_t> per_module;
  for (int layer = 0; layer < kLayers; ++layer) {
    if (!HasCopies(layer)) continue;
    ++with_copies;
    ++per_module[Module(layer)];
  }
  EXPECT_EQ(s.blocks, static_cast<size_t>(with_copies));
  EXPECT_EQ(s.only_a_count, 0u);
  EXPECT_EQ(s.only_b_count, 2u * with_copies);
  EXPECT_EQ(s.inside_clean_b, 2u * with_copies);
  EXPECT_EQ(s.unaligned_blocks, 0u);
  ASSERT_EQ(s.groups.size(), 8u);  // (empty, copy_) inside aten::sum, in 4 modules
  for (const StructuralGroup& group : s.groups) {
    EXPECT_EQ(group.inside, "aten::sum");
    EXPECT_EQ(group.only_b, per_module[group.module]) << group.module << " " << group.op;
  }
  EXPECT_EQ(s.groups[0].module, "blocks.0");
  EXPECT_EQ(s.groups[0].op, "aten::empty");
  EXPECT_EQ(s.groups[0].first_b->index, 1u);
}

// With a cap below the differences, the regions on either side of the gelu (the one op whose
// identity is unique in the step: an anchor) are left unaligned, every op there unpaired and
// not compared; the gelu itself is still paired and named.
TEST_F(AlignDiffTest, BeyondTheCapRegionsAreLeftUnalignedAndSaySo) {
  DiffOptions options;
  options.align.max_edit_distance = 64;  // fewer than the 1,002 and 332 extra ops around it
  options.align.work_budget = 0;         // and no more for these small regions
  const DiffResult result = Diff(options);
  const RankDiff& rank = result.ranks[0];
  EXPECT_EQ(result.verdict, Verdict::kCulprit);
  ASSERT_TRUE(rank.numeric);
  EXPECT_EQ(rank.numeric->a.index, 3u * kCulpritLayer + 3);
  ASSERT_TRUE(rank.structural);
  EXPECT_FALSE(rank.structural->realigned);
  EXPECT_EQ(rank.structural->index_a, 1u);  // after the first mul, equal in both
  EXPECT_EQ(rank.structural->index_b, 1u);
  // Before the gelu: ops 1..4500 of A (to layer 1500's mul) and of B to that mul's nested ops
  // (its sum and copy_ are a common suffix). After it: from layer 1503's nested ops (B) or sum
  // (A) to layer 1998's mul.
  EXPECT_EQ(rank.structural->only_a_count, 4500u);
  EXPECT_EQ(rank.structural->only_b_count, 5502u);
  ASSERT_TRUE(rank.structure);
  EXPECT_EQ(rank.structure->blocks, 2u);
  EXPECT_EQ(rank.structure->unaligned_blocks, 2u);
  EXPECT_EQ(rank.structure->only_a_count, 4500u + 1485u);
  EXPECT_EQ(rank.structure->only_b_count, 5502u + 1817u);
}

}  // namespace
}  // namespace upguard
