// How a job's processes start: the one home for which program runs a job, the request each rank
// gets and each rank's environment. Everything that starts ranks builds them here: the scheduler
// (a job's ranks on this machine), PeerService (a peer's ranks of a job on several hosts),
// traind-hosts (this host's ranks of such a job) and traind-slurm-task (a Slurm task's rank).
//
// Which program (JobPrograms::For):
//   backend slurm          traind-slurm: one process stands for every rank; Slurm runs the ranks
//                          (each a traind-slurm-task starting a traind-worker on its node)
//   hosts (several hosts)  traind-hosts: one process stands for every rank; it starts this
//                          host's ranks (traind-worker) and asks the peers for theirs
//   script                 traind-script, one per rank: it runs the user's interpreter
//   anything else          traind-worker, one per rank (a warm one for a job of one rank)
// A job of several ranks gets torchrun's variables (supervise/torchrun.h) in each rank's
// environment; a program's ranks also learn all the job's devices here (TRAIND_JOB_DEVICES: its
// LOCAL_RANK indexes them).
// Pure except StartRanks, which starts processes. Thread-compatible.
#ifndef TRAIND_SUPERVISE_RANK_LAUNCH_H_
#define TRAIND_SUPERVISE_RANK_LAUNCH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "supervise/worker_process.h"
#include "trainer/v1/trainer.pb.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

// The programs traind starts for jobs, found beside traind-worker.
struct JobPrograms {
  std::string worker;          // traind-worker: built-in networks, TorchScript models
  std::string script_runner;   // traind-script: a user's program
  std::string slurm_launcher;  // traind-slurm: a job on a Slurm cluster
  std::string hosts_launcher;  // traind-hosts: a job on several traind hosts

  // Each in `dir` (where traind and its helpers are installed), or beside `worker_path`.
  static JobPrograms In(const std::string& dir);
  static JobPrograms Beside(const std::string& worker_path);
  // The program that runs `spec`'s job here (see the table above).
  const std::string& For(const trainer::v1::JobSpec& spec) const;
  // Whether one process of For(spec) stands for all of the job's ranks (Slurm, several hosts).
  static bool OneForAllRanks(const trainer::v1::JobSpec& spec);
};

// A job's ranks on one host.
struct RankLaunch {
  std::string program;                 // the program every rank runs
  trainer::v1::WorkerRequest request;  // the job's; each rank's names its own device
  std::vector<std::string> devices;    // one per rank on this host: "cpu", "cuda:1"
  int first_rank = 0;                  // the job-wide rank of this host's first
  int first_local_rank = 0;            // its LOCAL_RANK (a Slurm task's SLURM_LOCALID)
  int world_size = 1;                  // the job's ranks on every host; 1: no torchrun variables
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  // What every rank here gets besides traind's own environment (the host's worker environment).
  std::vector<std::string> environment;
};

// Rank `i` of `launch` (0 .. devices.size() - 1): its request, told its device.
trainer::v1::WorkerRequest RankRequest(const RankLaunch& launch, int i);
// Rank `i`'s environment: launch.environment, torchrun's variables when world_size > 1, and a
// program's TRAIND_JOB_DEVICES.
std::vector<std::string> RankEnvironment(const RankLaunch& launch, int i);
// Starts every rank of `launch`, in order. An error names the rank ("rank 2: ...") when there are
// several; the ranks already started are then killed and reaped.
absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> StartRanks(const RankLaunch& launch);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_RANK_LAUNCH_H_
