#include "machines/decision_tree.h"

#include <algorithm>
#include <numeric>

namespace upguard::machines {
namespace {

double Gini(double positives, double total) {
  if (total <= 0) return 0;
  const double p = positives / total;
  return 2 * p * (1 - p);
}

struct Split {
  size_t feature = 0;
  double threshold = 0;
  double gain = 0;  // weighted impurity removed
};

class Builder {
 public:
  Builder(const std::vector<double>& features, const std::vector<uint8_t>& labels, size_t width,
          const TreeOptions& options, TreeSummary* summary)
      : features_(features), labels_(labels), width_(width), options_(options), out_(summary) {}

  void Grow(std::vector<size_t> rows, size_t depth) {
    ++out_->nodes;
    if (depth >= options_.max_depth || rows.size() < 2 * options_.min_leaf) return;
    const Split best = BestSplit(rows);
    if (best.gain <= 1e-12) return;
    int& first = out_->first_depth[best.feature];
    if (first < 0 || static_cast<int>(depth) < first) first = static_cast<int>(depth);
    out_->importance[best.feature] += best.gain;
    std::vector<size_t> left, right;
    for (size_t row : rows) {
      (At(row, best.feature) <= best.threshold ? left : right).push_back(row);
    }
    rows.clear();
    rows.shrink_to_fit();
    Grow(std::move(left), depth + 1);
    Grow(std::move(right), depth + 1);
  }

 private:
  double At(size_t row, size_t feature) const { return features_[row * width_ + feature]; }

  Split BestSplit(const std::vector<size_t>& rows) const {
    double positives = 0;
    for (size_t row : rows) positives += labels_[row];
    const double total = static_cast<double>(rows.size());
    const double parent = Gini(positives, total) * total;
    Split best;
    std::vector<size_t> order(rows);
    for (size_t f = 0; f < width_; ++f) {
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return At(a, f) < At(b, f); });
      double left_pos = 0;
      for (size_t idx = 0; idx + 1 < order.size(); ++idx) {
        left_pos += labels_[order[idx]];
        const size_t left_n = idx + 1;
        const size_t right_n = order.size() - left_n;
        if (left_n < options_.min_leaf || right_n < options_.min_leaf) continue;
        const double here = At(order[idx], f);
        const double next = At(order[idx + 1], f);
        if (!(next > here)) continue;
        const double l = static_cast<double>(left_n);
        const double r = static_cast<double>(right_n);
        const double gain = parent - Gini(left_pos, l) * l - Gini(positives - left_pos, r) * r;
        if (gain > best.gain) best = Split{f, (here + next) / 2, gain};
      }
    }
    return best;
  }

  const std::vector<double>& features_;
  const std::vector<uint8_t>& labels_;
  size_t width_;
  TreeOptions options_;
  TreeSummary* out_;
};

}  // namespace

TreeSummary FitTree(const std::vector<double>& features, const std::vector<uint8_t>& labels,
                    size_t feature_count, const TreeOptions& options) {
  TreeSummary summary;
  summary.first_depth.assign(feature_count, -1);
  summary.importance.assign(feature_count, 0.0);
  if (feature_count == 0 || labels.empty()) return summary;
  std::vector<size_t> rows(labels.size());
  std::iota(rows.begin(), rows.end(), 0);
  Builder(features, labels, feature_count, options, &summary).Grow(std::move(rows), 0);
  return summary;
}

}  // namespace upguard::machines
