#include "slurm/sbatch_script.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/job_spec.h"

namespace traind {

std::vector<std::string> SbatchArguments(const trainer::v1::JobSpec& spec, const std::string& name,
                                         const std::string& job_dir) {
  std::vector<std::string> args = {"--parsable", "--job-name=" + name, "--no-requeue",
                                   absl::StrCat("--ntasks=", RankCount(spec)),
                                   absl::StrCat("--output=", job_dir, "/slurm-%j.out")};
  if (spec.nodes() > 0) args.push_back(absl::StrCat("--nodes=", spec.nodes()));
  if (spec.gpus_per_node() > 0) {
    // Task k of a node uses that node's GPU k: never more tasks on a node than GPUs.
    args.push_back(absl::StrCat("--gpus-per-node=", spec.gpus_per_node()));
    args.push_back(absl::StrCat("--ntasks-per-node=", spec.gpus_per_node()));
  }
  // Validated (common/job_spec.cc): letters, digits and punctuation only.
  if (!spec.partition().empty()) args.push_back("--partition=" + spec.partition());
  if (!spec.time_limit().empty()) args.push_back("--time=" + spec.time_limit());
  return args;
}

namespace {

absl::StatusOr<std::string> Quoted(const char* what, const std::string& value) {
  if (value.empty() || value.find_first_of("'\n\r") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": empty, or holds a quote or a newline: '", value, "'"));
  }
  return absl::StrCat("'", value, "'");
}

}  // namespace

absl::StatusOr<std::string> BatchScript(int64_t job_id, const BatchScriptParts& parts) {
  absl::StatusOr<std::string> task = Quoted("traind-slurm-task's path", parts.task_path);
  absl::StatusOr<std::string> connect = Quoted("launcher address", parts.connect);
  absl::StatusOr<std::string> secret = Quoted("secret", parts.secret);
  for (const auto* part : {&task, &connect, &secret}) {
    if (!part->ok()) return part->status();
  }
  return absl::StrCat(
      "#!/bin/sh\n"
      "# Written by traind for its job ",
      job_id,
      ". Each task (rank) runs traind-slurm-task, which\n"
      "# starts a traind-worker and streams its events to the job's launcher on traind's machine.\n"
      "export TRAIND_SLURM_CONNECT=",
      *connect, "\n", "export TRAIND_SLURM_SECRET=", *secret, "\n",
      "# torchrun's rendezvous: rank 0 on the first node (each task derives the port from\n"
      "# SLURM_JOB_ID: supervise/torchrun.h).\n"
      "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
      "export MASTER_ADDR\n"
      "# One task ending badly ends the others: they would wait for it in their next collective.\n"
      "exec srun --kill-on-bad-exit=1 ",
      *task, "\n");
}

}  // namespace traind
