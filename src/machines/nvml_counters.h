// The GPUs' metrics through NVML, loaded at run time (dlopen), so that the agent runs, and is
// built, on machines without a GPU or its driver. Per GPU, labelled gpu0, gpu1, ... in NVML's
// index order: utilisation (0-1), power (watts), memory used (bytes) and the XID errors seen
// since the agent started (NVML's event API: critical XID events registered at start, drained
// with a zero timeout at every sample).
//
//   StatusOr<std::unique_ptr<NvmlCounters>> gpus = NvmlCounters::Open(NvmlLibrary());
//   if (!gpus.ok()) say(gpus.status().message());   // no library, no GPU: no GPU metrics
//   else for (const MetricValue& m : (*gpus)->Sample(now)) ...
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "machines/metric_source.h"
#include "upguard/status.h"

namespace upguard::machines {

// The library to load: $UPGUARD_NVML_LIBRARY when set (a path; the tests' stand-in), else
// "libnvidia-ml.so.1" (the driver's, found by the dynamic loader).
std::string NvmlLibrary();

class NvmlCounters : public MetricSource {
 public:
  // NotFound when the library cannot be loaded or lacks a function, or NVML finds no GPU;
  // FailedPrecondition when NVML fails (the driver not loaded; the message is NVML's own).
  static StatusOr<std::unique_ptr<NvmlCounters>> Open(const std::string& library);
  ~NvmlCounters() override;
  NvmlCounters(const NvmlCounters&) = delete;
  NvmlCounters& operator=(const NvmlCounters&) = delete;

  // gpu_utilization, gpu_power_watts, gpu_memory_used_bytes, gpu_xid_errors for every GPU; a
  // reading NVML refuses (not supported, a GPU fallen off the bus) is left out.
  std::vector<MetricValue> Sample(double now) override;

  size_t gpu_count() const;

 private:
  struct Api;
  explicit NvmlCounters(std::unique_ptr<Api> api);
  // Counts the XID events waiting in the event set.
  void DrainEvents();

  std::unique_ptr<Api> api_;
};

}  // namespace upguard::machines
