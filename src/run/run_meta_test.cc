// Run metadata is read through checked helpers: a wrongly typed field is a Status naming the
// file, the field, the expected type and what was found, never an exception; and a trace's rank
// is one checked identity (its file name's, agreeing with its metadata, below the world size).
#include "run/run_meta.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "base/file.h"
#include "run/run_loader.h"
#include "trace/text_format.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using nlohmann::json;

// What a recorded run's metadata holds (recorder.cc + python/upguard/_meta.py).
json RecordedMeta() {
  return json::parse(R"({
    "argv": ["/usr/bin/python3", "train.py"], "executable": "/usr/bin/python3", "cwd": "/w",
    "local_rank": 0, "process_groups": [{"name": "0", "ranks": [0, 1], "backend": "gloo"}],
    "torch_version": "1.13.1", "python_version": "3.11.2", "intra_op_threads": 4,
    "inter_op_threads": 4, "deterministic_algorithms": false, "cudnn_deterministic": false,
    "env": {"OMP_NUM_THREADS": "4"}, "launcher_argv": ["/usr/bin/python3", "-m", "torchrun"],
    "upguard_version": "0.1.0", "trace_version": 1, "rank": 0, "world_size": 2,
    "hostname": "h", "pid": 12, "start_time": 1700000000, "against": "/runs/ref",
    "record_options": {"steps": {"first": 0, "last": null}, "max_depth": -1, "ops": [],
                       "stats": true},
    "complete": true, "something_new": {"any": ["thing"]}})");
}

TEST(RunMetaTest, RecordedMetadataPasses) {
  EXPECT_TRUE(CheckRunMeta(RecordedMeta(), "runs/a/meta.json").ok());
  EXPECT_TRUE(CheckRunMeta(json::object(), "runs/a/meta.json").ok());
  json iso_time = RecordedMeta();  // docs/formats/trace.md writes start_time as ISO 8601
  iso_time["start_time"] = "2024-05-01T12:00:00Z";
  EXPECT_TRUE(CheckRunMeta(iso_time, "runs/a/meta.json").ok());
}

TEST(RunMetaTest, EveryWronglyTypedFieldIsNamed) {
  // A value of the wrong type for each field, nested ones by their path.
  const std::vector<std::pair<json::json_pointer, json>> cases = {
      {json::json_pointer("/rank"), "0"},
      {json::json_pointer("/world_size"), "x"},
      {json::json_pointer("/world_size"), 2.5},
      {json::json_pointer("/argv"), "python3 train.py"},
      {json::json_pointer("/argv/1"), 7},
      {json::json_pointer("/cwd"), json::array()},
      {json::json_pointer("/env"), json::array({"A=1"})},
      {json::json_pointer("/env/OMP_NUM_THREADS"), 4},
      {json::json_pointer("/deterministic_algorithms"), "yes"},
      {json::json_pointer("/torch_version"), 1.13},
      {json::json_pointer("/record_options"), json::array()},
      {json::json_pointer("/record_options/max_depth"), "deep"},
      {json::json_pointer("/record_options/steps/last"), "end"},
      {json::json_pointer("/record_options/ops"), "aten::*"},
      {json::json_pointer("/process_groups/0/ranks/1"), "1"},
      {json::json_pointer("/process_groups"), json::object()},
      {json::json_pointer("/start_time"), json::array()},
      {json::json_pointer("/ranks"), "rank0.ugt"},
  };
  for (const auto& [pointer, value] : cases) {
    json meta = RecordedMeta();
    meta[pointer] = value;
    const Status status = CheckRunMeta(meta, "runs/a/meta.json");
    ASSERT_FALSE(status.ok()) << pointer.to_string();
    EXPECT_NE(status.message().find("runs/a/meta.json"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("should be"), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("found " + DescribeJsonValue(value)), std::string::npos)
        << status.message();
    // "/record_options/steps/last" -> "record_options.steps.last", "/argv/1" -> "argv[1]"
    std::string field = pointer.to_string().substr(1);
    for (char& c : field) c = c == '/' ? '.' : c;
    if (pointer.to_string() == "/argv/1") field = "argv[1]";
    if (pointer.to_string() == "/process_groups/0/ranks/1") field = "process_groups[0].ranks[1]";
    EXPECT_NE(status.message().find("\"" + field + "\""), std::string::npos) << status.message();
  }
}

TEST(RunMetaTest, TypedReads) {
  const json meta = {{"rank", 3}, {"name", "x"}, {"bad", "3"}, {"huge", 18446744073709551615u}};
  EXPECT_EQ(*MetaInt(meta, "rank", "f").value(), 3);
  EXPECT_FALSE(MetaInt(meta, "missing", "f").value().has_value());
  EXPECT_EQ(*MetaString(meta, "name", "f").value(), "x");
  const Status bad = MetaInt(meta, "bad", "f").status();
  EXPECT_EQ(bad.message().rfind(
                "f: metadata field \"bad\" should be an integer, found a string \"3\"; ", 0),
            0u)
      << bad.message();
  EXPECT_FALSE(MetaInt(meta, "huge", "f").ok());
  EXPECT_FALSE(MetaString(meta, "rank", "f").ok());
  EXPECT_FALSE(MetaInt(json::array(), "rank", "f").ok());
}

// A run directory of text traces, rank by rank.
std::string WriteRun(const std::string& name, const std::vector<std::string>& metas) {
  const std::string dir = testing::TempTracePath(name);
  std::filesystem::remove_all(dir);
  EXPECT_TRUE(MakeDirectories(dir).ok());
  for (size_t rank = 0; rank < metas.size(); ++rank) {
    const std::string text = "meta " + metas[rank] +
                             "\nop step=0 phase=forward name=aten::relu\n"
                             "  in self tensor float32[4] digest=@x\n"
                             "  out tensor float32[4] digest=@y\nstepend 0\nend\n";
    EXPECT_TRUE(
        WriteTraceFromText(text, "test", dir + "/rank" + std::to_string(rank) + ".ugt").ok());
  }
  return dir;
}

TEST(RunLoaderRankTest, RankComesFromTheFileNameAndItsMetadataAgrees) {
  const std::string dir =
      WriteRun("agree", {R"({"rank":0,"world_size":2})", R"({"rank":1,"world_size":2})"});
  StatusOr<upguard::Run> run = LoadRun(dir, LoadOptions{});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->ranks.size(), 2u);
  EXPECT_EQ(run->ranks[0].rank, 0);
  EXPECT_EQ(run->ranks[1].rank, 1);
}

TEST(RunLoaderRankTest, MetadataClaimingAnotherRankIsAnError) {
  for (const char* claimed : {"5", "0"}) {
    const std::string dir = WriteRun(std::string("claims") + claimed,
                                     {R"({"rank":0,"world_size":2})",
                                      std::string(R"({"world_size":2,"rank":)") + claimed + "}"});
    StatusOr<upguard::Run> run = LoadRun(dir, LoadOptions{});
    ASSERT_FALSE(run.ok()) << claimed;
    const std::string message = run.status().message();
    EXPECT_EQ(run.status().code(), StatusCode::kDataLoss);
    EXPECT_NE(message.find(dir + "/rank1.ugt"), std::string::npos) << message;
    EXPECT_NE(message.find(std::string("says rank ") + claimed), std::string::npos) << message;
    EXPECT_NE(message.find("file name says rank 1"), std::string::npos) << message;
  }
}

TEST(RunLoaderRankTest, RankBeyondTheWorldSizeIsAnError) {
  // meta.json says one rank, the directory holds two.
  const std::string dir = WriteRun("beyond", {R"({"rank":0})", R"({"rank":1})"});
  ASSERT_TRUE(WriteFileAtomically(dir + "/meta.json", R"({"world_size":1})").ok());
  StatusOr<upguard::Run> run = LoadRun(dir, LoadOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("rank 1 is not below the run's world size 1"),
            std::string::npos)
      << run.status().message();
  // The trace's own world size too.
  const std::string own = WriteRun("own", {R"({"rank":0})", R"({"rank":1,"world_size":1})"});
  run = LoadRun(own, LoadOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("world size its metadata says, 1"), std::string::npos)
      << run.status().message();
}

TEST(RunLoaderRankTest, WronglyTypedMetadataIsAnErrorNamingFileAndField) {
  const std::string dir = WriteRun("typed", {R"({"rank":"0"})"});
  StatusOr<upguard::Run> run = LoadRun(dir, LoadOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find(dir + "/rank0.ugt"), std::string::npos);
  EXPECT_NE(run.status().message().find("\"rank\" should be an integer, found a string \"0\""),
            std::string::npos)
      << run.status().message();

  const std::string listed = WriteRun("listed", {R"({"rank":0})"});
  ASSERT_TRUE(WriteFileAtomically(listed + "/meta.json", R"({"world_size":"x"})").ok());
  run = LoadRun(listed, LoadOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find(listed + "/meta.json: metadata field \"world_size\""),
            std::string::npos)
      << run.status().message();

  // The text form and the writer want an object: swap the metadata record for a list. The
  // reader takes that for damage already.
  const std::string not_object = WriteRun("array", {"{}"});
  const std::string bytes = testing::ReadBytes(not_object + "/rank0.ugt");
  const testing::FrameSpan meta_frame = testing::FrameSpans(bytes).at(0);
  testing::WriteBytes(not_object + "/rank0.ugt", bytes.substr(0, meta_frame.start) +
                                                     testing::Frame(RecordType::kRunMeta, "[1,2]") +
                                                     bytes.substr(meta_frame.end));
  run = LoadRun(not_object, LoadOptions{});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("malformed RunMeta record at byte 16 (not a JSON object)"),
            std::string::npos)
      << run.status().message();
}

}  // namespace
}  // namespace upguard
