// Captured tensors on disk as safetensors files (docs/formats/capture.md): the Hugging Face
// format, so that numpy, torch and every safetensors reader open a capture as they are.
//
//   int64_t sizes[] = {2, 3}, strides[] = {1, 2};  // a transposed view: written row-major
//   TensorView view{DType::kFloat32, sizes, strides, 2, data};
//   RETURN_IF_ERROR(WriteSafetensors("capture/a.safetensors", {{"input0", view}},
//                                    {{"op", "aten::mm"}}));
//
//   ASSIGN_OR_RETURN(auto file, SafetensorsFile::Open("capture/a.safetensors"));
//   const StoredTensor* input = file->Find("input0");  // dtype, shape, row-major bytes
//
// Complex tensors, which the format lacks, are stored as their float32/float64 components with
// a trailing dimension of 2 and the metadata key "upguard.complex.<name>" = "1"; Open reads
// them back as complex. Keys starting with "upguard.complex." are therefore not user metadata.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mapped_file.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

// The metadata key prefix that marks a complex tensor: "upguard.complex.<name>" = "1".
inline constexpr std::string_view kComplexKeyPrefix = "upguard.complex.";

// "F32", "BF16", ...: the safetensors name of a dtype; empty for complex dtypes and kInvalid.
std::string_view SafetensorsDTypeName(DType dtype);
// The inverse; kInvalid for names upguard does not read (U16, F8_E4M3, ...).
DType SafetensorsDTypeFromName(std::string_view name);

struct SafetensorsInput {
  std::string name;
  TensorView view;  // any strides; written row-major
};

// Writes the tensors in the given order (their data too), then `metadata` as "__metadata__".
// Atomic: the file is written as "<path>.tmp" and renamed. Names must be unique, non-empty,
// UTF-8 and not "__metadata__"; metadata keys unique and UTF-8, none starting with
// kComplexKeyPrefix. InvalidArgument for those and for a bad view; IoError from the OS.
Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                        const std::vector<std::pair<std::string, std::string>>& metadata);

struct StoredTensor {
  std::string name;
  DType dtype = DType::kInvalid;
  std::vector<int64_t> shape;
  std::string_view bytes;  // row-major, little-endian, inside the opened file; may be unaligned
};

// An opened safetensors file: the file is mapped and the tensors point into it, so they live
// as long as this object.
class SafetensorsFile {
 public:
  // Checks everything docs/formats/capture.md §5 lists; a malformed file is DataLoss with
  // "<path>: <what> at byte <offset>; <hint>". NotFound or IoError when it cannot be opened.
  static StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  // In data_offsets order (the order WriteSafetensors was given).
  const std::vector<StoredTensor>& tensors() const { return tensors_; }
  // nullptr when there is no tensor of that name.
  const StoredTensor* Find(std::string_view name) const;
  // "__metadata__" in file order, without the upguard.complex.* keys.
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

 private:
  explicit SafetensorsFile(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}

  std::unique_ptr<MappedFile> file_;
  std::vector<StoredTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace upguard
