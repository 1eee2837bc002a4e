// TraceIndex on its own: indexing on demand gives the same index as indexing at once, RawOps
// yields the Op payloads in order, ReadStep reuses its buffers, Truncate cuts. (That the index
// agrees with TraceReader on every clean, cut and damaged file is src/run/run_loader_test.cc.)
#include "trace/trace_index.h"

#include <gtest/gtest.h>

#include "base/mapped_file.h"
#include "trace/record_codec.h"
#include "trace/trace_test_util.h"

namespace upguard {
namespace {

using testing::TempTracePath;

constexpr const char* kThreeSteps = R"(op step=0 name=a
op step=0 name=b
stepend 0
op step=1 name=c
  in x scalar 1
op step=2 name=d
op step=2 name=e
end
)";

std::unique_ptr<TraceIndex> OpenIndex(const std::string& path) {
  StatusOr<std::unique_ptr<TraceIndex>> index = TraceIndex::Open(path);
  EXPECT_TRUE(index.ok()) << index.status().ToString();
  return index.ok() ? std::move(*index) : nullptr;
}

TEST(TraceIndexTest, OnDemandIndexesOnlyAsFarAsAskedAndEndsTheSame) {
  const std::string path = TempTracePath("three.ugt");
  ASSERT_TRUE(WriteTraceFromText(kThreeSteps, "three", path).ok());
  std::unique_ptr<TraceIndex> lazy = OpenIndex(path);
  EXPECT_EQ(lazy->steps().size(), 0u);
  ASSERT_TRUE(*lazy->IndexStep(0));
  EXPECT_EQ(lazy->final_steps(), 1u);  // step 0 ends with its StepEnd
  EXPECT_EQ(lazy->steps().size(), 1u);
  ASSERT_TRUE(*lazy->IndexStep(1));  // known final once step 2's first op is read
  EXPECT_EQ(lazy->steps().size(), 3u);
  EXPECT_FALSE(lazy->indexed_all());
  EXPECT_FALSE(*lazy->IndexStep(3));
  EXPECT_TRUE(lazy->indexed_all());
  EXPECT_TRUE(lazy->complete());

  std::unique_ptr<TraceIndex> eager = OpenIndex(path);
  ASSERT_TRUE(eager->IndexAll().ok());
  ASSERT_EQ(eager->steps().size(), lazy->steps().size());
  for (size_t idx = 0; idx < eager->steps().size(); ++idx) {
    const StepSpan& a = eager->steps()[idx];
    const StepSpan& b = lazy->steps()[idx];
    EXPECT_EQ(a.step, b.step);
    EXPECT_EQ(a.op_count, b.op_count);
    EXPECT_EQ(a.begin, b.begin);
    EXPECT_EQ(a.end_offset, b.end_offset);
    EXPECT_EQ(a.first_seq, b.first_seq);
    EXPECT_EQ(a.records_before, b.records_before);
    EXPECT_EQ(a.strings_before, b.strings_before);
    EXPECT_EQ(a.end.has_value(), b.end.has_value());
  }
  // "", a, b; c, x and 1 are defined inside step 1, just before its op.
  EXPECT_EQ(eager->steps()[1].strings_before, 3u);
}

TEST(TraceIndexTest, RawOpsAndReadStepSeeTheSameOps) {
  const std::string path = TempTracePath("three.ugt");
  ASSERT_TRUE(WriteTraceFromText(kThreeSteps, "three", path).ok());
  std::unique_ptr<TraceIndex> index = OpenIndex(path);
  ASSERT_TRUE(index->IndexAll().ok());
  std::vector<OpRecord> ops;
  for (size_t step_idx = 0; step_idx < index->steps().size(); ++step_idx) {
    ASSERT_FALSE(index->ReadStep(step_idx, &ops).has_value());
    ASSERT_EQ(ops.size(), index->steps()[step_idx].op_count);
    TraceIndex::RawOps raw(*index, step_idx);
    std::string_view payload;
    uint32_t strings_before = 0;
    for (const OpRecord& op : ops) {
      ASSERT_TRUE(raw.Next(&payload, &strings_before));
      OpRecord decoded;
      RecordError error;
      ASSERT_TRUE(DecodeOp(payload, index->strings(), strings_before, &decoded, &error));
      EXPECT_EQ(OpToText(decoded, index->strings()), OpToText(op, index->strings()));
      EXPECT_GT(strings_before, op.op);  // its name was defined before it
    }
    EXPECT_FALSE(raw.Next(&payload, &strings_before));
  }
}

TEST(TraceIndexTest, TruncateCutsAtAStepAndDropsAStepLeftEmpty) {
  const std::string path = TempTracePath("three.ugt");
  ASSERT_TRUE(WriteTraceFromText(kThreeSteps, "three", path).ok());
  std::unique_ptr<TraceIndex> index = OpenIndex(path);
  ASSERT_TRUE(*index->IndexStep(0));
  index->Truncate(0, 1, TraceDamage{40, "cut"});
  ASSERT_EQ(index->steps().size(), 1u);
  EXPECT_EQ(index->steps()[0].op_count, 1u);
  EXPECT_FALSE(index->steps()[0].end.has_value());
  EXPECT_TRUE(index->indexed_all());
  EXPECT_FALSE(index->complete());
  EXPECT_EQ(index->damage()->message, "cut");
  index->Truncate(0, 0, TraceDamage{20, "earlier"});
  EXPECT_EQ(index->steps().size(), 0u);
}

TEST(MappedFileTest, MapsReleasesAndRereads) {
  const std::string path = TempTracePath("bytes");
  std::string bytes(3 * 4096 + 17, '\0');
  for (size_t idx = 0; idx < bytes.size(); ++idx) bytes[idx] = static_cast<char>(idx * 7);
  testing::WriteBytes(path, bytes);
  StatusOr<std::unique_ptr<MappedFile>> file = MappedFile::Open(path);
  ASSERT_TRUE(file.ok());
  ASSERT_EQ((*file)->size(), bytes.size());
  (*file)->WillNeed(0, bytes.size());
  (*file)->Release(1, bytes.size());  // partial pages are kept; the rest comes back on reading
  EXPECT_EQ(std::string((*file)->data(), (*file)->size()), bytes);
  testing::WriteBytes(path + ".empty", "");
  StatusOr<std::unique_ptr<MappedFile>> empty = MappedFile::Open(path + ".empty");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)->size(), 0u);
  EXPECT_EQ(MappedFile::Open(path + ".missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace upguard
