#include "optim/torch_order_sum.h"

#include <algorithm>
#include <cmath>

namespace upguard::optim {
namespace {

constexpr int64_t kLanes = 8;   // float lanes of the AVX2 build's vectors
constexpr int64_t kLevels = 4;  // accumulator levels of the cascade

int64_t CeilLog2(int64_t value) {
  int64_t log = 0;
  while ((int64_t{1} << log) < value) ++log;
  return log;
}

}  // namespace

CascadeSum::CascadeSum(int64_t size)
    : power_(std::max<int64_t>(4, CeilLog2(size) / kLevels)), step_(int64_t{1} << power_) {}

void CascadeSum::Carry() {
  // After each full block: the levels carry upward until one is not at a multiple of its span.
  const int64_t mask = step_ - 1;
  for (int64_t level = 1; level < kLevels; ++level) {
    acc_[level] += acc_[level - 1];
    acc_[level - 1] = 0;
    if ((count_ & (mask << (level * power_))) != 0) break;
  }
}

float CascadeSum::Total() const {
  float total = acc_[0];
  for (int64_t level = 1; level < kLevels; ++level) total += acc_[level];
  return total;
}

IlpSum::IlpSum(int64_t size) : size_(size), full_(size / 4 * 4) {
  for (CascadeSum& lane : lanes_) lane = CascadeSum(size / 4);
}

void IlpSum::Add(float value) {
  if (count_ < full_) {
    lanes_[count_ % 4].Add(value);
  } else {
    tail_[count_ - full_] = value;
  }
  ++count_;
}

float IlpSum::Total() const {
  float total = lanes_[0].Total();
  for (int64_t idx = 0; idx < size_ - full_; ++idx) total += tail_[idx];
  for (int64_t lane = 1; lane < 4; ++lane) total += lanes_[lane].Total();
  return total;
}

float RowSum(const float* row, int64_t n) {
  if (n < kLanes) {
    IlpSum sum(n);
    for (int64_t idx = 0; idx < n; ++idx) sum.Add(row[idx]);
    return sum.Total();
  }
  const int64_t vectors = n / kLanes;
  IlpSum lanes[kLanes];
  for (IlpSum& lane : lanes) lane = IlpSum(vectors);
  for (int64_t vec = 0; vec < vectors; ++vec) {
    for (int64_t lane = 0; lane < kLanes; ++lane) lanes[lane].Add(row[vec * kLanes + lane]);
  }
  float total = 0;
  for (int64_t idx = vectors * kLanes; idx < n; ++idx) total += row[idx];
  for (const IlpSum& lane : lanes) total += lane.Total();
  return total;
}

float NormTwo(const float* values, int64_t n) {
  float lanes[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t full = n / kLanes * kLanes;
  for (int64_t at = 0; at < full; at += kLanes) {
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      lanes[lane] = std::fma(values[at + lane], values[at + lane], lanes[lane]);
    }
  }
  float total = lanes[0];
  for (int64_t lane = 1; lane < kLanes; ++lane) total += lanes[lane];
  for (int64_t at = full; at < n; ++at) total += values[at] * values[at];  // the tail: not fused
  return std::sqrt(total);
}

ColumnSum::ColumnSum(int64_t rows, int64_t cols, int64_t column) : whole_(rows), parts_(rows) {
  if (cols >= kLanes) {
    cascade_ = column < cols / (4 * kLanes) * (4 * kLanes);  // in a group of 4 vectors
  } else {
    cascade_ = column < cols / 4 * 4;  // in a group of 4 scalar columns
  }
}

}  // namespace upguard::optim
