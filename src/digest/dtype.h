// DType helpers beyond include/upguard/tensor.h, for text formats (test vectors, text traces).
//
//   DType dtype = DTypeFromName("bfloat16");  // DType::kBFloat16; kInvalid when unknown
#pragma once

#include <string_view>

#include "upguard/tensor.h"

namespace upguard {

// The inverse of DTypeName: kInvalid for an unknown name (and for "invalid").
DType DTypeFromName(std::string_view name);

}  // namespace upguard
