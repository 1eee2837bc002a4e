// Which processes record one run together: the ranks of one job agree on a job name without
// talking to each other, from what their launcher put in every rank's environment.
//
//   options.job = JobFromEnvironment(world_size);  // "" for a single process
#pragma once

#include <string>

namespace upguard {

// "" when world_size is 1 (the process records alone). Else the first of: torchrun's
// TORCHELASTIC_RUN_ID with MASTER_ADDR:MASTER_PORT ("torchelastic:<id>@<addr>:<port>"), the
// Slurm job step ("slurm:<SLURM_JOB_ID>.<SLURM_STEP_ID>"), MASTER_ADDR:MASTER_PORT
// ("master:<addr>:<port>"), and else this host and the parent process
// ("parent:<ppid>@<host>": ranks spawned by one launcher on one host, torch.multiprocessing).
std::string JobFromEnvironment(int world_size);

// For `upguard record`: the Slurm job step under Slurm, else "" (one recording alone).
std::string SchedulerJob();

}  // namespace upguard
