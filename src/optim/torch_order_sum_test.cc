#define UPGUARD_OPTIM_ISA tested  // this test's own copy (torch_order_sum.h)
#include "optim/torch_order_sum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace upguard::optim::tested {
namespace {

// Inputs whose sums depend on the order they are added in.
std::vector<float> Values(int64_t n) {
  std::vector<float> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(float(std::sin(0.7 * double(i)) * 3 + 1.0 / double(i + 1)));
  return out;
}

uint32_t Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return bits;
}

// The expected bits were printed by torch 1.13 (Debian, CPU, one thread):
//   torch.tensor(values).sum(), .reshape(rows, cols).sum(dim=0)[j], .norm(2)
// torch 2.15 prints the same sums (its norm differs in the last bit at n = 100: AVX-512).
TEST(TorchOrderSum, RowSumsAsTorchTakesThem) {
  const std::vector<std::pair<int64_t, uint32_t>> expected = {
      {5, 0x412c4556},   {8, 0x4092c8d8},    {33, 0x4135f4fa},
      {100, 0x40b11109}, {1000, 0x4163a158}, {4099, 0x418357b3}};
  for (const auto& [n, bits] : expected) {
    const std::vector<float> values = Values(n);
    EXPECT_EQ(Bits(RowSum(values.data(), n)), bits) << n;
  }
}

TEST(TorchOrderSum, ColumnSumsAsTorchTakesThem) {
  struct Case {
    int64_t rows, cols, column;
    uint32_t bits;
  };
  const std::vector<Case> cases = {
      {64, 32, 0, 0xbe96cac8},   {64, 32, 16, 0xbf0fb8dc},   {64, 32, 31, 0x3fd4ba02},
      {100, 7, 0, 0x3feada7c},   {100, 7, 3, 0x3f793118},    {100, 7, 6, 0x3f08f404},
      {33, 40, 0, 0x3f11da02},   {33, 40, 20, 0x3e72afd0},   {33, 40, 39, 0x3f0c1ed0},
      {1000, 72, 0, 0x422530c6}, {1000, 72, 36, 0x4224e124}, {1000, 72, 71, 0x41d0e6dc},
      {300, 4, 0, 0x40876894},   {300, 4, 2, 0x4071d71a},    {300, 4, 3, 0x40100562}};
  for (const Case& c : cases) {
    const std::vector<float> values = Values(c.rows * c.cols);
    // The column alone, and within all of its side of the kernel's column groups: one result.
    const int64_t split = FirstInterleavedColumn(c.cols);
    const int64_t first = c.column < split ? 0 : split, last = c.column < split ? split : c.cols;
    ColumnSums alone(c.rows, c.cols, c.column, c.column + 1), all(c.rows, c.cols, first, last);
    for (int64_t row = 0; row < c.rows; ++row) {
      alone.AddRow(&values[size_t(row * c.cols + c.column)]);
      all.AddRow(&values[size_t(row * c.cols + first)]);
    }
    float one = 0;
    std::vector<float> many(size_t(last - first));
    alone.Totals(&one);
    all.Totals(many.data());
    EXPECT_EQ(Bits(one), c.bits) << c.rows << "x" << c.cols << " column " << c.column;
    EXPECT_EQ(Bits(many[size_t(c.column - first)]), c.bits) << c.rows << "x" << c.cols;
  }
}

TEST(TorchOrderSum, NormAsTorchTakesIt) {
  const std::vector<std::pair<int64_t, uint32_t>> expected = {
      {7, 0x40bb0048}, {100, 0x41a9c77b}, {5000, 0x43160385}};
  for (const auto& [n, bits] : expected) {
    const std::vector<float> values = Values(n);
    EXPECT_EQ(Bits(NormTwo(values.data(), n)), bits) << n;
  }
}

// The order matters: a plain sequential sum of the same values rounds differently.
TEST(TorchOrderSum, NotTheSequentialSum) {
  const std::vector<float> values = Values(1000);
  float sequential = 0;
  for (float value : values) sequential += value;
  EXPECT_NE(Bits(sequential), 0x4163a158u);
}

}  // namespace
}  // namespace upguard::optim::tested
