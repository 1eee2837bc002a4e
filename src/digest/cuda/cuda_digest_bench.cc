// The CUDA digest on a GPU (scripts/gpu-check.sh runs it): throughput against a device-to-device
// copy of the same bytes, and the host time an Enqueue costs (what a recorded op pays).
//
//   build/gpu/src/digest/upguard_cuda_digest_bench
//
// Prints one line per case: "<case> <value> <unit> [<ratio>x copy]". Exits 2 without a GPU.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "digest/cuda/cuda_digest.h"

namespace upguard::cuda {
namespace {

double CopySeconds(void* to, const void* from, size_t bytes, int repeats) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start);
  for (int idx = 0; idx < repeats; ++idx)
    cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms / 1e3 / repeats;
}

double DigestSeconds(Digester& digester, const DeviceTensor& tensor, int repeats) {
  (void)digester.Enqueue(tensor, nullptr);  // warm up
  (void)digester.Collect(true);
  const auto start = std::chrono::steady_clock::now();
  for (int idx = 0; idx < repeats; ++idx) (void)digester.Enqueue(tensor, nullptr);
  (void)digester.Collect(true);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

int Main() {
  if (!DeviceAvailable()) {
    std::fprintf(stderr, "upguard_cuda_digest_bench: no CUDA device\n");
    return 2;
  }
  auto digester = Digester::Create(/*stats=*/true);
  if (!digester.ok()) return 2;
  const size_t bytes = size_t{256} << 20;
  void *a = nullptr, *b = nullptr;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  std::vector<uint8_t> host(bytes);
  for (size_t idx = 0; idx < bytes; ++idx)
    host[idx] = static_cast<uint8_t>((idx * 2654435761u) >> 13) & 0x3f;
  cudaMemcpy(a, host.data(), bytes, cudaMemcpyHostToDevice);
  // A copy reads and writes each byte: its bytes per second count the read side only, as a
  // digest reads each byte once.
  const double copy = CopySeconds(b, a, bytes, 20);
  std::printf("copy_d2d_256MiB %.1f GB/s\n", bytes / copy / 1e9);
  for (DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    const int64_t numel = static_cast<int64_t>(bytes / DTypeSize(dtype));
    const double seconds = DigestSeconds(**digester, {dtype, {numel}, a}, 10);
    std::printf("digest_%s_256MiB %.1f GB/s %.2fx copy\n", std::string(DTypeName(dtype)).c_str(),
                bytes / seconds / 1e9, copy / seconds);
  }
  // Host cost of enqueueing a small tensor's digest (no wait), per call.
  const int calls = 2000;
  const auto start = std::chrono::steady_clock::now();
  for (int idx = 0; idx < calls; ++idx) {
    (void)(*digester)->Enqueue({DType::kFloat32, {1024}, a}, nullptr);
    if (idx % 512 == 511) (void)(*digester)->Collect(false);
  }
  const double per_call =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls;
  (void)(*digester)->Collect(true);
  std::printf("enqueue_host_cost_4KiB %.2f us\n", per_call * 1e6);
  cudaFree(a);
  cudaFree(b);
  return 0;
}

}  // namespace
}  // namespace upguard::cuda

int main() { return upguard::cuda::Main(); }
