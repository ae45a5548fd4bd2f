#include "supervise/rank_launch.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "common/script_spec.h"
#include "supervise/torchrun.h"

namespace traind {

JobPrograms JobPrograms::In(const std::string& dir) {
  const std::filesystem::path in(dir);
  return JobPrograms{(in / "traind-worker").string(), (in / "traind-script").string(),
                     (in / "traind-slurm").string(), (in / "traind-hosts").string()};
}

JobPrograms JobPrograms::Beside(const std::string& worker_path) {
  JobPrograms programs = In(std::filesystem::path(worker_path).parent_path().string());
  programs.worker = worker_path;  // its name may differ (a test's stand-in)
  return programs;
}

const std::string& JobPrograms::For(const trainer::v1::JobSpec& spec) const {
  if (IsSlurmJob(spec)) return slurm_launcher;
  if (!spec.hosts().empty()) return hosts_launcher;
  if (IsScriptJob(spec)) return script_runner;
  return worker;
}

bool JobPrograms::OneForAllRanks(const trainer::v1::JobSpec& spec) {
  return IsSlurmJob(spec) || !spec.hosts().empty();
}

trainer::v1::WorkerRequest RankRequest(const RankLaunch& launch, int i) {
  trainer::v1::WorkerRequest placed = launch.request;
  placed.mutable_spec()->set_device(launch.devices[i]);
  return placed;
}

std::vector<std::string> RankEnvironment(const RankLaunch& launch, int i) {
  std::vector<std::string> environment = launch.environment;
  if (launch.world_size > 1) {
    for (std::string& variable :
         TorchrunEnvironment({launch.first_rank + i, launch.first_local_rank + i, launch.world_size,
                              launch.master_addr, launch.master_port})) {
      environment.push_back(std::move(variable));
    }
  }
  if (IsScriptJob(launch.request.spec())) {
    environment.push_back("TRAIND_JOB_DEVICES=" + absl::StrJoin(launch.devices, ","));
  }
  return environment;
}

absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> StartRanks(const RankLaunch& launch) {
  std::vector<std::unique_ptr<WorkerProcess>> ranks;
  const int count = static_cast<int>(launch.devices.size());
  for (int i = 0; i < count; ++i) {
    absl::StatusOr<std::unique_ptr<WorkerProcess>> rank =
        WorkerProcess::Start(launch.program, RankRequest(launch, i), RankEnvironment(launch, i));
    if (!rank.ok()) {
      if (count == 1 && launch.world_size == 1) return rank.status();
      return absl::Status(rank.status().code(), absl::StrCat("rank ", launch.first_rank + i, ": ",
                                                             rank.status().message()));
    }
    ranks.push_back(*std::move(rank));  // on failure the started ones are killed and reaped
  }
  return ranks;
}

}  // namespace traind
