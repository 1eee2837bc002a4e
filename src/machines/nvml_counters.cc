#include "machines/nvml_counters.h"

#include <dlfcn.h>

#include <cstdlib>

#include "machines/nvml_api.h"

namespace upguard::machines {

std::string NvmlLibrary() {
  const char* path = std::getenv("UPGUARD_NVML_LIBRARY");
  return path != nullptr && *path != '\0' ? path : "libnvidia-ml.so.1";
}

// The loaded library, its functions, and what the agent keeps between samples.
struct NvmlCounters::Api {
  void* library = nullptr;
  bool started = false;  // nvmlInit succeeded: nvmlShutdown is owed
  NvmlInitFn init = nullptr;
  NvmlShutdownFn shutdown = nullptr;
  NvmlErrorStringFn error_string = nullptr;
  NvmlDeviceGetCountFn get_count = nullptr;
  NvmlDeviceGetHandleByIndexFn get_handle = nullptr;
  NvmlDeviceGetUtilizationRatesFn get_utilization = nullptr;
  NvmlDeviceGetPowerUsageFn get_power = nullptr;
  NvmlDeviceGetMemoryInfoFn get_memory = nullptr;
  // The event API is optional: without it (or on a GPU that refuses it) no XID metric.
  NvmlEventSetCreateFn event_set_create = nullptr;
  NvmlDeviceRegisterEventsFn register_events = nullptr;
  NvmlEventSetWaitFn event_set_wait = nullptr;
  NvmlEventSetFreeFn event_set_free = nullptr;

  nvmlEventSet_t events = nullptr;
  std::vector<nvmlDevice_t> devices;
  std::vector<bool> xid_registered;  // per device
  std::vector<uint64_t> xid_errors;  // per device, since Open

  ~Api() {
    if (events != nullptr) event_set_free(events);
    if (started) shutdown();
    if (library != nullptr) dlclose(library);
  }

  std::string Error(nvmlReturn_t code) const {
    const char* text = error_string != nullptr ? error_string(code) : nullptr;
    return (text != nullptr ? std::string(text) : "NVML error") + " (" + std::to_string(code) + ")";
  }
};

namespace {

// The symbol `name` (or, when absent, `fallback`: NVML's older unversioned name) as type Fn.
template <typename Fn>
Fn Symbol(void* library, const char* name, const char* fallback = nullptr) {
  void* symbol = dlsym(library, name);
  if (symbol == nullptr && fallback != nullptr) symbol = dlsym(library, fallback);
  return reinterpret_cast<Fn>(symbol);
}

}  // namespace

NvmlCounters::NvmlCounters(std::unique_ptr<Api> api) : api_(std::move(api)) {}
NvmlCounters::~NvmlCounters() = default;

size_t NvmlCounters::gpu_count() const { return api_->devices.size(); }

StatusOr<std::unique_ptr<NvmlCounters>> NvmlCounters::Open(const std::string& library) {
  auto api = std::make_unique<Api>();
  api->library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (api->library == nullptr) {
    const char* why = dlerror();
    return NotFound("cannot load " + library + ": " + (why != nullptr ? why : "unknown") +
                    " (no NVIDIA driver here; set UPGUARD_NVML_LIBRARY to its libnvidia-ml)");
  }
  void* lib = api->library;
  api->init = Symbol<NvmlInitFn>(lib, "nvmlInit_v2", "nvmlInit");
  api->shutdown = Symbol<NvmlShutdownFn>(lib, "nvmlShutdown");
  api->error_string = Symbol<NvmlErrorStringFn>(lib, "nvmlErrorString");
  api->get_count = Symbol<NvmlDeviceGetCountFn>(lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  api->get_handle = Symbol<NvmlDeviceGetHandleByIndexFn>(lib, "nvmlDeviceGetHandleByIndex_v2",
                                                         "nvmlDeviceGetHandleByIndex");
  api->get_utilization =
      Symbol<NvmlDeviceGetUtilizationRatesFn>(lib, "nvmlDeviceGetUtilizationRates");
  api->get_power = Symbol<NvmlDeviceGetPowerUsageFn>(lib, "nvmlDeviceGetPowerUsage");
  api->get_memory = Symbol<NvmlDeviceGetMemoryInfoFn>(lib, "nvmlDeviceGetMemoryInfo");
  api->event_set_create = Symbol<NvmlEventSetCreateFn>(lib, "nvmlEventSetCreate");
  api->register_events = Symbol<NvmlDeviceRegisterEventsFn>(lib, "nvmlDeviceRegisterEvents");
  api->event_set_wait = Symbol<NvmlEventSetWaitFn>(lib, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  api->event_set_free = Symbol<NvmlEventSetFreeFn>(lib, "nvmlEventSetFree");
  if (api->init == nullptr || api->shutdown == nullptr || api->get_count == nullptr ||
      api->get_handle == nullptr || api->get_utilization == nullptr || api->get_power == nullptr ||
      api->get_memory == nullptr) {
    return NotFound(library +
                    " lacks NVML's device queries (nvmlInit_v2, nvmlDeviceGet...): "
                    "not libnvidia-ml?");
  }
  if (nvmlReturn_t code = api->init(); code != NVML_SUCCESS) {
    return FailedPrecondition("nvmlInit failed: " + api->Error(code));
  }
  api->started = true;
  unsigned int count = 0;
  if (nvmlReturn_t code = api->get_count(&count); code != NVML_SUCCESS) {
    return FailedPrecondition("nvmlDeviceGetCount failed: " + api->Error(code));
  }
  if (count == 0) return NotFound("NVML finds no GPU");
  for (unsigned int index = 0; index < count; ++index) {
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t code = api->get_handle(index, &device); code != NVML_SUCCESS) {
      return FailedPrecondition("nvmlDeviceGetHandleByIndex(" + std::to_string(index) +
                                ") failed: " + api->Error(code));
    }
    api->devices.push_back(device);
  }
  api->xid_registered.assign(count, false);
  api->xid_errors.assign(count, 0);
  const bool has_events = api->event_set_create != nullptr && api->register_events != nullptr &&
                          api->event_set_wait != nullptr && api->event_set_free != nullptr;
  if (has_events && api->event_set_create(&api->events) != NVML_SUCCESS) api->events = nullptr;
  for (size_t gpu = 0; api->events != nullptr && gpu < api->devices.size(); ++gpu) {
    api->xid_registered[gpu] =
        api->register_events(api->devices[gpu], kNvmlEventTypeXidCriticalError, api->events) ==
        NVML_SUCCESS;
  }
  return std::unique_ptr<NvmlCounters>(new NvmlCounters(std::move(api)));
}

void NvmlCounters::DrainEvents() {
  if (api_->events == nullptr) return;
  // A bound on one sample's work: a GPU raising errors in a loop must not hold the agent.
  for (int event_idx = 0; event_idx < 4096; ++event_idx) {
    nvmlEventData_t data{};
    if (api_->event_set_wait(api_->events, &data, 0) != NVML_SUCCESS) return;
    if ((data.eventType & kNvmlEventTypeXidCriticalError) == 0) continue;
    for (size_t gpu = 0; gpu < api_->devices.size(); ++gpu) {
      if (api_->devices[gpu] == data.device) ++api_->xid_errors[gpu];
    }
  }
}

std::vector<MetricValue> NvmlCounters::Sample(double /*now*/) {
  DrainEvents();
  std::vector<MetricValue> out;
  for (size_t gpu = 0; gpu < api_->devices.size(); ++gpu) {
    const nvmlDevice_t device = api_->devices[gpu];
    const std::string label = "gpu" + std::to_string(gpu);
    nvmlUtilization_t utilization{};
    if (api_->get_utilization(device, &utilization) == NVML_SUCCESS) {
      out.push_back({"gpu_utilization", label, utilization.gpu / 100.0});
    }
    unsigned int milliwatts = 0;
    if (api_->get_power(device, &milliwatts) == NVML_SUCCESS) {
      out.push_back({"gpu_power_watts", label, milliwatts / 1000.0});
    }
    nvmlMemory_t memory{};
    if (api_->get_memory(device, &memory) == NVML_SUCCESS) {
      out.push_back({"gpu_memory_used_bytes", label, static_cast<double>(memory.used)});
    }
    if (api_->xid_registered[gpu]) {
      out.push_back({"gpu_xid_errors", label, static_cast<double>(api_->xid_errors[gpu])});
    }
  }
  return out;
}

}  // namespace upguard::machines
