// traind-slurm-task: what srun runs for each task (rank) of a traind job on Slurm. It asks the
// job's launcher (TRAIND_SLURM_CONNECT, with TRAIND_SLURM_SECRET) for the job, starts a
// traind-worker beside itself with torchrun's environment from Slurm's (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID; MASTER_ADDR from the batch script; MASTER_PORT from SLURM_JOB_ID),
// streams the worker's events back as they come and then how it ended, and exits as the worker did.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "supervise/rank_group.h"
#include "supervise/rank_launch.h"
#include "supervise/torchrun.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_process.h"
#include "supervise/worker_side.h"
#include "trainer/v1/slurm.grpc.pb.h"

namespace {

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  int parsed = 0;
  return value != nullptr && absl::SimpleAtoi(value, &parsed) ? parsed : fallback;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "traind-slurm-task: %s\n(srun runs it in the batch script traind writes for a job "
               "with backend slurm; it is not for running by hand)\n",
               why);
  return traind::kWorkerBadRequest;
}

// Asks the job's launcher for this rank's WorkerRequest (waiting up to a minute for it to listen).
std::optional<trainer::v1::WorkerRequest> JoinJob(trainer::v1::SlurmTasks::Stub& stub,
                                                  const std::string& connect,
                                                  const std::string& secret, int rank) {
  trainer::v1::JoinRequest join;
  join.set_rank(rank);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  join.set_node(host);
  trainer::v1::WorkerRequest request;
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + secret);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  context.set_wait_for_ready(true);
  const grpc::Status joined = stub.Join(&context, join, &request);
  if (!joined.ok()) {
    std::fprintf(stderr, "traind-slurm-task: rank %d: cannot join its job at %s: %s\n", rank,
                 connect.c_str(), joined.error_message().c_str());
    return std::nullopt;
  }
  return request;
}

// Runs the worker as this job's one rank here, streaming its events to the launcher as they come
// and then how it ended; returns the worker's exit status (128 + N for signal N).
int RunAndReport(trainer::v1::SlurmTasks::Stub& stub, const std::string& secret,
                 const traind::RankLaunch& launch, const traind::StopFlags& signals) {
  const int rank = launch.first_rank;
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + secret);
  trainer::v1::TaskReportAck ack;
  std::unique_ptr<grpc::ClientWriter<trainer::v1::TaskReport>> reports =
      stub.Report(&context, &ack);
  trainer::v1::TaskReport report;
  report.set_rank(rank);

  absl::StatusOr<std::vector<std::unique_ptr<traind::WorkerProcess>>> started =
      traind::StartRanks(launch);
  if (!started.ok()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    report.mutable_exit()->set_exit_code(traind::kWorkerJobFailed);
    report.mutable_exit()->set_stderr_tail(absl::StrCat("cannot start ", launch.program, " on ",
                                                        host, ": ", started.status().message()));
    reports->Write(report);
    reports->WritesDone();
    (void)reports->Finish();
    return traind::kWorkerJobFailed;
  }
  // One rank here: RankGroup's pump and rules, as every other place that runs ranks.
  traind::RankGroup worker(*std::move(started));
  bool stopping = false;
  bool launcher_gone = false;
  traind::RankGroup::Callbacks callbacks;
  callbacks.on_event = [&](int, trainer::v1::JobEvent event) {
    *report.mutable_event() = std::move(event);
    if (!launcher_gone && !reports->Write(report)) {
      // Nobody to train for: the launcher (and so traind's job) is gone.
      launcher_gone = true;
      worker.TerminateAll();
    }
  };
  while (worker.alive() > 0) {
    if (signals.stop.load() && !stopping) {
      stopping = true;
      if (signals.suspend.load()) {
        worker.SuspendAll();
      } else {
        worker.TerminateAll();
      }
    }
    worker.PumpRound(callbacks);
  }
  const traind::WorkerProcess::Exit& exit = *worker.exit(0);
  *report.mutable_exit() = exit.ToProto();
  if (!launcher_gone) reports->Write(report);
  reports->WritesDone();
  (void)reports->Finish();
  if (exit.signal != 0) return 128 + exit.signal;
  return exit.exit_code;
}

}  // namespace

int main() {
  const char* connect = std::getenv("TRAIND_SLURM_CONNECT");
  const char* secret_env = std::getenv("TRAIND_SLURM_SECRET");
  if (connect == nullptr || secret_env == nullptr) {
    return Usage("TRAIND_SLURM_CONNECT and TRAIND_SLURM_SECRET are not set");
  }
  const std::string secret = secret_env;
  unsetenv("TRAIND_SLURM_SECRET");  // not for the worker
  const int rank = EnvInt("SLURM_PROCID", 0);
  const int tasks = EnvInt("SLURM_NTASKS", 1);
  const int local_rank = EnvInt("SLURM_LOCALID", 0);
  // SIGTERM (scancel): stop the worker. SIGUSR1 (traind shutting down: the launcher signals the
  // tasks): the worker checkpoints, then stops.
  const traind::StopFlags& signals = traind::InstallStopSignals();

  auto channel = grpc::CreateChannel(connect, grpc::InsecureChannelCredentials());
  auto stub = trainer::v1::SlurmTasks::NewStub(channel);
  std::optional<trainer::v1::WorkerRequest> request = JoinJob(*stub, connect, secret, rank);
  if (!request) return traind::kWorkerStopped;
  // The node's GPUs Slurm gave the job (CUDA_VISIBLE_DEVICES): one per task on this node.
  if (request->spec().device() == "cuda") {
    request->mutable_spec()->set_device(absl::StrCat("cuda:", local_rank));
  }
  traind::RankLaunch launch;
  launch.program =
      traind::JobPrograms::In(std::filesystem::read_symlink("/proc/self/exe").parent_path()).worker;
  launch.request = *request;
  launch.devices = {request->spec().device()};
  launch.first_rank = rank;
  launch.first_local_rank = local_rank;
  launch.world_size = tasks;
  if (tasks > 1) {
    const char* master_addr = std::getenv("MASTER_ADDR");
    const char* slurm_job = std::getenv("SLURM_JOB_ID");
    int64_t slurm_job_id = 0;
    if (master_addr == nullptr || slurm_job == nullptr ||
        !absl::SimpleAtoi(slurm_job, &slurm_job_id)) {
      return Usage("MASTER_ADDR or SLURM_JOB_ID is not set (the batch script and srun set them)");
    }
    launch.master_addr = master_addr;
    launch.master_port = traind::RendezvousPort(slurm_job_id);
  }
  return RunAndReport(*stub, secret, launch, signals);
}
