// Pairs of small runs written on disk from text traces, for the tests of what a diff concludes
// (conclude_test.cc, cli/diff_command_test.cc).
//
//   ASSIGN_OR_RETURN(LoadedRuns runs, LoadConcludeRuns("origin", Change::kBatchOnRank1));
//   ConcludeDiff(runs.a, runs.b, options)  -> rank 1 the origin (data), ranks 0 and 2 receivers
//   upguard diff runs.paths.a runs.paths.b  -> the same
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "run/run_loader.h"
#include "trace/text_format.h"
#include "upguard/status.h"

namespace upguard::testing {

enum class Change {
  // Three ranks; run B feeds rank 1 a different batch, which all-reduce #0 of group 0 carries
  // to ranks 0 and 2. Rank 0, the lowest divergent rank, is a receiver (culprit at the
  // all-reduce); the origin, rank 1, is a data difference.
  kBatchOnRank1,
  // Two ranks; every input is the same and the all-reduce delivers different values on both:
  // the collective computed differently.
  kCollectiveSum,
  // One rank; dropout's generator state differs (setup_rng.test): the random state.
  kRngState,
  // Two ranks; run B's rank 1 runs aten::relu (and aten::clamp_min inside it) where gelu ran (a
  // structural difference), whose output reaches the all-reduce: rank 1 the origin, rank 0 a
  // receiver.
  kOpOnRank1,
};

struct ConcludeRuns {
  std::string a, b;
};

// `text` with every `{KEY}` replaced by its value.
inline std::string Fill(std::string text,
                        const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [key, value] : values) {
    const std::string field = "{" + key + "}";
    for (size_t at = text.find(field); at != std::string::npos; at = text.find(field, at)) {
      text.replace(at, field.size(), value);
      at += value.size();
    }
  }
  return text;
}

// One rank's trace of the all-reduce program: a batch, gelu, its backward, the all-reduce of
// the gradient and the optimizer's add of its result.
inline std::string AllReduceRank(int rank, int world_size, bool other_batch, bool other_sum) {
  std::string members;
  for (int member = 0; member < world_size; ++member) {
    members += (member ? "," : "") + std::to_string(member);
  }
  return Fill(R"(meta {"rank":{R},"world_size":{N}}
op step=0 phase=forward name=upguard::batch site=train.py:20
  in args[0] tensor float32[4] digest=@x{R}{B}
op step=0 phase=forward name=aten::gelu module=blocks.1.mlp.act site=gpt.py:83
  in self tensor float32[4] digest=@x{R}{B}
  in approximate scalar 'none'
  out tensor float32[4] digest=@h{R}{B}
op step=0 phase=backward name=aten::mul node=GeluBackward0 module=blocks.1.mlp.act site=gpt.py:83
  in self tensor float32[4] digest=@h{R}{B}
  out tensor float32[4] digest=@g{R}{B}
op step=0 phase=backward name=c10d::allreduce_ node=AccumulateGrad
  in tensors tensor float32[4] digest=@g{R}{B}
  out alias float32[4]
collective group=0 ranks=[{M}] group_rank={R} group_size={N} seq=0
  out tensor float32[4] digest=@sum{S} stats=min:-1,max:1,mean:0,l2:2,finite:4
op step=0 phase=optimizer name=aten::add_ site=train.py:40
  in self tensor float32[4] digest=@w
  in other tensor float32[4] digest=@sum{S}
  out tensor float32[4] digest=@w-sum{S}
stepend 0
end
)",
              {{"R", std::to_string(rank)},
               {"N", std::to_string(world_size)},
               {"M", members},
               {"B", other_batch ? "-shuffled" : ""},
               {"S", other_sum ? "2" : ""}});
}

// One rank whose dropout draws from the generator state `generator`.
inline std::string RngRun(const std::string& generator) {
  return Fill(R"(meta {"argv":["train.py"],"intra_op_threads":1}
op step=0 phase=forward name=upguard::batch site=train.py:20
  in args[0] tensor int64[8,32] digest=@x
op step=0 phase=forward depth=1 name=aten::bernoulli_ module=drop site=model.py:116
  in self alias float32[8,32,64]
  in p scalar '0.9'
  in generator tensor uint8[2527] digest=@{G}
  out tensor float32[8,32,64] digest=@m-{G}
op step=0 phase=forward name=aten::dropout module=drop site=model.py:116
  in input tensor float32[8,32,64] digest=@h
  in p scalar '0.1'
  in train scalar 'True'
  out tensor float32[8,32,64] digest=@d-{G}
stepend 0
end
)",
              {{"G", generator}});
}

// Writes the pair of runs of `change` under a fresh temporary directory named `name`.
inline StatusOr<ConcludeRuns> WriteConcludeRuns(const std::string& name, Change change) {
  namespace fs = std::filesystem;
  const fs::path root =
      fs::temp_directory_path() / ("upguard_conclude_" + std::to_string(::getpid())) / name;
  fs::remove_all(root);
  ConcludeRuns runs{(root / "a").string(), (root / "b").string()};
  for (const std::string& dir : {runs.a, runs.b}) fs::create_directories(dir);
  if (change == Change::kRngState) {
    RETURN_IF_ERROR(WriteTraceFromText(RngRun("g1"), "a/rank0", runs.a + "/rank0.ugt"));
    RETURN_IF_ERROR(WriteTraceFromText(RngRun("g2"), "b/rank0", runs.b + "/rank0.ugt"));
    return runs;
  }
  // Every change makes every rank's all-reduce deliver other values in run B.
  const int world_size = change == Change::kBatchOnRank1 ? 3 : 2;
  for (int rank = 0; rank < world_size; ++rank) {
    const std::string file = "/rank" + std::to_string(rank) + ".ugt";
    const std::string a = AllReduceRank(rank, world_size, false, false);
    std::string b =
        AllReduceRank(rank, world_size, change == Change::kBatchOnRank1 && rank == 1, true);
    if (change == Change::kOpOnRank1 && rank == 1) {
      const std::string gelu = "op step=0 phase=forward name=aten::gelu";
      // relu's own kernel, recorded before relu, the op that encloses it
      b.replace(b.find(gelu), gelu.size(),
                "op step=0 phase=forward depth=1 name=aten::clamp_min module=blocks.1.mlp.act "
                "site=gpt.py:83\n  in self tensor float32[4] digest=@x1\n"
                "  out tensor float32[4] digest=@h1\n"
                "op step=0 phase=forward name=aten::relu");
      const std::string approximate = "  in approximate scalar 'none'\n";
      b.erase(b.find(approximate), approximate.size());
      // relu's output, the backward's input and output, the all-reduce's input
      for (const std::string digest : {"@h1", "@g1"}) {
        for (size_t at = b.find(digest); at != std::string::npos; at = b.find(digest, at + 4)) {
          b.replace(at, 3, digest + "r");
        }
      }
    }
    RETURN_IF_ERROR(WriteTraceFromText(a, "a" + file, runs.a + file));
    RETURN_IF_ERROR(WriteTraceFromText(b, "b" + file, runs.b + file));
  }
  return runs;
}

struct LoadedRuns {
  ConcludeRuns paths;
  Run a, b;
};

// WriteConcludeRuns, then both runs loaded as `upguard diff` loads them.
inline StatusOr<LoadedRuns> LoadConcludeRuns(const std::string& name, Change change) {
  LoadedRuns runs;
  ASSIGN_OR_RETURN(runs.paths, WriteConcludeRuns(name, change));
  LoadOptions load;
  load.index_on_demand = true;
  ASSIGN_OR_RETURN(runs.a, LoadRun(runs.paths.a, load));
  ASSIGN_OR_RETURN(runs.b, LoadRun(runs.paths.b, load));
  return runs;
}

}  // namespace upguard::testing
