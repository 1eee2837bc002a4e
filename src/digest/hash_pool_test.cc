// HashPool: a digest made on a worker equals DigestTensor's on the caller, whatever the pool's
// size; a writer that waits for its memory's key never changes bytes under a digest; the
// caller's reference to the memory is held exactly until the digest is done.
#include "digest/hash_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "digest/digest_test_util.h"

namespace upguard {
namespace {

using testing::ContiguousStrides;

std::vector<float> Ramp(size_t count, float scale) {
  std::vector<float> values(count);
  for (size_t idx = 0; idx < count; ++idx) values[idx] = scale * static_cast<float>(idx % 977);
  return values;
}

TensorDigest Direct(const TensorView& view) {
  StatusOr<TensorDigest> digest = DigestTensor(view, DigestOptions{});
  EXPECT_TRUE(digest.ok()) << digest.status().ToString();
  return digest.ok() ? *digest : TensorDigest{};
}

TEST(HashPoolTest, EqualsTheCallersDigestForEveryPoolSize) {
  std::vector<std::vector<float>> buffers;
  for (size_t idx = 0; idx < 12; ++idx) buffers.push_back(Ramp(1000 + 70000 * idx, 0.5f + idx));
  for (int threads : {1, 3}) {
    HashPool pool(threads, DigestOptions{});
    std::vector<std::shared_ptr<const PendingDigest>> pending;
    std::vector<std::vector<int64_t>> shapes;
    for (const std::vector<float>& buffer : buffers) {
      // A strided view (every other element) of the buffer: the task copies sizes and strides.
      const int64_t sizes[] = {static_cast<int64_t>(buffer.size() / 2)};
      const int64_t strides[] = {2};
      pending.push_back(
          pool.Submit({DType::kFloat32, sizes, strides, 1, buffer.data()}, nullptr, buffer.data()));
    }
    for (size_t idx = 0; idx < buffers.size(); ++idx) {
      const int64_t sizes[] = {static_cast<int64_t>(buffers[idx].size() / 2)};
      const int64_t strides[] = {2};
      const TensorDigest expected =
          Direct({DType::kFloat32, sizes, strides, 1, buffers[idx].data()});
      const StatusOr<TensorDigest>& got = pending[idx]->Wait();
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(got->digest, expected.digest) << "threads " << threads << " tensor " << idx;
      EXPECT_EQ(got->has_stats, expected.has_stats);
      EXPECT_EQ(std::memcmp(&got->stats, &expected.stats, sizeof(TensorStats)), 0);
    }
    pool.WaitAll();
    EXPECT_EQ(pool.pending(), 0u);
  }
}

TEST(HashPoolTest, AWriterThatWaitsForItsKeyNeverChangesBytesUnderADigest) {
  // Many rounds: a large tensor is handed over and written again at once; its digest must be
  // the one of the bytes it held when handed over.
  HashPool pool(2, DigestOptions{});
  std::vector<float> buffer = Ramp(1 << 20, 1.0f);
  const std::vector<int64_t> shape = {1 << 20};
  const std::vector<int64_t> strides = ContiguousStrides(shape);
  const TensorView view{DType::kFloat32, shape.data(), strides.data(), 1, buffer.data()};
  for (int round = 0; round < 20; ++round) {
    const TensorDigest before = Direct(view);
    std::shared_ptr<const PendingDigest> pending = pool.Submit(view, nullptr, buffer.data());
    pool.WaitFor(buffer.data());
    EXPECT_TRUE(pending->done());
    buffer[static_cast<size_t>(round) * 4099] += 1.0f;  // the write
    ASSERT_TRUE(pending->Wait().ok());
    EXPECT_EQ(pending->Wait()->digest, before.digest) << "round " << round;
  }
  pool.WaitFor(&shape);  // a key never submitted: returns at once
}

TEST(HashPoolTest, WaitingRunsAQueuedTaskOnTheWaitingThread) {
  // One worker, busy with a long queue: waiting for the last task does not wait for the queue.
  HashPool pool(1, DigestOptions{});
  std::vector<float> big = Ramp(8 << 20, 1.0f);
  const std::vector<int64_t> shape = {static_cast<int64_t>(big.size())};
  const std::vector<int64_t> strides = ContiguousStrides(shape);
  const TensorView view{DType::kFloat32, shape.data(), strides.data(), 1, big.data()};
  for (int idx = 0; idx < 8; ++idx) pool.Submit(view, nullptr, big.data());
  std::vector<float> small = Ramp(100, 2.0f);
  const int64_t small_size[] = {100};
  const int64_t small_stride[] = {1};
  const TensorView small_view{DType::kFloat32, small_size, small_stride, 1, small.data()};
  std::shared_ptr<const PendingDigest> last = pool.Submit(small_view, nullptr, small.data());
  ASSERT_TRUE(last->Wait().ok());
  EXPECT_EQ(last->Wait()->digest, Direct(small_view).digest);
  pool.WaitAll();
  EXPECT_EQ(pool.pending(), 0u);
}

TEST(HashPoolTest, HoldsTheOwnerUntilTheDigestIsDone) {
  HashPool pool(2, DigestOptions{});
  auto owner = std::make_shared<std::vector<float>>(Ramp(1 << 16, 3.0f));
  const std::vector<int64_t> shape = {1 << 16};
  const std::vector<int64_t> strides = ContiguousStrides(shape);
  const TensorView view{DType::kFloat32, shape.data(), strides.data(), 1, owner->data()};
  const TensorDigest expected = Direct(view);
  std::weak_ptr<std::vector<float>> watch = owner;
  std::shared_ptr<const PendingDigest> pending = pool.Submit(view, std::move(owner), nullptr);
  ASSERT_TRUE(pending->Wait().ok());
  EXPECT_EQ(pending->Wait()->digest, expected.digest);
  EXPECT_TRUE(watch.expired());
}

TEST(HashPoolTest, AnInvalidViewFailsAsDigestTensorDoes) {
  HashPool pool(1, DigestOptions{});
  const float value = 1.0f;
  const int64_t sizes[] = {1};
  const int64_t strides[] = {-1};
  std::shared_ptr<const PendingDigest> pending =
      pool.Submit({DType::kFloat32, sizes, strides, 1, &value}, nullptr, &value);
  EXPECT_FALSE(pending->Wait().ok());
  const TensorView too_deep{DType::kFloat32, sizes, strides, kMaxDigestDims + 1, &value};
  EXPECT_FALSE(pool.Submit(too_deep, nullptr, &value)->Wait().ok());
}

}  // namespace
}  // namespace upguard
