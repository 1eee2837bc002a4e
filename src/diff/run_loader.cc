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

Status RankTrace::CheckAllOps() const {
  for (size_t step_idx = 0; step_idx < steps().size(); ++step_idx) {
    const uint64_t cuts_before = cuts();
    RETURN_IF_ERROR(Ops(step_idx).status());
    if (cuts() != cuts_before) break;  // cut at this step: nothing after it is left
  }
  return Status::Ok();
}

namespace {

nlohmann::json ParseMeta(const std::string& meta_json) {
  nlohmann::json meta = nlohmann::json::parse(meta_json, nullptr, false);
  return meta.is_object() ? meta : nlohmann::json::object();
}

// Every record through TraceReader, grouped into steps in memory.
StatusOr<RankTrace> LoadDecoded(const std::string& path, bool allow_damaged) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  RankTrace trace;
  trace.path = path;
  trace.meta = ParseMeta(reader->meta_json());
  trace.version = reader->version();
  std::vector<StepOps> steps;
  TraceRecord record;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    if (record.type == RecordType::kCollective) {
      // The reader placed it (trace.md §5.6): its op is in the current step, steps.back().
      std::vector<OpRecord>& ops = steps.back().ops;
      const uint64_t op_idx = record.collective.op_seq - ops.front().seq;
      AttachCollective(std::move(record.collective.info), &ops[op_idx]);
      continue;
    }
    const uint32_t step = record.type == RecordType::kOp ? record.op.step : record.step_end.step;
    if (steps.empty() || steps.back().step != step || steps.back().end) {
      if (!steps.empty() && steps.back().step > step) {
        return DataLoss(path + ": step " + std::to_string(step) + " at byte " +
                        std::to_string(record.offset) + " comes after step " +
                        std::to_string(steps.back().step) +
                        "; steps must increase — was the file written by two processes?");
      }
      steps.push_back(StepOps{step, {}, std::nullopt});
    }
    if (record.type == RecordType::kOp) {
      steps.back().ops.push_back(std::move(record.op));
    } else {
      steps.back().end = record.step_end;
    }
  }
  trace.store = StepStore::FromDecoded(std::move(steps), reader->strings(), reader->complete(),
                                       reader->damage(), allow_damaged);
  return trace;
}

// The file mapped and indexed; ops decoded when asked for.
StatusOr<RankTrace> LoadIndexed(const std::string& path, bool allow_damaged) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceIndex> index, TraceIndex::Open(path));
  RankTrace trace;
  trace.path = path;
  trace.meta = ParseMeta(index->meta_json());
  trace.version = index->version();
  trace.store = StepStore::FromIndex(std::move(index), allow_damaged);
  return trace;
}

}  // namespace

StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(RankTrace trace, options.decode_all ? LoadDecoded(path, options.allow_damaged)
                                                       : LoadIndexed(path, options.allow_damaged));
  trace.rank = trace.meta.value("rank", 0);
  if (!options.index_on_demand) RETURN_IF_ERROR(trace.IndexAll());
  return trace;
}

void NoteIncomplete(const RankTrace& trace, const char* done, std::vector<std::string>* notes) {
  if (trace.damage()) {
    notes->push_back(trace.damage()->message + "; " + done + " only the readable part");
  } else if (!trace.complete()) {
    notes->push_back(trace.path +
                     " ends without its end record (the process stopped before closing the "
                     "trace); " +
                     done + " the steps it holds");
  }
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
