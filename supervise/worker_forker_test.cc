#include "supervise/worker_forker.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/proc_file.h"
#include "gtest/gtest.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_process.h"

namespace traind {
namespace {

using ReadResult = WorkerProcess::ReadResult;

// The generous bound of a wait that must end on its own: reaching it fails the test, and a slow
// machine never comes near it.
constexpr absl::Duration kEnds = absl::Seconds(60);

std::unique_ptr<WorkerForker> StartForker(const std::string& program = TRAIND_FAKE_WORKER) {
  absl::StatusOr<std::unique_ptr<WorkerForker>> forker = WorkerForker::Start(program);
  EXPECT_TRUE(forker.ok()) << forker.status();
  return forker.ok() ? *std::move(forker) : nullptr;
}

std::unique_ptr<WorkerProcess> ForkFake(WorkerForker& forker, const std::string& mode,
                                        int64_t job_id) {
  absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
      WorkerProcess::Fork(forker, {"FAKE_WORKER_MODE=" + mode});
  EXPECT_TRUE(worker.ok()) << worker.status();
  if (!worker.ok()) return nullptr;
  trainer::v1::WorkerRequest request;
  request.set_job_id(job_id);
  EXPECT_TRUE((*worker)->Send(request).ok());
  return *std::move(worker);
}

void ExpectGreeting(WorkerProcess& worker, const std::string& text) {
  trainer::v1::JobEvent event;
  ASSERT_EQ(worker.ReadEvent(&event, kEnds), ReadResult::kEvent);
  EXPECT_EQ(event.log().text(), text);
}

// A forked worker is this process's child, not the server's: it is waited for, and says it was
// forked, exactly as a worker started as a program is; in its own process group, with the
// environment it was forked with.
TEST(WorkerForkerTest, AForkedWorkerIsThisProcesssChildAndRunsItsJob) {
  std::unique_ptr<WorkerForker> forker = StartForker();
  ASSERT_NE(forker, nullptr);
  std::unique_ptr<WorkerProcess> worker = ForkFake(*forker, "result", 7);
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 7: result (forked)");
  EXPECT_EQ(forker->Poll(), WorkerForker::State::kReady);
  const std::optional<ProcStat> stat = ReadProcStat(worker->pid());
  ASSERT_TRUE(stat.has_value());
  EXPECT_EQ(stat->parent, getpid());
  EXPECT_EQ(stat->process_group, worker->pid());
  trainer::v1::JobEvent event;
  ASSERT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEvent);
  EXPECT_DOUBLE_EQ(event.final_result().test_accuracy(), 0.5);
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  const WorkerProcess::Exit exit = worker->Wait();
  EXPECT_EQ(exit.Describe(), "worker exited with code 0");
}

// Each child has its own environment and pipes; one killed by a signal is reported with its last
// words on stderr, as one started as a program is.
TEST(WorkerForkerTest, EachForkedWorkerHasItsOwnEnvironmentPipesAndExit) {
  std::unique_ptr<WorkerForker> forker = StartForker();
  ASSERT_NE(forker, nullptr);
  std::unique_ptr<WorkerProcess> stopped = ForkFake(*forker, "stopped", 1);
  std::unique_ptr<WorkerProcess> killed = ForkFake(*forker, "signal", 2);
  ASSERT_NE(stopped, nullptr);
  ASSERT_NE(killed, nullptr);
  ExpectGreeting(*killed, "fake worker for job 2: signal (forked)");
  ExpectGreeting(*stopped, "fake worker for job 1: stopped (forked)");
  trainer::v1::JobEvent event;
  EXPECT_EQ(stopped->ReadEvent(&event, kEnds), ReadResult::kEnd);
  EXPECT_EQ(killed->ReadEvent(&event, kEnds), ReadResult::kEnd);
  EXPECT_EQ(stopped->Wait().exit_code, kWorkerStopped);
  EXPECT_EQ(killed->Wait().Describe(),
            "worker killed by signal 9 (Killed); last stderr lines:\n"
            "fake worker: out of memory, about to be killed");
}

// What /proc/PID/fd's links of `pid` point to ("pipe:[...]", "socket:[...]", a path).
std::vector<std::string> OpenFiles(pid_t pid) {
  std::vector<std::string> targets;
  std::error_code error;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    targets.push_back(std::filesystem::read_symlink(entry.path(), error).string());
  }
  return targets;
}

// The server going (traind drops it, or it dies) leaves the workers it forked running, and
// signals still reach them. A child holds no socket (a copy of the server's would keep traind
// from seeing the server's end close).
TEST(WorkerForkerTest, ForkedWorkersOutliveTheirServer) {
  std::unique_ptr<WorkerForker> forker = StartForker();
  ASSERT_NE(forker, nullptr);
  std::unique_ptr<WorkerProcess> worker = ForkFake(*forker, "stop-on-term", 3);
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 3: stop-on-term (forked)");
  for (const std::string& target : OpenFiles(worker->pid())) {
    EXPECT_EQ(target.rfind("socket:", 0), std::string::npos) << target;
  }
  forker.reset();  // kills and reaps the server
  EXPECT_FALSE(worker->HasExited());
  worker->Terminate();
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  EXPECT_EQ(worker->Wait().exit_code, kWorkerStopped);
}

// A program that is no fork server never says it is ready: asking it for a worker is an error
// (traind then starts the program itself), and so is a program that does not exist.
TEST(WorkerForkerTest, AProgramThatIsNoForkServerIsAnError) {
  std::unique_ptr<WorkerForker> forker = StartForker("/bin/true");
  ASSERT_NE(forker, nullptr);
  absl::StatusOr<std::unique_ptr<WorkerProcess>> worker = WorkerProcess::Fork(*forker);
  EXPECT_FALSE(worker.ok());
  EXPECT_EQ(forker->Poll(), WorkerForker::State::kFailed);
  EXPECT_FALSE(WorkerForker::Start("/nonexistent/traind-worker").ok());
}

}  // namespace
}  // namespace traind
