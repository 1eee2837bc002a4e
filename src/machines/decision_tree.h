// A small CART classification tree (Gini impurity) over numeric features, for one purpose: to
// learn which metrics tell a faulty machine's window from a healthy one first (Minder's metric
// priority, docs/formats/machine-model.md §3). Features closer to the root tell more.
//
//   TreeOptions options;  // depth <= 4, >= 5 rows a leaf
//   const TreeSummary summary = FitTree(features, labels, feature_count, options);
//   summary.first_depth[f]  // the depth of the shallowest split on feature f (-1: none)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace upguard::machines {

struct TreeOptions {
  size_t max_depth = 4;
  size_t min_leaf = 5;
};

struct TreeSummary {
  std::vector<int> first_depth;    // per feature; -1 when the tree never splits on it
  std::vector<double> importance;  // per feature: the weighted impurity its splits removed
  size_t nodes = 0;
};

// `features`: rows x feature_count, [row][feature]; `labels`: 0 or 1 per row.
TreeSummary FitTree(const std::vector<double>& features, const std::vector<uint8_t>& labels,
                    size_t feature_count, const TreeOptions& options);

}  // namespace upguard::machines
