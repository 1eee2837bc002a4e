// The comparison walks both row-major byte streams a block at a time: blocks that memcmp equal
// are skipped, and only blocks with a difference go through the per-dtype element kernel.
#include "capture/element_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>

#include "capture/view_check.h"
#include "digest/gather.h"
#include "digest/half.h"

namespace upguard {
namespace {

constexpr int64_t kBlockElements = 512;   // memcmp granularity
constexpr size_t kGatherBytes = 1 << 16;  // per view, for strided views

// Collects what the kernels find into an ElementComparison.
class Accumulator {
 public:
  explicit Accumulator(ElementComparison* c) : c_(c) {}

  ElementComparison& c() { return *c_; }
  // Every differing element, first.
  void Differ(int64_t flat_idx, double a, double b) {
    if (c_->differing++ == 0) {
      first_flat_ = flat_idx;
      c_->first_a = a;
      c_->first_b = b;
    }
    Map(flat_idx);
  }
  // Its distance in ULP (or |a - b| for integers), when it has one (>= 1).
  void Distance(uint64_t distance) {
    c_->max_ulp = std::max(c_->max_ulp, distance);
    ++buckets_[distance <= 1 ? 0 : 64 - __builtin_clzll(distance - 1)];
  }
  // Its errors, for a pair of finite values not both zero.
  void Error(double a, double b) {
    const double abs_error = std::fabs(a - b);
    const double magnitude = std::max(std::fabs(a), std::fabs(b));
    c_->max_abs_error = std::max(c_->max_abs_error, abs_error);
    c_->max_rel_error = std::max(c_->max_rel_error, abs_error / magnitude);
    // Keep the staircase of undominated points (see ElementComparison::error_frontier).
    auto next = frontier_.upper_bound(magnitude);
    if (next != frontier_.begin() && std::prev(next)->second >= abs_error) return;
    auto point = frontier_.insert_or_assign(magnitude, abs_error).first;
    for (auto after = std::next(point); after != frontier_.end() && after->second <= abs_error;) {
      after = frontier_.erase(after);
    }
  }
  void Finish() {
    for (int bucket_idx = 0; bucket_idx <= 64; ++bucket_idx) {
      if (buckets_[bucket_idx] == 0) continue;
      const uint64_t max_ulp = bucket_idx == 64 ? UINT64_MAX : uint64_t{1} << bucket_idx;
      c_->ulp_histogram.push_back({max_ulp, buckets_[bucket_idx]});
    }
    for (const auto& [magnitude, abs_error] : frontier_) {
      c_->error_frontier.push_back({magnitude, abs_error});
    }
    if (first_flat_ < 0) return;
    c_->first_index.assign(c_->shape.size(), 0);
    int64_t rest = first_flat_;
    for (size_t dim_idx = c_->shape.size(); dim_idx-- > 0;) {
      c_->first_index[dim_idx] = rest % c_->shape[dim_idx];
      rest /= c_->shape[dim_idx];
    }
  }

 private:
  // Counts the element in its cell of the diff map (set up at the first difference: the shape
  // is known by then).
  void Map(int64_t flat_idx) {
    ElementComparison::DiffMap& map = c_->diff_map;
    if (c_->shape.size() < 2 || c_->shape.back() <= 0) return;
    if (map.counts.empty()) {
      map.cols = c_->shape.back();
      map.rows = c_->numel / map.cols;
      map.grid_rows = std::min(map.rows, kDiffMapRows);
      map.grid_cols = std::min(map.cols, kDiffMapCols);
      map.counts.assign(size_t(map.grid_rows * map.grid_cols), 0);
    }
    const int64_t row = flat_idx / map.cols, col = flat_idx % map.cols;
    ++map.counts[size_t((row * map.grid_rows / map.rows) * map.grid_cols +
                        col * map.grid_cols / map.cols)];
  }

  ElementComparison* c_;
  int64_t first_flat_ = -1;
  int64_t buckets_[65] = {};  // bucket k: distances in (2^(k-1), 2^k]
  std::map<double, double> frontier_;
};

using Kernel = void (*)(const uint8_t* a, const uint8_t* b, int64_t count, int64_t base_idx,
                        Accumulator* acc);

template <typename T>
T Load(const uint8_t* bytes) {
  T value;
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

double Float32ToDouble(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

double Float64ToDouble(uint64_t bits) {
  double value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

// IEEE formats: `kInfMagnitude` is +inf's bits; a larger magnitude is a NaN.
template <typename Bits, Bits kInfMagnitude, double (*kToDouble)(Bits)>
void CompareFloats(const uint8_t* a, const uint8_t* b, int64_t count, int64_t base_idx,
                   Accumulator* acc) {
  constexpr Bits kSign = Bits{1} << (sizeof(Bits) * 8 - 1);
  for (int64_t elem_idx = 0; elem_idx < count; ++elem_idx) {
    const Bits x = Load<Bits>(a + elem_idx * sizeof(Bits));
    const Bits y = Load<Bits>(b + elem_idx * sizeof(Bits));
    if (x == y) continue;
    const double x_value = kToDouble(x), y_value = kToDouble(y);
    acc->Differ(base_idx + elem_idx, x_value, y_value);
    const Bits x_magnitude = x & ~kSign, y_magnitude = y & ~kSign;
    const bool x_nan = x_magnitude > kInfMagnitude, y_nan = y_magnitude > kInfMagnitude;
    if (x_nan || y_nan) {
      ++acc->c().nan_mismatch;
      acc->c().nan_payload += x_nan && y_nan;
      continue;
    }
    if (x_magnitude == 0 && y_magnitude == 0) {
      ++acc->c().signed_zero;
      continue;
    }
    acc->Distance((x ^ y) & kSign             ? uint64_t{x_magnitude} + y_magnitude
                  : x_magnitude > y_magnitude ? uint64_t{x_magnitude} - y_magnitude
                                              : uint64_t{y_magnitude} - x_magnitude);
    if (x_magnitude == kInfMagnitude || y_magnitude == kInfMagnitude) {
      ++acc->c().inf_mismatch;
      continue;
    }
    acc->Error(x_value, y_value);
  }
}

template <typename Int>
void CompareInts(const uint8_t* a, const uint8_t* b, int64_t count, int64_t base_idx,
                 Accumulator* acc) {
  for (int64_t elem_idx = 0; elem_idx < count; ++elem_idx) {
    const Int x = Load<Int>(a + elem_idx * sizeof(Int));
    const Int y = Load<Int>(b + elem_idx * sizeof(Int));
    if (x == y) continue;
    const auto x_value = static_cast<double>(x), y_value = static_cast<double>(y);
    acc->Differ(base_idx + elem_idx, x_value, y_value);
    // Unsigned wrap-around gives the exact |x - y| even for int64 extremes.
    acc->Distance(x > y ? static_cast<uint64_t>(x) - static_cast<uint64_t>(y)
                        : static_cast<uint64_t>(y) - static_cast<uint64_t>(x));
    acc->Error(x_value, y_value);
  }
}

// What a dtype is compared as: complex as its float components.
struct ElementType {
  DType dtype;
  int components;
  Kernel kernel;
};

ElementType ElementTypeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return {dtype, 1, CompareFloats<uint32_t, 0x7F800000, Float32ToDouble>};
    case DType::kFloat64:
      return {dtype, 1, CompareFloats<uint64_t, 0x7FF0000000000000, Float64ToDouble>};
    case DType::kFloat16:
      return {dtype, 1, CompareFloats<uint16_t, 0x7C00, Float16ToDouble>};
    case DType::kBFloat16:
      return {dtype, 1, CompareFloats<uint16_t, 0x7F80, BFloat16ToDouble>};
    case DType::kComplex64:
      return {DType::kFloat32, 2, ElementTypeOf(DType::kFloat32).kernel};
    case DType::kComplex128:
      return {DType::kFloat64, 2, ElementTypeOf(DType::kFloat64).kernel};
    case DType::kInt8:
      return {dtype, 1, CompareInts<int8_t>};
    case DType::kUInt8:
    case DType::kBool:
      return {dtype, 1, CompareInts<uint8_t>};
    case DType::kInt16:
      return {dtype, 1, CompareInts<int16_t>};
    case DType::kInt32:
      return {dtype, 1, CompareInts<int32_t>};
    case DType::kInt64:
      return {dtype, 1, CompareInts<int64_t>};
    case DType::kInvalid:
      break;
  }
  return {DType::kInvalid, 1, nullptr};
}

// Feeds both tensors' row-major bytes through the dtype's kernel, in pieces of any size.
class Comparer {
 public:
  Comparer(DType dtype, const std::vector<int64_t>& shape) : type_(ElementTypeOf(dtype)) {
    c_.dtype = type_.dtype;
    c_.shape = shape;
    if (type_.components == 2) c_.shape.push_back(2);
    c_.numel = 1;
    for (const int64_t size : c_.shape) c_.numel *= size;
    elem_size_ = DTypeSize(type_.dtype);
  }

  // `count` elements (components, for complex) of each tensor, continuing the row-major walk.
  void Feed(const uint8_t* a, const uint8_t* b, int64_t count) {
    for (int64_t block_begin = 0; block_begin < count; block_begin += kBlockElements) {
      const int64_t block = std::min(kBlockElements, count - block_begin);
      const size_t offset = block_begin * elem_size_;
      if (std::memcmp(a + offset, b + offset, block * elem_size_) == 0) continue;
      type_.kernel(a + offset, b + offset, block, fed_ + block_begin, &acc_);
    }
    fed_ += count;
  }

  ElementComparison Finish() {
    acc_.Finish();
    return std::move(c_);
  }

  int components() const { return type_.components; }

 private:
  ElementType type_;
  size_t elem_size_ = 0;
  ElementComparison c_;
  Accumulator acc_{&c_};
  int64_t fed_ = 0;
};

// The result for tensors whose dtype or shape differ, or null when they can be compared.
std::optional<ElementComparison> NotComparable(DType a_dtype, const std::vector<int64_t>& a_shape,
                                               DType b_dtype, const std::vector<int64_t>& b_shape) {
  ElementComparison c;
  c.dtype = a_dtype;
  c.shape = a_shape;
  c.comparable = false;
  if (a_dtype != b_dtype) {
    c.why_not =
        "dtype " + std::string(DTypeName(a_dtype)) + " vs " + std::string(DTypeName(b_dtype));
  } else if (a_shape != b_shape) {
    c.why_not = "shape " + BracketList(a_shape) + " vs " + BracketList(b_shape);
  } else {
    return std::nullopt;
  }
  return c;
}

std::vector<int64_t> Shape(const TensorView& view) {
  return std::vector<int64_t>(view.sizes, view.sizes + view.ndim);
}

}  // namespace

StatusOr<ElementComparison> CompareElements(const StoredTensor& a, const StoredTensor& b) {
  for (const StoredTensor* tensor : {&a, &b}) {
    const std::string what = "CompareElements: tensor \"" + tensor->name + "\"";
    ASSIGN_OR_RETURN(const TensorLayout layout,
                     CheckShape(what.c_str(), tensor->dtype, tensor->shape.data(),
                                static_cast<int>(tensor->shape.size())));
    if (tensor->bytes.size() != layout.byte_length) {
      return InvalidArgument(what + " has " + std::to_string(tensor->bytes.size()) +
                             " bytes; its dtype and shape need " +
                             std::to_string(layout.byte_length));
    }
  }
  if (auto c = NotComparable(a.dtype, a.shape, b.dtype, b.shape)) return *std::move(c);
  Comparer comparer(a.dtype, a.shape);
  comparer.Feed(reinterpret_cast<const uint8_t*>(a.bytes.data()),
                reinterpret_cast<const uint8_t*>(b.bytes.data()),
                static_cast<int64_t>(a.bytes.size() / DTypeSize(a.dtype)) * comparer.components());
  return comparer.Finish();
}

StatusOr<ElementComparison> CompareElements(const TensorView& a, const TensorView& b) {
  ASSIGN_OR_RETURN(const TensorLayout layout, CheckReadableView("CompareElements: view a", a));
  RETURN_IF_ERROR(CheckReadableView("CompareElements: view b", b).status());
  if (auto c = NotComparable(a.dtype, Shape(a), b.dtype, Shape(b))) return *std::move(c);
  Comparer comparer(a.dtype, Shape(a));
  if (layout.numel == 0) return comparer.Finish();
  StridedReader a_reader(a.data, layout.elem_size, a.sizes, a.strides, a.ndim);
  StridedReader b_reader(b.data, layout.elem_size, b.sizes, b.strides, b.ndim);
  std::vector<uint8_t> a_buffer(kGatherBytes), b_buffer(kGatherBytes);
  const uint64_t per_read = kGatherBytes / layout.elem_size;
  for (uint64_t done = 0; done < layout.numel; done += per_read) {
    const uint64_t count = std::min(per_read, layout.numel - done);
    a_reader.Read(count, a_buffer.data());
    b_reader.Read(count, b_buffer.data());
    comparer.Feed(a_buffer.data(), b_buffer.data(),
                  static_cast<int64_t>(count) * comparer.components());
  }
  return comparer.Finish();
}

}  // namespace upguard
