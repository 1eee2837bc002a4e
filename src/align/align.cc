#include "align/align.h"

#include <algorithm>

namespace upguard {
namespace {

// Levels of anchors within anchors; deeper gaps go straight to Myers. Bounds the patience work
// at kMaxPatienceDepth passes over the input even when each level finds few anchors.
constexpr int kMaxPatienceDepth = 32;
constexpr uint32_t kNone = UINT32_MAX;

bool Empty(const KeyRegion& region) {
  return region.begin_a == region.end_a || region.begin_b == region.end_b;
}

class Aligner {
 public:
  Aligner(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, uint32_t key_count,
          const AlignOptions& options)
      : a_(a), b_(b), options_(options), count_a_(key_count), count_b_(key_count) {}

  KeyAlignment Run() {
    Align(KeyRegion{0, static_cast<uint32_t>(a_.size()), 0, static_cast<uint32_t>(b_.size())}, 0);
    return std::move(out_);
  }

 private:
  enum class Split { kFound, kNothingCommon, kGaveUp };

  void Match(uint32_t index_a, uint32_t index_b) { out_.matches.push_back({index_a, index_b}); }

  // Matches the common prefix of `region`; returns what is left without its common suffix,
  // whose length goes to *suffix (MatchSuffix matches it once the middle is done).
  KeyRegion Trim(KeyRegion region, uint32_t* suffix) {
    while (!Empty(region) && a_[region.begin_a] == b_[region.begin_b]) {
      Match(region.begin_a++, region.begin_b++);
    }
    *suffix = 0;
    while (!Empty(region) && a_[region.end_a - 1] == b_[region.end_b - 1]) {
      --region.end_a;
      --region.end_b;
      ++*suffix;
    }
    return region;
  }

  void MatchSuffix(const KeyRegion& inner, uint32_t suffix) {
    for (uint32_t idx = 0; idx < suffix; ++idx) Match(inner.end_a + idx, inner.end_b + idx);
  }

  void Align(const KeyRegion& region, int depth) {
    uint32_t suffix = 0;
    const KeyRegion inner = Trim(region, &suffix);
    if (!Empty(inner)) {
      const std::vector<KeyMatch> anchors =
          depth < kMaxPatienceDepth ? Anchors(inner) : std::vector<KeyMatch>();
      if (anchors.empty()) {
        Myers(inner);
      } else {
        uint32_t from_a = inner.begin_a, from_b = inner.begin_b;
        for (const KeyMatch& anchor : anchors) {
          Align(KeyRegion{from_a, anchor.a, from_b, anchor.b}, depth + 1);
          Match(anchor.a, anchor.b);
          from_a = anchor.a + 1;
          from_b = anchor.b + 1;
        }
        Align(KeyRegion{from_a, inner.end_a, from_b, inner.end_b}, depth + 1);
      }
    }
    MatchSuffix(inner, suffix);
  }

  // The longest chain, in order on both sides, of keys found exactly once on each side.
  std::vector<KeyMatch> Anchors(const KeyRegion& region) {
    for (uint32_t idx = region.begin_a; idx < region.end_a; ++idx) {
      ++count_a_[a_[idx]].count;
      count_a_[a_[idx]].index = idx;
    }
    for (uint32_t idx = region.begin_b; idx < region.end_b; ++idx) {
      ++count_b_[b_[idx]].count;
      count_b_[b_[idx]].index = idx;
    }
    std::vector<KeyMatch> unique;  // in the order of a
    for (uint32_t idx = region.begin_a; idx < region.end_a; ++idx) {
      const uint32_t key = a_[idx];
      if (count_a_[key].count == 1 && count_b_[key].count == 1) {
        unique.push_back({idx, count_b_[key].index});
      }
    }
    for (uint32_t idx = region.begin_a; idx < region.end_a; ++idx) count_a_[a_[idx]] = {};
    for (uint32_t idx = region.begin_b; idx < region.end_b; ++idx) count_b_[b_[idx]] = {};
    return LongestIncreasing(unique);
  }

  // Patience sorting: the longest subsequence of `pairs` (ordered by a) increasing in b.
  static std::vector<KeyMatch> LongestIncreasing(const std::vector<KeyMatch>& pairs) {
    std::vector<uint32_t> tails;  // tails[len - 1]: the pair ending the best chain of len
    std::vector<uint32_t> previous(pairs.size(), kNone);
    for (uint32_t pair_idx = 0; pair_idx < pairs.size(); ++pair_idx) {
      const auto pos =
          std::lower_bound(tails.begin(), tails.end(), pairs[pair_idx].b,
                           [&pairs](uint32_t tail, uint32_t b) { return pairs[tail].b < b; });
      if (pos != tails.begin()) previous[pair_idx] = *(pos - 1);
      if (pos == tails.end()) {
        tails.push_back(pair_idx);
      } else {
        *pos = pair_idx;
      }
    }
    std::vector<KeyMatch> chain;
    for (uint32_t at = tails.empty() ? kNone : tails.back(); at != kNone; at = previous[at]) {
      chain.push_back(pairs[at]);
    }
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

  // Linear-space Myers: split at the middle snake, align both halves.
  void Myers(const KeyRegion& region) {
    uint32_t suffix = 0;
    const KeyRegion inner = Trim(region, &suffix);
    if (!Empty(inner)) {
      uint32_t split_a = 0, split_b = 0;
      switch (Bisect(inner, &split_a, &split_b)) {
        case Split::kFound:
          Myers(KeyRegion{inner.begin_a, split_a, inner.begin_b, split_b});
          Myers(KeyRegion{split_a, inner.end_a, split_b, inner.end_b});
          break;
        case Split::kNothingCommon:
          break;
        case Split::kGaveUp:
          out_.unaligned.push_back(inner);
          break;
      }
    }
    MatchSuffix(inner, suffix);
  }

  // The most differences looked for in a region of `elements` keys (AlignOptions).
  int64_t Cap(int64_t elements) const {
    const uint64_t by_work =
        options_.work_budget / static_cast<uint64_t>(std::max<int64_t>(elements, 1));
    const uint64_t cap = std::max<uint64_t>(options_.max_edit_distance,
                                            std::min<uint64_t>(by_work, kMaxEditDistanceCeiling));
    return static_cast<int64_t>(cap);
  }

  // The middle snake of a non-empty region whose first and last keys differ (Myers 1986, §4b;
  // the loop of diff-match-patch's diff_bisect): forward paths from the top left and reverse
  // paths from the bottom right, one more difference per round, until they overlap. v_fwd_[k]
  // is the furthest x reached on diagonal k = x - y; v_rev_ the same counted from the end.
  Split Bisect(const KeyRegion& region, uint32_t* split_a, uint32_t* split_b) {
    const uint32_t* a = a_.data() + region.begin_a;
    const uint32_t* b = b_.data() + region.begin_b;
    const int64_t n = region.end_a - region.begin_a;
    const int64_t m = region.end_b - region.begin_b;
    const int64_t max_d = (n + m + 1) / 2;
    const int64_t d_limit = std::min<int64_t>(max_d, Cap(n + m) / 2 + 1);
    const int64_t offset = d_limit + 1;
    const int64_t length = 2 * d_limit + 3;
    v_fwd_.assign(length, -1);
    v_rev_.assign(length, -1);
    v_fwd_[offset + 1] = 0;
    v_rev_[offset + 1] = 0;
    const int64_t delta = n - m;
    const bool odd = delta % 2 != 0;  // forward paths meet the reverse ones (else the reverse)
    int64_t fwd_start = 0, fwd_end = 0, rev_start = 0, rev_end = 0;  // diagonals run off
    auto found = [&](int64_t x, int64_t y) {
      if ((x == 0 && y == 0) || (x == n && y == m)) return Split::kGaveUp;  // cannot happen
      *split_a = region.begin_a + static_cast<uint32_t>(x);
      *split_b = region.begin_b + static_cast<uint32_t>(y);
      return Split::kFound;
    };
    for (int64_t d = 0; d < d_limit; ++d) {
      for (int64_t k = -d + fwd_start; k <= d - fwd_end; k += 2) {
        const int64_t at = offset + k;
        int64_t x = (k == -d || (k != d && v_fwd_[at - 1] < v_fwd_[at + 1])) ? v_fwd_[at + 1]
                                                                             : v_fwd_[at - 1] + 1;
        int64_t y = x - k;
        while (x < n && y < m && a[x] == b[y]) ++x, ++y;
        v_fwd_[at] = x;
        if (x > n) {
          fwd_end += 2;
        } else if (y > m) {
          fwd_start += 2;
        } else if (odd) {
          const int64_t rev_at = offset + delta - k;
          if (rev_at >= 0 && rev_at < length && v_rev_[rev_at] != -1 && x >= n - v_rev_[rev_at]) {
            return found(x, y);
          }
        }
      }
      for (int64_t k = -d + rev_start; k <= d - rev_end; k += 2) {
        const int64_t at = offset + k;
        int64_t x = (k == -d || (k != d && v_rev_[at - 1] < v_rev_[at + 1])) ? v_rev_[at + 1]
                                                                             : v_rev_[at - 1] + 1;
        int64_t y = x - k;
        while (x < n && y < m && a[n - x - 1] == b[m - y - 1]) ++x, ++y;
        v_rev_[at] = x;
        if (x > n) {
          rev_end += 2;
        } else if (y > m) {
          rev_start += 2;
        } else if (!odd) {
          const int64_t fwd_at = offset + delta - k;
          if (fwd_at >= 0 && fwd_at < length && v_fwd_[fwd_at] != -1) {
            const int64_t fwd_x = v_fwd_[fwd_at];
            if (fwd_x >= n - x) return found(fwd_x, offset + fwd_x - fwd_at);
          }
        }
      }
    }
    // Every difference count up to max_d tried without the paths meeting: nothing in common.
    return d_limit == max_d ? Split::kNothingCommon : Split::kGaveUp;
  }

  struct Count {
    uint32_t count = 0;
    uint32_t index = 0;  // of the last occurrence
  };

  const std::vector<uint32_t>& a_;
  const std::vector<uint32_t>& b_;
  const AlignOptions& options_;
  std::vector<Count> count_a_;  // by key; all zero between Anchors() calls
  std::vector<Count> count_b_;
  std::vector<int64_t> v_fwd_;
  std::vector<int64_t> v_rev_;
  KeyAlignment out_;
};

}  // namespace

KeyAlignment AlignKeys(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                       uint32_t key_count, const AlignOptions& options) {
  return Aligner(a, b, key_count, options).Run();
}

}  // namespace upguard
