// The synthetic runs: deterministic from the seed, the size asked for, each plant where it says,
// and the trace shapes the options promise.
#include "tools/synthetic_trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "trace/reader.h"

namespace upguard::synthetic {
namespace {

std::string Dir(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("upguard_synthetic_" + std::to_string(::getpid())) / name)
      .string();
}

SyntheticOptions Small() {
  SyntheticOptions options;
  options.ops = 5'000;
  options.steps = 4;
  return options;
}

std::string Bytes(const std::string& dir) {
  StatusOr<std::string> bytes = ReadFileToString(dir + "/rank0.ugt");
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : "";
}

struct Counts {
  uint64_t ops = 0, step_ends = 0;
  bool complete = false;
};

Counts Read(const std::string& dir) {
  Counts counts;
  StatusOr<std::unique_ptr<TraceReader>> reader = TraceReader::Open(dir + "/rank0.ugt");
  EXPECT_TRUE(reader.ok());
  TraceRecord record;
  while (true) {
    StatusOr<bool> more = (*reader)->Next(&record);
    if (!more.ok() || !*more) break;
    (record.type == RecordType::kOp ? counts.ops : counts.step_ends)++;
  }
  EXPECT_FALSE((*reader)->damage().has_value());
  counts.complete = (*reader)->complete();
  return counts;
}

TEST(SyntheticTraceTest, DeterministicFromTheSeedAndTheSizeAskedFor) {
  ASSERT_TRUE(WriteSyntheticRun(Dir("a1"), Small()).ok());
  ASSERT_TRUE(WriteSyntheticRun(Dir("a2"), Small()).ok());
  EXPECT_EQ(Bytes(Dir("a1")), Bytes(Dir("a2")));
  SyntheticOptions other = Small();
  other.seed = 9;
  ASSERT_TRUE(WriteSyntheticRun(Dir("b"), other).ok());
  EXPECT_NE(Bytes(Dir("a1")), Bytes(Dir("b")));
  const Counts counts = Read(Dir("a1"));
  EXPECT_EQ(counts.ops, 5'000u);
  EXPECT_EQ(counts.step_ends, 4u);
  EXPECT_TRUE(counts.complete);
  EXPECT_TRUE(IsRegularFile(Dir("a1") + "/meta.json"));
}

TEST(SyntheticTraceTest, OptionsShapeTheTrace) {
  SyntheticOptions options = Small();
  options.step_ends = false;
  options.end_record = false;
  ASSERT_TRUE(WriteSyntheticRun(Dir("bare"), options).ok());
  const Counts counts = Read(Dir("bare"));
  EXPECT_EQ(counts.ops, 5'000u);
  EXPECT_EQ(counts.step_ends, 0u);
  EXPECT_FALSE(counts.complete);
  options = Small();
  options.plant = Plant::kStructural;
  options.plant_at = 1'000;
  StatusOr<SyntheticSummary> summary = WriteSyntheticRun(Dir("extra"), options);
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ(Read(Dir("extra")).ops, 5'001u);
  EXPECT_EQ(summary->planted.op, "aten::mul");
  EXPECT_GE(summary->planted.seq, 1'000u);
  options.plant_at = 5'000;
  EXPECT_FALSE(WriteSyntheticRun(Dir("past"), options).ok());
}

TEST(SyntheticTraceTest, PlantsLandAtOrAfterTheOpAsked) {
  for (Plant plant : {Plant::kCulprit, Plant::kArgument, Plant::kStructural}) {
    for (uint64_t at : {0, 2'500, 4'990}) {
      SyntheticOptions options = Small();
      options.plant = plant;
      options.plant_at = at;
      StatusOr<SyntheticSummary> summary = WriteSyntheticRun(Dir("plant"), options);
      ASSERT_TRUE(summary.ok()) << PlantName(plant) << " " << at << ": "
                                << summary.status().ToString();
      const PlantedChange& planted = summary->planted;
      EXPECT_TRUE(planted.planted);
      EXPECT_GE(planted.seq, at);
      EXPECT_EQ(planted.seq, planted.step * 1'250 + planted.index);  // 4 steps of 1,250
      EXPECT_FALSE(planted.op.empty());
    }
  }
}

TEST(SyntheticTraceTest, RanksShareTheProgramNotTheBatches) {
  SyntheticOptions options = Small();
  options.world_size = 3;
  ASSERT_TRUE(WriteSyntheticRunMeta(Dir("ranks"), options).ok());
  for (uint32_t rank : {0u, 2u}) {
    options.rank = rank;
    ASSERT_TRUE(WriteSyntheticRank(Dir("ranks"), options).ok());
  }
  StatusOr<std::unique_ptr<TraceReader>> rank2 = TraceReader::Open(Dir("ranks") + "/rank2.ugt");
  ASSERT_TRUE(rank2.ok());
  const nlohmann::json meta = nlohmann::json::parse((*rank2)->meta_json());
  EXPECT_EQ(meta["rank"], 2);
  EXPECT_EQ(meta["world_size"], 3);
  const nlohmann::json run = nlohmann::json::parse(*ReadFileToString(Dir("ranks") + "/meta.json"));
  EXPECT_EQ(run["world_size"], 3);
  EXPECT_EQ(run["ranks"], nlohmann::json({"rank0.ugt", "rank1.ugt", "rank2.ugt"}));
  // The same program (same ops, same record sizes) on other data.
  const std::string rank0 = Bytes(Dir("ranks"));
  const std::string rank2_bytes = *ReadFileToString(Dir("ranks") + "/rank2.ugt");
  EXPECT_EQ(Read(Dir("ranks")).ops, 5'000u);
  EXPECT_EQ(rank0.size(), rank2_bytes.size());
  EXPECT_NE(rank0, rank2_bytes);
  options.rank = 3;
  EXPECT_FALSE(WriteSyntheticRank(Dir("ranks"), options).ok());
}

}  // namespace
}  // namespace upguard::synthetic
