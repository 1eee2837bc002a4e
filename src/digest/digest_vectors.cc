#include "digest/digest_vectors.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "base/text.h"
#include "digest/dtype.h"

namespace upguard {
namespace {

std::string FormatShape(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "scalar";
  std::string text;
  for (const int64_t size : shape) {
    if (!text.empty()) text += ',';
    text += std::to_string(size);
  }
  return text;
}

bool ParseInt(std::string_view text, int64_t* value) {
  if (text.empty() || text.size() > 18) return false;
  *value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    *value = *value * 10 + (c - '0');
  }
  return true;
}

bool ParseDouble(const std::string& text, double* value) {
  char* end = nullptr;
  *value = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

StatusOr<std::vector<int64_t>> ParseShape(std::string_view text) {
  std::vector<int64_t> shape;
  if (text == "scalar") return shape;
  while (true) {
    const size_t comma = text.find(',');
    int64_t size = 0;
    if (!ParseInt(text.substr(0, comma), &size)) {
      return InvalidArgument("bad shape size '" + std::string(text.substr(0, comma)) + "'");
    }
    shape.push_back(size);
    if (comma == std::string_view::npos) return shape;
    text.remove_prefix(comma + 1);
  }
}

// key=value fields separated by single spaces.
StatusOr<std::map<std::string, std::string>> SplitFields(std::string_view line) {
  std::map<std::string, std::string> fields;
  while (!line.empty()) {
    const size_t space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    const size_t equals = field.find('=');
    if (equals == std::string_view::npos) {
      return InvalidArgument("field '" + std::string(field) + "' is not key=value");
    }
    fields[std::string(field.substr(0, equals))] = std::string(field.substr(equals + 1));
    if (space == std::string_view::npos) break;
    line.remove_prefix(space + 1);
  }
  return fields;
}

}  // namespace

const char* DigestVectorsFile(int stats_version) {
  return stats_version == kStatsVersionV1 ? "tests/data/digest_vectors.txt"
                                          : "tests/data/digest_vectors_v2.txt";
}

StatusOr<DigestVector> MakeDigestVector(DType dtype, std::vector<int64_t> shape,
                                        std::string pattern, int stats_version) {
  DigestVector vector{dtype, std::move(shape), std::move(pattern), {}};
  uint64_t numel = 1;
  for (const int64_t size : vector.shape) numel *= static_cast<uint64_t>(size);
  ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, GeneratePattern(dtype, numel, vector.pattern));
  std::vector<int64_t> strides(vector.shape.size());
  int64_t stride = 1;
  for (size_t dim_idx = vector.shape.size(); dim_idx-- > 0;) {
    strides[dim_idx] = stride;
    stride *= vector.shape[dim_idx];
  }
  const TensorView view{dtype, vector.shape.data(), strides.data(),
                        static_cast<int>(vector.shape.size()), bytes.data()};
  DigestOptions options;
  options.stats_version = stats_version;
  ASSIGN_OR_RETURN(vector.expected, DigestTensor(view, options));
  return vector;
}

std::string FormatDigestVector(const DigestVector& vector) {
  std::string line = "dtype=" + std::string(DTypeName(vector.dtype)) +
                     " shape=" + FormatShape(vector.shape) + " pattern=" + vector.pattern +
                     " digest=" + vector.expected.digest.Hex();
  if (!vector.expected.has_stats) return line + " stats=none";
  const TensorStats& stats = vector.expected.stats;
  return line + " finite=" + std::to_string(stats.finite_count) +
         " nan=" + std::to_string(stats.nan_count) +
         " pinf=" + std::to_string(stats.pos_inf_count) +
         " ninf=" + std::to_string(stats.neg_inf_count) + " min=" + ExactDouble(stats.min) +
         " max=" + ExactDouble(stats.max) + " mean=" + ExactDouble(stats.mean) +
         " l2=" + ExactDouble(stats.l2);
}

StatusOr<DigestVector> ParseDigestVector(std::string_view line) {
  ASSIGN_OR_RETURN(auto fields, SplitFields(line));
  for (const char* key : {"dtype", "shape", "pattern", "digest"}) {
    if (fields.count(key) == 0) return InvalidArgument(std::string("missing field ") + key);
  }
  DigestVector vector;
  vector.dtype = DTypeFromName(fields["dtype"]);
  if (vector.dtype == DType::kInvalid) {
    return InvalidArgument("unknown dtype '" + fields["dtype"] + "'");
  }
  ASSIGN_OR_RETURN(vector.shape, ParseShape(fields["shape"]));
  vector.pattern = fields["pattern"];
  ASSIGN_OR_RETURN(vector.expected.digest, ParseDigestHex(fields["digest"]));
  if (fields.count("stats") != 0) {
    if (fields["stats"] != "none") return InvalidArgument("stats= must be 'none'");
    return vector;
  }
  vector.expected.has_stats = true;
  TensorStats& stats = vector.expected.stats;
  const std::pair<const char*, uint64_t*> counts[] = {{"finite", &stats.finite_count},
                                                      {"nan", &stats.nan_count},
                                                      {"pinf", &stats.pos_inf_count},
                                                      {"ninf", &stats.neg_inf_count}};
  for (const auto& [key, count] : counts) {
    int64_t value = 0;
    if (!ParseInt(fields[key], &value)) {
      return InvalidArgument(std::string("bad or missing count ") + key);
    }
    *count = static_cast<uint64_t>(value);
  }
  const std::pair<const char*, double*> values[] = {
      {"min", &stats.min}, {"max", &stats.max}, {"mean", &stats.mean}, {"l2", &stats.l2}};
  for (const auto& [key, value] : values) {
    if (!ParseDouble(fields[key], value)) {
      return InvalidArgument(std::string("bad or missing value ") + key);
    }
  }
  return vector;
}

StatusOr<std::vector<DigestVector>> ParseDigestVectors(std::string_view text) {
  std::vector<DigestVector> vectors;
  int line_no = 0;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    StatusOr<DigestVector> vector = ParseDigestVector(line);
    if (!vector.ok()) {
      return InvalidArgument("line " + std::to_string(line_no) + ": " + vector.status().ToString());
    }
    vectors.push_back(*std::move(vector));
  }
  return vectors;
}

}  // namespace upguard
