#include "capture/view_check.h"

namespace upguard {

StatusOr<TensorLayout> CheckReadableView(const std::string& what, const TensorView& view) {
  ASSIGN_OR_RETURN(TensorLayout layout,
                   CheckShape(what.c_str(), view.dtype, view.sizes, view.ndim));
  if (view.ndim > 0 && view.strides == nullptr) {
    return InvalidArgument(what + ": strides is null but ndim is " + std::to_string(view.ndim));
  }
  for (int dim_idx = 0; dim_idx < view.ndim; ++dim_idx) {
    if (view.strides[dim_idx] < 0) {
      return InvalidArgument(what + ": stride of dim " + std::to_string(dim_idx) + " is " +
                             std::to_string(view.strides[dim_idx]) +
                             "; negative strides are not supported (copy the tensor first)");
    }
  }
  if (layout.numel > 0 && view.data == nullptr) {
    return InvalidArgument(what + ": data is null for a tensor with " +
                           std::to_string(layout.numel) + " elements");
  }
  return layout;
}

}  // namespace upguard
