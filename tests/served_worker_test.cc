// The real traind-worker serving one job after another (WorkerRequest.serve_another, what traind
// asks of a search's trials packed on a GPU): the second job runs in the same process and trains
// exactly as it does in a fresh worker. The first set one thread and deterministic algorithms for
// the whole process: a worker that cannot put back a fresh worker's settings serves no other job
// (worker/main.cc EndWell), so its staying idle shows they were put back.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/small_spec_for_tests.h"
#include "gtest/gtest.h"
#include "supervise/worker_process.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;

trainer::v1::WorkerRequest Job(int64_t id, const std::string& model, bool serve_another) {
  trainer::v1::WorkerRequest request;
  request.set_job_id(id);
  *request.mutable_spec() = SmallSpecForTests(model);
  request.mutable_spec()->set_epochs(1);
  request.set_serve_another(serve_another);
  return request;
}

// A job's events up to its end (a generous bound that only a hung worker reaches).
std::vector<JobEvent> EventsOf(WorkerProcess& worker) {
  std::vector<JobEvent> events;
  JobEvent event;
  while (worker.ReadEvent(&event, absl::Minutes(5)) == WorkerProcess::ReadResult::kEvent) {
    events.push_back(event);
  }
  return events;
}

std::vector<double> LossesOf(const std::vector<JobEvent>& events) {
  std::vector<double> losses;
  for (const JobEvent& event : events) {
    if (event.has_step()) losses.push_back(event.step().loss());
    if (event.has_final_result()) losses.push_back(event.final_result().test_accuracy());
  }
  return losses;
}

std::string StartUpLineOf(const std::vector<JobEvent>& events) {
  for (const JobEvent& event : events) {
    if (absl::StartsWith(event.log().text(), "Start-up:")) return event.log().text();
  }
  return "";
}

TEST(ServedWorkerTest, ASecondJobInTheSameWorkerTrainsAsInAFreshOne) {
  absl::StatusOr<std::unique_ptr<WorkerProcess>> fresh =
      WorkerProcess::Start(TRAIND_WORKER_PATH, Job(2, "mlp", false));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const std::vector<double> alone = LossesOf(EventsOf(**fresh));
  EXPECT_TRUE((*fresh)->Wait().clean());
  ASSERT_FALSE(alone.empty());

  trainer::v1::WorkerRequest first = Job(1, "lenet5", true);
  first.mutable_spec()->set_threads(1);
  first.mutable_spec()->set_deterministic(true);
  absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
      WorkerProcess::Start(TRAIND_WORKER_PATH, first);
  ASSERT_TRUE(worker.ok()) << worker.status();
  const std::vector<JobEvent> first_events = EventsOf(**worker);
  ASSERT_TRUE((*worker)->idle()) << (*worker)->Wait().Describe();
  ASSERT_FALSE(first_events.empty());
  EXPECT_TRUE(first_events.back().has_final_result());
  EXPECT_EQ((*worker)->jobs_served(), 1);

  ASSERT_TRUE((*worker)->Send(Job(2, "mlp", false)).ok());
  const std::vector<JobEvent> second = EventsOf(**worker);
  EXPECT_EQ(LossesOf(second), alone);
  EXPECT_TRUE(absl::StrContains(StartUpLineOf(second), "the worker had run 1 job before this one"))
      << StartUpLineOf(second);
  EXPECT_FALSE((*worker)->idle());  // not asked to serve another: it exited
  EXPECT_TRUE((*worker)->Wait().clean());
}

}  // namespace
}  // namespace traind
