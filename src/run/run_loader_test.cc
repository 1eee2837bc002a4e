// Every route to a trace's steps and ops gives the same answer: TraceReader with every op in
// memory (decode_all), the mapped index read to the end at load, and the index read step by step
// as the diff reads it (index_on_demand). On clean traces, at every cut and every flipped byte of
// one, and for an op payload that is malformed behind a valid CRC (found only when decoded).
#include "run/run_loader.h"

#include <gtest/gtest.h>

#include "run/load_routes_test_util.h"
#include "trace/crc32c.h"
#include "trace/record_codec.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::Route;

using testing::Frame;
using testing::FrameSpans;
using testing::ReadBytes;
using testing::TempTracePath;
using testing::WriteBytes;

// Everything one route yields for a file, as text.
struct View {
  std::string error;               // the Status when loading (or reading) failed
  std::vector<std::string> lines;  // per step: "step S ops N end D", then each op's text
  bool complete = false;
  std::string damage;
  std::string meta;

  bool operator==(const View& other) const {
    return error == other.error && lines == other.lines && complete == other.complete &&
           damage == other.damage && meta == other.meta;
  }
};

std::ostream& operator<<(std::ostream& out, const View& view) {
  out << "error: " << view.error << "\ncomplete: " << view.complete << "\ndamage: " << view.damage
      << "\n";
  for (const std::string& line : view.lines) out << line << "\n";
  return out;
}

// Reads every step like the diff does: index on, decode, start over after a cut.
Status ReadOnDemand(const RankTrace& trace) {
  for (size_t step_idx = 0;; ++step_idx) {
    ASSIGN_OR_RETURN(bool more, trace.HasStep(step_idx));
    if (!more) break;
    const uint64_t cuts = trace.cuts();
    RETURN_IF_ERROR(trace.Ops(step_idx).status());
    if (trace.cuts() != cuts) step_idx = static_cast<size_t>(-1);  // start over
  }
  return trace.IndexAll();
}

View Load(const std::string& path, Route route, bool allow_damaged) {
  const LoadOptions options = testing::RouteOptions(route, allow_damaged);
  View view;
  StatusOr<RankTrace> trace = LoadRankTrace(path, options);
  if (!trace.ok()) {
    view.error = trace.status().ToString();
    return view;
  }
  const Status read = route == Route::kOnDemand ? ReadOnDemand(*trace) : trace->CheckAllOps();
  if (!read.ok()) {
    view.error = read.ToString();
    return view;
  }
  for (size_t step_idx = 0; step_idx < trace->steps().size(); ++step_idx) {
    const StepInfo& info = trace->steps()[step_idx];
    StatusOr<std::shared_ptr<const StepOps>> ops = trace->Ops(step_idx);
    EXPECT_TRUE(ops.ok());
    if (!ops.ok()) break;
    EXPECT_EQ((*ops)->ops.size(), info.op_count);
    view.lines.push_back("step " + std::to_string(info.step) + " ops " +
                         std::to_string(info.op_count) + " end " +
                         (info.end ? info.end->digest.Hex() : "-"));
    for (const OpRecord& op : (*ops)->ops) {
      view.lines.push_back(OpToText(op, trace->strings()));
      if (op.collective != nullptr) {
        view.lines.push_back(CollectiveToText(op.seq, *op.collective, trace->strings()));
      }
    }
  }
  view.complete = trace->complete();
  view.damage = trace->damage() ? trace->damage()->message : "";
  view.meta = trace->meta.dump();
  return view;
}

// All routes agree on `path`, with and without allow_damaged.
void ExpectSameViews(const std::string& path) {
  for (bool allow_damaged : {true, false}) {
    const View reference = Load(path, Route::kDecodeAll, allow_damaged);
    EXPECT_EQ(Load(path, Route::kIndexed, allow_damaged), reference) << "indexed, " << path;
    EXPECT_EQ(Load(path, Route::kOnDemand, allow_damaged), reference) << "on demand, " << path;
  }
}

// A trace with strings defined between steps and an op whose step number repeats after a
// StepEnd (a second step numbered 1).
constexpr const char* kMoreSteps = R"(meta {"rank":0}
op step=0 name=aten::mm
  in self tensor float32[2,3] digest=@x
  out tensor float32[2,2] digest=@y
stepend 0
op step=1 name=aten::relu module=act site=m.py:3
  in self tensor float32[2,2] digest=@y
  out tensor float32[2,2] digest=@z
stepend 1
op step=1 name=aten::add
  in self tensor float32[2,2] digest=@z
  in alpha scalar 2
  out tensor float32[2,2] digest=@w
op step=4 name=aten::relu
  in self tensor float32[2,2] digest=@w
  out alias float32[4]
end
)";

TEST(RunLoaderRoutesTest, CleanTraces) {
  const std::string sample = TempTracePath("sample.ugt");
  testing::WriteSampleTrace(sample);
  ExpectSameViews(sample);
  const std::string more = TempTracePath("more.ugt");
  ASSERT_TRUE(WriteTraceFromText(kMoreSteps, "more", more).ok());
  ExpectSameViews(more);
  const View view = Load(more, Route::kOnDemand, false);
  EXPECT_EQ(view.lines.size(), 4u + 4u);  // steps 0, 1, 1, 4 and their ops
}

TEST(RunLoaderRoutesTest, EveryCutAndEveryFlippedByte) {
  for (const char* text : {testing::kSampleTraceText, kMoreSteps}) {
    const std::string path = TempTracePath("clean.ugt");
    ASSERT_TRUE(WriteTraceFromText(text, "text", path).ok());
    const std::string bytes = ReadBytes(path);
    const std::string damaged = TempTracePath("damaged.ugt");
    for (size_t cut = 0; cut <= bytes.size(); ++cut) {
      WriteBytes(damaged, bytes.substr(0, cut));
      ExpectSameViews(damaged);
    }
    for (size_t pos = 0; pos < bytes.size(); ++pos) {
      std::string flipped = bytes;
      flipped[pos] = static_cast<char>(flipped[pos] ^ 0x41);
      WriteBytes(damaged, flipped);
      ExpectSameViews(damaged);
    }
  }
}

TEST(RunLoaderRoutesTest, ExtraRecordsAndMissingEnd) {
  const std::string path = TempTracePath("clean.ugt");
  ASSERT_TRUE(WriteTraceFromText(kMoreSteps, "more", path).ok());
  const std::string bytes = ReadBytes(path);
  const std::vector<testing::FrameSpan> spans = FrameSpans(bytes);
  const std::string end = bytes.substr(spans.back().start);
  const std::string before_end = bytes.substr(0, spans.back().start);
  const std::string unknown = Frame(static_cast<RecordType>(42), "future");
  const std::string variants[] = {
      bytes + "x",                 // data after the End record
      bytes + unknown,             // a whole frame after it
      before_end,                  // no End record: incomplete
      before_end + unknown + end,  // an unknown type: skipped
      bytes.substr(0, spans[3].start) + unknown + bytes.substr(spans[3].start),
      before_end + Frame(RecordType::kRunMeta, "{}") + end,
      before_end + Frame(RecordType::kEnd, "\x09"),  // counts the wrong number of ops
  };
  const std::string damaged = TempTracePath("variant.ugt");
  for (const std::string& variant : variants) {
    WriteBytes(damaged, variant);
    ExpectSameViews(damaged);
  }
}

// Rewrites the payload byte `at` of frame `frame_idx` and fixes its CRC: damage a CRC cannot see.
std::string PatchPayload(const std::string& bytes, size_t frame_idx, size_t at, char value) {
  const testing::FrameSpan span = FrameSpans(bytes)[frame_idx];
  std::string out = bytes;
  out[span.start + kFrameHeaderBytes + at] = value;
  const uint32_t length = LoadLe32(&out[span.start]);
  char crc[4];
  StoreLe32(Crc32c(&out[span.start], kFrameHeaderBytes + length), crc);
  out.replace(span.start + kFrameHeaderBytes + length, 4, crc, 4);
  return out;
}

TEST(RunLoaderRoutesTest, MalformedPayloadBehindAValidCrcCutsTheTraceThere) {
  const std::string path = TempTracePath("clean.ugt");
  ASSERT_TRUE(WriteTraceFromText(kMoreSteps, "more", path).ok());
  const std::string bytes = ReadBytes(path);
  const std::vector<testing::FrameSpan> spans = FrameSpans(bytes);
  const std::string damaged = TempTracePath("payload.ugt");
  size_t op_frames = 0;
  for (size_t frame_idx = 0; frame_idx < spans.size(); ++frame_idx) {
    if (spans[frame_idx].type != static_cast<uint8_t>(RecordType::kOp)) continue;
    ++op_frames;
    // seq, step (one byte each here), then the phase: 9 is no phase.
    WriteBytes(damaged, PatchPayload(bytes, frame_idx, 2, 9));
    ExpectSameViews(damaged);
    const View view = Load(damaged, Route::kIndexed, true);
    EXPECT_NE(view.damage.find("unknown phase 9"), std::string::npos) << view.damage;
    EXPECT_FALSE(view.complete);
  }
  EXPECT_EQ(op_frames, 4u);
}

TEST(RunLoaderRoutesTest, StepsThatGoDownAreAnError) {
  const std::string path = TempTracePath("down.ugt");
  ASSERT_TRUE(WriteTraceFromText(R"(op step=3 name=a
op step=2 name=b
end
)",
                                 "down", path)
                  .ok());
  ExpectSameViews(path);
  const View view = Load(path, Route::kOnDemand, true);
  EXPECT_NE(view.error.find("step 2 at byte"), std::string::npos) << view.error;
  EXPECT_NE(view.error.find("comes after step 3"), std::string::npos) << view.error;
}

}  // namespace
}  // namespace upguard
