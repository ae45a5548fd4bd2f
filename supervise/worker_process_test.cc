#include "supervise/worker_process.h"

#include <signal.h>

#include "gtest/gtest.h"
#include "supervise/worker_exit.h"

namespace traind {
namespace {

using ReadResult = WorkerProcess::ReadResult;

// The generous bound of a wait that must end on its own (the worker is already done or killed):
// reaching it fails the test, and a slow machine never comes near it.
constexpr absl::Duration kEnds = absl::Seconds(60);

trainer::v1::WorkerRequest Job(int64_t job_id, bool serve_another = false) {
  trainer::v1::WorkerRequest request;
  request.set_job_id(job_id);
  request.set_serve_another(serve_another);
  return request;
}

std::unique_ptr<WorkerProcess> StartFake(const std::string& mode,
                                         const trainer::v1::WorkerRequest& request,
                                         std::vector<std::string> environment = {}) {
  environment.push_back("FAKE_WORKER_MODE=" + mode);
  absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
      WorkerProcess::Start(TRAIND_FAKE_WORKER, request, environment);
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? *std::move(worker) : nullptr;
}

// The first event: the log line the fake sends once it has read its request.
void ExpectGreeting(WorkerProcess& worker, const std::string& text) {
  trainer::v1::JobEvent event;
  ASSERT_EQ(worker.ReadEvent(&event, kEnds), ReadResult::kEvent);
  EXPECT_EQ(event.log().text(), text);
}

TEST(WorkerProcessTest, AWorkerThatSucceedsSendsItsEventsAndExitsZero) {
  std::unique_ptr<WorkerProcess> worker = StartFake("succeed", Job(7));
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 7: succeed");
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  const WorkerProcess::Exit exit = worker->Wait();
  EXPECT_EQ(exit.exit_code, 0);
  EXPECT_EQ(exit.signal, 0);
  EXPECT_EQ(exit.Describe(), "worker exited with code 0");
}

// A worker the kernel kills (the OOM killer, kill -9): the supervisor learns the signal and keeps
// what it said last on stderr, for the job's error.
TEST(WorkerProcessTest, AWorkerKilledByASignalIsReportedWithItsLastWords) {
  std::unique_ptr<WorkerProcess> worker = StartFake("signal", Job(8));
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 8: signal");
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  const WorkerProcess::Exit exit = worker->Wait();
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_EQ(exit.Describe(),
            "worker killed by signal 9 (Killed); last stderr lines:\n"
            "fake worker: out of memory, about to be killed");
}

// A hung worker ignores SIGTERM: it is still there however long one waits, and SIGKILL ends it.
TEST(WorkerProcessTest, AHungWorkerOutlivesTerminateAndDiesOnKill) {
  std::unique_ptr<WorkerProcess> worker = StartFake("hang", Job(9));
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 9: hang");
  worker->Terminate();
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, absl::Milliseconds(200)), ReadResult::kTimeout);
  EXPECT_FALSE(worker->HasExited());
  worker->Kill();
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  EXPECT_EQ(worker->Wait().signal, SIGKILL);
}

// A worker that cannot be started says why, naming the program.
// A worker checks for the parent that started it by its pid, not by "1 means orphaned": traind
// may be PID 1 (a container's init). One told of another parent (as if its own had died and it
// had been taken in by init or a subreaper) stops before doing anything.
TEST(WorkerProcessTest, AWorkerWhoseParentIsGoneStopsAtOnce) {
  std::unique_ptr<WorkerProcess> worker = StartFake("succeed", Job(9), {"TRAIND_PARENT_PID=1"});
  ASSERT_NE(worker, nullptr);
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  EXPECT_EQ(worker->Wait().exit_code, kWorkerStopped);
}

// Asked to serve another, a worker whose job ended well stays: its events end with worker_idle,
// Wait() reads a clean end and reaps nothing, and the next request runs in the same process.
TEST(WorkerProcessTest, AWorkerAskedToServeAnotherRunsTheNextJobInTheSameProcess) {
  std::unique_ptr<WorkerProcess> worker = StartFake("result", Job(1, true));
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 1: result (serves another)");
  trainer::v1::JobEvent event;
  ASSERT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEvent);
  EXPECT_TRUE(event.has_final_result());
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);  // the idle marker
  EXPECT_TRUE(worker->idle());
  EXPECT_EQ(worker->jobs_served(), 1);
  EXPECT_TRUE(worker->Wait().clean());
  EXPECT_FALSE(worker->HasExited());

  ASSERT_TRUE(worker->Send(Job(2, false)).ok());
  EXPECT_FALSE(worker->idle());
  ExpectGreeting(*worker, "fake worker for job 2: result");
  ASSERT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEvent);
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);  // it exited
  EXPECT_FALSE(worker->idle());
  EXPECT_TRUE(worker->Wait().clean());
  EXPECT_TRUE(worker->HasExited());
  // A worker not asked to serve another takes no second request.
  EXPECT_FALSE(worker->Send(Job(3, false)).ok());
}

// A request is sent only to a worker that waits for one; an idle worker destroyed is killed and
// reaped, and one that was signalled says so (the launcher serves it no other job).
TEST(WorkerProcessTest, AnIdleWorkerTakesOneRequestAtATimeAndIsReapedWhenDropped) {
  std::unique_ptr<WorkerProcess> worker = StartFake("succeed", Job(1, true));
  ASSERT_NE(worker, nullptr);
  EXPECT_FALSE(worker->Send(Job(2, true)).ok());  // busy with job 1
  ExpectGreeting(*worker, "fake worker for job 1: succeed (serves another)");
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  ASSERT_TRUE(worker->idle());
  EXPECT_FALSE(worker->signalled());
  worker->Terminate();  // as a cancel of the job that ended would
  EXPECT_TRUE(worker->signalled());
  const pid_t pid = worker->pid();
  worker.reset();
  EXPECT_EQ(kill(pid, 0), -1);  // reaped: no zombie left
}

// A worker that says it is idle without being asked cannot be trusted with its process: it is
// killed, as one that sends garbage.
TEST(WorkerProcessTest, AnIdleMarkerNobodyAskedForEndsTheWorker) {
  std::unique_ptr<WorkerProcess> worker = StartFake("idle-unasked", Job(4));
  ASSERT_NE(worker, nullptr);
  ExpectGreeting(*worker, "fake worker for job 4: idle-unasked");
  trainer::v1::JobEvent event;
  EXPECT_EQ(worker->ReadEvent(&event, kEnds), ReadResult::kEnd);
  EXPECT_FALSE(worker->idle());
  const WorkerProcess::Exit exit = worker->Wait();
  EXPECT_EQ(exit.signal, SIGKILL);
  EXPECT_NE(exit.stderr_tail.find("the worker said it was idle, asked to run one job only"),
            std::string::npos)
      << exit.stderr_tail;
}

TEST(WorkerProcessTest, AMissingProgramIsAnError) {
  trainer::v1::WorkerRequest request;
  absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
      WorkerProcess::Start("/nonexistent/traind-worker", request);
  EXPECT_FALSE(worker.ok());
}

}  // namespace
}  // namespace traind
