// Checks a TensorView before its elements are read row-major with StridedReader (writing a
// safetensors file, comparing two views): dtype, ndim and sizes as the digest checks them
// (CheckShape), strides non-negative, data present.
//
//   ASSIGN_OR_RETURN(TensorLayout layout, CheckReadableView("WriteSafetensors: tensor \"x\"",
//   view));
#pragma once

#include <string>

#include "digest/root.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

// InvalidArgument starting with `what` when the view cannot be read; its layout otherwise.
StatusOr<TensorLayout> CheckReadableView(const std::string& what, const TensorView& view);

}  // namespace upguard
