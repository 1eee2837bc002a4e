#include "digest/root.h"

#include <cstring>
#include <string>

#if UPGUARD_HAVE_XXH_DISPATCH
#define XXH_DISPATCH_DISABLE_REPLACE  // name the dispatching functions explicitly
#include <xxh_x86dispatch.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#endif

namespace upguard {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "digest v1 hashes element bytes as stored; a big-endian host must byte-swap");

constexpr char kTag[4] = {'U', 'G', 'D', '1'};

#if UPGUARD_HAVE_XXH_DISPATCH && defined(__x86_64__)
__attribute__((target("avx"))) void ClearUpperVectorState() { _mm256_zeroupper(); }
#endif

void StoreU64Le(uint64_t value, uint8_t* out) {
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    out[byte_idx] = static_cast<uint8_t>(value >> (8 * byte_idx));
  }
}

}  // namespace

Digest128 HashChunk(const void* data, size_t size) {
#if UPGUARD_HAVE_XXH_DISPATCH
  const XXH128_hash_t hash = XXH3_128bits_dispatch(data, size);
#if defined(__x86_64__)
  // The AVX2 and AVX-512 paths return without vzeroupper. With the upper halves of the vector
  // registers left dirty, every legacy-SSE instruction after them (the rest of the digest, and
  // the caller's code) runs slower: a 4x slower SSE2 statistics kernel was measured.
  static const bool has_avx = __builtin_cpu_supports("avx");
  if (has_avx) ClearUpperVectorState();
#endif
#else
  const XXH128_hash_t hash = XXH3_128bits(data, size);
#endif
  return Digest128{hash.high64, hash.low64};
}

const char* HashChunkImplementation() {
#if UPGUARD_HAVE_XXH_DISPATCH
  return "XXH3_128bits_dispatch";
#else
  return "XXH3_128bits";
#endif
}

StatusOr<TensorLayout> CheckShape(const char* caller, DType dtype, const int64_t* sizes, int ndim) {
  // Messages are built only on failure: the success path must stay cheap for tiny tensors.
  auto fail = [caller](const std::string& what) {
    return InvalidArgument(std::string(caller) + ": " + what);
  };
  TensorLayout layout;
  layout.elem_size = DTypeSize(dtype);
  if (layout.elem_size == 0) {
    return fail("dtype code " + std::to_string(static_cast<int>(dtype)) +
                " is not a valid DType; set TensorView::dtype");
  }
  if (ndim < 0 || ndim > kMaxDigestDims) {
    return fail("ndim " + std::to_string(ndim) + " is outside [0, " +
                std::to_string(kMaxDigestDims) + "]");
  }
  if (ndim > 0 && sizes == nullptr)
    return fail("sizes is null but ndim is " + std::to_string(ndim));
  uint64_t numel = 1;
  bool overflow = false;
  bool empty = false;
  for (int dim_idx = 0; dim_idx < ndim; ++dim_idx) {
    if (sizes[dim_idx] < 0) {
      return fail("size of dim " + std::to_string(dim_idx) + " is " +
                  std::to_string(sizes[dim_idx]) + "; sizes must be >= 0");
    }
    empty |= sizes[dim_idx] == 0;
    overflow |= __builtin_mul_overflow(numel, static_cast<uint64_t>(sizes[dim_idx]), &numel);
  }
  if (empty) {  // a zero size makes numel 0 whatever the others are
    numel = 0;
    overflow = false;
  }
  uint64_t byte_length = 0;
  if (overflow || __builtin_mul_overflow(numel, layout.elem_size, &byte_length) ||
      byte_length >= (uint64_t{1} << 63)) {
    return fail("the tensor's byte length overflows 2^63; check sizes");
  }
  layout.numel = numel;
  layout.byte_length = byte_length;
  layout.chunk_count = (byte_length + kDigestChunkBytes - 1) / kDigestChunkBytes;
  return layout;
}

size_t WriteDigestHeader(DType dtype, const int64_t* sizes, int ndim, const TensorLayout& layout,
                         uint8_t* out) {
  uint8_t* const start = out;
  std::memcpy(out, kTag, 4);
  out[4] = static_cast<uint8_t>(dtype);
  out[5] = static_cast<uint8_t>(ndim);
  out[6] = out[7] = 0;
  out += 8;
  for (int dim_idx = 0; dim_idx < ndim; ++dim_idx, out += 8) {
    StoreU64Le(static_cast<uint64_t>(sizes[dim_idx]), out);
  }
  StoreU64Le(layout.byte_length, out);
  StoreU64Le(layout.chunk_count, out + 8);
  return static_cast<size_t>(out + 16 - start);
}

RootHasher::RootHasher(DType dtype, const int64_t* sizes, int ndim, const TensorLayout& layout) {
  static_assert(sizeof(buffer_) >= kMaxDigestHeaderBytes, "the header must fit the buffer");
  buffered_ = WriteDigestHeader(dtype, sizes, ndim, layout, buffer_);
}

void RootHasher::AddLeaf(const Digest128& leaf) {
  if (!streaming_ && buffered_ + 16 <= sizeof(buffer_)) {
    leaf.ToCanonical(buffer_ + buffered_);
    buffered_ += 16;
    return;
  }
  uint8_t canonical[16];
  leaf.ToCanonical(canonical);
  Update(canonical, sizeof(canonical));
}

void RootHasher::Update(const void* bytes, size_t size) {
  if (!streaming_) {
    if (buffered_ + size <= sizeof(buffer_)) {
      std::memcpy(buffer_ + buffered_, bytes, size);
      buffered_ += size;
      return;
    }
    XXH3_128bits_reset(&state_);
    XXH3_128bits_update(&state_, buffer_, buffered_);
    streaming_ = true;
  }
  XXH3_128bits_update(&state_, bytes, size);
}

Digest128 RootHasher::Finish() {
  const XXH128_hash_t hash =
      streaming_ ? XXH3_128bits_digest(&state_) : XXH3_128bits(buffer_, buffered_);
  return Digest128{hash.high64, hash.low64};
}

}  // namespace upguard
