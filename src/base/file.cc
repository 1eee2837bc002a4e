#include "base/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace upguard {
namespace {

constexpr size_t kBufferBytes = 1 << 20;

std::string Errno() { return std::strerror(errno); }

}  // namespace

StatusOr<std::string> ReadFileToString(const std::string& path) {
  if (IsDirectory(path)) return InvalidArgument(path + " is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + Errno());
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return IoError(path + ": read failed: " + Errno());
  return contents.str();
}

Status WriteFileDurably(const std::string& path, const std::string& contents) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path + ": cannot create: " + Errno());
  size_t done = 0;
  std::string error;
  while (done < contents.size() && error.empty()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) error = "write failed at byte " + std::to_string(done) + ": " + Errno();
    if (n > 0) done += static_cast<size_t>(n);
  }
  if (error.empty() && ::fsync(fd) != 0) error = "fsync failed: " + Errno();
  if (::close(fd) != 0 && error.empty()) error = "close failed: " + Errno();
  if (!error.empty()) return IoError(path + ": " + error + " (is the disk full?)");
  return Status::Ok();
}

Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError(dir + ": cannot open the directory to sync it: " + Errno());
  std::string error;
  // EINVAL: a file system that cannot sync directories (some FUSE ones): nothing more to do.
  if (::fsync(fd) != 0 && errno != EINVAL) error = Errno();
  ::close(fd);
  if (!error.empty()) return IoError(dir + ": fsync of the directory failed: " + error);
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  // Unique per process: two writers of one file never write into each other's temporary.
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  if (Status written = WriteFileDurably(tmp, contents); !written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = Errno();
    ::unlink(tmp.c_str());
    return IoError("cannot rename " + tmp + " to " + path + ": " + reason);
  }
  return SyncDirectory(std::filesystem::path(path).parent_path().string());
}

Status MakeDirectories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return IoError("cannot create directory " + path + ": " + error.message());
  return Status::Ok();
}

bool IsDirectory(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error);
}

bool IsRegularFile(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error);
}

StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) {
  std::error_code error;
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
    names.push_back(entry.path().filename().string());
  }
  if (error) return IoError("cannot list directory " + path + ": " + error.message());
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::unique_ptr<OutputFile>> OutputFile::Create(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(path + ": cannot create: " + Errno());
  auto file = std::unique_ptr<OutputFile>(new OutputFile(fd, path));
  file->buffer_.reserve(kBufferBytes);
  return file;
}

OutputFile::~OutputFile() { (void)Close(); }

Status OutputFile::Write(const void* data, size_t size) {
  if (fd_ < 0) return Internal(path_ + ": write after close");
  const char* bytes = static_cast<const char*>(data);
  if (buffer_.size() + size > kBufferBytes) RETURN_IF_ERROR(Flush());
  if (size >= kBufferBytes) {
    RETURN_IF_ERROR(WriteAll(bytes, size));
    NoteWhole();
    return Status::Ok();
  }
  buffer_.append(bytes, size);
  bytes_written_ += size;
  return Status::Ok();
}

Status OutputFile::WriteAll(const char* data, size_t size) {
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd_, data + done, size - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      if (write_errno_ == 0) write_errno_ = error;
      const char* hint = error == ENOSPC || error == EDQUOT ? " (the disk is full)"
                         : error == EFBIG ? " (the file reached its size limit: ulimit -f, or "
                                            "the file system's)"
                                          : "";
      return IoError(path_ + ": write failed at byte " + std::to_string(bytes_written_) + ": " +
                     std::strerror(error) + hint);
    }
    done += static_cast<size_t>(n);
    if (data != buffer_.data()) bytes_written_ += static_cast<uint64_t>(n);
  }
  return Status::Ok();
}

Status OutputFile::Flush() {
  if (fd_ < 0 || buffer_.empty()) return Status::Ok();
  Status status = WriteAll(buffer_.data(), buffer_.size());
  buffer_.clear();
  if (status.ok()) NoteWhole();  // the buffer holds whole Write calls only
  return status;
}

Status OutputFile::Sync() {
  RETURN_IF_ERROR(Flush());
  if (fd_ >= 0 && ::fsync(fd_) != 0) return IoError(path_ + ": fsync failed: " + Errno());
  return Status::Ok();
}

void OutputFile::NoteWhole() {
  if (bytes_written_ == whole_bytes_) return;
  earlier_whole_bytes_ = whole_bytes_;
  whole_bytes_ = bytes_written_;
}

Status OutputFile::CutToLastWhole() { return CutTo(whole_bytes_); }

Status OutputFile::CutToEarlierWhole() {
  whole_bytes_ = earlier_whole_bytes_;
  return CutTo(whole_bytes_);
}

Status OutputFile::CutTo(uint64_t size) {
  if (fd_ < 0) return Internal(path_ + ": cut after close");
  buffer_.clear();
  bytes_written_ = size;
  const off_t offset = static_cast<off_t>(size);
  if (::ftruncate(fd_, offset) != 0 || ::lseek(fd_, offset, SEEK_SET) != offset) {
    return IoError(path_ + ": cannot cut back to byte " + std::to_string(size) + ": " + Errno());
  }
  return Status::Ok();
}

Status OutputFile::Close() {
  if (fd_ < 0) return Status::Ok();
  Status status = Flush();
  if (::close(fd_) != 0 && status.ok()) status = IoError(path_ + ": close failed: " + Errno());
  fd_ = -1;
  return status;
}

}  // namespace upguard
