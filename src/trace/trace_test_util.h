// Helpers shared by the trace tests: temporary paths, a small sample trace touching every record
// and argument kind, frame boundaries of a file, and reading a whole trace back.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "base/file.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "trace/record_codec.h"
#include "trace/text_format.h"
#include "trace/writer.h"

namespace upguard::testing {

// A fresh path under the test temp dir, unique per test and name.
inline std::string TempTracePath(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("upguard_trace_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / (std::string(info->test_suite_name()) + "." + info->name() + "." + name)).string();
}

struct FrameSpan {
  uint64_t start = 0;
  uint64_t end = 0;  // one past the CRC
  uint8_t type = 0;
};

// Walks the frames of a well-formed file by their length fields.
inline std::vector<FrameSpan> FrameSpans(const std::string& bytes) {
  std::vector<FrameSpan> spans;
  uint64_t offset = kFileHeaderBytes;
  while (offset + kFrameHeaderBytes <= bytes.size()) {
    const uint32_t length = LoadLe32(&bytes[offset]);
    FrameSpan span{offset, offset + kFrameOverheadBytes + length,
                   static_cast<uint8_t>(bytes[offset + 4])};
    spans.push_back(span);
    offset = span.end;
  }
  return spans;
}

// A frame of `type` holding `payload`, with its CRC.
inline std::string Frame(RecordType type, const std::string& payload) {
  std::string frame;
  BeginFrame(&frame);
  frame += payload;
  FinishFrame(type, &frame);
  return frame;
}

// Everything a reader yields for a file.
struct ReadBack {
  std::vector<TraceRecord> records;
  // OpToText of each op, CollectiveToText of each collective, "stepend S N HEX" of each step end
  std::vector<std::string> texts;
  bool complete = false;
  std::optional<TraceDamage> damage;
  std::string meta_json;
};

inline std::string RecordText(const TraceRecord& record, const StringTable& strings) {
  if (record.type == RecordType::kOp) {
    return "seq " + std::to_string(record.op.seq) + " " + OpToText(record.op, strings);
  }
  if (record.type == RecordType::kCollective) {
    return CollectiveToText(record.collective.op_seq, *record.collective.info, strings);
  }
  return "stepend " + std::to_string(record.step_end.step) + " " +
         std::to_string(record.step_end.op_count) + " " + record.step_end.digest.Hex();
}

inline StatusOr<ReadBack> ReadAll(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  ReadBack back;
  back.meta_json = reader->meta_json();
  TraceRecord record;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    back.records.push_back(record);
    back.texts.push_back(RecordText(record, reader->strings()));
  }
  back.complete = reader->complete();
  back.damage = reader->damage();
  return back;
}

// A small trace in text form: every phase, every arg kind, stats on, off and shared with an
// earlier tensor (aten::relu's), two steps, a collective that completed after the next op and
// one that did not complete before its step ended.
inline constexpr const char* kSampleTraceText =
    R"(meta {"rank":0,"world_size":1,"argv":["train.py"]}
op step=0 phase=forward name=aten::linear module=fc site=model.py:10
  in input tensor float32[2,3] digest=@x stats=min:-1,max:2,mean:0.25,l2:3.5,finite:6
  in weight tensor float32[4,3] digest=@w
  in bias none
  out tensor float32[2,4] digest=@y stats=min:0,max:1,mean:0.5,l2:1,finite:7,nan:1,pinf:0,ninf:0
op phase=forward depth=1 name=aten::empty
  in size scalar '[2, 4]'
  out uninit float32[2,4]
op phase=forward name=aten::relu module=act site=model.py:11
  in self tensor float32[2,3] digest=@x stats=min:-1,max:2,mean:0.25,l2:3.5,finite:6
  out tensor float32[2,3] digest=@x stats=min:-1,max:2,mean:0.25,l2:3.5,finite:6
op phase=backward name=c10d::allreduce_
  in tensors tensor float32[4,3] digest=@gw
  out alias float32[4,3]
op phase=backward name=aten::t node=TBackward0
  in self tensor float32[4,3] digest=@w
  out alias float32[3,4]
  out opaque int64[0]
collective op=3 group=0 ranks=[0,1] group_rank=1 group_size=2 seq=0 ops_before_completion=1
  out tensor float32[4,3] digest=@gsum stats=min:0,max:1,mean:0.5,l2:1,finite:12
stepend 0
op step=1 phase=optimizer name=aten::add_ site=adam.py:5
  in self tensor float32[4,3] digest=@w
  in alpha scalar '0.001'
  out tensor float32[4,3] digest=@w2
op step=1 phase=other name=aten::item
op step=1 phase=other name=c10d::broadcast_
  in tensor int64[2] digest=@b
  out alias int64[2]
collective group=tp completed=0
stepend 1
end
)";

// Writes kSampleTraceText as a binary trace at `path`.
inline void WriteSampleTrace(const std::string& path) {
  const Status status = WriteTraceFromText(kSampleTraceText, "sample", path);
  ASSERT_TRUE(status.ok()) << status.ToString();
}

inline std::string ReadBytes(const std::string& path) {
  StatusOr<std::string> bytes = ReadFileToString(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::string();
}

inline void WriteBytes(const std::string& path, const std::string& bytes) {
  const Status status = WriteFileAtomically(path, bytes);
  ASSERT_TRUE(status.ok()) << status.ToString();
}

}  // namespace upguard::testing
