// The first op that made a NaN or Inf, found from text-form traces: made from finite inputs,
// nested inside the op the user called, already in an input, a deliberate -inf fill, NaN made
// from infinities, contained in a top-level op, unknown inputs, several ranks, a damaged trace,
// a run recorded without statistics.
#include "analysis/nan_origin.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "run/load_routes_test_util.h"
#include "trace/text_format.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::Route;
using testing::TempTracePath;

// Writes each text as rank<N>.ugt of a fresh run directory.
std::string WriteRun(const std::vector<std::string>& ranks) {
  const std::string dir = TempTracePath("run");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (size_t rank_idx = 0; rank_idx < ranks.size(); ++rank_idx) {
    const std::string path = dir + "/rank" + std::to_string(rank_idx) + ".ugt";
    const Status status = WriteTraceFromText(ranks[rank_idx], "rank.txt", path);
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  return dir;
}

Run Load(const std::string& dir, Route route = Route::kIndexed) {
  StatusOr<Run> run = LoadRun(dir, testing::RouteOptions(route, /*allow_damaged=*/true));
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? std::move(*run) : Run{};
}

// The one rank's scan of a one-rank run.
RankNanScan ScanOne(const Run& run) {
  StatusOr<NanScan> scan = ScanRunForNan(run, std::nullopt);
  EXPECT_TRUE(scan.ok()) << scan.status().ToString();
  if (!scan.ok() || scan->ranks.size() != 1) return RankNanScan{};
  return std::move(scan->ranks[0]);
}

// A one-rank run written from `text`, and its scan.
struct Scanned {
  Run run;
  RankNanScan scan;
  std::string OpName(const OpLocation& at) const { return run.ranks[0].Str(at.op->op); }
};

Scanned ScanText(const std::string& text) {
  Scanned scanned{Load(WriteRun({text})), {}};
  scanned.scan = ScanOne(scanned.run);
  return scanned;
}

constexpr char kFiniteX[] = "stats=min:0,max:1,mean:0.5,l2:2,finite:4";

TEST(NanOriginTest, NamesTheOpThatMadeInfFromFiniteInputs) {
  const Scanned scanned = ScanText(std::string(R"(
op step=0 phase=forward name=aten::mul module=fc site=m.py:3
  in self tensor float32[4] digest=@x )") +
                                   kFiniteX + R"(
  in other scalar 2
  out tensor float32[4] digest=@y stats=min:0,max:2,mean:1,l2:4,finite:4
stepend 0
op step=1 phase=forward name=aten::relu module=fc site=m.py:4
  in self tensor float32[4] digest=@x )" +
                                   kFiniteX +
                                   R"(
  out tensor float32[4] digest=@x )" +
                                   kFiniteX +
                                   R"(
op step=1 phase=forward name=aten::log module=attn site=m.py:9
  in self tensor float32[4] digest=@x )" +
                                   kFiniteX +
                                   R"(
  out tensor float32[4] digest=@l stats=min:-1,max:0,mean:-0.5,l2:1,finite:3,ninf:1
op step=1 phase=forward name=aten::sum module=attn site=m.py:10
  in self tensor float32[4] digest=@l stats=min:-1,max:0,mean:-0.5,l2:1,finite:3,ninf:1
  out tensor float32[] digest=@s stats=finite:0,ninf:1
stepend 1
end
)");
  const RankNanScan& scan = scanned.scan;
  ASSERT_TRUE(scan.finding.has_value());
  const NanFinding& finding = *scan.finding;
  EXPECT_EQ(finding.kind, NanFindingKind::kProduced);
  EXPECT_EQ(scanned.OpName(finding.at), "aten::log");
  EXPECT_EQ(finding.at.step, 1u);
  EXPECT_EQ(finding.at.index, 1u);
  EXPECT_EQ(finding.arg_index, 0u);
  EXPECT_EQ(finding.kinds, kNegInfKind);
  EXPECT_TRUE(finding.inputs_finite);
  EXPECT_FALSE(finding.scalar.has_value());
  EXPECT_TRUE(finding.enclosing.empty());
  EXPECT_EQ(scan.steps_scanned, 2u);
  EXPECT_EQ(scan.ops_scanned, 3u);  // stops at the finding
  EXPECT_EQ(scan.deliberate_fills, 0u);
  EXPECT_TRUE(scan.notes.empty());
}

TEST(NanOriginTest, ANestedKernelIsReportedInsideTheOpAroundIt) {
  const Scanned scanned = ScanText(std::string(R"(
op phase=forward depth=1 name=aten::t module=fc
  in self alias float32[4,4]
  out alias float32[4,4]
op phase=forward depth=1 name=aten::addmm module=fc site=m.py:12
  in self tensor float32[4] digest=@b )") +
                                   kFiniteX + R"(
  in mat1 tensor float32[1,4] digest=@x )" +
                                   kFiniteX + R"(
  in mat2 tensor float32[4,4] digest=@w stats=min:1e38,max:3e38,mean:2e38,l2:1e39,finite:16
  out tensor float32[1,4] digest=@h stats=finite:0,pinf:4
op phase=forward depth=0 name=aten::linear module=fc site=m.py:12
  in input tensor float32[1,4] digest=@x )" +
                                   kFiniteX + R"(
  in weight tensor float32[4,4] digest=@wt stats=min:1e38,max:3e38,mean:2e38,l2:1e39,finite:16
  in bias tensor float32[4] digest=@b )" +
                                   kFiniteX +
                                   R"(
  out tensor float32[1,4] digest=@h stats=finite:0,pinf:4
stepend 0
end
)");
  const RankNanScan& scan = scanned.scan;
  ASSERT_TRUE(scan.finding.has_value());
  EXPECT_EQ(scanned.OpName(scan.finding->at), "aten::addmm");
  EXPECT_EQ(scan.finding->kinds, kPosInfKind);
  ASSERT_EQ(scan.finding->enclosing.size(), 1u);
  EXPECT_EQ(scanned.OpName(scan.finding->enclosing[0]), "aten::linear");
  EXPECT_EQ(scan.finding->enclosing[0].index, 2u);
}

TEST(NanOriginTest, ANonFiniteInputNoOpMadeEnteredFromOutside) {
  const Scanned scanned = ScanText(std::string(R"(
op phase=forward name=aten::embedding module=tok_emb site=m.py:2
  in weight tensor float32[8,4] digest=@w stats=min:0,max:1,mean:0.5,l2:3,finite:30,nan:2
  in indices tensor int64[2] digest=@i
  out tensor float32[2,4] digest=@e stats=min:0,max:1,mean:0.5,l2:1,finite:8
stepend 0
end
)"));
  const RankNanScan& scan = scanned.scan;
  ASSERT_TRUE(scan.finding.has_value());
  EXPECT_EQ(scan.finding->kind, NanFindingKind::kEntered);
  EXPECT_EQ(scanned.OpName(scan.finding->at), "aten::embedding");
  EXPECT_EQ(scan.finding->arg_index, 0u);
  EXPECT_EQ(scan.finding->kinds, kNanKind);
}

// The causal mask of every transformer: -inf written on purpose, then a softmax that makes
// probabilities of it. Not a finding; a softmax over a row that is masked entirely is.
constexpr char kMaskedSoftmax[] = R"(
op phase=forward depth=1 name=aten::masked_fill_ module=attn site=m.py:7
  in self tensor float32[2,2] digest=@a stats=min:0,max:1,mean:0.5,l2:2,finite:4
  in mask tensor bool[2,2] digest=@m
  in value scalar -inf
  out tensor float32[2,2] digest=@f stats=min:0,max:1,mean:0.5,l2:1,finite:ROWFINITE,ninf:ROWINF
op phase=forward depth=0 name=aten::masked_fill module=attn site=m.py:7
  in self tensor float32[2,2] digest=@a stats=min:0,max:1,mean:0.5,l2:2,finite:4
  in mask tensor bool[2,2] digest=@m
  in value scalar -inf
  out tensor float32[2,2] digest=@f stats=min:0,max:1,mean:0.5,l2:1,finite:ROWFINITE,ninf:ROWINF
op phase=forward name=aten::softmax module=attn site=m.py:8
  in self tensor float32[2,2] digest=@f stats=min:0,max:1,mean:0.5,l2:1,finite:ROWFINITE,ninf:ROWINF
  in dim scalar -1
  in half_to_float scalar False
  out tensor float32[2,2] digest=@p SOFTMAX
stepend 0
end
)";

std::string MaskedSoftmax(const std::string& row_finite, const std::string& row_inf,
                          const std::string& softmax_stats) {
  std::string text = kMaskedSoftmax;
  for (auto [key, value] :
       {std::pair{std::string("ROWFINITE"), row_finite}, std::pair{std::string("ROWINF"), row_inf},
        std::pair{std::string("SOFTMAX"), softmax_stats}}) {
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
      text.replace(at, key.size(), value);
    }
  }
  return text;
}

TEST(NanOriginTest, AFillWithAScalarInfIsDeliberate) {
  const Scanned scanned =
      ScanText(MaskedSoftmax("3", "1", "stats=min:0,max:1,mean:0.5,l2:1.2,finite:4"));
  const RankNanScan& scan = scanned.scan;
  EXPECT_FALSE(scan.finding.has_value());
  EXPECT_EQ(scan.deliberate_fills, 2u);
  ASSERT_TRUE(scan.first_fill.has_value());
  EXPECT_EQ(scanned.OpName(*scan.first_fill), "aten::masked_fill_");
  EXPECT_EQ(scan.ops_scanned, 3u);
  EXPECT_EQ(scan.contained, 0u);
}

TEST(NanOriginTest, NanFromInfinitiesIsMade) {
  const Scanned scanned =
      ScanText(MaskedSoftmax("2", "2", "stats=min:0,max:1,mean:0.5,l2:1,finite:2,nan:2"));
  const RankNanScan& scan = scanned.scan;
  ASSERT_TRUE(scan.finding.has_value());
  EXPECT_EQ(scan.finding->kind, NanFindingKind::kProduced);
  EXPECT_EQ(scanned.OpName(scan.finding->at), "aten::softmax");
  EXPECT_EQ(scan.finding->kinds, kNanKind);
  EXPECT_FALSE(scan.finding->inputs_finite);
  EXPECT_EQ(scan.deliberate_fills, 2u);
}

TEST(NanOriginTest, AScalarInfThatDoesNotExplainTheOutputIsTheLikelyReason) {
  const Scanned scanned = ScanText(std::string(R"(
op phase=forward name=aten::mul module=fc
  in self tensor float32[4] digest=@x stats=min:-1,max:1,mean:0,l2:1.4,finite:4
  in other scalar inf
  out tensor float32[4] digest=@y stats=finite:0,nan:2,pinf:1,ninf:1
end
)"));
  const RankNanScan& scan = scanned.scan;
  ASSERT_TRUE(scan.finding.has_value());
  EXPECT_EQ(scan.finding->kinds, kNanKind | kPosInfKind | kNegInfKind);
  ASSERT_TRUE(scan.finding->scalar.has_value());
  EXPECT_EQ(*scan.finding->scalar, 1u);
  EXPECT_EQ(scan.deliberate_fills, 0u);
}

TEST(NanOriginTest, InfinityCarriedWithAnotherSignIsNotMade) {
  const Scanned scanned = ScanText(std::string(R"(
op phase=forward name=aten::full
  in size scalar [2]
  in fill_value scalar -inf
  out tensor float32[2] digest=@f stats=finite:0,ninf:2
op phase=forward name=aten::neg
  in self tensor float32[2] digest=@f stats=finite:0,ninf:2
  out tensor float32[2] digest=@g stats=finite:0,pinf:2
op phase=forward name=aten::add
  in self tensor float32[2] digest=@g stats=finite:0,pinf:2
  in other tensor float32[2] digest=@x stats=min:1,max:1,mean:1,l2:1.4,finite:2
  out tensor float32[2] digest=@h stats=finite:0,pinf:2
end
)"));
  const RankNanScan& scan = scanned.scan;
  EXPECT_FALSE(scan.finding.has_value());
  EXPECT_EQ(scan.deliberate_fills, 1u);
  EXPECT_EQ(scan.ops_scanned, 3u);
}

TEST(NanOriginTest, NonFiniteValuesATopLevelOpDoesNotOutputAreContained) {
  const Scanned scanned = ScanText(std::string(R"(
op phase=forward depth=1 name=aten::exp
  in self tensor float32[2] digest=@x stats=min:100,max:200,mean:150,l2:224,finite:2
  out tensor float32[2] digest=@e stats=finite:0,pinf:2
op phase=forward depth=1 name=aten::clamp
  in self tensor float32[2] digest=@e stats=finite:0,pinf:2
  in max scalar 1
  out tensor float32[2] digest=@c stats=min:1,max:1,mean:1,l2:1.4,finite:2
op phase=forward depth=0 name=my::stable_exp
  in self tensor float32[2] digest=@x stats=min:100,max:200,mean:150,l2:224,finite:2
  out tensor float32[2] digest=@c stats=min:1,max:1,mean:1,l2:1.4,finite:2
end
)"));
  const RankNanScan& scan = scanned.scan;
  EXPECT_FALSE(scan.finding.has_value());
  EXPECT_EQ(scan.contained, 1u);
  EXPECT_EQ(scan.ops_scanned, 3u);
}

TEST(NanOriginTest, AFloatingInputWithoutStatisticsIsNotKnownFinite) {
  const Scanned scanned = ScanText(std::string(R"(
op phase=forward name=aten::log
  in self tensor float32[2] digest=@x
  out tensor float32[2] digest=@l stats=finite:0,ninf:2
op phase=forward name=aten::log
  in self tensor int64[2] digest=@i
  out tensor float32[2] digest=@k stats=finite:1,nan:1
end
)"));
  const RankNanScan& scan = scanned.scan;
  ASSERT_TRUE(scan.finding.has_value());
  EXPECT_EQ(scan.finding->at.index, 1u);  // the int64 input cannot hold NaN/Inf: finite
  EXPECT_EQ(scan.finding->kinds, kNanKind);
}

TEST(NanOriginTest, EveryRouteToTheOpsFindsTheSameOp) {
  const std::string dir = WriteRun({MaskedSoftmax("2", "2", "stats=finite:2,nan:2")});
  for (Route route : {Route::kDecodeAll, Route::kIndexed, Route::kOnDemand}) {
    SCOPED_TRACE(static_cast<int>(route));
    const upguard::Run run = Load(dir, route);
    const RankNanScan scan = ScanOne(run);
    EXPECT_EQ(scan.ops_scanned, 3u);
    ASSERT_TRUE(scan.finding.has_value());
    EXPECT_EQ(scan.finding->at.index, 2u);
    EXPECT_EQ(scan.deliberate_fills, 2u);
  }
}

constexpr char kCleanRank[] = R"(
op phase=forward name=aten::relu
  in self tensor float32[4] digest=@x stats=min:0,max:1,mean:0.5,l2:2,finite:4
  out tensor float32[4] digest=@x stats=min:0,max:1,mean:0.5,l2:2,finite:4
stepend 0
end
)";

constexpr char kNanRank[] = R"(
op phase=backward name=aten::div node=DivBackward0 module=head site=m.py:20
  in self tensor float32[2] digest=@g stats=min:0,max:0,mean:0,l2:0,finite:2
  in other tensor float32[2] digest=@z stats=min:0,max:0,mean:0,l2:0,finite:2
  out tensor float32[2] digest=@n stats=finite:0,nan:2
stepend 0
end
)";

TEST(NanOriginTest, EveryRankIsScannedOrTheOneAskedFor) {
  const upguard::Run run = Load(WriteRun({kCleanRank, kNanRank}));
  StatusOr<NanScan> all = ScanRunForNan(run, std::nullopt);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_TRUE(all->found);
  ASSERT_EQ(all->ranks.size(), 2u);
  EXPECT_EQ(all->ranks[0].rank, 0);
  EXPECT_FALSE(all->ranks[0].finding.has_value());
  EXPECT_EQ(all->ranks[1].rank, 1);
  ASSERT_TRUE(all->ranks[1].finding.has_value());
  EXPECT_EQ(run.ranks[1].Str(all->ranks[1].finding->at.op->node), "DivBackward0");

  StatusOr<NanScan> only0 = ScanRunForNan(run, 0);
  ASSERT_TRUE(only0.ok());
  EXPECT_FALSE(only0->found);
  ASSERT_EQ(only0->ranks.size(), 1u);

  StatusOr<NanScan> missing = ScanRunForNan(run, 2);
  EXPECT_EQ(missing.status().message(), "--rank 2: " + run.dir + " has 2 rank(s)");
}

TEST(NanOriginTest, ADamagedTraceIsScannedAsFarAsItIsReadable) {
  const std::string dir = WriteRun({kNanRank});
  const std::string path = dir + "/rank0.ugt";
  std::string bytes = testing::ReadBytes(path);
  testing::WriteBytes(path, bytes.substr(0, bytes.size() - 3));  // cuts the End record
  const upguard::Run run = Load(dir);
  const RankNanScan scan = ScanOne(run);
  ASSERT_TRUE(scan.finding.has_value());
  ASSERT_EQ(scan.notes.size(), 1u);
  EXPECT_NE(scan.notes[0].find("truncated record"), std::string::npos) << scan.notes[0];
  EXPECT_NE(scan.notes[0].find("; scanned only the readable part"), std::string::npos);

  std::string no_end = kCleanRank;
  no_end.resize(no_end.find("end\n"));
  const upguard::Run incomplete = Load(WriteRun({no_end}));
  const RankNanScan partial = ScanOne(incomplete);
  EXPECT_FALSE(partial.finding.has_value());
  ASSERT_EQ(partial.notes.size(), 1u);
  EXPECT_EQ(partial.notes[0],
            incomplete.ranks[0].path +
                " ends without its end record (the process stopped before closing the trace); "
                "scanned the steps it holds");
}

TEST(NanOriginTest, ARunRecordedWithoutStatisticsIsAnError) {
  const upguard::Run run = Load(WriteRun({R"(meta {"record_options":{"stats":false}}
op name=aten::relu
  in self tensor float32[4] digest=@x
  out tensor float32[4] digest=@x
end
)"}));
  StatusOr<NanScan> scan = ScanRunForNan(run, std::nullopt);
  EXPECT_EQ(scan.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(scan.status().message(),
            run.dir +
                ": recorded without statistics (--no-stats); record again without it to use "
                "`upguard nan`");
}

TEST(NanOriginTest, KindsFromStatisticsAndScalarTexts) {
  TensorStats stats;
  EXPECT_EQ(NonFiniteKinds(stats), 0);
  stats.pos_inf_count = 1;
  stats.neg_inf_count = 3;
  EXPECT_EQ(NonFiniteKinds(stats), kPosInfKind | kNegInfKind);
  EXPECT_EQ(ScalarNonFiniteKinds("-inf"), kNegInfKind);
  EXPECT_EQ(ScalarNonFiniteKinds("inf"), kPosInfKind);
  EXPECT_EQ(ScalarNonFiniteKinds("nan"), kNanKind);
  EXPECT_EQ(ScalarNonFiniteKinds("-nan"), kNanKind);
  EXPECT_EQ(ScalarNonFiniteKinds("1e+308"), 0);
  EXPECT_EQ(ScalarNonFiniteKinds("'inf'"), 0);  // a string argument, not a number
  EXPECT_EQ(NonFiniteKindsText(kNanKind | kNegInfKind), "NaN, -Inf");
  EXPECT_EQ(NonFiniteKindsText(0), "");
}

}  // namespace
}  // namespace upguard
