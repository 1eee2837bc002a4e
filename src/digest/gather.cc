#include "digest/gather.h"

#include <algorithm>
#include <cstring>

namespace upguard {
namespace {

// Copies `count` elements of N bytes spaced `stride` bytes apart. Fixed N lets the compiler turn
// each memcpy into one load and one store.
template <size_t N>
void CopyStrided(const uint8_t* src, int64_t stride, int64_t count, uint8_t* out) {
  for (int64_t elem_idx = 0; elem_idx < count; ++elem_idx) {
    std::memcpy(out + elem_idx * N, src + elem_idx * stride, N);
  }
}

}  // namespace

StridedReader::StridedReader(const void* data, size_t elem_size, const int64_t* sizes,
                             const int64_t* strides, int ndim)
    : data_(static_cast<const uint8_t*>(data)), elem_size_(elem_size) {
  for (int dim_idx = 0; dim_idx < ndim; ++dim_idx) {
    if (sizes[dim_idx] == 0) {  // nothing to read; other sizes may be anything
      contiguous_ = true;
      return;
    }
  }
  for (int dim_idx = 0; dim_idx < ndim; ++dim_idx) {
    if (sizes[dim_idx] == 1) continue;  // a size-1 dimension never moves the pointer
    const int64_t stride_bytes = strides[dim_idx] * static_cast<int64_t>(elem_size);
    int64_t span = 0;  // bytes this dimension walks; an outer stride equal to it continues it
    const bool span_fits = !__builtin_mul_overflow(stride_bytes, sizes[dim_idx], &span);
    if (ndim_ > 0 && span_fits && strides_[ndim_ - 1] == span) {
      sizes_[ndim_ - 1] *= sizes[dim_idx];  // merge into the previous (outer) dimension
      strides_[ndim_ - 1] = stride_bytes;
    } else {
      sizes_[ndim_] = sizes[dim_idx];
      strides_[ndim_] = stride_bytes;
      ++ndim_;
    }
  }
  contiguous_ = ndim_ == 0 || (ndim_ == 1 && strides_[0] == static_cast<int64_t>(elem_size));
  std::fill(index_, index_ + ndim_, 0);
}

void StridedReader::Seek(uint64_t element_idx) {
  offset_ = 0;
  for (int dim_idx = ndim_ - 1; dim_idx >= 0; --dim_idx) {
    const auto size = static_cast<uint64_t>(sizes_[dim_idx]);
    index_[dim_idx] = static_cast<int64_t>(element_idx % size);
    element_idx /= size;
    offset_ += index_[dim_idx] * strides_[dim_idx];
  }
  // Seeking to numel leaves the odometer wrapped at 0 with the carry in element_idx; nothing
  // more may be read, which Read's precondition already says.
}

void StridedReader::Read(uint64_t num_elements, uint8_t* out) {
  if (ndim_ == 0) {  // a single element
    if (num_elements > 0) std::memcpy(out, data_, elem_size_);
    return;
  }
  const int inner = ndim_ - 1;
  while (num_elements > 0) {
    const int64_t run =
        std::min<int64_t>(sizes_[inner] - index_[inner], static_cast<int64_t>(num_elements));
    CopyRun(data_ + offset_, run, out);
    out += run * static_cast<int64_t>(elem_size_);
    num_elements -= static_cast<uint64_t>(run);
    index_[inner] += run;
    offset_ += run * strides_[inner];
    // Carry through the odometer: a finished dimension returns to 0 and bumps the next outer.
    for (int dim_idx = inner; dim_idx > 0 && index_[dim_idx] == sizes_[dim_idx]; --dim_idx) {
      offset_ -= sizes_[dim_idx] * strides_[dim_idx];
      index_[dim_idx] = 0;
      ++index_[dim_idx - 1];
      offset_ += strides_[dim_idx - 1];
    }
  }
}

void StridedReader::CopyRun(const uint8_t* src, int64_t count, uint8_t* out) const {
  const int64_t stride = strides_[ndim_ - 1];
  if (stride == static_cast<int64_t>(elem_size_)) {
    std::memcpy(out, src, static_cast<size_t>(count) * elem_size_);
    return;
  }
  switch (elem_size_) {
    case 1:
      if (stride == 0) {
        std::memset(out, *src, static_cast<size_t>(count));
      } else {
        CopyStrided<1>(src, stride, count, out);
      }
      return;
    case 2:
      return CopyStrided<2>(src, stride, count, out);
    case 4:
      return CopyStrided<4>(src, stride, count, out);
    case 8:
      return CopyStrided<8>(src, stride, count, out);
    default:
      return CopyStrided<16>(src, stride, count, out);
  }
}

}  // namespace upguard
