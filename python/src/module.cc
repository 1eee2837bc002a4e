// upguard._C: the private compiled module. A thin adapter: it converts arguments, turns a
// Status into a Python exception, and calls adapter.h. The public API is python/upguard.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "adapter.h"

namespace py = pybind11;

namespace upguard::torch_adapter {
namespace {

void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  if (status.code() == StatusCode::kInvalidArgument) throw py::value_error(status.message());
  throw std::runtime_error(status.message());
}

void StartFromPython(const std::string& run_dir, int rank, int world_size,
                     const std::optional<std::string>& steps, int max_depth,
                     const std::vector<std::string>& ops, bool stats,
                     const std::string& engine_meta_json,
                     const std::vector<std::string>& skip_prefixes, const std::string& cwd) {
  AdapterOptions options;
  options.recorder.run_dir = run_dir;
  options.recorder.rank = rank;
  options.recorder.world_size = world_size;
  if (steps && !steps->empty()) {
    StatusOr<StepRange> range = ParseStepRange(*steps);
    ThrowIfError(range.status());
    options.recorder.steps = *range;
  }
  options.recorder.max_depth = max_depth;
  options.recorder.ops = ops;
  options.recorder.stats = stats;
  options.recorder.engine_meta_json = engine_meta_json;
  options.skip_prefixes = skip_prefixes;
  options.cwd = cwd;
  ThrowIfError(Start(options));
}

}  // namespace
}  // namespace upguard::torch_adapter

PYBIND11_MODULE(_C, m) {
  namespace adapter = upguard::torch_adapter;
  m.doc() = "upguard's compiled recorder (private; use the `upguard` package)";
  m.def("start", &adapter::StartFromPython, py::arg("run_dir"), py::arg("rank"),
        py::arg("world_size"), py::arg("steps"), py::arg("max_depth"), py::arg("ops"),
        py::arg("stats"), py::arg("engine_meta_json"), py::arg("skip_prefixes"), py::arg("cwd"));
  m.def("stop", [] { adapter::ThrowIfError(adapter::Stop()); });
  m.def("is_recording", &adapter::Active);
  m.def("step", &adapter::MarkStep);
  m.def("current_step", &adapter::CurrentStep);
  m.def("ops_recorded", &adapter::OpsRecorded);
  m.def("trace_path", &adapter::TracePath);
  m.def("enter_module", &adapter::EnterModule, py::arg("path"));
  m.def("exit_module", &adapter::ExitModule);
}
