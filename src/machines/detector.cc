#include "machines/detector.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <thread>

namespace upguard::machines {
namespace {

double Percentile(std::vector<double>& values, double fraction) {
  const auto at = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + at, values.end());
  return values[at];
}

// With a denoiser, the least RMS distance (in units of the denoiser's range [lo, hi]) a
// candidate's samples must sit from the peers' median: `min_distance` of the metric's level or
// of its range, whichever is wider. The embedding's score limit is learned from healthy
// variation, and a fit on a quiet stretch sees machines within 0.01 % of each other (memory
// within 30 kB, packet rates within 3 of 1,310 a second); then ordinary offsets between healthy
// machines passed it: 0.6 % more memory at shutdown, 1.7-3.8 % more packets while another
// machine was faulted (measured, 4 machines). A fault moves a metric by tens of percent.
double LeastDeparture(double lo, double hi, double min_distance) {
  const double width = hi - lo;
  const double level = std::max(std::fabs(lo), std::fabs(hi));
  return min_distance * std::max(width, level) / width;
}

// The grid normalised once: per metric the denoiser (or none) and every series in units of the
// metric's range, as floats [metric][machine][point].
struct Prepared {
  std::vector<const Denoiser*> denoisers;
  std::vector<double> least_departure;  // per denoised metric, normalised units (LeastDeparture)
  // Per metric, LeastMeaningfulDeparture in normalised units (0: none), taken unclamped: the
  // encoder's clamp would hold a 600 MB/s disk fill a few ranges from a healthy 8 KB/s.
  std::vector<double> least_meaningful;
  std::vector<float> values;
  size_t machines = 0;
  size_t length = 0;
  const float* Series(size_t metric, size_t machine) const {
    return values.data() + (metric * machines + machine) * length;
  }
};

Prepared Prepare(const Grid& grid, const std::vector<MetricRange>& ranges,
                 const MachineModel* model, double min_distance) {
  Prepared out;
  out.machines = grid.machines.size();
  out.length = grid.length;
  out.values.resize(grid.values.size());
  for (size_t metric = 0; metric < grid.metrics.size(); ++metric) {
    const Denoiser* d = model ? model->Find(grid.metrics[metric]) : nullptr;
    out.denoisers.push_back(d);
    const double lo = d ? d->lo : ranges[metric].lo;
    const double hi = d ? d->hi : ranges[metric].hi;
    out.least_departure.push_back(d ? LeastDeparture(lo, hi, min_distance) : 0.0);
    out.least_meaningful.push_back(LeastMeaningfulDeparture(grid.metrics[metric]) / (hi - lo));
    for (size_t machine = 0; machine < out.machines; ++machine) {
      const double* series = grid.Series(metric, machine);
      float* to = out.values.data() + (metric * out.machines + machine) * out.length;
      for (size_t point = 0; point < out.length; ++point) {
        to[point] = static_cast<float>((series[point] - lo) / (hi - lo));
      }
    }
  }
  return out;
}

// Buffers one thread reuses from window to window.
struct Scratch {
  std::vector<float> windows;
  std::vector<float> embeddings;
  std::vector<size_t> owners;
  std::vector<double> squares;
};

// The machines' departures from their per-point median over one window (the median over every
// machine, the candidate's own value a single vote): the candidate's, and its peers' typical.
struct Departures {
  double total = 0;      // the candidate's sum of squared per-point distances
  double largest = 0;    // the largest of them
  double peers_rms = 0;  // the median over the other machines of their RMS distance
  // The candidate's RMS distance with its farthest point left out.
  double RestRms(size_t window) const {
    return std::sqrt(std::max(0.0, total - largest) / static_cast<double>(window));
  }
};

// `clamped`: values are taken within [kInputLow, kInputHigh] as the denoiser takes them (a metric
// far outside its healthy range is "far out" alike on every machine: during a 50 s stall of the
// whole job, step times of 52.96 and 52.99 s sat 3 healthy ranges apart, measured).
Departures DeparturesOf(const float* windows, size_t n, size_t window, size_t candidate,
                        bool clamped, std::vector<double>* scratch) {
  std::vector<float> column(n);
  std::vector<double>& squares = *scratch;
  squares.assign(n, 0.0);
  const auto value = [&](size_t i, size_t t) -> double {
    const float v = windows[i * window + t];
    return clamped ? std::clamp(v, kInputLow, kInputHigh) : v;
  };
  Departures out;
  for (size_t t = 0; t < window; ++t) {
    for (size_t i = 0; i < n; ++i) column[i] = static_cast<float>(value(i, t));
    std::nth_element(column.begin(), column.begin() + n / 2, column.end());
    double median = column[n / 2];
    if (n % 2 == 0) {  // the mean of the two middle values: one of 4 machines moves it least
      median = (median + *std::max_element(column.begin(), column.begin() + n / 2)) / 2;
    }
    for (size_t i = 0; i < n; ++i) {
      const double deviation = value(i, t) - median;
      squares[i] += deviation * deviation;
      if (i == candidate) out.largest = std::max(out.largest, deviation * deviation);
    }
  }
  out.total = squares[candidate];
  squares.erase(squares.begin() + static_cast<std::ptrdiff_t>(candidate));
  std::nth_element(squares.begin(), squares.begin() + squares.size() / 2, squares.end());
  out.peers_rms = std::sqrt(squares[squares.size() / 2] / static_cast<double>(window));
  return out;
}

// Whether the peer score's candidate is a flag: with its farthest sample left out, it still
// sits at least `least` (normalised units, RMS over the window) from the per-point median and
// `ratio` times as far as its typical peer. A one-sample blip sits in `window` windows in a row
// and would pass the continuity check; left out, nothing stands apart. A fault that lasts moves
// every point from its onset on, and an intermittent one (a rank stopped every other second)
// more than one. `least`: LeastDeparture with a denoiser, else the raw rule's min_distance.
bool IsFlag(const Departures& departures, size_t window, double least, double ratio) {
  const double rest = departures.RestRms(window);
  return rest > 0 && rest >= least && rest >= ratio * departures.peers_rms;
}

// The machine flagged in the window ending at `end`, trying metrics in `order`.
std::optional<WindowFlag> FlagWindow(const Prepared& data, const DetectOptions& options,
                                     const std::vector<size_t>& order, size_t end,
                                     Scratch* scratch) {
  const size_t window = options.window;
  const size_t first = end + 1 - window;
  std::optional<WindowFlag> best;
  double best_strength = 0;
  for (size_t metric : order) {
    scratch->windows.clear();
    scratch->owners.clear();
    for (size_t machine = 0; machine < data.machines; ++machine) {
      const float* series = data.Series(metric, machine) + first;
      bool complete = true;
      for (size_t idx = 0; idx < window && complete; ++idx) complete = std::isfinite(series[idx]);
      if (!complete) continue;
      scratch->windows.insert(scratch->windows.end(), series, series + window);
      scratch->owners.push_back(machine);
    }
    const size_t n = scratch->owners.size();
    const Denoiser* denoiser = data.denoisers[metric];
    PeerScore score;
    if (denoiser == nullptr) {
      score = ScorePeers(scratch->windows.data(), n, window, options.distance, options.rule);
    } else {
      scratch->embeddings.resize(n * denoiser->latent);
      denoiser->EmbedBatch(scratch->windows.data(), n, window, scratch->embeddings.data());
      PeerRule rule = options.rule;
      rule.min_distance = denoiser->score_limit;  // latent units, learned from healthy windows
      score = ScorePeers(scratch->embeddings.data(), n, denoiser->latent, options.distance, rule);
    }
    if (score.machine < 0) continue;
    const Departures departures =
        DeparturesOf(scratch->windows.data(), n, window, static_cast<size_t>(score.machine),
                     denoiser != nullptr, &scratch->squares);
    const double least = denoiser ? data.least_departure[metric] : options.rule.min_distance;
    if (!IsFlag(departures, window, least, options.rule.ratio)) continue;
    const double meaningful = data.least_meaningful[metric];
    if (meaningful > 0 &&
        DeparturesOf(scratch->windows.data(), n, window, static_cast<size_t>(score.machine),
                     /*clamped=*/false, &scratch->squares)
                .RestRms(window) < meaningful) {
      continue;
    }
    const WindowFlag flag{end, scratch->owners[static_cast<size_t>(score.machine)], metric,
                          score.z};
    if (options.priority_learned) return flag;
    const double strength = departures.RestRms(window) / least;
    if (!best || strength > best_strength) {
      best = flag;
      best_strength = strength;
    }
  }
  return best;
}

// Every window's flag, the windows shared out among threads in contiguous runs.
std::vector<std::optional<WindowFlag>> FlagAll(const Prepared& data, const DetectOptions& options,
                                               const std::vector<size_t>& order) {
  const size_t windows = data.length - options.window + 1;
  std::vector<std::optional<WindowFlag>> flags(windows);
  size_t threads = options.threads;
  if (threads == 0) threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
  // A thread is worth starting for about 100,000 machine-windows of work.
  const size_t work = windows * data.machines * order.size();
  threads = std::clamp<size_t>(work / 100000, 1, threads);
  auto run = [&](size_t begin, size_t stop) {
    Scratch scratch;
    for (size_t idx = begin; idx < stop; ++idx) {
      flags[idx] = FlagWindow(data, options, order, idx + options.window - 1, &scratch);
    }
  };
  std::vector<std::thread> pool;
  const size_t chunk = (windows + threads - 1) / threads;
  for (size_t t = 1; t < threads; ++t) {
    pool.emplace_back(run, std::min(windows, t * chunk), std::min(windows, (t + 1) * chunk));
  }
  run(0, std::min(windows, chunk));
  for (std::thread& thread : pool) thread.join();
  return flags;
}

// Extends a detection by one more window that flagged its machine.
void Absorb(const WindowFlag& flag, Detection* detection) {
  detection->last_point = std::max(detection->last_point, flag.end_point);
  detection->score = std::max(detection->score, flag.z);
  if (std::find(detection->metrics.begin(), detection->metrics.end(), flag.metric) ==
      detection->metrics.end()) {
    detection->metrics.push_back(flag.metric);
  }
}

}  // namespace

double LeastMeaningfulDeparture(const std::string& metric) {
  return metric.find("_bytes_per_second") != std::string::npos ? kLeastBytesPerSecond : 0.0;
}

std::vector<MetricRange> RangesOf(const Grid& grid) {
  std::vector<MetricRange> ranges(grid.metrics.size());
  for (size_t metric = 0; metric < grid.metrics.size(); ++metric) {
    std::vector<double> values;
    for (size_t machine = 0; machine < grid.machines.size(); ++machine) {
      const double* series = grid.Series(metric, machine);
      for (size_t point = 0; point < grid.length; ++point) {
        if (std::isfinite(series[point])) values.push_back(series[point]);
      }
    }
    ranges[metric] = RangeOfValues(values);
  }
  return ranges;
}

MetricRange RangeOfValues(std::vector<double>& values) {
  MetricRange range;
  if (values.empty()) return range;
  range.lo = Percentile(values, 0.01);
  range.hi = Percentile(values, 0.99);
  const double floor = kRangeFloor * std::max(std::fabs(range.lo), std::fabs(range.hi));
  if (range.hi - range.lo < floor) {
    const double middle = (range.lo + range.hi) / 2;
    range.lo = middle - floor / 2;
    range.hi = middle + floor / 2;
  }
  if (!(range.hi > range.lo)) range.hi = range.lo + 1;
  return range;
}

std::vector<size_t> PriorityOrder(const Grid& grid, const MachineModel& model) {
  std::vector<size_t> order;
  std::vector<bool> placed(grid.metrics.size(), false);
  auto place = [&](size_t metric) {
    if (!placed[metric]) order.push_back(metric);
    placed[metric] = true;
  };
  for (const std::string& name : model.priority) {
    for (size_t metric = 0; metric < grid.metrics.size(); ++metric) {
      if (grid.metrics[metric] == name) place(metric);
    }
  }
  for (size_t metric = 0; metric < grid.metrics.size(); ++metric) place(metric);
  return order;
}

std::vector<bool> DenoisedMetrics(const Grid& grid, const MachineModel* model) {
  std::vector<bool> out(grid.metrics.size(), false);
  for (size_t metric = 0; model && metric < grid.metrics.size(); ++metric) {
    out[metric] = model->Find(grid.metrics[metric]) != nullptr;
  }
  return out;
}

DetectResult Detect(const Grid& grid, const std::vector<MetricRange>& ranges,
                    const DetectOptions& options) {
  DetectResult result;
  if (options.window == 0 || grid.length < options.window) return result;
  std::vector<size_t> order = options.metric_order;
  if (order.empty()) {
    order.resize(grid.metrics.size());
    std::iota(order.begin(), order.end(), 0);
  }
  const Prepared data = Prepare(grid, ranges, options.model, options.rule.min_distance);
  const std::vector<std::optional<WindowFlag>> flags = FlagAll(data, options, order);
  const size_t needed = std::max<size_t>(options.continuity, 1);
  size_t run_machine = 0;
  size_t run_length = 0;
  size_t run_first = 0;
  for (const std::optional<WindowFlag>& maybe : flags) {
    if (!maybe) {
      run_length = 0;
      continue;
    }
    const WindowFlag& flag = *maybe;
    const size_t end = flag.end_point;
    result.flags.push_back(flag);
    // An unflagged window ended the run above, so a run is always of consecutive windows.
    if (run_length > 0 && flag.machine == run_machine) {
      ++run_length;
    } else {
      run_machine = flag.machine;
      run_length = 1;
      run_first = end;
    }
    if (run_length < needed) continue;
    if (run_length == needed) {  // the check is met: the run's earlier windows count too
      Detection detection;
      detection.machine = run_machine;
      detection.first_point = run_first;
      detection.alert_point = end;
      for (size_t idx = result.flags.size() - needed; idx + 1 < result.flags.size(); ++idx) {
        Absorb(result.flags[idx], &detection);
      }
      result.detections.push_back(detection);
    }
    Absorb(flag, &result.detections.back());
  }
  return result;
}

}  // namespace upguard::machines
