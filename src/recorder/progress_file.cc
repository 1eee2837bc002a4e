#include "recorder/progress_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace upguard {
namespace {

constexpr char kMagic[8] = {'U', 'G', 'P', 'R', 'O', 'G', '\0', '\0'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kClosed = 1;
constexpr uint32_t kStopped = 2;  // bits 8..15: the StopReason

template <typename T>
void Put(std::string& out, size_t offset, T value) {
  for (size_t idx = 0; idx < sizeof(T); ++idx) {
    out[offset + idx] = static_cast<char>((static_cast<uint64_t>(value) >> (8 * idx)) & 0xff);
  }
}

template <typename T>
T Get(const std::string& in, size_t offset) {
  uint64_t value = 0;
  for (size_t idx = 0; idx < sizeof(T); ++idx) {
    value |= uint64_t(static_cast<unsigned char>(in[offset + idx])) << (8 * idx);
  }
  return static_cast<T>(value);
}

uint32_t Fnv1a(const std::string& bytes, size_t size) {
  uint32_t hash = 2166136261u;
  for (size_t idx = 0; idx < size; ++idx) {
    hash ^= static_cast<unsigned char>(bytes[idx]);
    hash *= 16777619u;
  }
  return hash;
}

}  // namespace

std::string EncodeProgress(const RankProgress& progress) {
  std::string out(kProgressRecordSize, '\0');
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  Put<uint32_t>(out, 8, kVersion);
  Put<int32_t>(out, 12, progress.rank);
  Put<int64_t>(out, 16, progress.step);
  Put<uint64_t>(out, 24, progress.steps_recorded);
  Put<uint64_t>(out, 32, progress.steps_fingerprinted);
  Put<uint64_t>(out, 40, progress.ops);
  Put<uint64_t>(out, 48, progress.trace_bytes);
  const uint32_t flags = (progress.closed ? kClosed : 0) |
                         (progress.stopped ? kStopped | uint32_t(progress.stop_reason) << 8 : 0);
  Put<uint32_t>(out, 56, flags);
  Put<uint32_t>(out, 60, Fnv1a(out, 60));
  return out;
}

StatusOr<RankProgress> DecodeProgress(const std::string& bytes) {
  if (bytes.size() != kProgressRecordSize || std::memcmp(bytes.data(), kMagic, 8) != 0 ||
      Get<uint32_t>(bytes, 8) != kVersion || Get<uint32_t>(bytes, 60) != Fnv1a(bytes, 60)) {
    return DataLoss("not a whole version-1 progress record (read while it was rewritten?)");
  }
  RankProgress progress;
  progress.rank = Get<int32_t>(bytes, 12);
  progress.step = Get<int64_t>(bytes, 16);
  progress.steps_recorded = Get<uint64_t>(bytes, 24);
  progress.steps_fingerprinted = Get<uint64_t>(bytes, 32);
  progress.ops = Get<uint64_t>(bytes, 40);
  progress.trace_bytes = Get<uint64_t>(bytes, 48);
  const uint32_t flags = Get<uint32_t>(bytes, 56);
  progress.closed = (flags & kClosed) != 0;
  progress.stopped = (flags & kStopped) != 0;
  const uint32_t reason = (flags >> 8) & 0xff;
  progress.stop_reason = reason <= uint32_t(StopReason::kMaxBytes) ? static_cast<StopReason>(reason)
                                                                   : StopReason::kError;
  return progress;
}

ProgressWriter ProgressWriter::Open(const std::string& path) {
  ProgressWriter writer;
  if (!path.empty()) writer.fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  return writer;
}

ProgressWriter::ProgressWriter(ProgressWriter&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }

ProgressWriter& ProgressWriter::operator=(ProgressWriter&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

ProgressWriter::~ProgressWriter() {
  if (fd_ >= 0) close(fd_);
}

void ProgressWriter::Write(const RankProgress& progress) const {
  if (fd_ < 0) return;
  const std::string bytes = EncodeProgress(progress);
  (void)!pwrite(fd_, bytes.data(), bytes.size(), 0);
}

StatusOr<RankProgress> ReadProgress(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no progress yet");
    return IoError(path + ": " + std::strerror(errno));
  }
  std::string bytes(kProgressRecordSize, '\0');
  const ssize_t got = pread(fd, bytes.data(), bytes.size(), 0);
  close(fd);
  if (got != static_cast<ssize_t>(bytes.size())) {
    return DataLoss(path + ": " + std::to_string(got < 0 ? 0 : got) + " of 64 bytes");
  }
  StatusOr<RankProgress> progress = DecodeProgress(bytes);
  if (!progress.ok()) return DataLoss(path + ": " + progress.status().message());
  return progress;
}

}  // namespace upguard
