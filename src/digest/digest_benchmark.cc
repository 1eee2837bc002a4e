// Throughput of DigestTensor, side by side with a plain memory read of the same bytes.
//
//   ./upguard_digest_benchmark                       # 4 KiB .. 64 MiB, about a minute
//   UPGUARD_BENCH_LARGE=1 ./upguard_digest_benchmark # adds 256 MiB and 1 GiB
//   bench/digest_throughput.py BINARY                # the table with ratios and targets
//
// Names (parsed by bench/digest_throughput.py):
//   MemoryRead/bytes:<B>/threads:<T>                    the baseline
//   Digest/<f32|bf16|f16>/<contiguous|transposed>/<stats_v1|stats_v2|hash>/bytes:<B>/threads:<T>
//                                                     stats_vN: statistics of version N (§6.1)
//   DigestMasked/f32/contiguous/<stats_v1|stats_v2>/bytes:<B>/threads:1  a causal mask's scores
//                                                     (-Inf above the diagonal): the masked kernel
//   DigestTiny/<f32|bf16>/<stats_v2|hash>/numel:<N>     the fixed cost per recorded op
//
// The baseline sums the buffer as uint64 (AVX2 where the CPU has it, see SumWords) and splits
// it over threads exactly as DigestTensor does (same minimum share, fresh std::threads per
// call), so the ratio measures the digest's extra work, not the thread start-up both pay. Every
// benchmark reuses one buffer, so sizes up to the caches measure cache bandwidth and larger ones
// DRAM bandwidth, for both sides alike. "transposed" is a square-ish 2-D .t() view of the same
// bytes: the logical stream is the same length, read column by column.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "digest/digest.h"
#include "digest/root.h"
#include "digest/stats_fast.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace upguard {
namespace {

constexpr uint64_t kMaxDefaultBytes = uint64_t{64} << 20;
constexpr uint64_t kMaxLargeBytes = uint64_t{1} << 30;
// Below this many bytes per worker DigestTensor stays on one thread (32 chunks, digest.cc).
constexpr uint64_t kMinBytesPerWorker = 32 * kDigestChunkBytes;

// One buffer for every benchmark, filled once. Every 16-bit unit is a finite bfloat16 in
// [2^-8, 2^8) with a random sign, so the bytes are finite values as bfloat16, as float32 (the
// high half of each float32 is such a bfloat16) and as float16 (whose exponent field, bits
// 10-14, is then 14 to 16), with no zeros: the statistics take their common path, as on real
// activations.
const uint8_t* Buffer(uint64_t bytes) {
  static std::unique_ptr<uint16_t[]> buffer;
  static uint64_t size = 0;
  if (bytes > size) {
    const uint64_t units = bytes / 2;
    buffer.reset(new uint16_t[units]);
    uint64_t state = 0x9E3779B97F4A7C15u;
    for (uint64_t unit_idx = 0; unit_idx < units; ++unit_idx) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      const auto top = static_cast<uint32_t>(state >> 48);
      const uint32_t exponent = 119 + (top >> 7) % 16;  // 2^-8 .. 2^7
      buffer[unit_idx] = static_cast<uint16_t>((top & 0x8000) | (exponent << 7) | (top & 0x7F));
    }
    size = bytes;
  }
  return reinterpret_cast<const uint8_t*>(buffer.get());
}

// The baseline read: a sum of the buffer as uint64 with four independent accumulators. With
// AVX2 it runs 2x faster than the portable loop in the L2 cache (measured), and AVX-512 adds
// nothing, so the baseline is the AVX2 sum where the CPU has it: the read side uses the
// machine's vector width as the digest side does.
uint64_t SumWordsPortable(const uint64_t* words, uint64_t count) {
  uint64_t sum[4] = {0, 0, 0, 0};
  uint64_t word_idx = 0;
  for (; word_idx + 4 <= count; word_idx += 4) {
    for (int lane = 0; lane < 4; ++lane) sum[lane] += words[word_idx + lane];
  }
  for (; word_idx < count; ++word_idx) sum[0] += words[word_idx];
  return (sum[0] + sum[1]) + (sum[2] + sum[3]);
}

#if defined(__x86_64__)
// Ends with vzeroupper: GCC 12 emits none here, and the dirty upper state it left made the
// legacy-SSE code of later benchmarks in the process (the old digest) 4x slower (measured).
__attribute__((target("avx2"))) uint64_t SumWordsAvx2(const uint64_t* words, uint64_t count) {
  const auto* vectors = reinterpret_cast<const __m256i*>(words);
  __m256i sum0 = _mm256_setzero_si256(), sum1 = sum0, sum2 = sum0, sum3 = sum0;
  uint64_t vector_idx = 0;
  for (; vector_idx + 4 <= count / 4; vector_idx += 4) {
    sum0 = _mm256_add_epi64(sum0, _mm256_loadu_si256(vectors + vector_idx));
    sum1 = _mm256_add_epi64(sum1, _mm256_loadu_si256(vectors + vector_idx + 1));
    sum2 = _mm256_add_epi64(sum2, _mm256_loadu_si256(vectors + vector_idx + 2));
    sum3 = _mm256_add_epi64(sum3, _mm256_loadu_si256(vectors + vector_idx + 3));
  }
  uint64_t total[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(total),
                      _mm256_add_epi64(_mm256_add_epi64(sum0, sum1), _mm256_add_epi64(sum2, sum3)));
  _mm256_zeroupper();
  return total[0] + total[1] + total[2] + total[3] +
         SumWordsPortable(words + 4 * vector_idx, count - 4 * vector_idx);
}
#endif

bool ReadWithAvx2() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("avx2");
#else
  return false;
#endif
}

uint64_t SumWords(const uint64_t* words, uint64_t count) {
#if defined(__x86_64__)
  static const bool avx2 = ReadWithAvx2();
  if (avx2) return SumWordsAvx2(words, count);
#endif
  return SumWordsPortable(words, count);
}

void BM_MemoryRead(benchmark::State& state, uint64_t bytes, int threads) {
  const auto* words = reinterpret_cast<const uint64_t*>(Buffer(bytes));
  const uint64_t count = bytes / 8;
  const uint64_t workers =
      std::max<uint64_t>(1, std::min<uint64_t>(threads, bytes / kMinBytesPerWorker));
  std::vector<uint64_t> sums(workers);
  for (auto _ : state) {
    auto run_worker = [&](uint64_t worker_idx) {
      const uint64_t begin = count * worker_idx / workers;
      const uint64_t end = count * (worker_idx + 1) / workers;
      sums[worker_idx] = SumWords(words + begin, end - begin);
    };
    std::vector<std::thread> pool;
    for (uint64_t worker_idx = 1; worker_idx < workers; ++worker_idx) {
      pool.emplace_back(run_worker, worker_idx);
    }
    run_worker(0);
    for (std::thread& thread : pool) thread.join();
    benchmark::DoNotOptimize(sums.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

struct Case {
  DType dtype;
  bool transposed;
  int stats_version;  // 0: hash only
};

// The view of `numel` elements of the shared buffer that a case digests.
struct CaseView {
  int64_t sizes[2];
  int64_t strides[2];
  TensorView view;
};

CaseView MakeView(const Case& c, uint64_t numel, const void* data) {
  CaseView out;
  // rows = the largest power of two with rows * rows <= numel; numel is a power of two here.
  int64_t rows = 1;
  while (static_cast<uint64_t>(rows * rows * 4) <= numel) rows *= 2;
  const int64_t cols = static_cast<int64_t>(numel) / rows;
  if (c.transposed) {  // .t() of a contiguous [rows, cols]
    out.sizes[0] = cols, out.sizes[1] = rows;
    out.strides[0] = 1, out.strides[1] = cols;
  } else {
    out.sizes[0] = rows, out.sizes[1] = cols;
    out.strides[0] = cols, out.strides[1] = 1;
  }
  out.view = TensorView{c.dtype, out.sizes, out.strides, 2, data};
  return out;
}

void RunDigest(benchmark::State& state, const TensorView& view, int threads, int stats_version) {
  DigestOptions options;
  options.stats = stats_version != 0;
  options.stats_version = stats_version != 0 ? stats_version : kStatsVersionLatest;
  options.threads = threads;
  for (auto _ : state) {
    StatusOr<TensorDigest> digest = DigestTensor(view, options);
    if (!digest.ok()) {
      state.SkipWithError(digest.status().ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(digest->digest.low);
  }
}

void BM_Digest(benchmark::State& state, Case c, uint64_t bytes, int threads) {
  CaseView view = MakeView(c, bytes / DTypeSize(c.dtype), Buffer(bytes));
  RunDigest(state, view.view, threads, c.stats_version);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

void BM_DigestTiny(benchmark::State& state, Case c, int64_t numel) {
  const int64_t stride = 1;
  const TensorView view{c.dtype, &numel, &stride, 1, Buffer(64 * 8)};
  RunDigest(state, view, 1, c.stats_version);
}

// A causal attention mask's scores: [.., 32, 32] float32 with -Inf above the diagonal (masked_fill
// before a softmax), so every chunk holds infinities and takes the statistics' masked kernel.
void BM_DigestMasked(benchmark::State& state, uint64_t bytes, int stats_version) {
  std::vector<float> scores(bytes / sizeof(float));
  std::memcpy(scores.data(), Buffer(bytes), bytes);
  for (size_t idx = 0; idx < scores.size(); ++idx) {
    if (idx % 32 > (idx / 32) % 32) scores[idx] = -std::numeric_limits<float>::infinity();
  }
  const auto numel = static_cast<int64_t>(scores.size());
  const int64_t stride = 1;
  RunDigest(state, TensorView{DType::kFloat32, &numel, &stride, 1, scores.data()}, 1,
            stats_version);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
}

const char* DTypeLabel(DType dtype) {
  return dtype == DType::kFloat32 ? "f32" : dtype == DType::kFloat16 ? "f16" : "bf16";
}

std::string ModeLabel(int stats_version) {
  return stats_version == 0 ? "/hash" : "/stats_v" + std::to_string(stats_version);
}

void RegisterAll() {
  const bool large = [] {
    const char* env = std::getenv("UPGUARD_BENCH_LARGE");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  const uint64_t max_bytes = large ? kMaxLargeBytes : kMaxDefaultBytes;
  std::vector<int> thread_counts = {1};
  const int hardware = static_cast<int>(std::thread::hardware_concurrency());
  if (hardware > 1) thread_counts.push_back(hardware);
  std::vector<Case> cases;
  for (const DType dtype : {DType::kFloat32, DType::kBFloat16, DType::kFloat16}) {
    for (const bool transposed : {false, true}) {
      for (const int stats_version : {kStatsVersionV1, kStatsVersionV2, 0}) {
        cases.push_back({dtype, transposed, stats_version});
      }
    }
  }
  for (uint64_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
    for (const int threads : thread_counts) {
      const std::string suffix =
          "/bytes:" + std::to_string(bytes) + "/threads:" + std::to_string(threads);
      benchmark::RegisterBenchmark(("MemoryRead" + suffix).c_str(), BM_MemoryRead, bytes, threads)
          ->UseRealTime()
          ->MinTime(0.1);
      for (const Case& c : cases) {
        const std::string name = std::string("Digest/") + DTypeLabel(c.dtype) +
                                 (c.transposed ? "/transposed" : "/contiguous") +
                                 ModeLabel(c.stats_version) + suffix;
        benchmark::RegisterBenchmark(name.c_str(), BM_Digest, c, bytes, threads)
            ->UseRealTime()
            ->MinTime(0.1);
      }
    }
  }
  for (const uint64_t bytes : {uint64_t{65536}, uint64_t{1} << 20}) {
    for (const int stats_version : {kStatsVersionV1, kStatsVersionV2}) {
      benchmark::RegisterBenchmark(("DigestMasked/f32/contiguous" + ModeLabel(stats_version) +
                                    "/bytes:" + std::to_string(bytes) + "/threads:1")
                                       .c_str(),
                                   BM_DigestMasked, bytes, stats_version)
          ->UseRealTime()
          ->MinTime(0.1);
    }
  }
  for (const Case& c :
       {Case{DType::kFloat32, false, kStatsVersionV2}, Case{DType::kFloat32, false, 0},
        Case{DType::kBFloat16, false, kStatsVersionV2}}) {
    for (int64_t numel = 1; numel <= 64; numel *= 4) {
      const std::string name = std::string("DigestTiny/") + DTypeLabel(c.dtype) +
                               ModeLabel(c.stats_version) + "/numel:" + std::to_string(numel);
      benchmark::RegisterBenchmark(name.c_str(), BM_DigestTiny, c, numel)->MinTime(0.1);
    }
  }
}

}  // namespace
}  // namespace upguard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  upguard::RegisterAll();
  benchmark::AddCustomContext("stats_kernel",
                              upguard::internal::StatsIsaName(upguard::internal::BestStatsIsa()));
  benchmark::AddCustomContext("leaf_hash", upguard::HashChunkImplementation());
  benchmark::AddCustomContext("read_kernel", upguard::ReadWithAvx2() ? "avx2" : "portable");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
