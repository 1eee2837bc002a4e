#include "tools/synthetic_trace.h"

#include <xxhash.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "tools/synthetic_program.h"
#include "trace/format.h"
#include "trace/writer.h"

namespace upguard::synthetic {
namespace {

constexpr uint64_t kPlantSalt = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kViewKey = 0x7f4a7c159e3779b9ull;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

Digest128 Mix(const Digest128& d, uint64_t key) {
  return Digest128{SplitMix(d.high ^ key), SplitMix(d.low + key)};
}

// Plausible statistics that change whenever the digest does.
TensorStats StatsOf(const Digest128& d, int64_t numel) {
  TensorStats stats;
  stats.min = -static_cast<double>(d.low & 0xFFFF) / 8192.0;
  stats.max = static_cast<double>(d.high & 0xFFFF) / 8192.0;
  stats.mean = (static_cast<double>((d.low >> 16) & 0xFFFF) / 65536.0 - 0.5) * 0.1;
  stats.l2 = static_cast<double>((d.high >> 16) & 0xFFFFF) / 1024.0;
  stats.finite_count = static_cast<uint64_t>(numel);
  return stats;
}

// Runs template ops against the slot values and writes them.
class Executor {
 public:
  Executor(const Program& program, const SyntheticOptions& options, TraceWriter* writer)
      : values_(static_cast<size_t>(program.num_slots)), options_(options), writer_(writer) {
    for (size_t slot = 0; slot < values_.size(); ++slot) {
      values_[slot] = Mix(Digest128{options.seed, slot}, 0);
    }
  }

  void SetValue(int slot, const Digest128& value) { values_[static_cast<size_t>(slot)] = value; }

  // `key` tells template ops apart; output `salt_output` (if any) computes differently.
  Status Run(TemplateOp& t, uint32_t step, uint64_t key, int salt_output = -1) {
    OpRecord& record = t.record;
    record.step = step;
    hash_input_.resize(8 + kDigestBytes * record.inputs.size());
    std::memcpy(hash_input_.data(), &key, 8);
    size_t used = 8;
    for (size_t arg_idx = 0; arg_idx < record.inputs.size(); ++arg_idx) {
      ArgRecord& arg = record.inputs[arg_idx];
      if (t.inputs[arg_idx].flow == Flow::kRead) {
        arg.digest = values_[static_cast<size_t>(t.inputs[arg_idx].slot)];
        SetStats(t.inputs[arg_idx], &arg);
      }
      if (arg.kind == ArgKind::kTensor || arg.kind == ArgKind::kScalar) {
        std::memcpy(hash_input_.data() + used, &arg.digest, kDigestBytes);
        used += kDigestBytes;
      }
    }
    const XXH128_hash_t hash = XXH3_128bits(hash_input_.data(), used);
    const Digest128 base{hash.high64, hash.low64};
    for (size_t out_idx = 0; out_idx < record.outputs.size(); ++out_idx) {
      const FlowArg& flow = t.outputs[out_idx];
      Digest128 value;
      switch (flow.flow) {
        case Flow::kCompute:
          value = Mix(base, out_idx);
          break;
        case Flow::kCopy:
          value = values_[static_cast<size_t>(flow.from)];
          break;
        case Flow::kView:
          values_[static_cast<size_t>(flow.slot)] =
              Mix(values_[static_cast<size_t>(flow.from)], kViewKey);
          continue;
        default:
          continue;
      }
      if (static_cast<int>(out_idx) == salt_output) value = Mix(value, kPlantSalt);
      values_[static_cast<size_t>(flow.slot)] = value;
      record.outputs[out_idx].digest = value;
      SetStats(flow, &record.outputs[out_idx]);
    }
    return writer_->WriteOp(record);
  }

 private:
  void SetStats(const FlowArg& flow, ArgRecord* arg) const {
    arg->has_stats = options_.stats && DTypeIsFloating(arg->dtype);
    if (arg->has_stats) arg->stats = StatsOf(arg->digest, flow.numel);
  }

  std::vector<Digest128> values_;
  const SyntheticOptions& options_;
  TraceWriter* writer_;
  std::vector<char> hash_input_;
};

// A step's template is megabytes of small heap blocks, read once per step: fetch an op's blocks
// a few ops before it runs (the generator is otherwise bound by these cache misses).
constexpr uint64_t kPrefetchOps = 4;
void Prefetch(const TemplateOp& t) {
  __builtin_prefetch(t.inputs.data());
  __builtin_prefetch(t.outputs.data());
  __builtin_prefetch(t.record.inputs.data());
  __builtin_prefetch(t.record.inputs.data() + 1);
  __builtin_prefetch(t.record.outputs.data());
}

// The output a culprit plant changes: the first tensor output with a value; -1 if none.
int SaltableOutput(const TemplateOp& t) {
  for (size_t out_idx = 0; out_idx < t.outputs.size(); ++out_idx) {
    const Flow flow = t.outputs[out_idx].flow;
    if (flow == Flow::kCompute || flow == Flow::kCopy) return static_cast<int>(out_idx);
  }
  return -1;
}

int FirstScalarInput(const TemplateOp& t) {
  for (size_t arg_idx = 0; arg_idx < t.record.inputs.size(); ++arg_idx) {
    if (t.record.inputs[arg_idx].kind == ArgKind::kScalar) return static_cast<int>(arg_idx);
  }
  return -1;
}

// Can the plant go at `t`? `group_start`: the previous op of the step was top-level (or there
// was none), so `t` starts a top-level op's group and nothing before it is nested in a later op.
bool Eligible(Plant plant, const TemplateOp& t, bool group_start) {
  switch (plant) {
    case Plant::kNone:
      return false;
    case Plant::kCulprit:
      return SaltableOutput(t) >= 0;
    case Plant::kArgument:
      return group_start && t.record.depth == 0 && FirstScalarInput(t) >= 0 &&
             SaltableOutput(t) >= 0 && t.outputs[SaltableOutput(t)].flow == Flow::kCompute;
    case Plant::kStructural:
      return group_start;
  }
  return false;
}

std::string OtherText(const std::string& text) {
  if (text == "none") return "tanh";
  if (text == "True") return "False";
  if (text == "False") return "True";
  return text + "1";
}

std::string RunMetaJson(const SyntheticOptions& options) {
  nlohmann::json meta = {
      {"rank", options.rank},
      {"local_rank", options.rank},
      {"world_size", options.world_size},
      {"argv", {"/usr/bin/python3", "synthetic_gpt.py", "--seed", std::to_string(options.seed)}},
      {"upguard_version", "0.1.0"},
      {"trace_version", kTraceVersion},
      {"torch_version", "synthetic"},
      {"synthetic",
       {{"ops", options.ops},
        {"steps", options.steps},
        {"plant", PlantName(options.plant)},
        {"plant_at", options.plant_at},
        {"shift_ids", options.shift_ids}}}};
  return meta.dump();
}

std::string RunDirMetaJson(const SyntheticOptions& options) {
  nlohmann::json ranks = nlohmann::json::array();
  for (uint32_t rank = 0; rank < options.world_size; ++rank) {
    ranks.push_back("rank" + std::to_string(rank) + ".ugt");
  }
  nlohmann::json meta = {
      {"format", "upguard-run"},
      {"trace_version", kTraceVersion},
      {"upguard_version", "0.1.0"},
      {"argv", {"/usr/bin/python3", "synthetic_gpt.py", "--seed", std::to_string(options.seed)}},
      {"cwd", "/synthetic"},
      {"world_size", options.world_size},
      {"created", "2024-01-01T00:00:00Z"},
      {"ranks", ranks}};
  return meta.dump(2) + "\n";
}

}  // namespace

bool ParsePlant(const std::string& text, Plant* plant) {
  for (Plant candidate : {Plant::kCulprit, Plant::kArgument, Plant::kStructural}) {
    if (text == PlantName(candidate)) {
      *plant = candidate;
      return true;
    }
  }
  return false;
}

StatusOr<Plant> PlantOfFlag(bool given, const std::string& text) {
  Plant plant = Plant::kCulprit;
  if (given && !ParsePlant(text, &plant)) {
    return InvalidArgument("--diverge-kind '" + text +
                           "': expected culprit, argument or structural");
  }
  return plant;
}

std::string PlantedFields(Plant plant, const PlantedChange& planted) {
  return std::string("kind=") + PlantName(plant) + " op=" + planted.op +
         " seq=" + std::to_string(planted.seq) + " step=" + std::to_string(planted.step) +
         " index=" + std::to_string(planted.index);
}

const char* PlantName(Plant plant) {
  switch (plant) {
    case Plant::kNone:
      return "none";
    case Plant::kCulprit:
      return "culprit";
    case Plant::kArgument:
      return "argument";
    case Plant::kStructural:
      return "structural";
  }
  return "?";
}

StatusOr<SyntheticSummary> WriteSyntheticRun(const std::string& dir,
                                             const SyntheticOptions& options) {
  RETURN_IF_ERROR(WriteSyntheticRunMeta(dir, options));
  return WriteSyntheticRank(dir, options);
}

Status WriteSyntheticRunMeta(const std::string& dir, const SyntheticOptions& options) {
  RETURN_IF_ERROR(MakeDirectories(dir));
  return WriteFileAtomically(dir + "/meta.json", RunDirMetaJson(options));
}

StatusOr<SyntheticSummary> WriteSyntheticRank(const std::string& dir,
                                              const SyntheticOptions& options) {
  if (options.world_size == 0 || options.rank >= options.world_size) {
    return InvalidArgument("synthetic run: rank " + std::to_string(options.rank) +
                           " is outside world size " + std::to_string(options.world_size));
  }
  if (options.ops == 0 || options.steps == 0 || options.steps > options.ops) {
    return InvalidArgument("synthetic run: need 1 <= steps <= ops (got " +
                           std::to_string(options.steps) + " steps, " +
                           std::to_string(options.ops) + " ops)");
  }
  if (options.plant != Plant::kNone && options.plant_at >= options.ops) {
    return InvalidArgument("--diverge-at " + std::to_string(options.plant_at) +
                           ": the run has only " + std::to_string(options.ops) + " ops");
  }
  RETURN_IF_ERROR(MakeDirectories(dir));
  ASSIGN_OR_RETURN(std::unique_ptr<TraceWriter> writer,
                   TraceWriter::Create(dir + "/rank" + std::to_string(options.rank) + ".ugt",
                                       RunMetaJson(options)));
  TraceWriter* w = writer.get();
  if (options.shift_ids) w->Intern("synthetic: string ids shifted by one");
  ProgramBuilder builder([w](std::string_view s) { return w->Intern(s); });
  const uint64_t base_step_ops = options.ops / options.steps;
  const uint64_t longer_steps = options.ops % options.steps;
  Program program = BuildGptProgram(base_step_ops, builder);
  // The structural plant's extra op: multiplies a constant by 1.0, changing no value.
  builder.Op("aten::mul")
      .In("self", program.scale_slot, DType::kFloat32, {})
      .Scalar("other", "1.0")
      .OutCopy(program.scale_slot, program.scale_slot, DType::kFloat32, {});
  TemplateOp extra = std::move(builder.program().ops.back());

  Executor executor(program, options, w);
  SyntheticSummary summary;
  summary.steps = options.steps;
  summary.ops_per_template = program.ops.size();
  bool plant_pending = options.plant != Plant::kNone;
  uint64_t seq = 0;  // ops of the unchanged run before this one
  for (uint32_t step = 0; step < options.steps; ++step) {
    executor.SetValue(program.batch_slot,
                      Mix(Digest128{options.seed, 0xba7c4 + uint64_t{options.rank}}, step));
    const uint64_t step_ops = base_step_ops + (step < longer_steps ? 1 : 0);
    uint64_t index = 0;  // in this step of the written run
    bool group_start = true;
    for (uint64_t op_idx = 0; op_idx < step_ops; ++op_idx, ++seq) {
      const bool padding = op_idx >= program.ops.size();
      const uint64_t pad_idx = padding ? (op_idx - program.ops.size()) % program.padding.size() : 0;
      TemplateOp& t = padding ? program.padding[pad_idx] : program.ops[op_idx];
      const uint64_t key = padding ? program.ops.size() + pad_idx : op_idx;
      if (op_idx + kPrefetchOps < program.ops.size()) Prefetch(program.ops[op_idx + kPrefetchOps]);
      if (plant_pending && seq >= options.plant_at && Eligible(options.plant, t, group_start)) {
        plant_pending = false;
        const bool structural = options.plant == Plant::kStructural;
        summary.planted =
            PlantedChange{true, w->ops_written(), step, index, structural ? extra.name : t.name};
        if (structural) {
          extra.record.module = t.record.module;
          extra.record.call_site = t.record.call_site;
          extra.record.node = t.record.node;
          extra.record.phase = t.record.phase;
          RETURN_IF_ERROR(executor.Run(extra, step, ~uint64_t{0}));
          ++index;
        } else {
          TemplateOp changed = t;
          int salt_output = SaltableOutput(t);
          if (options.plant == Plant::kArgument) {
            const size_t arg_idx = static_cast<size_t>(FirstScalarInput(t));
            const std::string text = OtherText(t.texts[arg_idx]);
            changed.record.inputs[arg_idx].text = w->Intern(text);
            changed.record.inputs[arg_idx].digest = DigestBytes(text.data(), text.size());
            salt_output = -1;  // the output differs through the argument
          }
          RETURN_IF_ERROR(executor.Run(changed, step, key, salt_output));
          ++index;
          group_start = t.record.depth == 0;
          continue;
        }
      }
      RETURN_IF_ERROR(executor.Run(t, step, key));
      ++index;
      group_start = t.record.depth == 0;
    }
    if (options.step_ends) RETURN_IF_ERROR(w->EndStep(step));
  }
  if (plant_pending) {
    return InvalidArgument("--diverge-at " + std::to_string(options.plant_at) +
                           ": no op at or after it can take a " + PlantName(options.plant) +
                           " change; pick an earlier op");
  }
  if (options.end_record) {
    RETURN_IF_ERROR(w->Close());
  } else {
    RETURN_IF_ERROR(w->Flush());
  }
  summary.ops = w->ops_written();
  summary.bytes = w->bytes_written();
  return summary;
}

}  // namespace upguard::synthetic
