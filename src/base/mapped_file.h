// A read-only memory map of a whole file, for readers that index large traces without copying
// them.
//
//   ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open("runs/a/rank0.ugt"));
//   Scan(file->data(), file->size());
//   file->Release(0, scanned);   // done with these bytes: drop them from this process's RSS
//
// Pages are read from the page cache as they are touched and count towards the process's
// resident set until released. Release() returns them (the data stays in the page cache and is
// read again if touched), so a sequential scan keeps its RSS bounded however large the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "upguard/status.h"

namespace upguard {

class MappedFile {
 public:
  // NotFound for a missing file; IoError for other failures. An empty file maps to size 0.
  static StatusOr<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const char* data() const { return data_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Hints that [begin, end) will be read soon, or in order.
  void WillNeed(uint64_t begin, uint64_t end) const;
  // Unmaps the whole pages inside [begin, end) from this process's resident set; later reads
  // of them fault them back in. Never changes what data() reads.
  void Release(uint64_t begin, uint64_t end) const;

 private:
  MappedFile(std::string path, const char* data, uint64_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  const char* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace upguard
