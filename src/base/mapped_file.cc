#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace upguard {
namespace {

uint64_t PageSize() {
  static const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

}  // namespace

StatusOr<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    const std::string reason = std::strerror(errno);
    ::close(fd);
    return IoError(path + ": cannot stat: " + reason);
  }
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  const char* data = nullptr;
  if (size > 0) {
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
      const std::string reason = std::strerror(errno);
      ::close(fd);
      return IoError(path + ": cannot map: " + reason);
    }
    data = static_cast<const char*>(map);
  }
  ::close(fd);  // the mapping keeps the file open
  return std::unique_ptr<MappedFile>(new MappedFile(path, data, size));
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

void MappedFile::WillNeed(uint64_t begin, uint64_t end) const {
  const uint64_t page = PageSize();
  begin = begin / page * page;
  end = end < size_ ? end : size_;
  if (data_ == nullptr || begin >= end) return;
#ifdef MADV_POPULATE_READ
  // Maps the pages in one call rather than one fault per 64 KiB (Linux 5.14+).
  if (::madvise(const_cast<char*>(data_) + begin, end - begin, MADV_POPULATE_READ) == 0) return;
#endif
  ::madvise(const_cast<char*>(data_) + begin, end - begin, MADV_WILLNEED);
}

void MappedFile::Release(uint64_t begin, uint64_t end) const {
  const uint64_t page = PageSize();
  begin = (begin + page - 1) / page * page;
  end = end >= size_ ? (size_ + page - 1) / page * page : end / page * page;
  if (data_ == nullptr || begin >= end) return;
  ::madvise(const_cast<char*>(data_) + begin, end - begin, MADV_DONTNEED);
}

}  // namespace upguard
