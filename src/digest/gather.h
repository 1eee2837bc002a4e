// Reads a strided tensor's elements in row-major order into a contiguous buffer, a bounded
// number at a time, so that the digest can hash a strided tensor one 64 KiB chunk at a time
// without ever materializing a contiguous copy.
//
//   StridedReader reader(data, /*elem_size=*/4, sizes, strides, ndim);
//   if (reader.contiguous()) { /* hash data in place */ }
//   reader.Seek(first_element);                 // a worker starting mid-tensor
//   reader.Read(kDigestChunkBytes / 4, buffer);  // the next 16Ki elements, row-major
//
// Algorithm: the layout is first simplified — size-1 dimensions are dropped and each pair of
// adjacent dimensions that walks memory like one dimension (outer stride == inner stride *
// inner size) is merged, so a slice of a contiguous tensor becomes one row per outer index and a
// contiguous tensor becomes one dimension. Reading then walks an index odometer over the
// remaining dimensions; along the innermost one it copies a whole run at once: memcpy when the
// run is contiguous, a fixed-size element loop otherwise (zero stride repeats one element).
// When the two innermost dimensions are transposed (the outer of the pair has the element size
// as its stride, as in x.t() or x.transpose(-1, -2) of a contiguous tensor) and the read spans
// several whole rows, those rows are copied together column by column (CopyTile): each source
// cache line then serves every row it holds, where a row-by-row gather would fetch it once per
// row, a cache miss (and often a TLB miss) per element.
// Full blocks of 4- and 2-byte elements are turned in SSE2 registers, 4x4 or 8x8 at a time.
// Rows that are contiguous inside but apart (heads split off a wider row) are copied whole
// rows at a time (CopyRows), without the odometer between them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "digest/digest.h"

namespace upguard {

class StridedReader {
 public:
  // Preconditions: 0 <= ndim <= kMaxDigestDims, sizes >= 0 and strides >= 0 (in elements),
  // elem_size in {1, 2, 4, 8, 16}, and every addressed element readable.
  StridedReader(const void* data, size_t elem_size, const int64_t* sizes, const int64_t* strides,
                int ndim);

  // True when the row-major elements lie back to back from `data`: read them in place.
  bool contiguous() const { return contiguous_; }

  // Positions the reader at row-major element `element_idx` (0 <= element_idx <= numel).
  void Seek(uint64_t element_idx);

  // Copies the next `num_elements` row-major elements to `out` and advances.
  // Precondition: at least that many elements remain.
  void Read(uint64_t num_elements, uint8_t* out);

 private:
  void CopyRun(const uint8_t* src, int64_t count, uint8_t* out) const;
  // The next `rows` whole rows of a transposed innermost pair, from src (row start, index 0).
  void CopyTile(const uint8_t* src, int64_t rows, uint8_t* out) const;
  // Carries a dimension that reached its size into the outer ones.
  void Carry(int dim_idx);

  const uint8_t* data_;
  size_t elem_size_;
  bool contiguous_ = false;
  int ndim_ = 0;                     // after simplification; 0 means one element
  int64_t sizes_[kMaxDigestDims];    // simplified sizes, all >= 2
  int64_t strides_[kMaxDigestDims];  // simplified strides in bytes
  int64_t index_[kMaxDigestDims];    // current odometer position
  int64_t offset_ = 0;               // bytes from data_ to the current element
};

}  // namespace upguard
