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

std::vector<double> ColumnMeans(const float* rows, size_t n, size_t dims) {
  std::vector<double> mean(dims, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t d = 0; d < dims; ++d) mean[d] += rows[i * dims + d];
  }
  for (double& m : mean) m /= static_cast<double>(n);
  return mean;
}

// Per row, the squared distance to the rows' mean.
std::vector<double> SquaredFromMean(const float* rows, size_t n, size_t dims,
                                    const std::vector<double>& mean) {
  std::vector<double> out(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t d = 0; d < dims; ++d) {
      const double diff = rows[i * dims + d] - mean[d];
      sum += diff * diff;
    }
    out[i] = sum;
  }
  return out;
}

// Each row's RMS distance to the others, from its squared distance to the rows' mean.
std::vector<double> RmsDistances(const std::vector<double>& from_mean, size_t dims) {
  const size_t n = from_mean.size();
  double total = 0;
  for (double r : from_mean) total += r;
  std::vector<double> scores(n);
  for (size_t i = 0; i < n; ++i) {
    const double pairs = std::max(0.0, static_cast<double>(n) * from_mean[i] + total);
    scores[i] = std::sqrt(pairs / static_cast<double>((n - 1) * dims));
  }
  return scores;
}

// The per-dimension RMS distance between rows i and j.
double RowDistance(const float* rows, size_t dims, size_t i, size_t j) {
  double sum = 0;
  for (size_t d = 0; d < dims; ++d) {
    const double diff = static_cast<double>(rows[i * dims + d]) - rows[j * dims + d];
    sum += diff * diff;
  }
  return std::sqrt(sum / static_cast<double>(dims));
}

// Each row's mean distance to every other row, pair by pair (per-dimension RMS distances).
std::vector<double> MeanDistances(const float* rows, size_t n, size_t dims) {
  std::vector<double> scores(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double distance = RowDistance(rows, dims, i, j);
      scores[i] += distance;
      scores[j] += distance;
    }
  }
  for (double& s : scores) s /= static_cast<double>(n - 1);
  return scores;
}

// Each row's distance from the rows' mean, per dimension scaled by the dimension's variance
// across rows shrunk toward the mean variance (RMS per dimension).
std::vector<double> MahalanobisDistances(const float* rows, size_t n, size_t dims,
                                         const std::vector<double>& mean) {
  std::vector<double> var(dims, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t d = 0; d < dims; ++d) {
      const double diff = rows[i * dims + d] - mean[d];
      var[d] += diff * diff / static_cast<double>(n);
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
      const double diff = rows[i * dims + d] - mean[d];
      sum += diff * diff / shrunk;
    }
    scores[i] = std::sqrt(sum / static_cast<double>(dims));
  }
  return scores;
}

// Each score's z-score among them; all 0 when they are all alike.
std::vector<double> ZScores(const std::vector<double>& scores) {
  const double n = static_cast<double>(scores.size());
  double mean = 0;
  for (double s : scores) mean += s / n;
  double var = 0;
  for (double s : scores) var += (s - mean) * (s - mean) / n;
  const double sd = std::sqrt(var);
  std::vector<double> z(scores.size(), 0.0);
  if (!(sd > 0)) return z;
  for (size_t i = 0; i < scores.size(); ++i) z[i] = (scores[i] - mean) / sd;
  return z;
}

}  // namespace

PeerScore ScorePeers(const float* rows, size_t n, size_t dims, Distance distance,
                     const PeerRule& rule) {
  PeerScore out;
  if (n < 3 || dims == 0) return out;
  const std::vector<double> scores =
      distance == Distance::kEuclidean
          ? PeerDistances(rows, n, dims)
          : MahalanobisDistances(rows, n, dims, ColumnMeans(rows, n, dims));
  const std::vector<double> z = ZScores(scores);
  const auto top =
      static_cast<size_t>(std::max_element(scores.begin(), scores.end()) - scores.begin());
  out.score = scores[top];
  out.z = z[top];
  const double most = static_cast<double>(n - 1) / std::sqrt(static_cast<double>(n));
  const double z_needed = std::min(rule.z_threshold, 0.8 * most);
  if (!(out.z > z_needed)) return out;  // the common case: no spread needed
  std::vector<double> others;
  if (distance == Distance::kEuclidean && n <= kPairwiseMachines) {
    // Each peer's mean distance to the other peers, the candidate left out: with a few
    // machines a peer's distance to the candidate would be a third of its score or more, so a
    // machine far from every peer would raise its peers' spread by its own distance (measured:
    // a rate-limited machine of 4, its neighbours pulled apart too, stood 1.86 times its peers'
    // scores and went unnamed; 3.8 against their 0.9 among themselves).
    for (size_t i = 0; i < n; ++i) {
      if (i == top) continue;
      const double to_top = RowDistance(rows, dims, i, top);
      others.push_back(std::max(0.0, scores[i] * static_cast<double>(n - 1) - to_top) /
                       static_cast<double>(n - 2));
    }
  } else {  // from the mean (Mahalanobis), or enough machines that one barely counts
    others = scores;
    others.erase(others.begin() + static_cast<std::ptrdiff_t>(top));
  }
  out.spread = Median(std::move(others));
  const bool far = distance == Distance::kMahalanobis || out.score >= rule.min_distance;
  if (out.score >= rule.ratio * out.spread && far) out.machine = static_cast<int>(top);
  return out;
}

std::vector<double> PeerDistances(const float* rows, size_t n, size_t dims) {
  if (n < 2 || dims == 0) return std::vector<double>(n, 0.0);
  if (n <= kPairwiseMachines) return MeanDistances(rows, n, dims);
  return RmsDistances(SquaredFromMean(rows, n, dims, ColumnMeans(rows, n, dims)), dims);
}

std::vector<double> PeerZScores(const float* rows, size_t n, size_t dims) {
  if (n < 3 || dims == 0) return std::vector<double>(n, 0.0);
  return ZScores(PeerDistances(rows, n, dims));
}

}  // namespace upguard::machines
