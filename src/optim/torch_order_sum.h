// float32 sums in the order torch's CPU sum kernel takes them (ATen's SumKernel.cpp
// `cascade_sum`, one thread, 8 float lanes as its AVX2 build has), so that a mean taken here
// rounds as `tensor.mean(dim)` does in the reference CAME implementation. Measured: with means
// taken in double instead, CAME's parameters after 20 steps differ from the reference's by up to
// 1e-5 relative (an ulp in a mean moves the confidence term); in this order they are the same
// bits (came_reference_test.cc). Deterministic: the order is fixed by the sizes alone.
//
//   float s = RowSum(row, n);                    // tensor.sum(dim=-1) of a contiguous row
//   ColumnSums sums(rows, cols, first, last);    // tensor.sum(dim=-2), columns [first, last)
//   for (...) sums.AddRow(&x[row * cols + first]);
//   sums.Totals(out);
//
// The kernel's structure: n values are summed in blocks of 2^p (p >= 4, from n) added in
// order, whose sums carry through 4 levels of accumulators ("multi_row_sum", a cascade); a
// "row_sum" interleaves 4 such cascades (value i goes to cascade i % 4, a tail of n % 4 values to
// the first's total) and adds their totals in order; a contiguous row of 8 or more is 8 lanes of
// row_sums over its vectors, then its scalar tail, then the lanes, in order.
//
// Header-only: each kernel build (came_kernel.h: generic, AVX2) inlines it with its own
// instructions, in a namespace of its own (UPGUARD_OPTIM_ISA, defined by the includer); the
// order, and so the bits, are the same.
#pragma once

#ifndef UPGUARD_OPTIM_ISA
#error "define UPGUARD_OPTIM_ISA (the namespace of this build's copy) before including this"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace upguard::optim::UPGUARD_OPTIM_ISA {

constexpr int64_t kSumLanes = 8;   // float lanes of torch's AVX2 vectors
constexpr int64_t kSumLevels = 4;  // accumulator levels of the cascade

// The cascade's block: 2^max(4, ceil(log2(n)) / 4) values.
inline int64_t CascadePower(int64_t n) {
  int64_t log = 0;
  while ((int64_t{1} << log) < n) ++log;
  return std::max<int64_t>(4, log / kSumLevels);
}

// `width` independent cascades of `size` values each, fed one value each at a time.
class Cascades {
 public:
  Cascades(int64_t size = 0, int64_t width = 0) { Reset(size, width); }

  // Starts over (keeping the memory: a row sum reuses one per thread).
  void Reset(int64_t size, int64_t width) {
    power_ = CascadePower(size);
    mask_ = (int64_t{1} << power_) - 1;
    width_ = width;
    count_ = 0;
    acc_.assign(size_t(kSumLevels * width), 0.0f);
  }

  // Adds values[0..width) to the cascades' current blocks.
  void Add(const float* values) {
    float* level0 = acc_.data();
    for (int64_t idx = 0; idx < width_; ++idx) level0[idx] += values[idx];
    if ((++count_ & mask_) == 0) Carry();
  }

  // The totals: the levels added in order.
  void Totals(float* out) const {
    for (int64_t idx = 0; idx < width_; ++idx) {
      float total = acc_[size_t(idx)];
      for (int64_t level = 1; level < kSumLevels; ++level)
        total += acc_[size_t(level * width_ + idx)];
      out[idx] = total;
    }
  }

 private:
  // After each full block, the levels carry upward until one is not at a multiple of its span.
  void Carry() {
    for (int64_t level = 1; level < kSumLevels; ++level) {
      float* upper = &acc_[size_t(level * width_)];
      float* lower = &acc_[size_t((level - 1) * width_)];
      for (int64_t idx = 0; idx < width_; ++idx) upper[idx] += lower[idx], lower[idx] = 0;
      if ((count_ & (mask_ << (level * power_))) != 0) break;
    }
  }

  int64_t power_ = 4, mask_ = 15, width_ = 0, count_ = 0;
  std::vector<float> acc_;
};

// `width` interleaved row_sums of `size` values each (4 cascades each), fed a value each at a
// time.
class IlpSums {
 public:
  IlpSums(int64_t size = 0, int64_t width = 0) { Reset(size, width); }

  void Reset(int64_t size, int64_t width) {
    size_ = size, full_ = size / 4 * 4, width_ = width, count_ = 0;
    cascades_.Reset(size / 4, 4 * width);
    pending_.resize(size_t(4 * width));
    tail_.resize(size_t(3 * width));
    parts_.resize(size_t(4 * width));
  }

  void Add(const float* values) {
    const int64_t lane = count_ % 4;
    float* into = count_ < full_ ? &pending_[size_t(lane * width_)]
                                 : &tail_[size_t((count_ - full_) * width_)];
    std::copy(values, values + width_, into);
    ++count_;
    if (count_ <= full_ && lane == 3) cascades_.Add(pending_.data());
  }

  void Totals(float* out) {
    cascades_.Totals(parts_.data());
    for (int64_t idx = 0; idx < width_; ++idx) {
      float total = parts_[size_t(idx)];
      for (int64_t t = 0; t < size_ - full_; ++t) total += tail_[size_t(t * width_ + idx)];
      for (int64_t k = 1; k < 4; ++k) total += parts_[size_t(k * width_ + idx)];
      out[idx] = total;
    }
  }

 private:
  int64_t size_ = 0, full_ = 0, width_ = 0, count_ = 0;
  Cascades cascades_;
  std::vector<float> pending_, tail_, parts_;
};

// tensor.sum(dim=-1) of one contiguous row of n values: for n >= 8, 8 lanes of 4 interleaved
// cascades each, kept as 32 accumulators a level and fed 32 values (4 vectors) at a time.
inline float RowSum(const float* row, int64_t n) {
  if (n < kSumLanes) {  // one scalar row_sum
    thread_local IlpSums scalar;
    scalar.Reset(n, 1);
    for (int64_t idx = 0; idx < n; ++idx) scalar.Add(&row[idx]);
    float total;
    scalar.Totals(&total);
    return total;
  }
  constexpr int64_t kWidth = 4 * kSumLanes;  // accumulator k * 8 + lane: cascade k of a lane
  const int64_t vectors = n / kSumLanes, groups = vectors / 4;
  const int64_t power = CascadePower(groups), mask = (int64_t{1} << power) - 1;
  alignas(32) float acc[kSumLevels][kWidth] = {};
  for (int64_t group = 0; group < groups; ++group) {
    const float* values = row + group * kWidth;
    for (int64_t idx = 0; idx < kWidth; ++idx) acc[0][idx] += values[idx];
    if (((group + 1) & mask) != 0) continue;
    for (int64_t level = 1; level < kSumLevels; ++level) {  // a full block: carry
      for (int64_t idx = 0; idx < kWidth; ++idx) {
        acc[level][idx] += acc[level - 1][idx];
        acc[level - 1][idx] = 0;
      }
      if (((group + 1) & (mask << (level * power))) != 0) break;
    }
  }
  float parts[kWidth];
  for (int64_t idx = 0; idx < kWidth; ++idx) {
    parts[idx] = acc[0][idx];
    for (int64_t level = 1; level < kSumLevels; ++level) parts[idx] += acc[level][idx];
  }
  float total = 0;
  for (int64_t idx = vectors * kSumLanes; idx < n; ++idx) total += row[idx];  // scalar tail
  for (int64_t lane = 0; lane < kSumLanes; ++lane) {
    float sum = parts[lane];  // cascade 0, then the vectors after the last group, then 1..3
    for (int64_t vec = groups * 4; vec < vectors; ++vec) sum += row[vec * kSumLanes + lane];
    for (int64_t k = 1; k < 4; ++k) sum += parts[k * kSumLanes + lane];
    total += sum;
  }
  return total;
}

// The first column of a (rows, cols) matrix's columns that torch sums as interleaved row_sums;
// those before it are summed as one cascade each (groups of 4 vectors, or of 4 scalar columns
// when cols < 8).
inline int64_t FirstInterleavedColumn(int64_t cols) {
  return cols >= kSumLanes ? cols / (4 * kSumLanes) * (4 * kSumLanes) : cols / 4 * 4;
}

// tensor.sum(dim=-2) of columns [first, last) of a contiguous (rows, cols) matrix, all on one
// side of FirstInterleavedColumn(cols), fed a row at a time.
class ColumnSums {
 public:
  ColumnSums(int64_t rows, int64_t cols, int64_t first, int64_t last)
      : interleaved_(first >= FirstInterleavedColumn(cols)),
        cascades_(interleaved_ ? 0 : rows, interleaved_ ? 0 : last - first),
        ilp_(interleaved_ ? rows : 0, interleaved_ ? last - first : 0) {}

  void AddRow(const float* values) {
    if (interleaved_) {
      ilp_.Add(values);
    } else {
      cascades_.Add(values);
    }
  }
  void Totals(float* out) { interleaved_ ? ilp_.Totals(out) : cascades_.Totals(out); }

 private:
  bool interleaved_;
  Cascades cascades_;
  IlpSums ilp_;
};

// tensor.norm(2) of n contiguous values, as torch's CPU norm kernel takes it over a whole
// contiguous tensor: 8 lanes, each a fused multiply-add of its squares in order, the lanes
// added in order, then the tail's squares added (not fused); the square root rounded to
// float32. Serial by construction (every lane runs from the first vector to the last).
inline float NormTwo(const float* values, int64_t n) {
  float lanes[kSumLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t full = n / kSumLanes * kSumLanes;
  for (int64_t at = 0; at < full; at += kSumLanes) {
    for (int64_t lane = 0; lane < kSumLanes; ++lane) {
      lanes[lane] = std::fma(values[at + lane], values[at + lane], lanes[lane]);
    }
  }
  float total = lanes[0];
  for (int64_t lane = 1; lane < kSumLanes; ++lane) total += lanes[lane];
  for (int64_t at = full; at < n; ++at) total += values[at] * values[at];
  return std::sqrt(total);
}

}  // namespace upguard::optim::UPGUARD_OPTIM_ISA
