// traind-slurm: runs one job with backend slurm, started by traind in a worker's place. To traind
// it is a worker: the WorkerRequest on stdin, the job's events on stdout, an exit status from
// supervise/worker_exit.h, SIGTERM to cancel and SIGUSR1 to stop for a shutdown. Behind that it
// serves SlurmTasks (task_service.h) on a port of its own, submits a batch script with sbatch
// whose tasks reach back to that port with the job's secret, follows the Slurm job (squeue,
// then sacct or scontrol) and ends it with scancel when traind cancels it.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/job_spec.h"
#include "common/random_secret.h"
#include "common/write_all.h"
#include "slurm/sbatch_script.h"
#include "slurm/slurm_commands.h"
#include "slurm/task_service.h"
#include "supervise/shared_event_pipe.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_process.h"
#include "supervise/worker_side.h"

namespace {

std::string HostName() {
  if (const char* address = std::getenv("TRAIND_SLURM_ADDRESS"); address && *address) {
    return address;
  }
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

class Launcher {
 public:
  // `stop`: SIGTERM cancels the Slurm job (scancel); SIGUSR1 (traind shutting down) has its
  // tasks checkpoint and stop, and traind re-queues the job.
  Launcher(int events_fd, const traind::StopFlags& stop) : events_(events_fd), stop_(stop) {}

  int Run(const trainer::v1::WorkerRequest& request) {
    const int64_t job = request.job_id();
    const int tasks = traind::RankCount(request.spec());
    const std::string secret = traind::RandomSecret();
    // Unique, so a submission whose answer was lost can still be found and cancelled by name.
    const std::string name = absl::StrCat("traind-", job, "-", traind::RandomSecret().substr(0, 8));

    traind::TaskService service(request, secret, tasks, &events_);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("0.0.0.0:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || port == 0) return Fail("cannot listen for the job's Slurm tasks");

    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
    const std::string script_path = request.job_dir() + "/slurm.sbatch";
    absl::StatusOr<std::string> script =
        traind::BatchScript(job, {(self.parent_path() / "traind-slurm-task").string(),
                                  absl::StrCat(HostName(), ":", port), secret});
    if (!script.ok()) return Fail(std::string(script.status().message()));
    // Only its owner may read it: it holds the job's secret (fchmod: also when it existed).
    const int fd =
        open(script_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    const bool written = fd >= 0 && fchmod(fd, 0600) == 0 && traind::WriteAll(fd, *script);
    if (fd >= 0) close(fd);
    if (!written) return Fail("cannot write " + script_path);

    if (stop_.stop.load()) return traind::kWorkerStopped;  // stopped before anything was submitted
    std::vector<std::string> sbatch = {"sbatch"};
    for (std::string& arg : traind::SbatchArguments(request.spec(), name, request.job_dir())) {
      sbatch.push_back(std::move(arg));
    }
    sbatch.push_back(script_path);
    // Not interrupted by a stop: a submission cut short may still have reached Slurm.
    absl::StatusOr<traind::CommandResult> submitted = traind::RunCommand(sbatch, absl::Seconds(30));
    if (!submitted.ok()) {
      (void)traind::RunCommand({"scancel", "--name=" + name}, absl::Seconds(10));
      return Fail(absl::StrCat(submitted.status().message(), " (cancelled by name, ", name,
                               ", in case it was submitted)"));
    }
    if (submitted->exit_code != 0) {
      return Fail(
          absl::StrCat("sbatch refused the job: ", absl::StripAsciiWhitespace(submitted->err)));
    }
    absl::StatusOr<int64_t> slurm_job = traind::ParseSbatchJobId(submitted->out);
    if (!slurm_job.ok()) return Fail(std::string(slurm_job.status().message()));
    const std::string output = absl::StrCat(request.job_dir(), "/slurm-", *slurm_job, ".out");
    events_.Log(absl::StrCat("Submitted to Slurm as job ", *slurm_job, " (", tasks,
                             tasks == 1 ? " task" : " tasks", "; `", absl::StrJoin(sbatch, " "),
                             "`)"));

    const std::string final_state = Follow(*slurm_job, service);
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
    if (stop_.stop.load()) return traind::kWorkerStopped;

    const std::map<int, trainer::v1::ProcessExit> ended = service.Ended();
    for (const auto& [rank, exit] : ended) {
      if (traind::WorkerProcess::Exit::FromProto(exit).clean()) continue;
      if (!service.FirstError().empty()) return traind::kWorkerJobFailed;  // already reported
      return Fail(absl::StrCat(tasks > 1 ? absl::StrCat("rank ", rank, ": ") : "",
                               exit.signal() != 0 ? absl::StrCat("killed by signal ", exit.signal())
                                                  : absl::StrCat("exit code ", exit.exit_code()),
                               exit.stderr_tail().empty() ? "" : ": " + exit.stderr_tail(),
                               " (Slurm job ", *slurm_job, ", ", final_state, ")"));
    }
    if (static_cast<int>(ended.size()) < tasks) {
      return Fail(absl::StrCat("Slurm job ", *slurm_job, " ended ",
                               final_state.empty() ? "unseen" : final_state, " with ", ended.size(),
                               " of ", tasks, " tasks reported; see its output, ", output));
    }
    if (!service.GotResult()) return Fail("the tasks ended without rank 0 reporting a result");
    return traind::kWorkerSucceeded;
  }

 private:
  // scancel, retried: a cancel that does not reach Slurm would leave the job running for nobody.
  void Cancel(int64_t slurm_job, const std::vector<std::string>& options = {}) {
    std::vector<std::string> argv = {"scancel"};
    argv.insert(argv.end(), options.begin(), options.end());
    argv.push_back(absl::StrCat(slurm_job));
    std::string why;
    for (int attempt = 0; attempt < 3; ++attempt) {
      absl::StatusOr<traind::CommandResult> done = traind::RunCommand(argv, absl::Seconds(5));
      if (done.ok() && done->exit_code == 0) return;
      why = done.ok() ? std::string(absl::StripAsciiWhitespace(done->err))
                      : std::string(done.status().message());
    }
    events_.Log(absl::StrCat("`", absl::StrJoin(argv, " "), "` failed: ", why,
                             "; the Slurm job may still run"),
                trainer::v1::LogLine::WARNING);
  }

  // Until every task has reported its end, Slurm says the job ended, or traind stops it. Returns
  // the last state Slurm gave.
  std::string Follow(int64_t slurm_job, traind::TaskService& service) {
    std::string state;
    absl::Time next_poll = absl::Now();
    absl::Time give_up = absl::InfiniteFuture();
    std::optional<absl::Time> unknown_since;
    bool stopping = false;
    while (!service.AwaitAllEnded(absl::Now() + absl::Milliseconds(250))) {
      const absl::Time now = absl::Now();
      if (stop_.stop.load() && !stopping) {
        stopping = true;
        if (stop_.suspend.load()) {
          // To the tasks only (not the batch script): each has its worker checkpoint and stop.
          Cancel(slurm_job, {"--signal=USR1"});
        } else {
          Cancel(slurm_job);
        }
        give_up = now + absl::Seconds(6);  // traind kills us after its --cancel-grace (10 s)
      }
      if (now > give_up) break;
      if (now < next_poll) continue;
      next_poll = now + absl::Seconds(stopping ? 1 : 2);
      absl::StatusOr<std::string> seen =
          traind::SlurmJobState(slurm_job, stopping ? nullptr : &stop_.stop);
      if (!seen.ok()) {
        // Slurm's controller may restart or fail over: only minutes without an answer end it.
        if (!unknown_since) unknown_since = now;
        if (now - *unknown_since > absl::Minutes(5) && !stopping) {
          events_.Log(absl::StrCat("Slurm has not answered about job ", slurm_job,
                                   " for 5 minutes (", seen.status().message(), "); cancelling it"),
                      trainer::v1::LogLine::WARNING);
          Cancel(slurm_job);
          break;
        }
        continue;
      }
      unknown_since.reset();
      if (*seen != state) {
        state = *seen;
        events_.Log(absl::StrCat("Slurm job ", slurm_job, ": ", state));
      }
      // Tasks report just before they exit; allow their last messages a moment.
      if (traind::IsFinalSlurmState(state) && give_up == absl::InfiniteFuture()) {
        give_up = now + absl::Seconds(5);
      }
    }
    // A suspend that the tasks did not finish in time: stop the job for good.
    if (stopping && stop_.suspend.load() && !service.AwaitAllEnded(absl::Now())) Cancel(slurm_job);
    return state;
  }

  int Fail(const std::string& why) {
    events_.Log(why, trainer::v1::LogLine::ERROR);
    std::fprintf(stderr, "traind-slurm: %s\n", why.c_str());
    return traind::kWorkerJobFailed;
  }

  traind::SharedEventPipe events_;
  const traind::StopFlags& stop_;
};

}  // namespace

int main(int argc, char**) {
  const int events_fd = traind::TakeStdoutForEvents();
  if (argc != 1) {
    std::fprintf(stderr, "usage: traind-slurm  (started by traind for a job with backend slurm)\n");
    return traind::kWorkerBadRequest;
  }
  // traind gone (even kill -9): cancel the Slurm job rather than leave it running for nobody.
  const traind::StopFlags& stop = traind::InstallStopSignals();
  if (!traind::StopWithParent(SIGTERM)) return traind::kWorkerStopped;

  trainer::v1::WorkerRequest request;
  switch (traind::ReadWorkerRequest(&request)) {
    case traind::RequestRead::kRead:
      return Launcher(events_fd, stop).Run(request);
    case traind::RequestRead::kClosed:
      return traind::kWorkerStopped;
    case traind::RequestRead::kUnreadable:
      break;
  }
  std::fprintf(stderr, "traind-slurm: could not read a WorkerRequest on stdin\n");
  return traind::kWorkerBadRequest;
}
