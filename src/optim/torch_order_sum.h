// float32 sums in the order torch's CPU sum kernel takes them (ATen's SumKernel.cpp
// `cascade_sum`, one thread, 8 float lanes as its AVX2 build has), so that a mean taken here
// rounds as `tensor.mean(dim)` does in the reference CAME implementation. Measured: with means
// taken in double instead, CAME's parameters after 20 steps differ from the reference's by up to
// 1e-5 relative (1 ulp in a mean moves the confidence term); in this order they are the same
// bits (src/optim/came_reference_test.cc). Deterministic: an order fixed by the sizes alone.
//
//   float s = RowSum(row, n);               // tensor.sum(dim=-1) of a contiguous row
//   ColumnSum col(rows, cols, j);           // tensor.sum(dim=-2), column j: rows fed in order
//   for (...) col.Add(x[i * cols + j]);
//   float t = col.Total();
//
// The kernel's structure: a reduction over n values cut into blocks of 2^p (p >= 4) summed
// sequentially, whose sums cascade through 4 levels of accumulators ("multi_row_sum"); a row
// sum interleaves 4 such cascades ("row_sum", instruction-level parallelism); a contiguous row
// of 8 or more is summed as 8 lanes of vectors, then the scalar tail, then the lanes.
#pragma once

#include <cstdint>

namespace upguard::optim {

// multi_row_sum for one lane: `size` values added in order.
class CascadeSum {
 public:
  explicit CascadeSum(int64_t size = 0);
  void Add(float value) {
    acc_[0] += value;
    if (++count_ % step_ == 0) Carry();
  }
  float Total() const;

 private:
  void Carry();
  int64_t power_ = 4, step_ = 16, count_ = 0;
  float acc_[4] = {0, 0, 0, 0};
};

// row_sum: values i < 4*(n/4) go to 4 interleaved cascades (i % 4), the rest to the first's
// total; then the four totals are added in order.
class IlpSum {
 public:
  explicit IlpSum(int64_t size = 0);
  void Add(float value);
  float Total() const;

 private:
  int64_t size_ = 0, count_ = 0, full_ = 0;
  CascadeSum lanes_[4];
  float tail_[3] = {0, 0, 0};
};

// tensor.sum(dim=-1) of one contiguous row of n values.
float RowSum(const float* row, int64_t n);

// tensor.norm(2) of n contiguous values, as torch's CPU norm kernel takes it over a whole
// contiguous tensor: 8 lanes, each a fused multiply-add of its squares in order, the lanes
// added in order, then the tail's squares added (not fused); the square root rounded to
// float32. Serial by construction (every lane runs from the first vector to the last).
float NormTwo(const float* values, int64_t n);

// tensor.sum(dim=-2) of one column of a contiguous (rows, cols) matrix: column j of `cols` is
// summed as one cascade or as interleaved cascades, by where it falls in the kernel's groups of
// 32 (or 4) columns.
class ColumnSum {
 public:
  ColumnSum(int64_t rows, int64_t cols, int64_t column);
  void Add(float value) {
    if (cascade_) {
      whole_.Add(value);
    } else {
      parts_.Add(value);
    }
  }
  float Total() const { return cascade_ ? whole_.Total() : parts_.Total(); }

 private:
  bool cascade_;
  CascadeSum whole_;
  IlpSum parts_;
};

}  // namespace upguard::optim
