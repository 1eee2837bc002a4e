#include "rundir/job.h"

#include <unistd.h>

#include <cstdlib>

#include "rundir/process_identity.h"

namespace upguard {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? "" : value;
}

}  // namespace

std::string SchedulerJob() {
  const std::string job = Env("SLURM_JOB_ID");
  if (job.empty()) return "";
  const std::string step = Env("SLURM_STEP_ID");
  return "slurm:" + job + "." + (step.empty() ? "batch" : step);
}

std::string JobFromEnvironment(int world_size) {
  if (world_size <= 1) return "";
  const std::string master = Env("MASTER_ADDR") + ":" + Env("MASTER_PORT");
  const bool has_master = master != ":";
  if (!Env("TORCHELASTIC_RUN_ID").empty() && has_master) {
    return "torchelastic:" + Env("TORCHELASTIC_RUN_ID") + "@" + master;
  }
  if (const std::string slurm = SchedulerJob(); !slurm.empty()) return slurm;
  if (has_master) return "master:" + master;
  return "parent:" + std::to_string(getppid()) + "@" + HostName();
}

}  // namespace upguard
