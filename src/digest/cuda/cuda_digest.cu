// The CUDA digest (cuda_digest.h). Two kernels per tensor, both on the tensor's stream:
//   ChunkKernel  eight threads per 64 KiB chunk (digest/portable/chunk_digest.h): each thread one
//                XXH3 accumulator and one statistics lane (v1) or four (v2, combined as the
//                first level of v2's tree); the chunk's first thread writes the canonical leaf
//                into the root message and the chunk's statistics.
//   RootKernel   one block of eight threads: the header before the leaves, XXH3-128 of the
//                message (lane by lane when it is long), the statistics folded in chunk order.
// The result (64 bytes) is copied into a pinned slot and an event recorded after it; Collect
// reads the slots whose events completed. Scratch memory is stream-ordered (cudaMallocAsync).
#include <cuda_runtime.h>

#include <deque>
#include <string>

#include "digest/cuda/cuda_digest.h"
#include "digest/portable/chunk_digest.h"
#include "digest/root.h"

namespace upguard::cuda {
namespace {

using portable::ChunkSummary;
using portable::LaneStats;

constexpr int kChunksPerBlock = 16;
constexpr int kLanes = 8;

struct Header {  // by value: no copy from the host to enqueue
  uint8_t bytes[kMaxDigestHeaderBytes];
  uint32_t length;
};

struct Result {
  uint64_t low, high;
  ChunkSummary total;
};

Status CudaError(const char* what, cudaError_t error) {
  return Internal(std::string("CUDA digest: ") + what + ": " + cudaGetErrorString(error));
}

#define UPGUARD_CUDA_RETURN_IF_ERROR(what, call)               \
  do {                                                         \
    const cudaError_t error_ = (call);                         \
    if (error_ != cudaSuccess) return CudaError(what, error_); \
  } while (0)

__global__ void ChunkKernel(const uint8_t* data, uint64_t byte_length, uint64_t chunk_count,
                            DType dtype, int stats_version, uint8_t* leaves,
                            ChunkSummary* summaries) {
  __shared__ uint64_t acc[kChunksPerBlock][kLanes];
  __shared__ LaneStats lanes[kChunksPerBlock][kLanes];
  const int local = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
  const uint64_t chunk = uint64_t(blockIdx.x) * kChunksPerBlock + local;
  const bool active = chunk < chunk_count;
  const uint8_t* bytes = data + chunk * kDigestChunkBytes;
  const size_t size = !active ? 0
                              : size_t(byte_length - chunk * kDigestChunkBytes < kDigestChunkBytes
                                           ? byte_length - chunk * kDigestChunkBytes
                                           : kDigestChunkBytes);
  if (active) {
    portable::ChunkLane(dtype, bytes, size, stats_version, lane, &acc[local][lane],
                        &lanes[local][lane]);
  }
  __syncthreads();
  if (!active || lane != 0) return;
  uint64_t chunk_acc[kLanes];
  LaneStats chunk_lanes[kLanes];
  for (int idx = 0; idx < kLanes; ++idx) {
    chunk_acc[idx] = acc[local][idx];
    chunk_lanes[idx] = lanes[local][idx];
  }
  ChunkSummary summary;
  const bool stats = stats_version != 0;
  portable::ChunkFinish(bytes, size, chunk_acc, chunk_lanes, stats, leaves + 16 * chunk, &summary);
  if (stats) summaries[chunk] = summary;
}

__global__ void RootKernel(Header header, uint8_t* message, uint64_t chunk_count, bool stats,
                           const ChunkSummary* summaries, Result* result) {
  __shared__ uint64_t acc[kLanes];
  const int lane = threadIdx.x;
  for (uint32_t idx = lane; idx < header.length; idx += kLanes) message[idx] = header.bytes[idx];
  __syncthreads();
  const size_t length = header.length + 16 * chunk_count;
  if (length >= portable::kLongHashBytes) {
    acc[lane] = portable::Xxh3LongLane(message, length, lane);
  }
  __syncthreads();
  if (lane != 0) return;
  Result out;
  if (length >= portable::kLongHashBytes) {
    uint64_t all[kLanes];
    for (int idx = 0; idx < kLanes; ++idx) all[idx] = acc[idx];
    portable::Xxh3LongFinish(all, length, &out.low, &out.high);
  } else {
    portable::Xxh3_128(message, length, &out.low, &out.high);
  }
  out.total = ChunkSummary{};
  if (stats) {
    for (uint64_t chunk = 0; chunk < chunk_count; ++chunk) {
      portable::FoldChunk(summaries[chunk], &out.total);
    }
  }
  *result = out;
}

TensorDigest ToDigest(const Result& result, bool stats) {
  TensorDigest out;
  out.digest = Digest128{result.high, result.low};
  out.has_stats = stats;
  if (stats) out.stats = portable::FinishStats(result.total);
  return out;
}

}  // namespace

bool DeviceAvailable() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

struct Digester::Impl {
  struct Pending {
    uint64_t ticket;
    size_t slot;
    bool stats;
    cudaEvent_t done;
  };
  bool stats = true;
  int stats_version = 2;
  Result* slots = nullptr;  // pinned, kMaxPending of them
  std::deque<Pending> pending;
  std::vector<cudaEvent_t> free_events;
  uint64_t next_ticket = 0;

  ~Impl() {
    for (const Pending& p : pending) {
      cudaEventSynchronize(p.done);
      cudaEventDestroy(p.done);
    }
    for (cudaEvent_t event : free_events) cudaEventDestroy(event);
    if (slots != nullptr) cudaFreeHost(slots);
  }
};

Digester::Digester(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Digester::~Digester() = default;

StatusOr<std::unique_ptr<Digester>> Digester::Create(bool stats, int stats_version) {
  if (stats_version != 1 && stats_version != 2) {
    return InvalidArgument("CUDA digest: stats_version is " + std::to_string(stats_version) +
                           "; use 1 or 2 (docs/formats/digest.md §6.1)");
  }
  if (!DeviceAvailable()) {
    return FailedPrecondition("CUDA digest: no CUDA device is usable here (cudaGetDeviceCount)");
  }
  auto impl = std::make_unique<Impl>();
  impl->stats = stats;
  impl->stats_version = stats_version;
  UPGUARD_CUDA_RETURN_IF_ERROR("cudaMallocHost",
                               cudaMallocHost(&impl->slots, sizeof(Result) * kMaxPending));
  return std::unique_ptr<Digester>(new Digester(std::move(impl)));
}

StatusOr<uint64_t> Digester::Enqueue(const DeviceTensor& tensor, void* stream_ptr) {
  const int ndim = static_cast<int>(tensor.sizes.size());
  ASSIGN_OR_RETURN(TensorLayout layout,
                   CheckShape("CUDA digest", tensor.dtype, tensor.sizes.data(), ndim));
  if (layout.byte_length > 0 && tensor.data == nullptr) {
    return InvalidArgument("CUDA digest: data is null for a tensor of " +
                           std::to_string(layout.numel) + " elements");
  }
  if (impl_->pending.size() == kMaxPending) {  // the oldest slot is needed again
    RETURN_IF_ERROR(Collect(false).status());
    if (impl_->pending.size() == kMaxPending) {
      UPGUARD_CUDA_RETURN_IF_ERROR("cudaEventSynchronize",
                                   cudaEventSynchronize(impl_->pending.front().done));
    }
  }
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  const bool stats = impl_->stats && DTypeIsFloating(tensor.dtype);
  Header header;
  header.length = static_cast<uint32_t>(
      WriteDigestHeader(tensor.dtype, tensor.sizes.data(), ndim, layout, header.bytes));
  const size_t message_bytes = header.length + 16 * layout.chunk_count;
  const size_t summary_offset = (message_bytes + 15) / 16 * 16;
  const size_t result_offset = summary_offset + sizeof(ChunkSummary) * layout.chunk_count;
  uint8_t* scratch = nullptr;
  UPGUARD_CUDA_RETURN_IF_ERROR(
      "cudaMallocAsync",
      cudaMallocAsync(reinterpret_cast<void**>(&scratch), result_offset + sizeof(Result), stream));
  auto* summaries = reinterpret_cast<ChunkSummary*>(scratch + summary_offset);
  auto* result = reinterpret_cast<Result*>(scratch + result_offset);
  if (layout.chunk_count > 0) {
    const unsigned blocks =
        static_cast<unsigned>((layout.chunk_count + kChunksPerBlock - 1) / kChunksPerBlock);
    ChunkKernel<<<blocks, kChunksPerBlock * kLanes, 0, stream>>>(
        static_cast<const uint8_t*>(tensor.data), layout.byte_length, layout.chunk_count,
        tensor.dtype, stats ? impl_->stats_version : 0, scratch + header.length, summaries);
  }
  RootKernel<<<1, kLanes, 0, stream>>>(header, scratch, layout.chunk_count, stats, summaries,
                                       result);
  UPGUARD_CUDA_RETURN_IF_ERROR("kernel launch", cudaGetLastError());
  const uint64_t ticket = impl_->next_ticket++;
  const size_t slot = ticket % kMaxPending;
  UPGUARD_CUDA_RETURN_IF_ERROR(
      "cudaMemcpyAsync",
      cudaMemcpyAsync(&impl_->slots[slot], result, sizeof(Result), cudaMemcpyDeviceToHost, stream));
  UPGUARD_CUDA_RETURN_IF_ERROR("cudaFreeAsync", cudaFreeAsync(scratch, stream));
  cudaEvent_t done;
  if (!impl_->free_events.empty()) {
    done = impl_->free_events.back();
    impl_->free_events.pop_back();
  } else {
    UPGUARD_CUDA_RETURN_IF_ERROR("cudaEventCreate",
                                 cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  }
  UPGUARD_CUDA_RETURN_IF_ERROR("cudaEventRecord", cudaEventRecord(done, stream));
  impl_->pending.push_back({ticket, slot, stats, done});
  return ticket;
}

StatusOr<std::vector<std::pair<uint64_t, TensorDigest>>> Digester::Collect(bool wait) {
  std::vector<std::pair<uint64_t, TensorDigest>> out;
  while (!impl_->pending.empty()) {
    const Impl::Pending& front = impl_->pending.front();
    const cudaError_t state = wait ? cudaEventSynchronize(front.done) : cudaEventQuery(front.done);
    if (state == cudaErrorNotReady) break;
    if (state != cudaSuccess) return CudaError("waiting for a digest", state);
    out.emplace_back(front.ticket, ToDigest(impl_->slots[front.slot], front.stats));
    impl_->free_events.push_back(front.done);
    impl_->pending.pop_front();
  }
  return out;
}

}  // namespace upguard::cuda
