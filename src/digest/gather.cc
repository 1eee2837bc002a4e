#include "digest/gather.h"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace upguard {
namespace {

constexpr int64_t kTileBytes = 128;  // of one column of a transposed tile

// Copies `count` elements of N bytes spaced `stride` bytes apart. Fixed N lets the compiler turn
// each memcpy into one load and one store.
template <size_t N>
void CopyStrided(const uint8_t* src, int64_t stride, int64_t count, uint8_t* out) {
  for (int64_t elem_idx = 0; elem_idx < count; ++elem_idx) {
    std::memcpy(out + elem_idx * N, src + elem_idx * stride, N);
  }
}

// Copies `rows` (at most kTileBytes / N) rows of `row` elements each, where element j of row t
// is at src + t * N + j * stride: all rows together, a block of kTileBytes / N columns at a
// time, so that each source cache line (and page) is visited once for every row it holds, where
// a row-by-row gather would fetch it once per row. A block goes through a small tile: reading a
// column fills the tile's column, then each tile row is one kTileBytes store to its output row.
// (Writing each column straight to the output would touch `rows` lines a power of two apart,
// which share a cache set.) Two cache lines per column rather than one halve the page visits,
// which dominate for large tensors (measured: about 1.35x at 64 MiB).
template <size_t N, bool kFull>
inline void CopyBlock(const uint8_t* src, int64_t stride, int64_t width, int64_t rows,
                      uint8_t (*tile)[kTileBytes], uint8_t* out, int64_t row) {
  constexpr int64_t kBlock = kTileBytes / N;
  if constexpr (kFull) width = rows = kBlock;  // constant trip counts: unrolled copies
  for (int64_t col_idx = 0; col_idx < width; ++col_idx) {
    const uint8_t* column = src + col_idx * stride;
    for (int64_t row_idx = 0; row_idx < rows; ++row_idx) {
      std::memcpy(&tile[row_idx][col_idx * N], column + row_idx * N, N);
    }
  }
  for (int64_t row_idx = 0; row_idx < rows; ++row_idx) {
    std::memcpy(out + row_idx * row * static_cast<int64_t>(N), tile[row_idx],
                static_cast<size_t>(width) * N);
  }
}

#if defined(__SSE2__)
// Full blocks of 4- and 2-byte elements, transposed in registers: a sub-block of as many
// elements a side as a 16-byte register holds (4x4, 8x8) is loaded as rows of one column each,
// turned by unpacks into columns of one row each, and stored into the tile. The same bytes as
// CopyBlock's element loop, 1.4-3x its speed (upguard_digest_benchmark, transposed cases).
inline void TransposeInRegisters(__m128i (&v)[4]) {
  const __m128i a0 = _mm_unpacklo_epi32(v[0], v[1]), a1 = _mm_unpackhi_epi32(v[0], v[1]);
  const __m128i a2 = _mm_unpacklo_epi32(v[2], v[3]), a3 = _mm_unpackhi_epi32(v[2], v[3]);
  v[0] = _mm_unpacklo_epi64(a0, a2);
  v[1] = _mm_unpackhi_epi64(a0, a2);
  v[2] = _mm_unpacklo_epi64(a1, a3);
  v[3] = _mm_unpackhi_epi64(a1, a3);
}

inline void TransposeInRegisters(__m128i (&v)[8]) {
  __m128i a[8], b[8];
  for (int k = 0; k < 4; ++k) {  // a[2k], a[2k+1]: columns 2k and 2k+1 interleaved
    a[2 * k] = _mm_unpacklo_epi16(v[2 * k], v[2 * k + 1]);
    a[2 * k + 1] = _mm_unpackhi_epi16(v[2 * k], v[2 * k + 1]);
  }
  for (int k = 0; k < 2; ++k) {  // b[4k + j]: rows 2j and 2j+1 of columns 4k to 4k+3
    b[4 * k] = _mm_unpacklo_epi32(a[4 * k], a[4 * k + 2]);
    b[4 * k + 1] = _mm_unpackhi_epi32(a[4 * k], a[4 * k + 2]);
    b[4 * k + 2] = _mm_unpacklo_epi32(a[4 * k + 1], a[4 * k + 3]);
    b[4 * k + 3] = _mm_unpackhi_epi32(a[4 * k + 1], a[4 * k + 3]);
  }
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = _mm_unpacklo_epi64(b[j], b[j + 4]);
    v[2 * j + 1] = _mm_unpackhi_epi64(b[j], b[j + 4]);
  }
}

template <size_t N>
void TransposeIntoTile(const uint8_t* src, int64_t stride, uint8_t (*tile)[kTileBytes]) {
  constexpr int64_t kBlock = kTileBytes / N;
  constexpr int kSide = 16 / N;  // elements a register holds
  for (int64_t col_idx = 0; col_idx < kBlock; col_idx += kSide) {
    const uint8_t* column = src + col_idx * stride;
    for (int64_t row_idx = 0; row_idx < kBlock; row_idx += kSide) {
      __m128i v[kSide];  // v[k]: rows row_idx.. of column col_idx + k, then the reverse
      for (int k = 0; k < kSide; ++k) {
        v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(column + k * stride + row_idx * N));
      }
      TransposeInRegisters(v);
      for (int k = 0; k < kSide; ++k) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(&tile[row_idx + k][col_idx * N]), v[k]);
      }
    }
  }
}
#endif

template <size_t N>
void CopyTransposed(const uint8_t* src, int64_t stride, int64_t row, int64_t rows, uint8_t* out) {
  constexpr int64_t kBlock = kTileBytes / N;  // columns per block
  uint8_t tile[kBlock][kTileBytes];           // [row][column bytes]
  for (int64_t block_begin = 0; block_begin < row; block_begin += kBlock) {
    const int64_t width = std::min(kBlock, row - block_begin);
    const uint8_t* block_src = src + block_begin * stride;
    uint8_t* block_out = out + block_begin * static_cast<int64_t>(N);
    if (width == kBlock && rows == kBlock) {
#if defined(__SSE2__)
      if constexpr (N == 4 || N == 2) {
        TransposeIntoTile<N>(block_src, stride, tile);
        for (int64_t row_idx = 0; row_idx < kBlock; ++row_idx) {
          std::memcpy(block_out + row_idx * row * static_cast<int64_t>(N), tile[row_idx],
                      kTileBytes);
        }
        continue;
      }
#endif
      CopyBlock<N, true>(block_src, stride, width, rows, tile, block_out, row);
    } else {
      CopyBlock<N, false>(block_src, stride, width, rows, tile, block_out, row);
    }
  }
}

// Copies `rows` rows of `row_bytes` bytes each, `stride` bytes apart, back to back into `out`.
// Rows of a common power-of-two size are copied with a fixed-size memcpy (inline moves, no
// call): a head of 16 float32 is a 64-byte row, 1,024 of them to a 64 KiB chunk.
template <int64_t kRowBytes>
void CopyFixedRows(const uint8_t* src, int64_t stride, int64_t rows, uint8_t* out) {
  for (int64_t row_idx = 0; row_idx < rows; ++row_idx) {
    std::memcpy(out + row_idx * kRowBytes, src + row_idx * stride, kRowBytes);
  }
}

void CopyRows(const uint8_t* src, int64_t stride, int64_t row_bytes, int64_t rows, uint8_t* out) {
  switch (row_bytes) {
    case 16:
      return CopyFixedRows<16>(src, stride, rows, out);
    case 32:
      return CopyFixedRows<32>(src, stride, rows, out);
    case 64:
      return CopyFixedRows<64>(src, stride, rows, out);
    case 128:
      return CopyFixedRows<128>(src, stride, rows, out);
    case 256:
      return CopyFixedRows<256>(src, stride, rows, out);
    default:
      for (int64_t row_idx = 0; row_idx < rows; ++row_idx) {
        std::memcpy(out + row_idx * row_bytes, src + row_idx * stride,
                    static_cast<size_t>(row_bytes));
      }
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
  const auto elem_size = static_cast<int64_t>(elem_size_);
  const int64_t row = sizes_[inner];
  // A transposed pair of innermost dimensions: rows are strided, but the next row's element
  // sits right after this row's.
  const bool transposed = ndim_ >= 2 && strides_[inner - 1] == elem_size &&
                          strides_[inner] != elem_size && strides_[inner] != 0;
  // Rows contiguous inside (a slice, or heads split off a wider row), apart from each other.
  const bool rows_contiguous = ndim_ >= 2 && strides_[inner] == elem_size;
  while (num_elements > 0) {
    // Whole rows from the start of one: a transposed tile, or contiguous rows, without the
    // odometer between them.
    if ((transposed || rows_contiguous) && index_[inner] == 0) {
      const int64_t rows = std::min({transposed ? kTileBytes / elem_size : sizes_[inner - 1],
                                     sizes_[inner - 1] - index_[inner - 1],
                                     static_cast<int64_t>(num_elements) / row});
      if (rows >= 2) {
        if (transposed) {
          CopyTile(data_ + offset_, rows, out);
        } else {
          CopyRows(data_ + offset_, strides_[inner - 1], row * elem_size, rows, out);
        }
        out += rows * row * elem_size;
        num_elements -= static_cast<uint64_t>(rows * row);
        index_[inner - 1] += rows;
        offset_ += rows * strides_[inner - 1];
        Carry(inner - 1);
        continue;
      }
    }
    const int64_t run = std::min<int64_t>(row - index_[inner], static_cast<int64_t>(num_elements));
    CopyRun(data_ + offset_, run, out);
    out += run * elem_size;
    num_elements -= static_cast<uint64_t>(run);
    index_[inner] += run;
    offset_ += run * strides_[inner];
    Carry(inner);
  }
}

void StridedReader::Carry(int dim_idx) {
  // A finished dimension returns to 0 and bumps the next outer one.
  for (; dim_idx > 0 && index_[dim_idx] == sizes_[dim_idx]; --dim_idx) {
    offset_ -= sizes_[dim_idx] * strides_[dim_idx];
    index_[dim_idx] = 0;
    ++index_[dim_idx - 1];
    offset_ += strides_[dim_idx - 1];
  }
}

void StridedReader::CopyTile(const uint8_t* src, int64_t rows, uint8_t* out) const {
  switch (elem_size_) {
    case 1:
      return CopyTransposed<1>(src, strides_[ndim_ - 1], sizes_[ndim_ - 1], rows, out);
    case 2:
      return CopyTransposed<2>(src, strides_[ndim_ - 1], sizes_[ndim_ - 1], rows, out);
    case 4:
      return CopyTransposed<4>(src, strides_[ndim_ - 1], sizes_[ndim_ - 1], rows, out);
    case 8:
      return CopyTransposed<8>(src, strides_[ndim_ - 1], sizes_[ndim_ - 1], rows, out);
    default:
      return CopyTransposed<16>(src, strides_[ndim_ - 1], sizes_[ndim_ - 1], rows, out);
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
