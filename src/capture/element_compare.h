// Element-by-element comparison of two captured tensors: how many elements differ, by how many
// ULP, with what absolute and relative error, and where the first difference is.
//
//   ASSIGN_OR_RETURN(ElementComparison c, CompareElements(*a->Find("out0"), *b->Find("out0")));
//   std::cout << SummarizeComparison(c);
//   // 12 of 196,608 elements differ (0.0061%), all by 1 ULP; max abs error 2.4e-07, max rel
//   // error 1.2e-07; first at [0, 3, 17]: 0.512345672 vs 0.512345731
//
// ULP distance: each value's bits are read as sign and magnitude and mapped to an integer that
// counts representable values in order (-magnitude for negatives), so the distance is the
// number of steps from one value to the other: 1 between neighbours, +0 and -0 at distance 0
// (counted in signed_zero instead), the largest finite value at 1 from infinity. Per dtype
// width: float64, float32, float16, bfloat16. Integer dtypes (and bool) use |a - b| instead.
// Complex tensors are compared as their float components (dtype float32/float64, shape with a
// trailing dimension of 2), the form safetensors stores them in.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/text.h"
#include "capture/safetensors.h"
#include "upguard/status.h"
#include "upguard/tensor.h"

namespace upguard {

// Histogram bucket: the differing elements with max_ulp / 2 < distance <= max_ulp (bucket 1
// holds distance 1). The last possible bucket has max_ulp 2^64 - 1.
struct UlpBucket {
  uint64_t max_ulp;
  int64_t count;
};

// A finite differing pair: magnitude = max(|a|, |b|), abs_error = |a - b|.
struct ErrorPoint {
  double magnitude;
  double abs_error;
};

struct ElementComparison {
  DType dtype = DType::kInvalid;
  std::vector<int64_t> shape;
  bool comparable = true;
  std::string why_not;  // when not comparable: "dtype float32 vs bfloat16", "shape [2] vs [3]"
  int64_t numel = 0;
  int64_t differing = 0;     // elements whose bytes differ
  int64_t nan_mismatch = 0;  // NaN on one side only, or different NaN payloads
  int64_t nan_payload = 0;   // of nan_mismatch: NaN on both sides (only the payloads differ)
  int64_t signed_zero = 0;   // +0 vs -0
  int64_t inf_mismatch = 0;  // an infinity vs a finite value or the other infinity
  // Over the finite differing pairs: |a - b| and |a - b| / max(|a|, |b|).
  double max_abs_error = 0, max_rel_error = 0;
  uint64_t max_ulp = 0;  // floating dtypes: ULP distance (NaNs excluded); integers: |a - b|
  std::vector<UlpBucket> ulp_histogram;  // buckets 1, 2, 4, 8, ... in order, only non-empty
  std::vector<int64_t> first_index;      // multi-dimensional index of the first differing element
  double first_a = 0, first_b = 0;       // its values
  // The finite differing pairs no other one dominates (another pair with magnitude <= and
  // abs_error >= would fail every rel:X,abs:Y tolerance this one fails), by increasing
  // magnitude and abs_error. ComparisonWithin decides such tolerances exactly from these. Short
  // in practice: with errors of a few ULP, about one point per binade.
  std::vector<ErrorPoint> error_frontier;
  // Where the differing elements lie, for a tensor of 2 or more dims seen as a matrix (rows: the
  // product of the leading dims, columns: the last dim): their count in each cell of a grid of at
  // most kDiffMapRows x kDiffMapCols cells over it. Empty for fewer dims or no difference.
  struct DiffMap {
    int64_t rows = 0, cols = 0;            // the matrix
    int64_t grid_rows = 0, grid_cols = 0;  // the grid
    std::vector<int64_t> counts;           // grid_rows x grid_cols, row-major
  };
  DiffMap diff_map;
};

inline constexpr int64_t kDiffMapRows = 48, kDiffMapCols = 96;

// Compares two tensors' row-major bytes. dtype or shape differing gives comparable = false and
// why_not (not an error). InvalidArgument when a tensor's bytes do not match its dtype and shape.
StatusOr<ElementComparison> CompareElements(const StoredTensor& a, const StoredTensor& b);
// The same for two views of any strides, gathered a chunk at a time; InvalidArgument for a bad
// view (invalid dtype, ndim over 64, negative size or stride, null data).
StatusOr<ElementComparison> CompareElements(const TensorView& a, const TensorView& b);

// One sentence (docs/cli.md "Tolerances" shows them):
//   "identical: all 196,608 elements bitwise equal"
//   "12 of 196,608 elements differ (0.0061%), all by 1 ULP; max abs error 2.4e-07, max rel
//    error 1.2e-07; first at [0, 3, 17]: 0.512345672 vs 0.512345731"
//   "3 of 8 elements differ (37%), by up to 37 ULP (1 ULP: 1, 2 ULP: 1, <=64 ULP: 1); ..."
// A histogram of more than 5 buckets is shown as 5 runs of adjacent buckets ("<=64 ULP: 9"
// then counts everything from the previous run's bound up to 64 ULP).
// NaN mismatches, signed zeros and infinity mismatches are listed when there are any. Numbers:
// counts with thousands separators, errors %.2g, values %.9g (float32), %.17g (float64), %.5g
// (float16, bfloat16), integers in full.
std::string SummarizeComparison(const ElementComparison& c);
// Its first clause only, for a headline: "identical: all 196,608 elements bitwise equal",
// "12 of 196,608 elements differ (0.0061%), all by 1 ULP", "... by up to 37 ULP".
std::string SummarizeComparisonBrief(const ElementComparison& c);

}  // namespace upguard
