#include "unread_args.h"

#include <ATen/SparseCsrTensorUtils.h>
#include <ATen/SparseTensorUtils.h>

#include <cctype>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "digest/lazy_bits.h"
#include "digest/sparse_digest.h"

namespace upguard::torch_adapter {
namespace {

std::string_view Keep(std::string text, ArgBatch* batch) {
  return batch->strings.emplace_back(std::move(text));
}

// A part of a sparse tensor (its indices or values) as the digest reads it; false when that
// part is not readable itself (values of an unknown dtype).
bool PartView(const at::Tensor& part, TensorView* view) {
  if (!IsReadable(part)) return false;
  *view = ViewOf(part);
  return true;
}

// A sparse COO or CSR tensor on the CPU, digested from its parts (digest.md §7.1). The parts are
// read through the tensor's impl, not through ATen ops: no op runs inside the callback.
std::optional<Arg> SparseArg(const at::Tensor& tensor, std::string_view name,
                             const TensorView& view, ArgBatch* batch) {
  std::vector<at::Tensor> parts;
  SparseLayout layout = SparseLayout::kCoo;
  if (tensor.layout() == c10::kSparse) {
    const at::SparseTensorImpl* impl = at::sparse::get_sparse_impl(tensor);
    parts = {impl->indices(), impl->values()};
  } else if (tensor.layout() == c10::kSparseCsr) {
    const at::SparseCsrTensorImpl* impl = at::sparse_csr::get_sparse_csr_impl(tensor);
    parts = {impl->compressed_indices(), impl->plain_indices(), impl->values()};
    layout = SparseLayout::kCsr;
  } else {
    return std::nullopt;
  }
  std::vector<TensorView> views(parts.size());
  for (size_t part = 0; part < parts.size(); ++part) {
    if (!PartView(parts[part], &views[part])) return std::nullopt;
  }
  StatusOr<TensorDigest> digest = DigestSparse(layout, view.dtype, view.sizes, view.ndim,
                                               views.data(), views.size(), DigestOptions{});
  if (!digest.ok()) return std::nullopt;
  Arg arg = Arg::Tensor(name, view);
  arg.known = &batch->known.emplace_back(*digest);
  return arg;
}

// A conjugate or negative view, by the values torch's resolve_conj / resolve_neg would give.
std::optional<Arg> ResolvedArg(const at::Tensor& tensor, std::string_view name,
                               ArgBatch* batch) {
  const TensorView lazy = ViewOf(tensor);
  std::string values;
  if (!ResolveLazyBits(lazy, tensor.is_conj(), tensor.is_neg(), &values)) return std::nullopt;
  std::vector<int64_t>& strides = batch->strides.emplace_back(static_cast<size_t>(lazy.ndim));
  int64_t stride = 1;
  for (int dim = lazy.ndim - 1; dim >= 0; --dim) {
    strides[static_cast<size_t>(dim)] = stride;
    stride *= lazy.sizes[dim];
  }
  TensorView resolved = lazy;
  resolved.strides = strides.data();
  resolved.data = batch->bytes.emplace_back(std::move(values)).data();
  return Arg::Tensor(name, resolved);
}

// The layout's name as Python's torch spells it, less "torch." ("sparse_bsr", "_mkldnn").
std::string LayoutName(c10::Layout layout) {
  switch (layout) {
    case c10::kSparse:
      return "sparse_coo";
    case c10::kSparseCsr:
      return "sparse_csr";
    case c10::kSparseCsc:
      return "sparse_csc";
    case c10::kSparseBsr:
      return "sparse_bsr";
    case c10::kSparseBsc:
      return "sparse_bsc";
    case c10::kMkldnn:
      return "_mkldnn";
    default:
      break;
  }
  std::ostringstream text;
  text << layout;
  return text.str();
}

bool StorageHasNoMemory(const at::Tensor& tensor) {
  return tensor.has_storage() && tensor.numel() > 0 && tensor.storage().data() == nullptr;
}

}  // namespace

Arg OtherwiseReadArg(const at::Tensor& tensor, std::string_view name, const TensorView& view,
                     ArgKind wanted, ArgBatch* batch) {
  // A view's input or result, an out= buffer: its values are not the op's, wherever it lies.
  if (wanted != ArgKind::kTensor) return Arg::Shaped(wanted, name, view);
  const c10::Device device = tensor.device();
  if (device.is_meta()) return Arg::Shaped(ArgKind::kUninit, name, view);  // no values exist
  if (!device.is_cpu()) {
    return Arg::Unread(name, view, UnreadReason::kDevice, Keep(device.str(), batch));
  }
  if (view.dtype == DType::kInvalid) {
    return Arg::Unread(name, view, UnreadReason::kDtype,
                       Keep(c10::toString(tensor.scalar_type()), batch));
  }
  if (tensor.layout() != c10::kStrided) {
    if (std::optional<Arg> arg = SparseArg(tensor, name, view, batch)) return *arg;
    return Arg::Unread(name, view, UnreadReason::kLayout,
                       Keep(LayoutName(tensor.layout()), batch));
  }
  if (StorageHasNoMemory(tensor)) return Arg::Shaped(ArgKind::kUninit, name, view);
  if (!tensor.has_storage() || !StorageCoversView(tensor)) {
    return Arg::Unread(name, view, UnreadReason::kStorage, "");
  }
  if (tensor.is_conj() || tensor.is_neg()) {
    if (std::optional<Arg> arg = ResolvedArg(tensor, name, batch)) return *arg;
  }
  return Arg::Unread(name, view, UnreadReason::kUnknown, "");
}

}  // namespace upguard::torch_adapter
