// The CUDA digest against the checked-in vectors and against DigestTensor, on a GPU; every test
// skips where no CUDA device is usable (CI and this project's machines have none: the kernel's
// steps are checked on the host by digest/portable/chunk_digest_test.cc), and fails instead
// with UPGUARD_REQUIRE_GPU set (scripts/gpu-check.sh).
#include "digest/cuda/cuda_digest.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "base/file.h"
#include "digest/digest.h"
#include "digest/digest_test_util.h"
#include "digest/digest_vectors.h"

namespace upguard::cuda {
namespace {

using upguard::testing::StatsBitEqual;
using upguard::testing::StatsText;

class CudaDigestTest : public ::testing::Test {
 public:
  // A device copy of `bytes`, freed at the test's end.
  const void* OnDevice(const std::vector<uint8_t>& bytes) {
    void* device = nullptr;
    EXPECT_EQ(cudaMalloc(&device, std::max<size_t>(bytes.size(), 1)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(device, bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    buffers_.push_back(device);
    return device;
  }

 protected:
  void SetUp() override {
    if (DeviceAvailable()) return;
    if (std::getenv("UPGUARD_REQUIRE_GPU") != nullptr)
      FAIL() << "no CUDA device (scripts/gpu-check.sh)";
    GTEST_SKIP() << "no CUDA device here";
  }
  void TearDown() override {
    for (void* buffer : buffers_) cudaFree(buffer);
  }
  std::vector<void*> buffers_;
};

// Every vector of the file of `stats_version` enqueued before any is collected: one batch, in
// order, no sync per tensor.
void ExpectVectorsHoldInOneBatch(CudaDigestTest* test, int stats_version) {
  const std::string path = std::string(UPGUARD_SOURCE_DIR) + "/" + DigestVectorsFile(stats_version);
  StatusOr<std::string> text = ReadFileToString(path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  auto digester = Digester::Create(/*stats=*/true, stats_version);
  ASSERT_TRUE(digester.ok()) << digester.status().ToString();
  StatusOr<std::vector<DigestVector>> parsed = ParseDigestVectors(*text);
  ASSERT_TRUE(parsed.ok()) << path << ": " << parsed.status().ToString();
  const std::vector<DigestVector>& wanted = *parsed;
  for (size_t idx = 0; idx < wanted.size(); ++idx) {
    const DigestVector& want = wanted[idx];
    uint64_t numel = 1;
    for (int64_t size : want.shape) numel *= static_cast<uint64_t>(size);
    StatusOr<std::vector<uint8_t>> bytes = GeneratePattern(want.dtype, numel, want.pattern);
    ASSERT_TRUE(bytes.ok()) << FormatDigestVector(want);
    StatusOr<uint64_t> ticket =
        (*digester)->Enqueue({want.dtype, want.shape, test->OnDevice(*bytes)}, nullptr);
    ASSERT_TRUE(ticket.ok()) << ticket.status().ToString();
    ASSERT_EQ(*ticket, idx);
  }
  auto done = (*digester)->Collect(/*wait=*/true);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  ASSERT_EQ(done->size(), wanted.size());
  for (size_t idx = 0; idx < wanted.size(); ++idx) {
    EXPECT_EQ((*done)[idx].first, idx);
    EXPECT_EQ((*done)[idx].second.digest, wanted[idx].expected.digest)
        << FormatDigestVector(wanted[idx]);
    EXPECT_TRUE(StatsBitEqual((*done)[idx].second.stats, wanted[idx].expected.stats))
        << FormatDigestVector(wanted[idx]) << "\n got " << StatsText((*done)[idx].second.stats);
  }
  EXPECT_GT(wanted.size(), 80u);
}

TEST_F(CudaDigestTest, CheckedInVectorsHoldInOneBatch) { ExpectVectorsHoldInOneBatch(this, 1); }
TEST_F(CudaDigestTest, CheckedInV2VectorsHoldInOneBatch) { ExpectVectorsHoldInOneBatch(this, 2); }

// A tensor of many chunks (a 2 MiB + 6 bytes bfloat16 one) on a stream of its own.
TEST_F(CudaDigestTest, ManyChunksOnAStreamMatchDigestTensor) {
  std::mt19937 rng(4);
  const std::vector<int64_t> shape = {1024 * 1024 + 3};
  std::vector<uint8_t> bytes(static_cast<size_t>(shape[0]) * 2);
  for (uint8_t& byte : bytes) byte = static_cast<uint8_t>(rng());
  const std::vector<int64_t> strides = {1};
  StatusOr<TensorDigest> want = DigestTensor(
      TensorView{DType::kBFloat16, shape.data(), strides.data(), 1, bytes.data()}, DigestOptions{});
  ASSERT_TRUE(want.ok());
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  auto digester = Digester::Create(/*stats=*/true);
  ASSERT_TRUE(digester.ok());
  ASSERT_TRUE((*digester)->Enqueue({DType::kBFloat16, shape, OnDevice(bytes)}, stream).ok());
  auto done = (*digester)->Collect(/*wait=*/true);
  ASSERT_TRUE(done.ok());
  ASSERT_EQ(done->size(), 1u);
  EXPECT_EQ(done->front().second.digest, want->digest);
  EXPECT_TRUE(StatsBitEqual(done->front().second.stats, want->stats));
  cudaStreamDestroy(stream);
}

TEST(CudaDigestNoDeviceTest, CreateSaysWhyWithoutADevice) {
  if (DeviceAvailable()) GTEST_SKIP() << "a CUDA device is here";
  auto digester = Digester::Create(true);
  ASSERT_FALSE(digester.ok());
  EXPECT_EQ(digester.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(digester.status().message().find("no CUDA device"), std::string::npos);
}

}  // namespace
}  // namespace upguard::cuda
