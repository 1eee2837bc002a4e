// The values of a tensor torch marks as lazily conjugated or negated (`is_conj()`,
// `is_neg()`: torch.conj and some views flip a bit instead of the memory), as torch's
// resolve_conj / resolve_neg would make them, without calling torch: the elements gathered in
// row-major order into a contiguous buffer, then the signs the bits stand for flipped.
//
//   std::string values;
//   if (ResolveLazyBits(view, /*conj=*/true, /*neg=*/false, &values)) ... digest `values` as
//   a contiguous tensor of view's dtype and sizes ...
//
// Negation flips the sign bit of each floating component (IEEE negation, what torch's neg
// does, NaN included) and is two's complement negation for integers (wrapping, as torch's);
// conjugation flips the sign of a complex element's imaginary part.
#pragma once

#include <string>

#include "upguard/tensor.h"

namespace upguard {

// False (and `out` untouched) for what torch does not mark: conj of a non-complex dtype, neg
// of bool, an unknown dtype, or a view the digest cannot read (negative strides, too many
// dims).
bool ResolveLazyBits(const TensorView& view, bool conj, bool neg, std::string* out);

}  // namespace upguard
