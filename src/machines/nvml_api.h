// The part of NVML's C API (NVIDIA Management Library, nvml.h) that the agent calls, declared
// here so that nothing links libnvidia-ml: nvml_counters.cc loads it with dlopen at run time, and
// the tests' stand-in (fake_nvml.cc) implements the same functions. Types and values follow
// nvml.h (they are NVML's ABI and never change within a major version); only what is used is
// declared.
#pragma once

#include <cstdint>

extern "C" {

using nvmlReturn_t = int;
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;

using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;

// nvmlEventTypeXidCriticalError: a critical error (an XID) on the device; eventData is the XID.
inline constexpr unsigned long long kNvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

struct nvmlUtilization_t {
  unsigned int gpu;     // percent of the last sample period a kernel ran
  unsigned int memory;  // percent of it the memory was read or written
};

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

// nvmlEventData_t as nvmlEventSetWait_v2 fills it (the v1 call fills the first three fields).
struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

using NvmlInitFn = nvmlReturn_t (*)();
using NvmlShutdownFn = nvmlReturn_t (*)();
using NvmlErrorStringFn = const char* (*)(nvmlReturn_t);
using NvmlDeviceGetCountFn = nvmlReturn_t (*)(unsigned int*);
using NvmlDeviceGetHandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using NvmlDeviceGetUtilizationRatesFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*);
using NvmlDeviceGetPowerUsageFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);  // milliwatts
using NvmlDeviceGetMemoryInfoFn = nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*);
using NvmlEventSetCreateFn = nvmlReturn_t (*)(nvmlEventSet_t*);
using NvmlDeviceRegisterEventsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long,
                                                    nvmlEventSet_t);
using NvmlEventSetWaitFn = nvmlReturn_t (*)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using NvmlEventSetFreeFn = nvmlReturn_t (*)(nvmlEventSet_t);

}  // extern "C"
