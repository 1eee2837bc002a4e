// upguard._C's watch functions (python/upguard/_watch.py is their one caller): the binding of
// watch_feed.h.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#include "call_site.h"
#include "watch_feed.h"

namespace py = pybind11;

namespace upguard::torch_adapter {

void DefineWatch(py::module_& m) {
  m.def(
      "watch_start",
      [](const std::string& ring_path, int rank, int world_size, int local_rank,
         const std::string& hostname, std::vector<std::string> skip_prefixes,
         const std::string& cwd) {
        ConfigureCallSites(std::move(skip_prefixes), cwd);
        WatchOptions options;
        options.ring_path = ring_path;
        options.identity = {rank, world_size, local_rank, int(getpid()), hostname};
        Status status = WatchStart(options);
        if (!status.ok()) throw std::runtime_error(status.message());
      },
      py::arg("ring_path"), py::arg("rank"), py::arg("world_size"), py::arg("local_rank"),
      py::arg("hostname"), py::arg("skip_prefixes"), py::arg("cwd"));
  m.def("watch_ring_path", &WatchRingPath);
  m.def("watch_dataloader", &WatchDataloader, py::arg("inside"));
  m.def("watch_stack_answered", &WatchStackAnswered);
  m.def("watch_wait_stack_request", &WatchWaitStackRequest, py::arg("answered"),
        py::arg("timeout_s"), py::call_guard<py::gil_scoped_release>());
  m.def("watch_answer_stack", &WatchAnswerStack, py::arg("request"), py::arg("text"));
  m.def("watch_close", &WatchClose, py::call_guard<py::gil_scoped_release>());
}

}  // namespace upguard::torch_adapter
