#include "diff/run_loader.h"

#include <algorithm>

#include "base/file.h"

namespace upguard {
namespace {

constexpr char kRecordHint[] = "record one with `upguard record -o DIR -- python3 train.py`";

StatusOr<nlohmann::json> ParseJsonFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) {
    return DataLoss(path + ": not valid JSON metadata; the run directory may be damaged — " +
                    std::string(kRecordHint) + " again");
  }
  return json;
}

// "rank12.ugt" -> 12; -1 for other names.
int RankOfFileName(const std::string& name) {
  constexpr std::string_view kPrefix = "rank", kSuffix = ".ugt";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return -1;
  }
  std::string digits = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 6 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::stoi(digits);
}

}  // namespace

const StepOps* RankTrace::FindStep(uint32_t step) const {
  auto it = std::lower_bound(steps.begin(), steps.end(), step,
                             [](const StepOps& s, uint32_t value) { return s.step < value; });
  return it != steps.end() && it->step == step ? &*it : nullptr;
}

StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  RankTrace trace;
  trace.path = path;
  trace.meta = nlohmann::json::parse(reader->meta_json(), nullptr, false);
  if (!trace.meta.is_object()) trace.meta = nlohmann::json::object();
  trace.rank = trace.meta.value("rank", 0);
  TraceRecord record;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    const uint32_t step = record.type == RecordType::kOp ? record.op.step : record.step_end.step;
    if (trace.steps.empty() || trace.steps.back().step != step || trace.steps.back().end) {
      if (!trace.steps.empty() && trace.steps.back().step > step) {
        return DataLoss(path + ": step " + std::to_string(step) + " at byte " +
                        std::to_string(record.offset) + " comes after step " +
                        std::to_string(trace.steps.back().step) +
                        "; steps must increase — was the file written by two processes?");
      }
      trace.steps.push_back(StepOps{step, {}, std::nullopt});
    }
    if (record.type == RecordType::kOp) {
      trace.steps.back().ops.push_back(std::move(record.op));
    } else {
      trace.steps.back().end = record.step_end;
    }
  }
  trace.strings = reader->strings();
  trace.complete = reader->complete();
  trace.damage = reader->damage();
  if (trace.damage && !options.allow_damaged) {
    return DataLoss(trace.damage->message +
                    "; to compare the readable part anyway, pass --allow-damaged");
  }
  return trace;
}

StatusOr<Run> LoadRun(const std::string& dir, const LoadOptions& options) {
  if (!IsDirectory(dir)) {
    if (IsRegularFile(dir)) {
      return InvalidArgument(dir + " is a file; pass the run directory that contains it (" +
                             kRecordHint + ")");
    }
    return NotFound(dir + ": no such run directory; " + kRecordHint);
  }
  Run run;
  run.dir = dir;
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListDirectory(dir));
  std::vector<std::pair<int, std::string>> rank_files;
  for (const std::string& name : names) {
    int rank = RankOfFileName(name);
    if (rank >= 0) rank_files.emplace_back(rank, dir + "/" + name);
  }
  if (rank_files.empty()) {
    return NotFound(dir + " holds no rank<N>.ugt trace file; is it a run directory? " +
                    kRecordHint);
  }
  std::sort(rank_files.begin(), rank_files.end());
  if (IsRegularFile(dir + "/meta.json")) {
    ASSIGN_OR_RETURN(run.meta, ParseJsonFile(dir + "/meta.json"));
  } else {
    run.meta = nlohmann::json::object();
  }
  run.world_size = run.meta.value("world_size", static_cast<int>(rank_files.size()));
  for (size_t idx = 0; idx < rank_files.size(); ++idx) {
    if (rank_files[idx].first != static_cast<int>(idx)) {
      return DataLoss(dir + ": rank" + std::to_string(idx) + ".ugt is missing (found " +
                      rank_files[idx].second + "); copy every rank's trace into the directory");
    }
    ASSIGN_OR_RETURN(RankTrace trace, LoadRankTrace(rank_files[idx].second, options));
    run.ranks.push_back(std::move(trace));
  }
  return run;
}

}  // namespace upguard
