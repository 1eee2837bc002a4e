#include "digest/lazy_bits.h"

#include <cstring>
#include <type_traits>

#include "digest/gather.h"

namespace upguard {
namespace {

// The sign bit of a little-endian floating component of `bytes` bytes at `p`.
void FlipSign(uint8_t* p, size_t bytes) { p[bytes - 1] ^= 0x80; }

template <class Int>
void NegateInts(uint8_t* data, int64_t numel) {
  for (int64_t idx = 0; idx < numel; ++idx) {
    Int value;
    std::memcpy(&value, data + idx * sizeof(Int), sizeof(Int));
    // Through the unsigned type: wraps as torch's negation of the minimum does.
    using Unsigned = std::make_unsigned_t<Int>;
    value = static_cast<Int>(static_cast<Unsigned>(0) - static_cast<Unsigned>(value));
    std::memcpy(data + idx * sizeof(Int), &value, sizeof(Int));
  }
}

bool IsComplex(DType dtype) { return dtype == DType::kComplex64 || dtype == DType::kComplex128; }

}  // namespace

bool ResolveLazyBits(const TensorView& view, bool conj, bool neg, std::string* out) {
  const size_t elem = DTypeSize(view.dtype);
  if (elem == 0 || (conj && !IsComplex(view.dtype)) || (neg && view.dtype == DType::kBool) ||
      view.ndim < 0 || view.ndim > kMaxDigestDims) {
    return false;
  }
  for (int dim = 0; dim < view.ndim; ++dim) {
    if (view.sizes[dim] < 0 || view.strides[dim] < 0) return false;
  }
  const int64_t numel = view.numel();
  std::string values(static_cast<size_t>(numel) * elem, '\0');
  if (numel > 0) {
    StridedReader reader(view.data, elem, view.sizes, view.strides, view.ndim);
    reader.Read(static_cast<uint64_t>(numel), reinterpret_cast<uint8_t*>(values.data()));
  }
  auto* data = reinterpret_cast<uint8_t*>(values.data());
  const bool floating = DTypeIsFloating(view.dtype) || IsComplex(view.dtype);
  if (neg && !floating) {
    switch (view.dtype) {
      case DType::kInt8:
        NegateInts<int8_t>(data, numel);
        break;
      case DType::kUInt8:
        NegateInts<uint8_t>(data, numel);
        break;
      case DType::kInt16:
        NegateInts<int16_t>(data, numel);
        break;
      case DType::kInt32:
        NegateInts<int32_t>(data, numel);
        break;
      case DType::kInt64:
        NegateInts<int64_t>(data, numel);
        break;
      default:
        return false;
    }
  }
  // A complex element is two floating components, real then imaginary.
  const size_t component = IsComplex(view.dtype) ? elem / 2 : elem;
  for (int64_t idx = 0; floating && (neg || conj) && idx < numel; ++idx) {
    uint8_t* element = data + idx * elem;
    if (neg) FlipSign(element, component);
    if (neg && IsComplex(view.dtype)) FlipSign(element + component, component);
    if (conj) FlipSign(element + component, component);
  }
  *out = std::move(values);
  return true;
}

}  // namespace upguard
