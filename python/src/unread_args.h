// Tensors IsReadable refuses (ivalue_args.h), read another way where there is one, else
// recorded as not read with the reason (ArgKind::kUnread, trace.md §5.3):
//   - a sparse COO or CSR tensor on the CPU: by its parts (indices and values; row offsets,
//     column indices and values), digest.md §7.1;
//   - a lazily conjugated or negated view: by its resolved values (digest/lazy_bits.h);
//   - a meta tensor, or a storage with no memory at all (a tensor subclass's wrapper whose
//     values live in its inner tensors, a storage FSDP2 freed): no values exist, so no op can
//     read them; recorded as uninit, like an empty() result;
//   - anything else: unread, with why ("device cuda:0", "layout sparse_bsr", "dtype
//     Float8_e4m3fn", "storage"): the diff never calls such an op's values equal.
#pragma once

#include <ATen/core/Tensor.h>

#include <string_view>

#include "ivalue_args.h"

namespace upguard::torch_adapter {

// Precondition: `tensor` is defined, not nested, not a wrapped number and !IsReadable(tensor);
// `view` holds its dtype and shape. What it makes lives in `batch` (until its Clear). `wanted`
// is what the op's schema makes of the slot (ivalue_args.cc): a view's input or result, or an
// out= buffer (kAlias, kUninit), is recorded as that, wherever it lies: its values are not the
// op's to compare.
Arg OtherwiseReadArg(const at::Tensor& tensor, std::string_view name, const TensorView& view,
                     ArgKind wanted, ArgBatch* batch);

}  // namespace upguard::torch_adapter
