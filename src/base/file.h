// Small file helpers that report failures as Status with the path and the OS reason.
//
//   ASSIGN_OR_RETURN(std::string bytes, ReadFileToString("runs/a/meta.json"));
//   RETURN_IF_ERROR(WriteFileAtomically("runs/a/meta.json", json));
//   ASSIGN_OR_RETURN(auto out, OutputFile::Create("runs/a/rank0.ugt"));
//   RETURN_IF_ERROR(out->Write(data, size));
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "upguard/status.h"

namespace upguard {

StatusOr<std::string> ReadFileToString(const std::string& path);
// Writes to "<path>.tmp.<pid>" and renames, so readers never see a half-written file, and a
// crash or power loss leaves either the old file or the new one: the file is fsynced before
// the rename and its directory after it, and every write and the close are checked (a full
// disk, a file size limit or an NFS server's late error fail here, the old file kept).
Status WriteFileAtomically(const std::string& path, const std::string& contents);
// Creates or truncates `path` and writes `contents`, fsynced, every write and the close checked.
Status WriteFileDurably(const std::string& path, const std::string& contents);
// fsync of a directory: the renames and creates inside it survive a crash.
Status SyncDirectory(const std::string& dir);
// mkdir -p.
Status MakeDirectories(const std::string& path);
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);
// Names (not paths) of the entries of a directory, sorted.
StatusOr<std::vector<std::string>> ListDirectory(const std::string& path);

// An append-only output file with a user-space buffer. Not thread-safe.
class OutputFile {
 public:
  static StatusOr<std::unique_ptr<OutputFile>> Create(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  Status Write(const void* data, size_t size);
  // Hands buffered bytes to the OS (not fsync): a crash of the process after Flush loses nothing.
  Status Flush();
  // Flush, then fsync: the bytes survive a crash of the machine too.
  Status Sync();
  Status Close();
  // The errno of the first write the system refused; 0 while none was.
  int write_errno() const { return write_errno_; }
  // After a refused write: drops what is buffered and cuts the file back to the end of the last
  // Write call whose bytes the system took in full, so that the file ends where one of the
  // caller's writes did (a whole record, for a trace) and the disk gets the torn bytes back.
  // Later writes append from there.
  Status CutToLastWhole();
  // The same, one taken write further back: room under a size limit that the last cut left
  // too small (the file then ends where the write before the last whole one ended).
  Status CutToEarlierWhole();
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }

 private:
  OutputFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  Status WriteAll(const char* data, size_t size);
  void NoteWhole();  // everything written so far was taken in full
  Status CutTo(uint64_t size);

  int fd_ = -1;
  std::string path_;
  std::string buffer_;
  uint64_t bytes_written_ = 0;
  uint64_t whole_bytes_ = 0;          // the bytes of the Write calls the system took in full
  uint64_t earlier_whole_bytes_ = 0;  // whole_bytes_ before the last write it took
  int write_errno_ = 0;
};

}  // namespace upguard
