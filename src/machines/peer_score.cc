#include "machines/peer_score.h"

#include <algorithm>
#include <cmath>

namespace upguard::machines {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  if (values.size() % 2 == 1) return values[mid];
  const double upper = values[mid];
  return (*std::max_element(values.begin(), values.begin() + mid) + upper) / 2;
}

// RMS distance per sample between two rows, so window length does not change the scale.
double RmsDistance(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t idx = 0; idx < a.size(); ++idx) sum += (a[idx] - b[idx]) * (a[idx] - b[idx]);
  return std::sqrt(sum / static_cast<double>(std::max<size_t>(a.size(), 1)));
}

std::vector<double> MeanDistances(const std::vector<std::vector<double>>& rows) {
  const size_t n = rows.size();
  std::vector<double> scores(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double d = RmsDistance(rows[i], rows[j]);
      scores[i] += d;
      scores[j] += d;
    }
  }
  for (double& s : scores) s /= static_cast<double>(n - 1);
  return scores;
}

// Each row's distance from the rows' mean, per dimension scaled by the dimension's variance
// across rows shrunk toward the mean variance (RMS per dimension, like RmsDistance).
std::vector<double> MahalanobisDistances(const std::vector<std::vector<double>>& rows) {
  const size_t n = rows.size();
  const size_t dims = rows[0].size();
  std::vector<double> mean(dims, 0.0);
  std::vector<double> var(dims, 0.0);
  for (const auto& row : rows) {
    for (size_t d = 0; d < dims; ++d) mean[d] += row[d] / static_cast<double>(n);
  }
  for (const auto& row : rows) {
    for (size_t d = 0; d < dims; ++d) {
      var[d] += (row[d] - mean[d]) * (row[d] - mean[d]) / static_cast<double>(n);
    }
  }
  double mean_var = 0;
  for (double v : var) mean_var += v / static_cast<double>(dims);
  constexpr double kShrink = 0.5;
  constexpr double kFloor = 1e-6;  // normalised units squared: a flat metric
  std::vector<double> scores(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t d = 0; d < dims; ++d) {
      const double shrunk = (1 - kShrink) * var[d] + kShrink * mean_var + kFloor;
      sum += (rows[i][d] - mean[d]) * (rows[i][d] - mean[d]) / shrunk;
    }
    scores[i] = std::sqrt(sum / static_cast<double>(dims));
  }
  return scores;
}

}  // namespace

PeerScore ScorePeers(const std::vector<std::vector<double>>& rows, Distance distance,
                     const PeerRule& rule) {
  PeerScore out;
  const size_t n = rows.size();
  if (n < 3) return out;
  const std::vector<double> scores =
      distance == Distance::kEuclidean ? MeanDistances(rows) : MahalanobisDistances(rows);
  double mean = 0;
  for (double s : scores) mean += s / static_cast<double>(n);
  double var = 0;
  for (double s : scores) var += (s - mean) * (s - mean) / static_cast<double>(n);
  const double sd = std::sqrt(var);
  if (!(sd > 0)) return out;
  const auto top =
      static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
  std::vector<double> others;
  for (size_t idx = 0; idx < n; ++idx) {
    if (idx != top) others.push_back(scores[idx]);
  }
  out.score = scores[top];
  out.z = (scores[top] - mean) / sd;
  out.spread = Median(others);
  const double most = static_cast<double>(n - 1) / std::sqrt(static_cast<double>(n));
  const double z_needed = std::min(rule.z_threshold, 0.8 * most);
  const bool far = distance == Distance::kMahalanobis || out.score >= rule.min_distance;
  if (out.z > z_needed && out.score >= rule.ratio * out.spread && far) {
    out.machine = static_cast<int>(top);
  }
  return out;
}

}  // namespace upguard::machines
