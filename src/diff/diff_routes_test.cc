// The diff gives the same report whichever way its traces were read: every op in memory
// (TraceReader, the reference), mapped and indexed at load, or indexed step by step as the diff
// walks (what `upguard diff` does, with ops compared straight from the mapped bytes). On the
// golden cases and on generated GPT-like runs with a change planted at the start, the middle and
// the end; and the generated runs' reports name the planted op.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "diff/diff.h"
#include "report/diff_report.h"
#include "run/load_routes_test_util.h"
#include "tools/synthetic_trace.h"
#include "trace/text_format.h"

namespace upguard {
namespace {

using testing::Route;

namespace fs = std::filesystem;
using synthetic::Plant;
using synthetic::SyntheticOptions;

struct Report {
  std::string error;
  std::string text;
  std::string json;
};

Report Diff(const std::string& a, const std::string& b, Route route, bool allow_damaged = false) {
  const LoadOptions options = testing::RouteOptions(route, allow_damaged);
  Report report;
  StatusOr<Run> run_a = LoadRun(a, options);
  StatusOr<Run> run_b = run_a.ok() ? LoadRun(b, options) : run_a.status();
  if (!run_b.ok()) {
    report.error = run_b.status().ToString();
    return report;
  }
  StatusOr<DiffResult> result = DiffRuns(*run_a, *run_b, DiffOptions{});
  if (!result.ok()) {
    report.error = result.status().ToString();
    return report;
  }
  report.text = RenderDiffText(*result, *run_a, *run_b);
  report.json = DiffToJson(*result, *run_a, *run_b).dump(1);
  return report;
}

// Every route's report, checked equal to the reference; returns the reference.
Report SameFromEveryRoute(const std::string& a, const std::string& b, bool allow_damaged = false) {
  const Report reference = Diff(a, b, Route::kDecodeAll, allow_damaged);
  for (Route route : {Route::kIndexed, Route::kOnDemand}) {
    const Report report = Diff(a, b, route, allow_damaged);
    EXPECT_EQ(report.error, reference.error) << a << " vs " << b;
    EXPECT_EQ(report.text, reference.text) << a << " vs " << b;
    EXPECT_EQ(report.json, reference.json) << a << " vs " << b;
  }
  return reference;
}

std::string TestDir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("upguard_diff_routes_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

// The `=== a`, `=== b/rank1`, ... sections of a golden case, written as run directories.
bool WriteGoldenRuns(const fs::path& case_path, const std::string& dir, std::string* command) {
  std::ifstream in(case_path);
  std::string line, section;
  std::map<std::string, std::string> texts;
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) {
      section = line.substr(4);
    } else if (!section.empty()) {
      texts[section] += line + "\n";
    } else if (line.rfind("command:", 0) == 0) {
      *command = line.substr(8);
    }
  }
  for (const auto& [name, text] : texts) {
    if (name == "expect" || name.rfind("file ", 0) == 0) continue;  // not a trace
    const size_t slash = name.find('/');
    const std::string run = name.substr(0, slash);
    const std::string rank = slash == std::string::npos ? "rank0" : name.substr(slash + 1);
    fs::create_directories(dir + "/" + run);
    const Status status = WriteTraceFromText(text, name, dir + "/" + run + "/" + rank + ".ugt");
    EXPECT_TRUE(status.ok()) << status.ToString();
  }
  return texts.count("a") > 0 && texts.count("b") > 0;
}

TEST(DiffRoutesTest, GoldenCases) {
  int cases = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(UPGUARD_SOURCE_DIR) / "tests/golden")) {
    if (entry.path().extension() != ".test") continue;
    SCOPED_TRACE(entry.path().filename().string());
    const std::string dir = TestDir(entry.path().stem().string());
    std::string command;
    if (!WriteGoldenRuns(entry.path(), dir, &command) ||
        command.find("diff") == std::string::npos) {
      continue;
    }
    const Report report = SameFromEveryRoute(dir + "/a", dir + "/b");
    EXPECT_TRUE(report.error.empty()) << report.error;
    ++cases;
  }
  EXPECT_GE(cases, 8);
}

// Small GPT-like runs: 10 steps of 3,000 ops.
SyntheticOptions Small() {
  SyntheticOptions options;
  options.ops = 30'000;
  options.steps = 10;
  return options;
}

struct Planted {
  std::string dir;
  synthetic::PlantedChange change;
};

Planted Write(const std::string& name, const SyntheticOptions& options) {
  const std::string dir = TestDir(name);
  StatusOr<synthetic::SyntheticSummary> summary = synthetic::WriteSyntheticRun(dir, options);
  EXPECT_TRUE(summary.ok()) << summary.status().ToString();
  return Planted{dir, summary.ok() ? summary->planted : synthetic::PlantedChange{}};
}

nlohmann::json Json(const Report& report) { return nlohmann::json::parse(report.json); }

TEST(DiffRoutesTest, IdenticalRunsHoweverTheyAreWritten) {
  const std::string a = Write("a", Small()).dir;
  SyntheticOptions no_step_ends = Small(), shifted = Small(), unfinished = Small();
  no_step_ends.step_ends = false;
  shifted.step_ends = false;
  shifted.shift_ids = true;  // no op byte-identical: compared field by field
  unfinished.end_record = false;
  for (const SyntheticOptions& options : {Small(), no_step_ends, shifted, unfinished}) {
    const std::string b = Write("b", options).dir;
    const Report report = SameFromEveryRoute(a, b);
    ASSERT_TRUE(report.error.empty()) << report.error;
    const nlohmann::json json = Json(report);
    EXPECT_EQ(json["verdict"], "identical");
    EXPECT_EQ(json["ranks"][0]["steps_compared"], 10);
    EXPECT_EQ(json["ranks"][0]["steps_identical"], options.step_ends ? 10 : 0);
    EXPECT_EQ(json["ranks"][0]["notes"].size(), options.end_record ? 0u : 1u);
  }
}

TEST(DiffRoutesTest, PlantedChangeAtTheStartMiddleAndEndIsNamed) {
  const std::string a = Write("a", Small()).dir;
  struct Case {
    Plant plant;
    uint64_t at;
    bool shift_ids;
    bool step_ends;
  };
  const Case cases[] = {
      {Plant::kCulprit, 0, false, true},         {Plant::kCulprit, 15'000, false, true},
      {Plant::kCulprit, 29'990, false, true},    {Plant::kArgument, 12'345, false, true},
      {Plant::kStructural, 15'000, false, true}, {Plant::kCulprit, 15'000, true, false},
      {Plant::kArgument, 4'000, true, false},    {Plant::kStructural, 29'000, true, false},
  };
  for (const Case& c : cases) {
    SyntheticOptions options = Small();
    options.plant = c.plant;
    options.plant_at = c.at;
    options.shift_ids = c.shift_ids;
    options.step_ends = c.step_ends;
    const Planted b = Write("b", options);
    SCOPED_TRACE(std::string(synthetic::PlantName(c.plant)) + " at " + std::to_string(c.at) +
                 " -> " + b.change.op + " step " + std::to_string(b.change.step) + " #" +
                 std::to_string(b.change.index));
    ASSERT_TRUE(b.change.planted);
    const Report report = SameFromEveryRoute(a, b.dir);
    ASSERT_TRUE(report.error.empty()) << report.error;
    const nlohmann::json rank = Json(report)["ranks"][0];
    if (c.plant == Plant::kStructural) {
      EXPECT_EQ(rank["verdict"], "structural");
      EXPECT_EQ(rank["structural"]["step"], b.change.step);
      EXPECT_EQ(rank["structural"]["index_b"], b.change.index);
      EXPECT_EQ(rank["structural"]["only_b"][0]["op"], b.change.op);
      EXPECT_EQ(rank["structural"]["only_b_count"], 1);
      EXPECT_TRUE(rank["divergence"].is_null());
    } else {
      EXPECT_EQ(rank["verdict"], "culprit");
      EXPECT_EQ(rank["divergence"]["op"], b.change.op);
      EXPECT_EQ(rank["divergence"]["step"], b.change.step);
      EXPECT_EQ(rank["divergence"]["index_b"], b.change.index);
    }
    // Steps before the plant are skipped by their digests when the run has them; after a
    // value-preserving extra op, so are the later steps.
    const uint32_t skipped = c.plant == Plant::kStructural ? 9 : b.change.step;
    EXPECT_EQ(rank["steps_identical"], c.step_ends ? skipped : 0);
  }
}

TEST(DiffRoutesTest, DifferentDataIsPropagatedFromTheFirstOp) {
  const std::string a = Write("a", Small()).dir;
  SyntheticOptions options = Small();
  options.seed = 2;
  const Report report = SameFromEveryRoute(a, Write("b", options).dir);
  ASSERT_TRUE(report.error.empty()) << report.error;
  const nlohmann::json rank = Json(report)["ranks"][0];
  EXPECT_EQ(rank["verdict"], "propagated");
  EXPECT_EQ(rank["divergence"]["step"], 0);
  EXPECT_EQ(rank["divergence"]["index"], 0);
  EXPECT_EQ(rank["divergence"]["producer_a"]["found"], false);
}

// Damage after the divergence still fails the diff, and is a note with --allow-damaged.
TEST(DiffRoutesTest, DamageAnywhereCountsWhereverTheDiffStops) {
  const std::string a = Write("a", Small()).dir;
  SyntheticOptions options = Small();
  options.plant = Plant::kCulprit;
  options.plant_at = 100;
  const std::string b = Write("b", options).dir;
  const std::string trace = b + "/rank0.ugt";
  std::string bytes;
  {
    std::ifstream in(trace, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t cut : {bytes.size() - 7, bytes.size() * 3 / 4, bytes.size() / 2 + 3}) {
    {
      std::ofstream out(trace, std::ios::binary | std::ios::trunc);
      out.write(bytes.data(), static_cast<std::streamsize>(cut));
    }
    const Report strict = SameFromEveryRoute(a, b);
    EXPECT_NE(strict.error.find("truncated record at byte"), std::string::npos) << strict.error;
    EXPECT_NE(strict.error.find("--allow-damaged"), std::string::npos) << strict.error;
    const Report allowed = SameFromEveryRoute(a, b, /*allow_damaged=*/true);
    ASSERT_TRUE(allowed.error.empty()) << allowed.error;
    EXPECT_EQ(Json(allowed)["verdict"], "culprit");
    EXPECT_NE(allowed.text.find("compared only the readable part"), std::string::npos);
  }
}

}  // namespace
}  // namespace upguard
