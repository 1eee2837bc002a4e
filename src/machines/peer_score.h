// Which machine sits far from its peers in one window of one metric (Minder §4.3): each
// machine's window is a vector (its normalised samples, or their denoised embedding); a
// machine's score is its mean distance to every other machine; the farthest is a candidate when
// it stands out three ways at once:
//   - its z-score among all machines' scores exceeds `z_threshold`, capped at 80 % of the
//     largest z-score n machines allow ((n-1)/sqrt(n): 1.5 for 4 machines), so small clusters
//     can flag at all;
//   - its score is at least `ratio` times the median score of the others (a healthy cluster
//     whose noise makes some machine the farthest by a little is not a finding);
//   - its score is at least `min_distance` (in normalised units per sample): a fault moves a
//     metric by a visible part of its range.
// Mahalanobis (the baseline) replaces the mean distance by each machine's distance from the
// machines' mean under their covariance (diagonal, shrunk: a few machines and 8-sample windows
// give a singular full covariance).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace upguard::machines {

struct PeerRule {
  double z_threshold = 3.0;
  double ratio = 2.0;
  double min_distance = 0.05;
};

enum class Distance : uint8_t { kEuclidean = 0, kMahalanobis = 1 };

struct PeerScore {
  int machine = -1;   // index into the rows given, -1: no candidate
  double score = 0;   // the candidate's score (its mean distance, or Mahalanobis distance)
  double z = 0;       // its z-score among the rows
  double spread = 0;  // the median score of the others
};

// `rows`: one vector per machine (all the same length), rows with any NaN left out by the
// caller. Fewer than 3 rows: no candidate (two machines cannot say which one is odd).
PeerScore ScorePeers(const std::vector<std::vector<double>>& rows, Distance distance,
                     const PeerRule& rule);

}  // namespace upguard::machines
