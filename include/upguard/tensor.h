// TensorView: a borrowed, framework-neutral description of a tensor in host memory.
//
// This is what the core sees of a tensor. The PyTorch adapter fills it from an at::Tensor; a
// C++ training engine fills it from its own buffers:
//
//   int64_t sizes[] = {4, 8}, strides[] = {8, 1};
//   upguard::TensorView view{upguard::DType::kFloat32, sizes, strides, 2, buffer};
//
// Strides are in elements (not bytes) like torch; zero strides (broadcast) are allowed,
// negative strides are not. `data` points at element [0, ..., 0] (storage offset applied).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace upguard {

// Serialized in traces: fixed values, never renumber; add new ones at the end.
enum class DType : uint8_t {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kFloat16 = 3,
  kBFloat16 = 4,
  kInt8 = 5,
  kUInt8 = 6,
  kInt16 = 7,
  kInt32 = 8,
  kInt64 = 9,
  kBool = 10,
  kComplex64 = 11,
  kComplex128 = 12,
};
inline constexpr uint8_t kMaxDType = 12;

// Bytes per element; 0 for kInvalid.
size_t DTypeSize(DType dtype);
// "float32", "bfloat16", ... (torch's names without the "torch." prefix).
std::string_view DTypeName(DType dtype);
// Floating dtypes get statistics (complex does not).
bool DTypeIsFloating(DType dtype);

struct TensorView {
  DType dtype = DType::kInvalid;
  const int64_t* sizes = nullptr;
  const int64_t* strides = nullptr;  // in elements
  int ndim = 0;
  const void* data = nullptr;

  int64_t numel() const {
    int64_t n = 1;
    for (int dim_idx = 0; dim_idx < ndim; ++dim_idx) n *= sizes[dim_idx];
    return n;
  }
};

}  // namespace upguard
