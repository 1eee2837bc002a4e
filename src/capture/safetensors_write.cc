// Writing safetensors files: validate every name and view first, then stream the header and
// each tensor's row-major bytes (gathered through StridedReader) into "<path>.tmp", and rename.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>

#include "base/file.h"
#include "capture/header_json.h"
#include "capture/safetensors.h"
#include "capture/view_check.h"
#include "digest/gather.h"

namespace upguard {
namespace {

constexpr size_t kGatherBytes = 1 << 16;

// A tensor ready to write: its view checked, its header dtype and shape decided.
struct Planned {
  const SafetensorsInput* input;
  TensorLayout layout;
  std::string_view dtype_name;  // of the components, for complex
  bool complex = false;
};

Status CheckInput(const SafetensorsInput& input, std::set<std::string_view>* names,
                  Planned* planned) {
  const TensorView& view = input.view;
  const std::string what = "WriteSafetensors: tensor \"" + input.name + "\"";
  if (input.name.empty() || input.name == "__metadata__" || !IsValidUtf8(input.name)) {
    return InvalidArgument(what +
                           " has a name safetensors cannot store; use a non-empty UTF-8 "
                           "name other than __metadata__");
  }
  if (!names->insert(input.name).second) {
    return InvalidArgument(what + " appears twice; tensor names must be unique");
  }
  ASSIGN_OR_RETURN(planned->layout, CheckReadableView(what, view));
  planned->input = &input;
  planned->complex = view.dtype == DType::kComplex64 || view.dtype == DType::kComplex128;
  planned->dtype_name = view.dtype == DType::kComplex64    ? SafetensorsDTypeName(DType::kFloat32)
                        : view.dtype == DType::kComplex128 ? SafetensorsDTypeName(DType::kFloat64)
                                                           : SafetensorsDTypeName(view.dtype);
  return Status::Ok();
}

Status CheckMetadata(const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::set<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    const std::string what = "WriteSafetensors: metadata key \"" + key + "\"";
    if (!IsValidUtf8(key) || !IsValidUtf8(value)) {
      return InvalidArgument(what + " or its value is not UTF-8");
    }
    if (key.compare(0, kComplexKeyPrefix.size(), kComplexKeyPrefix) == 0) {
      return InvalidArgument(what + " is reserved for marking complex tensors; rename it");
    }
    if (!keys.insert(key).second) return InvalidArgument(what + " appears twice");
  }
  return Status::Ok();
}

// docs/formats/capture.md §3: metadata first, tensors in order, padded with spaces so that the
// byte buffer starts at a multiple of 8.
std::string BuildHeader(const std::vector<Planned>& plan,
                        const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::vector<std::pair<std::string, std::string>> all_metadata = metadata;
  for (const Planned& planned : plan) {
    if (planned.complex)
      all_metadata.emplace_back(std::string(kComplexKeyPrefix) + planned.input->name, "1");
  }
  std::string header = "{";
  if (!all_metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [key, value] : all_metadata) {
      AppendJsonString(key, &header);
      header += ':';
      AppendJsonString(value, &header);
      header += ',';
    }
    header.back() = '}';
    header += ',';
  }
  uint64_t offset = 0;
  for (const Planned& planned : plan) {
    AppendJsonString(planned.input->name, &header);
    header += ":{\"dtype\":\"" + std::string(planned.dtype_name) + "\",\"shape\":[";
    const TensorView& view = planned.input->view;
    for (int dim_idx = 0; dim_idx < view.ndim; ++dim_idx) {
      header += std::to_string(view.sizes[dim_idx]) + ",";
    }
    if (planned.complex) header += "2,";
    if (header.back() == ',') header.pop_back();
    const uint64_t end = offset + planned.layout.byte_length;
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]},";
    offset = end;
  }
  if (header.back() == ',') header.pop_back();
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

Status WriteTensor(const Planned& planned, OutputFile* out, std::vector<uint8_t>* buffer) {
  const TensorView& view = planned.input->view;
  if (planned.layout.numel == 0) return Status::Ok();
  const size_t elem_size = planned.layout.elem_size;
  StridedReader reader(view.data, elem_size, view.sizes, view.strides, view.ndim);
  if (reader.contiguous()) return out->Write(view.data, planned.layout.byte_length);
  const uint64_t per_read = kGatherBytes / elem_size;
  buffer->resize(kGatherBytes);
  for (uint64_t done = 0; done < planned.layout.numel; done += per_read) {
    const uint64_t count = std::min(per_read, planned.layout.numel - done);
    reader.Read(count, buffer->data());
    RETURN_IF_ERROR(out->Write(buffer->data(), count * elem_size));
  }
  return Status::Ok();
}

Status WriteAll(const std::string& tmp, const std::string& header,
                const std::vector<Planned>& plan) {
  ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> out, OutputFile::Create(tmp));
  uint8_t length[8];
  for (int byte_idx = 0; byte_idx < 8; ++byte_idx) {
    length[byte_idx] = static_cast<uint8_t>(uint64_t{header.size()} >> (8 * byte_idx));
  }
  RETURN_IF_ERROR(out->Write(length, sizeof(length)));
  RETURN_IF_ERROR(out->Write(header.data(), header.size()));
  std::vector<uint8_t> buffer;
  for (const Planned& planned : plan) RETURN_IF_ERROR(WriteTensor(planned, out.get(), &buffer));
  RETURN_IF_ERROR(out->Sync());  // before the rename: never a complete name on partial bytes
  return out->Close();
}

}  // namespace

Status WriteSafetensors(const std::string& path, const std::vector<SafetensorsInput>& tensors,
                        const std::vector<std::pair<std::string, std::string>>& metadata) {
  std::set<std::string_view> names;
  std::vector<Planned> plan(tensors.size());
  for (size_t tensor_idx = 0; tensor_idx < tensors.size(); ++tensor_idx) {
    RETURN_IF_ERROR(CheckInput(tensors[tensor_idx], &names, &plan[tensor_idx]));
  }
  RETURN_IF_ERROR(CheckMetadata(metadata));
  const std::string tmp = path + ".tmp";
  const Status written = WriteAll(tmp, BuildHeader(plan, metadata), plan);
  if (!written.ok()) {
    std::remove(tmp.c_str());
    return written;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp.c_str());
    return IoError("cannot rename " + tmp + " to " + path + ": " + reason);
  }
  return SyncDirectory(std::filesystem::path(path).parent_path().string());
}

}  // namespace upguard
