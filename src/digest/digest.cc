// DigestTensor: walks the logical byte stream one 64 KiB chunk at a time. Each chunk is hashed
// to a leaf and, for floating dtypes, summarized into ChunkStats while it is hot in cache.
//
// Contiguous tensors are hashed in place; strided ones are gathered chunk by chunk into a
// per-thread 64 KiB buffer. One thread streams leaves straight into the root hasher (nothing is
// stored); several threads each take a contiguous run of chunks, store their leaves and
// partials by chunk index, and the caller folds them in chunk order, which is what makes the
// digest and the statistics independent of the thread count.
#include "digest/digest.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "digest/gather.h"
#include "digest/root.h"
#include "digest/stats.h"

namespace upguard {
namespace {

// Below this many chunks (2 MiB) per worker, starting a thread costs more than it saves:
// std::thread start and join take 20-60 us here, about what one core needs to digest 1 MiB of
// float32 with statistics (digest_benchmark: 2 threads on 1 MiB ran 2x slower than 1).
constexpr uint64_t kMinChunksPerWorker = 32;

// Everything a worker needs to produce the leaves and partials of a range of chunks.
struct ChunkSource {
  DType dtype;
  TensorLayout layout;
  const uint8_t* data;  // the contiguous bytes; unused when gathering
  bool stats;
  int stats_version;  // 1 or 2 (digest.md §6.1)
};

// A strided tensor is gathered a batch of chunks at a time, which lets a transposed gather use
// each cache line for up to 32 rows of float32 (StridedReader); 8 chunks (512 KiB per thread)
// measured 1.35x faster than 4 for large transposed tensors. Statistics of the batch's chunks
// come first, then their leaves, hashed while the batch is still in the L2 cache.
constexpr uint64_t kBatchChunks = 8;

uint8_t* ThreadGatherBuffer() {
  thread_local std::unique_ptr<uint8_t[]> buffer;
  if (!buffer) buffer.reset(new uint8_t[kBatchChunks * kDigestChunkBytes]);
  return buffer.get();
}

// Calls sink(chunk_idx, leaf, chunk_stats) for chunks [begin, end) in order, reading them in
// place one at a time. The statistics of each prefetch the next, so that fetching it from
// memory overlaps this chunk's statistics and hash (1.35x faster at 64 MiB than summing and
// hashing a batch of chunks without prefetches, measured).
template <typename Sink>
void ProcessContiguousChunks(const ChunkSource& source, uint64_t begin, uint64_t end, Sink sink) {
  const uint64_t byte_end = std::min(end * kDigestChunkBytes, source.layout.byte_length);
  for (uint64_t chunk_idx = begin; chunk_idx < end; ++chunk_idx) {
    const uint64_t offset = chunk_idx * kDigestChunkBytes;
    const auto size = static_cast<size_t>(std::min(byte_end - offset, uint64_t{kDigestChunkBytes}));
    const uint8_t* bytes = source.data + offset;
    ChunkStats chunk_stats;
    if (source.stats) {
      const auto next_bytes =
          static_cast<size_t>(std::min<uint64_t>(kDigestChunkBytes, byte_end - (offset + size)));
      chunk_stats = ComputeChunkStats(source.dtype, bytes, size, source.stats_version, bytes + size,
                                      next_bytes);
    }
    sink(chunk_idx, HashChunk(bytes, size), chunk_stats);
  }
}

// The same for a strided tensor, gathered through `reader` (moved to `begin` first) a batch of
// chunks at a time into this thread's buffer.
template <typename Sink>
void ProcessGatheredChunks(const ChunkSource& source, StridedReader* reader, uint64_t begin,
                           uint64_t end, Sink sink) {
  const size_t elem_size = source.layout.elem_size;
  const uint64_t byte_end = std::min(end * kDigestChunkBytes, source.layout.byte_length);
  reader->Seek(begin * (kDigestChunkBytes / elem_size));
  uint8_t* buffer = ThreadGatherBuffer();
  ChunkStats batch_stats[kBatchChunks];
  for (uint64_t batch_begin = begin; batch_begin < end; batch_begin += kBatchChunks) {
    const uint64_t offset = batch_begin * kDigestChunkBytes;
    const auto size = static_cast<size_t>(
        std::min(byte_end, (batch_begin + kBatchChunks) * kDigestChunkBytes) - offset);
    reader->Read(size / elem_size, buffer);
    for (size_t chunk_offset = 0; source.stats && chunk_offset < size;
         chunk_offset += kDigestChunkBytes) {
      batch_stats[chunk_offset / kDigestChunkBytes] =
          ComputeChunkStats(source.dtype, buffer + chunk_offset,
                            std::min(kDigestChunkBytes, size - chunk_offset), source.stats_version);
    }
    for (size_t chunk_offset = 0; chunk_offset < size; chunk_offset += kDigestChunkBytes) {
      const size_t batch_idx = chunk_offset / kDigestChunkBytes;
      sink(batch_begin + batch_idx,
           HashChunk(buffer + chunk_offset, std::min(kDigestChunkBytes, size - chunk_offset)),
           batch_stats[batch_idx]);
    }
  }
}

// Either of the above: gathered with a reader, in place without one.
template <typename Sink>
void ProcessChunks(const ChunkSource& source, StridedReader* reader, uint64_t begin, uint64_t end,
                   Sink sink) {
  if (reader == nullptr) return ProcessContiguousChunks(source, begin, end, sink);
  ProcessGatheredChunks(source, reader, begin, end, sink);
}

Status CheckView(const TensorView& view, const TensorLayout& layout) {
  if (view.ndim > 0 && view.strides == nullptr) {
    return InvalidArgument("DigestTensor: strides is null but ndim is " +
                           std::to_string(view.ndim));
  }
  uint64_t last_offset = 0;  // bytes from data to the last element
  bool overflow = false;
  for (int dim_idx = 0; dim_idx < view.ndim; ++dim_idx) {
    const int64_t stride = view.strides[dim_idx];
    if (stride < 0) {
      return InvalidArgument("DigestTensor: stride of dim " + std::to_string(dim_idx) + " is " +
                             std::to_string(stride) +
                             "; negative strides are not supported (copy the tensor, or flip "
                             "it back, before digesting)");
    }
    if (layout.numel == 0) continue;
    uint64_t extent = 0;
    overflow |= __builtin_mul_overflow(static_cast<uint64_t>(stride),
                                       static_cast<uint64_t>(view.sizes[dim_idx] - 1), &extent);
    overflow |= __builtin_add_overflow(last_offset, extent, &last_offset);
  }
  overflow |= __builtin_mul_overflow(last_offset, layout.elem_size, &last_offset);
  if (overflow || last_offset >= (uint64_t{1} << 63)) {
    return InvalidArgument("DigestTensor: the strides address more than 2^63 bytes; check them");
  }
  if (layout.numel > 0 && view.data == nullptr) {
    return InvalidArgument("DigestTensor: data is null for a tensor with " +
                           std::to_string(layout.numel) + " elements");
  }
  return Status::Ok();
}

// Splits the chunks into `workers` contiguous runs, one per thread (the caller's thread takes
// the first), stores leaves and partials by chunk index, then folds them in chunk order.
void ProcessChunksInParallel(const ChunkSource& source, const StridedReader* reader,
                             uint64_t workers, RootHasher* root, StatsAccumulator* stats) {
  const uint64_t chunk_count = source.layout.chunk_count;
  std::vector<Digest128> leaves(chunk_count);
  std::vector<ChunkStats> partials(source.stats ? chunk_count : 0);
  auto run_worker = [&](uint64_t worker_idx) {
    std::optional<StridedReader> own_reader;  // each worker walks its own odometer
    if (reader != nullptr) own_reader.emplace(*reader);
    ProcessChunks(source, own_reader ? &*own_reader : nullptr, chunk_count * worker_idx / workers,
                  chunk_count * (worker_idx + 1) / workers,
                  [&](uint64_t chunk_idx, const Digest128& leaf, const ChunkStats& chunk_stats) {
                    leaves[chunk_idx] = leaf;
                    if (source.stats) partials[chunk_idx] = chunk_stats;
                  });
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  for (uint64_t worker_idx = 1; worker_idx < workers; ++worker_idx) {
    try {
      threads.emplace_back(run_worker, worker_idx);
    } catch (const std::system_error&) {
      run_worker(worker_idx);  // no thread to spare: do this share here
    }
  }
  run_worker(0);
  for (std::thread& thread : threads) thread.join();
  for (const Digest128& leaf : leaves) root->AddLeaf(leaf);
  for (const ChunkStats& chunk_stats : partials) stats->Add(chunk_stats);
}

}  // namespace

void Digest128::ToCanonical(uint8_t out[16]) const {
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    out[byte_idx] = static_cast<uint8_t>(high >> (56 - 8 * byte_idx));
    out[8 + byte_idx] = static_cast<uint8_t>(low >> (56 - 8 * byte_idx));
  }
}

Digest128 Digest128::FromCanonical(const uint8_t in[16]) {
  Digest128 digest;
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    digest.high = (digest.high << 8) | in[byte_idx];
    digest.low = (digest.low << 8) | in[8 + byte_idx];
  }
  return digest;
}

std::string Digest128::Hex() const {
  char text[33];
  std::snprintf(text, sizeof(text), "%016llx%016llx", static_cast<unsigned long long>(high),
                static_cast<unsigned long long>(low));
  return text;
}

StatusOr<Digest128> ParseDigestHex(std::string_view hex) {
  if (hex.size() != 32) {
    return InvalidArgument("digest '" + std::string(hex) + "' is not 32 hex digits");
  }
  uint64_t words[2] = {0, 0};
  for (size_t char_idx = 0; char_idx < hex.size(); ++char_idx) {
    const char c = hex[char_idx];
    uint64_t nibble;
    if (c >= '0' && c <= '9') {
      nibble = static_cast<uint64_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      nibble = static_cast<uint64_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      nibble = static_cast<uint64_t>(c - 'A' + 10);
    } else {
      return InvalidArgument("digest '" + std::string(hex) + "' has a non-hex character at " +
                             std::to_string(char_idx));
    }
    uint64_t& word = words[char_idx / 16];
    word = (word << 4) | nibble;
  }
  return Digest128{words[0], words[1]};
}

Digest128 DigestBytes(const void* data, size_t size) { return HashChunk(data, size); }

StatusOr<Digest128> DigestFromLeaves(DType dtype, const int64_t* sizes, int ndim,
                                     const Digest128* leaves, size_t num_leaves) {
  ASSIGN_OR_RETURN(const TensorLayout layout, CheckShape("DigestFromLeaves", dtype, sizes, ndim));
  if (num_leaves != layout.chunk_count) {
    return InvalidArgument("DigestFromLeaves: got " + std::to_string(num_leaves) +
                           " leaves but dtype and shape make " +
                           std::to_string(layout.chunk_count) + " chunks");
  }
  RootHasher root(dtype, sizes, ndim, layout);
  for (size_t leaf_idx = 0; leaf_idx < num_leaves; ++leaf_idx) root.AddLeaf(leaves[leaf_idx]);
  return root.Finish();
}

StatusOr<TensorDigest> DigestTensor(const TensorView& tensor, const DigestOptions& options) {
  ASSIGN_OR_RETURN(const TensorLayout layout,
                   CheckShape("DigestTensor", tensor.dtype, tensor.sizes, tensor.ndim));
  RETURN_IF_ERROR(CheckView(tensor, layout));
  if (options.threads < 1) {
    return InvalidArgument("DigestTensor: options.threads is " + std::to_string(options.threads) +
                           "; use 1 or more");
  }
  if (options.stats_version != kStatsVersionV1 && options.stats_version != kStatsVersionV2) {
    return InvalidArgument("DigestTensor: options.stats_version is " +
                           std::to_string(options.stats_version) +
                           "; use 1 or 2 (docs/formats/digest.md §6.1)");
  }
  const ChunkSource source{tensor.dtype, layout, static_cast<const uint8_t*>(tensor.data),
                           options.stats && DTypeIsFloating(tensor.dtype), options.stats_version};
  // Lives on the stack: a small tensor is digested without touching the heap.
  StridedReader layout_reader(tensor.data, layout.elem_size, tensor.sizes, tensor.strides,
                              tensor.ndim);
  StridedReader* reader = layout_reader.contiguous() ? nullptr : &layout_reader;

  TensorDigest result;
  result.has_stats = source.stats;
  RootHasher root(tensor.dtype, tensor.sizes, tensor.ndim, layout);
  StatsAccumulator stats;
  const uint64_t workers = std::min<uint64_t>(static_cast<uint64_t>(options.threads),
                                              layout.chunk_count / kMinChunksPerWorker);
  if (workers <= 1) {
    ProcessChunks(source, reader, 0, layout.chunk_count,
                  [&](uint64_t, const Digest128& leaf, const ChunkStats& chunk_stats) {
                    root.AddLeaf(leaf);
                    if (source.stats) stats.Add(chunk_stats);
                  });
  } else {
    ProcessChunksInParallel(source, reader, workers, &root, &stats);
  }
  result.digest = root.Finish();
  if (source.stats) result.stats = stats.Finish();
  return result;
}

}  // namespace upguard
