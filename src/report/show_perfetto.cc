#include "report/show_perfetto.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace upguard {

using nlohmann::json;

json ShowJsonToPerfetto(const json& show, const std::string& run_name) {
  const int pid = show.value("rank", 0);
  json events = json::array();
  events.push_back({{"ph", "M"},
                    {"name", "process_name"},
                    {"pid", pid},
                    {"args", {{"name", run_name + " (rank " + std::to_string(pid) + ")"}}}});
  for (const json& step : show.value("steps", json::array())) {
    const int tid = step.value("step", 0);
    events.push_back({{"ph", "M"},
                      {"name", "thread_name"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"name", "step " + std::to_string(tid)}}}});
    events.push_back({{"ph", "M"},
                      {"name", "thread_sort_index"},
                      {"pid", pid},
                      {"tid", tid},
                      {"args", {{"sort_index", tid}}}});
    const json& ops = step["ops"];
    // Ops are listed in completion order: an op's nested ops come just before it. Its slice
    // starts at the first of them.
    for (size_t at = 0; at < ops.size(); ++at) {
      const uint64_t depth = ops[at].value("depth", uint64_t{0});
      size_t start = at;
      while (start > 0 && ops[start - 1].value("depth", uint64_t{0}) > depth) --start;
      json outputs = json::array();
      for (const json& output : ops[at].value("outputs", json::array())) {
        std::string text = output.value("name", std::string());
        if (output.contains("digest"))
          text += " " + output["digest"].get<std::string>().substr(0, 8);
        outputs.push_back(text);
      }
      events.push_back({{"ph", "X"},
                        {"name", ops[at].value("op", std::string())},
                        {"cat", ops[at].value("phase", std::string())},
                        {"pid", pid},
                        {"tid", tid},
                        {"ts", ops[start].value("index", uint64_t{0})},
                        {"dur", ops[at].value("index", uint64_t{0}) -
                                    ops[start].value("index", uint64_t{0}) + 1},
                        {"args",
                         {{"index", ops[at].value("index", uint64_t{0})},
                          {"module", ops[at].value("module", std::string())},
                          {"call_site", ops[at].value("call_site", std::string())},
                          {"depth", depth},
                          {"outputs", outputs}}}});
    }
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ns"},
          {"otherData",
           {{"source", "upguard show --perfetto"},
            {"run", run_name},
            {"time", "the op's position in its step (1 us an op), not wall time"}}}};
}

}  // namespace upguard
