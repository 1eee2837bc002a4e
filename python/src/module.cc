// upguard._C: the private compiled module. A thin adapter: it converts arguments, turns a
// Status into a Python exception, and calls adapter.h. The public API is python/upguard.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "adapter.h"
#include "collectives.h"
#include "interception_probe.h"
#include "model_walk.h"
#include "online/online_check.h"
#include "undeclared_writes.h"
#include "write_probe.h"

namespace py = pybind11;

namespace upguard::torch_adapter {
namespace {

void ThrowIfError(const Status& status) {
  if (status.ok()) return;
  if (status.code() == StatusCode::kInvalidArgument) throw py::value_error(status.message());
  throw std::runtime_error(status.message());
}

// upguard._online's notice() and agree(), which talk through torch.distributed's store. A
// failure there is printed and counts as "no rank diverged": never stop the training for it.
// They write into `dir`, the recording's directory (the staging directory, not run_dir), known
// once the recorder opened: set by StartFromPython before the training runs a step.
DistributedOnline DistributedHooks(std::shared_ptr<const std::string> dir) {
  DistributedOnline hooks;
  hooks.notice = [dir](const std::string& divergence_json) {
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("upguard._online").attr("notice")(divergence_json, *dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "upguard: could not tell the other ranks: %s\n", e.what());
    }
  };
  hooks.agree = [dir](int64_t step) {
    py::gil_scoped_acquire gil;
    try {
      return py::module_::import("upguard._online").attr("agree")(step, *dir).cast<bool>();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "upguard: could not hear from the other ranks: %s\n", e.what());
      return false;
    }
  };
  hooks.depart = [](int64_t step) {
    py::gil_scoped_acquire gil;
    try {
      py::module_::import("upguard._online").attr("depart")(step);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "upguard: could not wait for the other ranks to stop: %s\n", e.what());
    }
  };
  return hooks;
}

// _C.StartOptions: what _C.start takes, by name (python/upguard/_recording.py fills it in).
// The binding's mirror of AdapterOptions in Python's types: the step range and the capture
// selector stay text until ToAdapterOptions parses them.
struct StartOptions {
  std::string run_dir;
  bool overwrite = false;  // replace the run run_dir holds (RecorderOptions::overwrite)
  int rank = 0;
  int world_size = 1;
  std::optional<std::string> steps;  // "A:B", "A:", ":B" or "N"; None or "" = every step
  int max_depth = -1;                // -1 = every depth
  std::vector<std::string> ops;      // op-name globs; empty = every op
  bool stats = true;
  int hash_threads = 0;      // the recorder's hash pool (RecorderOptions::hash_threads)
  bool fingerprint = false;  // fingerprint the steps outside `steps` (every step without it)
  std::string engine_meta_json = "{}";
  std::vector<std::string> skip_prefixes;  // frames under these files are not user code
  std::string cwd;                         // call sites under it are shown relative to it
  std::string capture;                     // a --capture selector; "" = none
  std::string against;                     // a reference run directory; "" = none
  bool continue_after_divergence = false;
  bool stop_after_steps = false;  // end the process after the last step of `steps`
  // `upguard record`'s progress directory: rank<N>.progress is kept there
  // (docs/formats/record-progress.md); "" = none.
  std::string progress_dir;
  std::string max_bytes;  // the run's byte budget for its traces ("100M"); "" = none
};

StatusOr<AdapterOptions> ToAdapterOptions(const StartOptions& start) {
  AdapterOptions options;
  options.recorder.run_dir = start.run_dir;
  options.recorder.overwrite = start.overwrite;
  options.recorder.overwrite_option = "overwrite=True";
  options.recorder.rank = start.rank;
  options.recorder.world_size = start.world_size;
  if (start.steps && !start.steps->empty()) {
    ASSIGN_OR_RETURN(options.recorder.steps, ParseStepRange(*start.steps));
  } else if (start.fingerprint) {
    options.recorder.steps = StepRange{0, 0};  // no step in full: every one a fingerprint
  }
  options.recorder.fingerprint = start.fingerprint;
  options.recorder.max_depth = start.max_depth;
  options.recorder.ops = start.ops;
  options.recorder.stats = start.stats;
  if (start.hash_threads < 0) {
    return InvalidArgument("hash_threads must be 0 (off) or more, not " +
                           std::to_string(start.hash_threads));
  }
  // A capture and a comparison against a reference read each op's digests as it ends.
  if (start.capture.empty() && start.against.empty()) {
    options.recorder.hash_threads = start.hash_threads;
  }
  options.recorder.engine_meta_json = start.engine_meta_json;
  if (!start.max_bytes.empty()) {
    ASSIGN_OR_RETURN(options.recorder.max_bytes, ParseByteSize(start.max_bytes, "max_bytes"));
  }
  if (!start.progress_dir.empty()) {
    options.recorder.progress_path =
        start.progress_dir + "/rank" + std::to_string(start.rank) + ".progress";
  }
  options.skip_prefixes = start.skip_prefixes;
  options.cwd = start.cwd;
  if (!start.capture.empty()) {
    ASSIGN_OR_RETURN(options.capture, ParseCaptureSelector(start.capture));
  }
  options.recorder.against = start.against;
  if (!start.against.empty()) {  // the recorder compares each op with the reference through it
    ASSIGN_OR_RETURN(std::unique_ptr<OnlineChecker> checker,
                     OnlineChecker::Open(start.against, start.rank));
    options.recorder.observer = std::move(checker);
  }
  options.continue_after_divergence = start.continue_after_divergence;
  if (start.stop_after_steps) {
    if (!start.steps || start.steps->empty() || options.recorder.steps.last < 0) {
      return InvalidArgument("stop_after_steps needs steps with an end (A:B or N), not '" +
                             start.steps.value_or("") + "'");
    }
    options.stop_at_step = options.recorder.steps.last;
  }
  return options;
}

void StartFromPython(const StartOptions& start) {
  StatusOr<AdapterOptions> options = ToAdapterOptions(start);
  ThrowIfError(options.status());
  auto dir = std::make_shared<std::string>(start.run_dir);
  if (!start.against.empty() && start.world_size > 1) {
    options->distributed_online = DistributedHooks(dir);
  }
  ThrowIfError(Start(*options));
  *dir = WriteDir();
}

void BindStartOptions(py::module_& m) {
  py::class_<StartOptions>(m, "StartOptions",
                           "The options of start(), by name (see upguard.record for their "
                           "meaning); every field has a default.")
      .def(py::init<>())
      .def_readwrite("run_dir", &StartOptions::run_dir)
      .def_readwrite("overwrite", &StartOptions::overwrite)
      .def_readwrite("rank", &StartOptions::rank)
      .def_readwrite("world_size", &StartOptions::world_size)
      .def_readwrite("steps", &StartOptions::steps)
      .def_readwrite("max_depth", &StartOptions::max_depth)
      .def_readwrite("ops", &StartOptions::ops)
      .def_readwrite("stats", &StartOptions::stats)
      .def_readwrite("hash_threads", &StartOptions::hash_threads)
      .def_readwrite("fingerprint", &StartOptions::fingerprint)
      .def_readwrite("engine_meta_json", &StartOptions::engine_meta_json)
      .def_readwrite("skip_prefixes", &StartOptions::skip_prefixes)
      .def_readwrite("cwd", &StartOptions::cwd)
      .def_readwrite("capture", &StartOptions::capture)
      .def_readwrite("against", &StartOptions::against)
      .def_readwrite("continue_after_divergence", &StartOptions::continue_after_divergence)
      .def_readwrite("stop_after_steps", &StartOptions::stop_after_steps)
      .def_readwrite("progress_dir", &StartOptions::progress_dir)
      .def_readwrite("max_bytes", &StartOptions::max_bytes);
}

// [(name, Tensor._cdata)] per tensor, the tensors alive meanwhile.
std::vector<PyTensorRef> ToTensorRefs(const std::vector<std::pair<std::string, uintptr_t>>& items) {
  std::vector<PyTensorRef> tensors;
  tensors.reserve(items.size());
  for (const auto& [name, impl] : items) tensors.push_back(PyTensorRef{name, impl});
  return tensors;
}

// The C++ object behind a pybind11 instance of a type registered by another module (torch's
// ProcessGroup): pybind11 keeps one registry per ABI, shared by torch and this module. Null
// when `obj` is not such an instance.
const void* PybindObjectAddress(py::handle obj) {
  auto* base = reinterpret_cast<PyTypeObject*>(py::detail::get_internals().instance_base);
  if (obj.ptr() == nullptr || !PyObject_TypeCheck(obj.ptr(), base)) return nullptr;
  auto* instance = reinterpret_cast<py::detail::instance*>(obj.ptr());
  py::detail::values_and_holders values(instance);
  if (values.begin() == values.end()) return nullptr;
  return values.begin()->value_ptr();
}

// upguard._groups.describe(): (group object, name, global ranks, group rank, backend) per
// process group.
std::vector<std::pair<const void*, GroupInfo>> ResolveGroups() {
  std::vector<std::pair<const void*, GroupInfo>> groups;
  if (!Py_IsInitialized()) return groups;
  py::gil_scoped_acquire gil;
  try {
    py::object described = py::module_::import("upguard._groups").attr("describe")();
    for (py::handle item : described) {
      auto entry = item.cast<py::tuple>();
      const void* address = PybindObjectAddress(entry[0]);
      if (address == nullptr) continue;
      GroupInfo info;
      info.name = entry[1].cast<std::string>();
      info.ranks = entry[2].cast<std::vector<int32_t>>();
      info.group_rank = entry[3].cast<uint32_t>();
      info.group_size = static_cast<uint32_t>(info.ranks.size());
      if (entry.size() > 4) info.backend = entry[4].cast<std::string>();
      groups.emplace_back(address, std::move(info));
    }
  } catch (const py::error_already_set& e) {
    std::fprintf(stderr, "upguard: process groups unnamed: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "upguard: process groups unnamed: %s\n", e.what());
  }
  return groups;
}

// The model's tensors (model_walk.h), handed to `sink` while the GIL is held and the model
// keeps them alive.
void ReadModelTensorsFromPython(const ModelTensorSink& sink) {
  if (!Py_IsInitialized()) return;
  py::gil_scoped_acquire gil;
  try {
    WalkModelTensors(sink);
  } catch (const std::exception& e) {  // error_already_set included
    std::fprintf(stderr, "upguard: the model's tensors were not read: %s\n", e.what());
  }
}

}  // namespace

void DefineWatch(py::module_& m);  // watch_module.cc

}  // namespace upguard::torch_adapter

PYBIND11_MODULE(_C, m) {
  namespace adapter = upguard::torch_adapter;
  m.doc() = "upguard's compiled recorder (private; use the `upguard` package)";
  adapter::SetGroupResolver(adapter::ResolveGroups);
  adapter::SetModelTensorSource(adapter::ReadModelTensorsFromPython);
  adapter::BindStartOptions(m);
  adapter::DefineWatch(m);
  m.def("start", &adapter::StartFromPython, py::arg("options"));
  // Never raises: a recording's failure must not reach the training (it was said on stderr as it
  // happened). Returns "" for a whole trace, else why it is incomplete.
  m.def(
      "stop",
      [](const std::string& final_engine_meta_json, bool died) {
        return adapter::Stop(final_engine_meta_json, died).message();
      },
      py::arg("final_engine_meta_json") = "", py::arg("died") = false);
  m.def("is_recording", &adapter::Active);
  m.def("step", &adapter::MarkStep);
  m.def("resume_at", &adapter::ResumeAt, py::arg("step"));
  m.def("current_step", &adapter::CurrentStep);
  m.def("ops_recorded", &adapter::OpsRecorded);
  m.def("trace_path", &adapter::TracePath);
  m.def("write_dir", &adapter::WriteDir);
  m.def("refresh_tensor_names", &adapter::RefreshTensorNames);
  m.def("model_tensors", [] {  // upguard._state.ModelTensors.named()
    py::list out;
    adapter::WalkModelTensors([&out](const adapter::ModelTensorRef& ref) {
      out.append(py::make_tuple(std::string(ref.name), static_cast<int>(ref.role), ref.impl));
    });
    return out;
  });
  m.def(
      "record_model_inputs",
      [](const std::vector<std::pair<std::string, uintptr_t>>& tensors) {
        adapter::RecordModelInputs(adapter::ToTensorRefs(tensors));
      },
      py::arg("tensors"));
  m.def(
      "record_loss",
      [](const std::vector<std::pair<std::string, uintptr_t>>& tensors) {
        adapter::RecordLoss(adapter::ToTensorRefs(tensors));
      },
      py::arg("tensors"));
  m.def("fingerprint_step", &adapter::FingerprintStep);
  m.def("optimizer_step_done", &adapter::OptimizerStepDone);
  m.def(
      "enter_module",
      [](const std::string& path, const py::object& frame) {
        adapter::EnterModule(path, frame.ptr());
      },
      py::arg("path"), py::arg("frame"));
  m.def(
      "exit_module", [](const py::object& frame) { adapter::ExitModule(frame.ptr()); },
      py::arg("frame"));
  m.def("in_backward", &adapter::InBackward);
  m.def(
      "enter_op",
      [](const std::string& name,
         const std::vector<std::tuple<std::string, uintptr_t, std::string, int>>& inputs,
         const std::string& call_site) {
        std::vector<adapter::AnnouncedArg> args;
        args.reserve(inputs.size());
        for (const auto& [arg_name, tensor, text, role] : inputs) {
          args.push_back(adapter::AnnouncedArg{arg_name, tensor, text,
                                               static_cast<adapter::AnnouncedRole>(role)});
        }
        return adapter::EnterAnnouncedOpFromHost(name, args, call_site);
      },
      py::arg("name"), py::arg("inputs"), py::arg("call_site") = "",
      "Records an op no RecordFunction announces (a compiled region, a generated kernel): "
      "inputs are (name, tensor._cdata or 0, text, role 0 read / 1 read+written / 2 written); "
      "returns the handle for exit_op.");
  m.def("exit_op", &adapter::ExitAnnouncedOpFromHost, py::arg("handle"), py::arg("results"),
        "Ends enter_op's op with its results (tensor._cdata each).");
  m.def("note_uninitialized", &adapter::NoteUninitialized, py::arg("tensor"),
        "A tensor (its _cdata) allocated without an ATen op: no values until written.");
  m.def("note_compiling", &adapter::NoteCompiling, py::arg("compiling"),
        "torch.compile starts (True) or ends (False) a compilation: no op is recorded meanwhile.");
  m.def(
      "probe_writes",
      [](bool on) {
        if (on) adapter::StartWriteProbe();
        return on ? std::vector<adapter::WriteFinding>{} : adapter::StopWriteProbe();
      },
      py::arg("on"),
      "Starts (True) or stops (False) the write probe (write_probe.h); stopping returns "
      "(op, argument, in the table) for every input an op wrote without its schema saying so.");
  m.def(
      "probe_interception",
      [](bool on) -> uint64_t {
        if (!on) return adapter::StopInterceptionProbe();
        adapter::StartInterceptionProbe();
        return 0;
      },
      py::arg("on"),
      "Starts (True) or stops (False) callbacks registered as the recorder's that do nothing "
      "(interception_probe.h): torch's own cost of intercepting every op; stopping returns the "
      "ops they saw.");
  m.def("undeclared_write_table", [] {
    std::vector<std::tuple<std::string, std::string, std::string>> rows;
    for (const adapter::UndeclaredWrite& write : adapter::UndeclaredWrites()) {
      rows.emplace_back(write.op, write.arg, write.why);
    }
    return rows;
  });
}
