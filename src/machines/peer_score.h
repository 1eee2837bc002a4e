// Which machine sits far from its peers in one window of one metric (Minder §4.3): each
// machine's window is a vector (its normalised samples, or their denoised embedding); a
// machine's score is its mean distance to every other machine (distances per dimension, RMS
// over the dimensions); the farthest is a candidate when it stands out three ways at once:
//   - its z-score among all machines' scores exceeds `z_threshold`, capped at 80 % of the
//     largest z-score n machines allow ((n-1)/sqrt(n): 1.5 for 4 machines), so small clusters
//     can flag at all;
//   - its score is at least `ratio` times the median score of the others, each taken among
//     the others only (a healthy cluster whose noise makes some machine the farthest by a
//     little is not a finding; the candidate's own distance does not count for its peers);
//   - its score is at least `min_distance` (in normalised units per sample): a fault moves a
//     metric by a visible part of its range.
// Mahalanobis (the baseline) replaces the mean distance by each machine's distance from the
// machines' mean under their covariance (diagonal, shrunk: a few machines and 8-sample windows
// give a singular full covariance).
//
// Pairs cost O(machines^2 x dims): up to kPairwiseMachines machines the mean distance is taken
// pair by pair; beyond, a machine's score is its RMS distance to every peer (the root of the
// mean squared distance), exact in O(machines x dims) because the sum of squared distances to
// every peer is n * |x_i - mean|^2 + sum_j |x_j - mean|^2: a thousand machines need no half
// million pairs per window, and one machine's share of a peer's score is at most 1/255, so the
// two rank machines alike. Mahalanobis is O(machines x dims) at any size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace upguard::machines {

inline constexpr size_t kPairwiseMachines = 256;

struct PeerRule {
  double z_threshold = 3.0;
  double ratio = 2.0;
  double min_distance = 0.05;  // in the rows' units (Minder: the denoiser's score_limit)
};

enum class Distance : uint8_t { kEuclidean = 0, kMahalanobis = 1 };

struct PeerScore {
  int machine = -1;   // index into the rows given, -1: no candidate
  double score = 0;   // the candidate's score (its mean or RMS distance, or Mahalanobis)
  double z = 0;       // its z-score among the rows
  double spread = 0;  // the median score of the others, among themselves
};

// `rows`: `n` rows of `dims` floats, [row][dim], rows with any NaN left out by the caller. Fewer
// than 3 rows: no candidate (two machines cannot say which one is odd).
PeerScore ScorePeers(const float* rows, size_t n, size_t dims, Distance distance,
                     const PeerRule& rule);

// Every row's Euclidean score: its mean distance to the others (the RMS distance beyond
// kPairwiseMachines rows).
std::vector<double> PeerDistances(const float* rows, size_t n, size_t dims);

// Every row's z-score of its RMS distance to the others (0s when all are alike): the per-metric
// feature metric priority is learned from (metric_priority.h).
std::vector<double> PeerZScores(const float* rows, size_t n, size_t dims);

}  // namespace upguard::machines
