// A stand-in libnvidia-ml for nvml_counters_test: two GPUs with fixed readings, and two XID
// events on gpu1 waiting in every event set that gpu1 registers for. Built as a module of its
// own and loaded by the test through dlopen, as the agent loads the driver's library.
//
//   gpu0: 37 % busy, 123.456 W, 5 GiB used          gpu1: 100 % busy, 300 W, 1 GiB used
//   gpu1's power reading is refused on every third call (a flaky reading is left out).
#include <cstring>

#include "machines/nvml_api.h"

namespace {

struct nvmlDeviceSlot {
  unsigned int utilization;
  unsigned int milliwatts;
  unsigned long long used;
};

nvmlDeviceSlot g_devices[2] = {{37, 123456, 5ULL << 30}, {100, 300000, 1ULL << 30}};
int g_initialised = 0;
int g_event_sets = 0;
int g_pending_xids = 0;  // XID events on gpu1 not yet waited for
int g_power_calls = 0;

nvmlDevice_t Handle(unsigned int index) {
  return reinterpret_cast<nvmlDevice_t>(&g_devices[index]);
}

nvmlDeviceSlot* Slot(nvmlDevice_t device) { return reinterpret_cast<nvmlDeviceSlot*>(device); }

}  // namespace

extern "C" {

__attribute__((visibility("default"))) nvmlReturn_t nvmlInit_v2() {
  ++g_initialised;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlShutdown() {
  --g_initialised;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) const char* nvmlErrorString(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_SUPPORTED ? "Not Supported" : "Unknown Error";
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  *count = 2;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(
    unsigned int index, nvmlDevice_t* device) {
  if (index >= 2) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = Handle(index);
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetUtilizationRates(
    nvmlDevice_t device, nvmlUtilization_t* utilization) {
  utilization->gpu = Slot(device)->utilization;
  utilization->memory = 0;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetPowerUsage(
    nvmlDevice_t device, unsigned int* milliwatts) {
  if (device == Handle(1) && ++g_power_calls % 3 == 0) return NVML_ERROR_NOT_SUPPORTED;
  *milliwatts = Slot(device)->milliwatts;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device,
                                                                            nvmlMemory_t* memory) {
  memory->used = Slot(device)->used;
  memory->total = 80ULL << 30;
  memory->free = memory->total - memory->used;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = reinterpret_cast<nvmlEventSet_t>(&g_event_sets);
  ++g_event_sets;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlDeviceRegisterEvents(
    nvmlDevice_t device, unsigned long long types, nvmlEventSet_t /*set*/) {
  if (device == Handle(1) && (types & kNvmlEventTypeXidCriticalError) != 0) g_pending_xids = 2;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t /*set*/,
                                                                        nvmlEventData_t* data,
                                                                        unsigned int /*timeout*/) {
  if (g_pending_xids == 0) return NVML_ERROR_TIMEOUT;
  std::memset(data, 0, sizeof(*data));
  data->device = Handle(1);
  data->eventType = kNvmlEventTypeXidCriticalError;
  data->eventData = g_pending_xids == 2 ? 79 : 48;  // fallen off the bus; a double-bit ECC error
  --g_pending_xids;
  return NVML_SUCCESS;
}

__attribute__((visibility("default"))) nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t /*set*/) {
  --g_event_sets;
  return NVML_SUCCESS;
}

}  // extern "C"
