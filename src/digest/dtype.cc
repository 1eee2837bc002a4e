// DType properties (include/upguard/tensor.h). The table below is the single source of truth
// for element sizes and names; docs/formats/digest.md §2 mirrors it.
#include "digest/dtype.h"

#include <array>

#include "upguard/tensor.h"

namespace upguard {
namespace {

struct DTypeInfo {
  size_t size;
  std::string_view name;
  bool floating;
};

// Indexed by the DType code; kInvalid is entry 0.
constexpr std::array<DTypeInfo, kMaxDType + 1> kDTypeInfo = {{
    {0, "invalid", false},
    {4, "float32", true},
    {8, "float64", true},
    {2, "float16", true},
    {2, "bfloat16", true},
    {1, "int8", false},
    {1, "uint8", false},
    {2, "int16", false},
    {4, "int32", false},
    {8, "int64", false},
    {1, "bool", false},
    {8, "complex64", false},
    {16, "complex128", false},
}};

const DTypeInfo& Info(DType dtype) {
  const auto code = static_cast<uint8_t>(dtype);
  return kDTypeInfo[code <= kMaxDType ? code : 0];
}

}  // namespace

size_t DTypeSize(DType dtype) { return Info(dtype).size; }
std::string_view DTypeName(DType dtype) { return Info(dtype).name; }
bool DTypeIsFloating(DType dtype) { return Info(dtype).floating; }

DType DTypeFromName(std::string_view name) {
  for (uint8_t code = 1; code <= kMaxDType; ++code) {
    if (kDTypeInfo[code].name == name) return static_cast<DType>(code);
  }
  return DType::kInvalid;
}

}  // namespace upguard
