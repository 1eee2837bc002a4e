#include "digest/gather.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::LogicalBytes;
using testing::OwnedView;

// int32 storage holding 0, 1, 2, ... so every element is distinguishable.
std::vector<int32_t> Storage(size_t n) {
  std::vector<int32_t> storage(n);
  std::iota(storage.begin(), storage.end(), 0);
  return storage;
}

bool IsContiguous(const OwnedView& t) {
  return StridedReader(t.data, 4, t.sizes.data(), t.strides.data(),
                       static_cast<int>(t.sizes.size()))
      .contiguous();
}

TEST(DigestGatherTest, RecognizesContiguousLayouts) {
  const std::vector<int32_t> storage = Storage(64);
  EXPECT_TRUE(IsContiguous({DType::kInt32, {2, 3, 4}, {12, 4, 1}, storage.data()}));
  EXPECT_TRUE(IsContiguous({DType::kInt32, {}, {}, storage.data()}));
  // Size-1 dimensions may carry any stride.
  EXPECT_TRUE(IsContiguous({DType::kInt32, {1, 6, 1}, {99, 1, 7}, storage.data()}));
  EXPECT_TRUE(IsContiguous({DType::kInt32, {3, 0}, {5, 9}, storage.data()}));  // empty
  // A leading-dim slice of a contiguous tensor is still contiguous.
  EXPECT_TRUE(IsContiguous({DType::kInt32, {2, 4}, {4, 1}, storage.data() + 8}));

  EXPECT_FALSE(IsContiguous({DType::kInt32, {3, 2}, {1, 3}, storage.data()}));  // transposed
  EXPECT_FALSE(IsContiguous({DType::kInt32, {3, 2}, {4, 1}, storage.data()}));  // column slice
  EXPECT_FALSE(IsContiguous({DType::kInt32, {4}, {0}, storage.data()}));        // broadcast
  EXPECT_FALSE(IsContiguous({DType::kInt32, {4}, {2}, storage.data()}));        // step 2
}

// Reading any layout in pieces of any size, from any starting point, equals the stride formula.
TEST(DigestGatherTest, ReadMatchesStrideFormulaFromAnyPosition) {
  const std::vector<int32_t> storage = Storage(512);
  const std::vector<OwnedView> layouts = {
      {DType::kInt32, {4, 5}, {5, 1}, storage.data()},
      {DType::kInt32, {5, 4}, {1, 5}, storage.data()},                    // transposed
      {DType::kInt32, {3, 4, 5}, {40, 5, 1}, storage.data() + 3},         // outer gaps
      {DType::kInt32, {3, 4, 5}, {1, 3, 12}, storage.data()},             // fully permuted
      {DType::kInt32, {2, 3, 4}, {0, 4, 1}, storage.data()},              // broadcast outer
      {DType::kInt32, {2, 3, 4}, {12, 4, 0}, storage.data()},             // broadcast inner
      {DType::kInt32, {7}, {3}, storage.data() + 1},                      // step 3
      {DType::kInt32, {2, 1, 3, 1}, {30, 77, 2, 5}, storage.data() + 2},  // size-1 dims
  };
  for (const OwnedView& layout : layouts) {
    const std::vector<uint8_t> expected = LogicalBytes(layout);
    const uint64_t numel = expected.size() / 4;
    for (uint64_t start = 0; start <= numel; ++start) {
      for (uint64_t piece : {uint64_t{1}, uint64_t{3}, uint64_t{7}, numel}) {
        StridedReader reader(layout.data, 4, layout.sizes.data(), layout.strides.data(),
                             static_cast<int>(layout.sizes.size()));
        reader.Seek(start);
        std::vector<uint8_t> got((numel - start) * 4);
        for (uint64_t done = start; done < numel; done += std::min(piece, numel - done)) {
          reader.Read(std::min(piece, numel - done), &got[(done - start) * 4]);
        }
        ASSERT_TRUE(std::equal(got.begin(), got.end(), expected.begin() + start * 4))
            << "layout " << &layout - layouts.data() << " start " << start << " piece " << piece;
      }
    }
  }
}

// Transposed innermost pairs large enough for whole tiles (StridedReader::CopyTile), read in
// pieces that start and end mid-row, for every element size; and a batched transpose.
TEST(DigestGatherTest, TransposedTilesMatchStrideFormula) {
  std::vector<uint8_t> storage(16 * 150 * 90);
  for (size_t byte_idx = 0; byte_idx < storage.size(); ++byte_idx) {
    storage[byte_idx] = static_cast<uint8_t>(byte_idx * 131 + (byte_idx >> 8));
  }
  for (const DType dtype :
       {DType::kUInt8, DType::kInt16, DType::kFloat32, DType::kFloat64, DType::kComplex128}) {
    const std::vector<OwnedView> layouts = {
        {dtype, {150, 90}, {1, 150}, storage.data()},         // .t() of a [90, 150]
        {dtype, {140, 80}, {1, 150}, storage.data() + 16},    // .t() of a slice
        {dtype, {3, 50, 40}, {2000, 1, 50}, storage.data()},  // transpose(-1, -2), batched
    };
    for (size_t layout_idx = 0; layout_idx < layouts.size(); ++layout_idx) {
      const OwnedView& layout = layouts[layout_idx];
      const size_t elem_size = DTypeSize(dtype);
      const std::vector<uint8_t> expected = LogicalBytes(layout);
      const uint64_t numel = expected.size() / elem_size;
      for (const uint64_t piece : {uint64_t{1000}, uint64_t{4321}, numel}) {
        StridedReader reader(layout.data, elem_size, layout.sizes.data(), layout.strides.data(),
                             static_cast<int>(layout.sizes.size()));
        const uint64_t start = piece == numel ? 0 : 37;
        reader.Seek(start);
        std::vector<uint8_t> got((numel - start) * elem_size);
        for (uint64_t done = start; done < numel; done += std::min(piece, numel - done)) {
          reader.Read(std::min(piece, numel - done), &got[(done - start) * elem_size]);
        }
        EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin() + start * elem_size))
            << DTypeName(dtype) << " layout " << layout_idx << " piece " << piece;
      }
    }
  }
}

// Rows contiguous inside, apart from each other (heads split off a wider row, a column
// slice): whole rows copied together (StridedReader's CopyRows), every fixed row size and one
// that is not, read in pieces that start and end mid-row and that span many rows.
TEST(DigestGatherTest, ContiguousRowsMatchStrideFormula) {
  std::vector<uint8_t> storage(64 * 1024);
  for (size_t byte_idx = 0; byte_idx < storage.size(); ++byte_idx) {
    storage[byte_idx] = static_cast<uint8_t>(byte_idx * 151 + (byte_idx >> 9));
  }
  for (const DType dtype : {DType::kUInt8, DType::kInt16, DType::kFloat32, DType::kFloat64}) {
    const int64_t elem_size = static_cast<int64_t>(DTypeSize(dtype));
    for (const int64_t row_bytes : {16, 32, 64, 128, 256, 48}) {
      const int64_t row = row_bytes / elem_size;
      // [batch, heads, rows, row] of a [batch, rows, 3 * heads * row]: a head's row is
      // contiguous, the next row 3 * heads * row elements further.
      const int64_t heads = 2, rows = 9, batch = 3, width = 3 * heads * row;
      const OwnedView layout{dtype,
                             {batch, heads, rows, row},
                             {rows * width, row, width, 1},
                             storage.data() + elem_size};
      const std::vector<uint8_t> expected = LogicalBytes(layout);
      const uint64_t numel = expected.size() / static_cast<uint64_t>(elem_size);
      for (const uint64_t piece : {uint64_t{5}, static_cast<uint64_t>(3 * row + 1), numel}) {
        StridedReader reader(layout.data, static_cast<size_t>(elem_size), layout.sizes.data(),
                             layout.strides.data(), 4);
        const uint64_t start = piece == numel ? 0 : 3;
        reader.Seek(start);
        std::vector<uint8_t> got((numel - start) * static_cast<uint64_t>(elem_size));
        for (uint64_t done = start; done < numel; done += std::min(piece, numel - done)) {
          reader.Read(std::min(piece, numel - done),
                      &got[(done - start) * static_cast<uint64_t>(elem_size)]);
        }
        EXPECT_TRUE(std::equal(got.begin(), got.end(),
                               expected.begin() + static_cast<int64_t>(start) * elem_size))
            << DTypeName(dtype) << " row of " << row_bytes << " bytes, piece " << piece;
      }
    }
  }
}

TEST(DigestGatherTest, EveryElementSize) {
  std::vector<uint8_t> storage(16 * 40);
  std::iota(storage.begin(), storage.end(), 0);
  for (const DType dtype :
       {DType::kUInt8, DType::kInt16, DType::kFloat32, DType::kFloat64, DType::kComplex128}) {
    for (const std::vector<int64_t>& strides :
         std::vector<std::vector<int64_t>>{{1, 5}, {0, 2}, {6, 0}}) {
      const OwnedView layout{dtype, {5, 4}, strides, storage.data()};
      const std::vector<uint8_t> expected = LogicalBytes(layout);
      StridedReader reader(layout.data, DTypeSize(dtype), layout.sizes.data(),
                           layout.strides.data(), 2);
      std::vector<uint8_t> got(expected.size());
      reader.Read(20, got.data());
      EXPECT_EQ(got, expected) << DTypeName(dtype) << " strides " << strides[0] << ","
                               << strides[1];
    }
  }
}

}  // namespace
}  // namespace upguard
