#include "run/run_loader.h"

#include <algorithm>

#include "base/file.h"
#include "run/run_meta.h"
#include "rundir/hidden_runs.h"

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
  RETURN_IF_ERROR(CheckRunMeta(json, path));
  return json;
}

// The largest world size a run directory can hold: rank<N>.ugt has at most 6 digits.
constexpr int64_t kMaxWorldSize = 1000000;

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

// A trace's RunMeta record, its fields' types checked; an empty record is an empty object.
StatusOr<nlohmann::json> ParseMeta(const std::string& path, const std::string& meta_json) {
  if (meta_json.empty()) return nlohmann::json::object();
  nlohmann::json meta = nlohmann::json::parse(meta_json, nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded()) {
    return DataLoss(path + ": its metadata record is not valid JSON; the trace may be damaged — " +
                    std::string(kRecordHint) + " again");
  }
  RETURN_IF_ERROR(CheckRunMeta(meta, path));
  return meta;
}

// A trace's rank is its file name's. The metadata, where it names a rank, must agree, and the
// rank must be below the run's world size and the trace's own: a trace copied under another
// rank's name would otherwise be compared as that rank, and a rank beyond the world size read
// out of bounds.
Status CheckRankIdentity(const RankTrace& trace, int file_rank, const Run& run,
                         const std::string& world_size_source) {
  const std::string hint =
      "; each rank's trace must be named rank<R>.ugt after the rank that recorded it — copy the "
      "right trace there or record the run again";
  ASSIGN_OR_RETURN(std::optional<int64_t> meta_rank, MetaInt(trace.meta, "rank", trace.path));
  if (meta_rank && *meta_rank != file_rank) {
    return DataLoss(trace.path + ": its metadata says rank " + std::to_string(*meta_rank) +
                    " but its file name says rank " + std::to_string(file_rank) + hint);
  }
  if (file_rank >= run.world_size) {
    return DataLoss(trace.path + ": rank " + std::to_string(file_rank) +
                    " is not below the run's world size " + std::to_string(run.world_size) + " (" +
                    world_size_source + ")" + hint);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> trace_world_size,
                   MetaInt(trace.meta, "world_size", trace.path));
  if (trace_world_size && file_rank >= *trace_world_size) {
    return DataLoss(trace.path + ": rank " + std::to_string(file_rank) +
                    " is not below the world size its metadata says, " +
                    std::to_string(*trace_world_size) + hint);
  }
  return Status::Ok();
}

// Every record through TraceReader, grouped into steps in memory.
StatusOr<RankTrace> LoadDecoded(const std::string& path, bool allow_damaged) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(path));
  RankTrace trace;
  trace.path = path;
  ASSIGN_OR_RETURN(trace.meta, ParseMeta(path, reader->meta_json()));
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
                                       reader->stopped(), reader->damage(), allow_damaged);
  return trace;
}

// The file mapped and indexed; ops decoded when asked for.
StatusOr<RankTrace> LoadIndexed(const std::string& path, bool allow_damaged) {
  ASSIGN_OR_RETURN(std::unique_ptr<TraceIndex> index, TraceIndex::Open(path));
  RankTrace trace;
  trace.path = path;
  ASSIGN_OR_RETURN(trace.meta, ParseMeta(path, index->meta_json()));
  trace.version = index->version();
  trace.store = StepStore::FromIndex(std::move(index), allow_damaged);
  return trace;
}

}  // namespace

StatusOr<RankTrace> LoadRankTrace(const std::string& path, const LoadOptions& options) {
  ASSIGN_OR_RETURN(RankTrace trace, options.decode_all ? LoadDecoded(path, options.allow_damaged)
                                                       : LoadIndexed(path, options.allow_damaged));
  // Alone, a trace is the rank its metadata names; LoadRun checks that against the file name.
  ASSIGN_OR_RETURN(std::optional<int64_t> rank, MetaInt(trace.meta, "rank", path));
  if (rank && (*rank < 0 || *rank >= kMaxWorldSize)) {
    return DataLoss(path + ": its metadata says rank " + std::to_string(*rank) +
                    ", not a rank (0 to " + std::to_string(kMaxWorldSize - 1) +
                    "); record the run again");
  }
  trace.rank = static_cast<int>(rank.value_or(0));
  if (!options.index_on_demand) RETURN_IF_ERROR(trace.IndexAll());
  return trace;
}

void NoteIncomplete(const RankTrace& trace, const char* done, std::vector<std::string>* notes) {
  if (trace.damage()) {
    notes->push_back(trace.damage()->message + "; " + done + " only the readable part");
  } else if (trace.stopped()) {
    notes->push_back(trace.path + ": " + StoppedNote(*trace.stopped()) + "; " + done +
                     " the steps it holds");
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
    // A recorder killed with its training left its run hidden in DIR/.upguard-record-<pid>.
    if (const std::string hidden = DescribeHiddenRecordings(dir); !hidden.empty()) {
      return NotFound(dir + " holds no rank<N>.ugt trace file, but " + hidden);
    }
    return NotFound(dir + " holds no rank<N>.ugt trace file; is it a run directory? " +
                    kRecordHint);
  }
  std::sort(rank_files.begin(), rank_files.end());
  if (IsRegularFile(dir + "/meta.json")) {
    ASSIGN_OR_RETURN(run.meta, ParseJsonFile(dir + "/meta.json"));
  } else {
    run.meta = nlohmann::json::object();
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> world_size,
                   MetaInt(run.meta, "world_size", dir + "/meta.json"));
  if (world_size && (*world_size < 1 || *world_size > kMaxWorldSize)) {
    return DataLoss(dir + "/meta.json: world_size " + std::to_string(*world_size) +
                    " is not a world size (1 to " + std::to_string(kMaxWorldSize) +
                    "); fix the field or record the run again");
  }
  run.world_size = static_cast<int>(world_size.value_or(static_cast<int64_t>(rank_files.size())));
  const std::string world_size_source =
      world_size ? "meta.json world_size" : "the number of rank<N>.ugt files";
  for (size_t idx = 0; idx < rank_files.size(); ++idx) {
    const int file_rank = static_cast<int>(idx);
    if (rank_files[idx].first != file_rank) {
      return DataLoss(dir + ": rank" + std::to_string(idx) + ".ugt is missing (found " +
                      rank_files[idx].second + "); copy every rank's trace into the directory");
    }
    ASSIGN_OR_RETURN(RankTrace trace, LoadRankTrace(rank_files[idx].second, options));
    RETURN_IF_ERROR(CheckRankIdentity(trace, file_rank, run, world_size_source));
    trace.rank = file_rank;
    run.ranks.push_back(std::move(trace));
  }
  return run;
}

}  // namespace upguard
