// Reading safetensors files: the header is parsed with byte offsets (header_json.h) and every
// rule of docs/formats/capture.md §5 is checked before a tensor points into the mapped file.
#include "capture/safetensors.h"

#include <algorithm>
#include <array>
#include <set>

#include "capture/header_json.h"
#include "digest/root.h"

namespace upguard {
namespace {

struct NamedDType {
  DType dtype;
  std::string_view name;
};
constexpr std::array<NamedDType, 10> kDTypeNames = {{
    {DType::kFloat64, "F64"},
    {DType::kFloat32, "F32"},
    {DType::kFloat16, "F16"},
    {DType::kBFloat16, "BF16"},
    {DType::kInt64, "I64"},
    {DType::kInt32, "I32"},
    {DType::kInt16, "I16"},
    {DType::kInt8, "I8"},
    {DType::kUInt8, "U8"},
    {DType::kBool, "BOOL"},
}};

constexpr uint64_t kMaxHeaderBytes = 100 << 20;  // the reference implementation's limit too
constexpr std::string_view kLayoutHint =
    "the header does not describe the data (docs/formats/capture.md §5); the file is damaged";

// A header entry, with the file offsets its errors point at.
struct Entry {
  std::string name;
  DType dtype = DType::kInvalid;
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // data_offsets, relative to the byte buffer
  uint64_t entry_at = 0;        // the name
  uint64_t shape_at = 0;
  uint64_t offsets_at = 0;
};

struct MetadataEntry {
  std::string key, value;
  uint64_t value_at = 0;
};

std::string Quoted(std::string_view text) {
  std::string out;
  AppendJsonString(text, &out);
  return out;
}

std::string Range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// The metadata object, strings to strings.
Status ParseMetadata(JsonCursor* cursor, std::vector<MetadataEntry>* metadata) {
  RETURN_IF_ERROR(cursor->Expect('{'));
  if (cursor->Consume('}')) return Status::Ok();
  std::set<std::string> keys;
  do {
    MetadataEntry entry;
    const uint64_t key_at = cursor->Offset();
    RETURN_IF_ERROR(cursor->String(&entry.key));
    if (!keys.insert(entry.key).second) {
      return cursor->Error("duplicate metadata key " + Quoted(entry.key), key_at);
    }
    RETURN_IF_ERROR(cursor->Expect(':'));
    entry.value_at = cursor->Offset();
    RETURN_IF_ERROR(cursor->String(&entry.value));
    metadata->push_back(std::move(entry));
  } while (cursor->Consume(','));
  return cursor->Expect('}');
}

// Checks the entry's own fields: shape and byte range consistent with the dtype.
Status CheckEntry(const Entry& entry, std::string_view path, uint64_t buffer_size) {
  const std::string tensor = "tensor " + Quoted(entry.name);
  std::vector<int64_t> sizes;
  for (const uint64_t size : entry.shape) {
    if (size > static_cast<uint64_t>(INT64_MAX)) {
      return HeaderError(path, tensor + " has a dimension over 2^63 - 1", entry.shape_at,
                         kLayoutHint);
    }
    sizes.push_back(static_cast<int64_t>(size));
  }
  const StatusOr<TensorLayout> layout =
      CheckShape(tensor.c_str(), entry.dtype, sizes.data(), static_cast<int>(sizes.size()));
  if (!layout.ok()) {
    return HeaderError(path, layout.status().message(), entry.shape_at, kLayoutHint);
  }
  const uint64_t byte_length = layout->byte_length;
  if (entry.begin > entry.end || entry.end > buffer_size) {
    return HeaderError(path,
                       tensor + " has data_offsets " + Range(entry.begin, entry.end) +
                           " outside the " + std::to_string(buffer_size) + "-byte buffer",
                       entry.offsets_at, kLayoutHint);
  }
  if (entry.end - entry.begin != byte_length) {
    return HeaderError(path,
                       tensor + " has data_offsets " + Range(entry.begin, entry.end) + " (" +
                           std::to_string(entry.end - entry.begin) + " bytes) but its dtype and " +
                           "shape need " + std::to_string(byte_length),
                       entry.offsets_at, kLayoutHint);
  }
  return Status::Ok();
}

// One tensor's {"dtype": ..., "shape": [...], "data_offsets": [b, e]}.
Status ParseEntry(JsonCursor* cursor, std::string_view path, Entry* entry) {
  const uint64_t object_at = cursor->Offset();
  RETURN_IF_ERROR(cursor->Expect('{'));
  const std::string tensor = "tensor " + Quoted(entry->name);
  bool has_dtype = false, has_shape = false, has_offsets = false;
  if (!cursor->Consume('}')) {
    do {
      const uint64_t field_at = cursor->Offset();
      std::string field;
      RETURN_IF_ERROR(cursor->String(&field));
      RETURN_IF_ERROR(cursor->Expect(':'));
      const uint64_t value_at = cursor->Offset();
      bool* seen = field == "dtype"          ? &has_dtype
                   : field == "shape"        ? &has_shape
                   : field == "data_offsets" ? &has_offsets
                                             : nullptr;
      if (seen == nullptr) {
        return cursor->Error(tensor + " has an unknown field " + Quoted(field), field_at);
      }
      if (*seen) return cursor->Error(tensor + " repeats the field " + Quoted(field), field_at);
      *seen = true;
      if (seen == &has_dtype) {
        std::string name;
        RETURN_IF_ERROR(cursor->String(&name));
        entry->dtype = SafetensorsDTypeFromName(name);
        if (entry->dtype == DType::kInvalid) {
          return HeaderError(path, tensor + " has dtype " + Quoted(name), value_at,
                             "upguard reads F64, F32, F16, BF16, I64, I32, I16, I8, U8 and BOOL");
        }
      } else if (seen == &has_shape) {
        entry->shape_at = value_at;
        RETURN_IF_ERROR(cursor->UintArray(&entry->shape));
      } else {
        entry->offsets_at = value_at;
        std::vector<uint64_t> offsets;
        RETURN_IF_ERROR(cursor->UintArray(&offsets));
        if (offsets.size() != 2) {
          return cursor->Error(
              tensor + " has " + std::to_string(offsets.size()) + " data_offsets instead of 2",
              value_at);
        }
        entry->begin = offsets[0];
        entry->end = offsets[1];
      }
    } while (cursor->Consume(','));
    RETURN_IF_ERROR(cursor->Expect('}'));
  }
  if (!has_dtype || !has_shape || !has_offsets) {
    return cursor->Error(tensor + " lacks " +
                             (!has_dtype   ? "dtype"
                              : !has_shape ? "shape"
                                           : "data_offsets"),
                         object_at);
  }
  return Status::Ok();
}

// The tensors, sorted by data offsets, must tile the byte buffer exactly.
Status CheckTiling(const std::vector<Entry*>& sorted, std::string_view path, uint64_t buffer_begin,
                   uint64_t buffer_size) {
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* entry : sorted) {
    if (entry->begin != covered) {
      const std::string before = previous == nullptr ? "the buffer starts at 0"
                                                     : "tensor " + Quoted(previous->name) +
                                                           " ends at " + std::to_string(covered);
      return HeaderError(path,
                         "tensor " + Quoted(entry->name) + " starts at " +
                             std::to_string(entry->begin) + " but " + before + " (" +
                             (entry->begin < covered ? "overlap" : "gap") + ")",
                         entry->offsets_at, kLayoutHint);
    }
    covered = entry->end;
    previous = entry;
  }
  if (covered != buffer_size) {
    return HeaderError(
        path, std::to_string(buffer_size - covered) + " bytes follow the last tensor's data",
        buffer_begin + covered, kLayoutHint);
  }
  return Status::Ok();
}

// Turns "upguard.complex.<name>" = "1" entries into complex dtypes; keeps the other metadata.
Status ApplyComplexKeys(std::vector<MetadataEntry>* metadata, std::vector<Entry>* entries,
                        std::string_view path,
                        std::vector<std::pair<std::string, std::string>>* user_metadata) {
  for (MetadataEntry& item : *metadata) {
    if (item.key.compare(0, kComplexKeyPrefix.size(), kComplexKeyPrefix) != 0) {
      user_metadata->emplace_back(std::move(item.key), std::move(item.value));
      continue;
    }
    const std::string_view name = std::string_view(item.key).substr(kComplexKeyPrefix.size());
    auto entry = std::find_if(entries->begin(), entries->end(),
                              [name](const Entry& e) { return e.name == name; });
    const bool pairs = entry != entries->end() && !entry->shape.empty() &&
                       entry->shape.back() == 2 &&
                       (entry->dtype == DType::kFloat32 || entry->dtype == DType::kFloat64);
    if (item.value != "1" || !pairs) {
      return HeaderError(path,
                         "metadata " + Quoted(item.key) + " marks no F32/F64 tensor " +
                             Quoted(name) + " with a last dimension of 2 (value must be \"1\")",
                         item.value_at, kLayoutHint);
    }
    entry->dtype = entry->dtype == DType::kFloat32 ? DType::kComplex64 : DType::kComplex128;
    entry->shape.pop_back();
  }
  return Status::Ok();
}

}  // namespace

std::string_view SafetensorsDTypeName(DType dtype) {
  for (const NamedDType& named : kDTypeNames) {
    if (named.dtype == dtype) return named.name;
  }
  return {};
}

DType SafetensorsDTypeFromName(std::string_view name) {
  for (const NamedDType& named : kDTypeNames) {
    if (named.name == name) return named.dtype;
  }
  return DType::kInvalid;
}

StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  const char* data = mapped->data();
  const uint64_t size = mapped->size();
  if (size < 8) {
    return HeaderError(path, "the file has " + std::to_string(size) + " bytes, fewer than 8", 0,
                       "a safetensors file starts with an 8-byte header length; it is truncated "
                       "or not safetensors");
  }
  uint64_t header_size = 0;
  for (int byte_idx = 7; byte_idx >= 0; --byte_idx) {
    header_size = (header_size << 8) | static_cast<uint8_t>(data[byte_idx]);
  }
  if (header_size > size - 8 || header_size > kMaxHeaderBytes) {
    return HeaderError(
        path,
        "header length " + std::to_string(header_size) + " exceeds " +
            (header_size > size - 8 ? "the " + std::to_string(size - 8) + " bytes after it"
                                    : std::string("the 100 MiB limit")),
        0, "the file is truncated or not safetensors");
  }
  const std::string_view header(data + 8, header_size);
  if (header.empty() || header[0] != '{') {
    return HeaderError(path, "the header does not start with '{'", 8,
                       "the file is damaged or not safetensors");
  }
  JsonCursor cursor(path, header, 8);
  RETURN_IF_ERROR(cursor.Expect('{'));
  std::vector<Entry> entries;
  std::vector<MetadataEntry> metadata;
  std::set<std::string> keys;
  if (!cursor.Consume('}')) {
    do {
      Entry entry;
      entry.entry_at = cursor.Offset();
      RETURN_IF_ERROR(cursor.String(&entry.name));
      if (!keys.insert(entry.name).second) {
        return cursor.Error("duplicate key " + Quoted(entry.name), entry.entry_at);
      }
      RETURN_IF_ERROR(cursor.Expect(':'));
      if (entry.name == "__metadata__") {
        RETURN_IF_ERROR(ParseMetadata(&cursor, &metadata));
        continue;
      }
      if (entry.name.empty()) return cursor.Error("a tensor has an empty name", entry.entry_at);
      RETURN_IF_ERROR(ParseEntry(&cursor, path, &entry));
      entries.push_back(std::move(entry));
    } while (cursor.Consume(','));
    RETURN_IF_ERROR(cursor.Expect('}'));
  }
  if (!cursor.AtEnd()) {
    return cursor.Error("unexpected bytes after the header object", cursor.Offset());
  }

  const uint64_t buffer_begin = 8 + header_size;
  const uint64_t buffer_size = size - buffer_begin;
  for (const Entry& entry : entries) RETURN_IF_ERROR(CheckEntry(entry, path, buffer_size));
  std::vector<Entry*> sorted;
  for (Entry& entry : entries) sorted.push_back(&entry);
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  RETURN_IF_ERROR(CheckTiling(sorted, path, buffer_begin, buffer_size));

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile(std::move(mapped)));
  RETURN_IF_ERROR(ApplyComplexKeys(&metadata, &entries, path, &file->metadata_));
  for (const Entry* entry : sorted) {
    StoredTensor& tensor = file->tensors_.emplace_back();
    tensor.name = entry->name;
    tensor.dtype = entry->dtype;
    tensor.shape.assign(entry->shape.begin(), entry->shape.end());
    tensor.bytes = std::string_view(data + buffer_begin + entry->begin, entry->end - entry->begin);
  }
  return file;
}

const StoredTensor* SafetensorsFile::Find(std::string_view name) const {
  for (const StoredTensor& tensor : tensors_) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

}  // namespace upguard
