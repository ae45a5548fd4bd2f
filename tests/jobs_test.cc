// trainctl cancel, show, list and devices, and what survives a daemon restart.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

#include "google/protobuf/util/json_util.h"
#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using trainer::v1::Job;

class JobsTest : public DaemonTest {
 protected:
  // A job long enough to still be running when the test acts on it.
  int64_t SubmitLong() {
    Result r = Trainctl({"submit", "--model", "lenet5", "--dataset", "fashion-mnist", "--device",
                         "cpu", "--epochs", "50", "--log-every", "1"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::stoll(r.out);
  }
  // Bounded only below ctest's timeout: a loaded 2-core machine took over 30 s to start LibTorch
  // and load the data (a 30 s bound failed there).
  void WaitForFirstStep(int64_t id) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(8);
    while (std::chrono::steady_clock::now() < give_up) {
      for (const auto& e : Events(id)) {
        if (e.has_step()) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    FAIL() << "job " << id << " never reported a step";
  }
};

TEST_F(JobsTest, CancelRunningAndQueuedJobs) {
  const int64_t running = SubmitLong();
  const int64_t queued = SubmitSmall();
  WaitForFirstStep(running);

  Result cancel_queued = Trainctl({"cancel", std::to_string(queued)});
  EXPECT_EQ(cancel_queued.exit_code, 0) << cancel_queued.err;
  EXPECT_EQ(cancel_queued.out, "job " + std::to_string(queued) + ": cancelled\n");
  EXPECT_EQ(GetJob(queued).state(), Job::CANCELLED);

  Result cancel_running = Trainctl({"cancel", std::to_string(running)});
  EXPECT_EQ(cancel_running.exit_code, 0) << cancel_running.err;
  EXPECT_NE(cancel_running.out.find("stopping"), std::string::npos);
  Job job = WaitForState(running, Job::CANCELLED, absl::Seconds(30));
  EXPECT_EQ(job.result().error(), "cancelled by request");

  // watch of a cancelled job: exit code 1.
  EXPECT_EQ(Trainctl({"watch", std::to_string(running)}).exit_code, 1);
  // Cancelling again is not a usage error (exit 1, saying why); an unknown job is (exit 2).
  Result again = Trainctl({"cancel", std::to_string(running)});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("already CANCELLED"), std::string::npos) << again.err;
  EXPECT_EQ(Trainctl({"cancel", "9999"}).exit_code, 2);

  // The queue moves on.
  const int64_t next = SubmitSmall();
  WaitForState(next, Job::SUCCEEDED);
}

TEST_F(JobsTest, ShowAndList) {
  const int64_t id = SubmitSmall("mlp", {"--name", "first"});
  WaitForState(id, Job::SUCCEEDED);
  Result show = Trainctl({"show", std::to_string(id), "--output", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  Job job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(show.out, &job).ok());
  EXPECT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_NE(show.out.find("\"testAccuracy\""), std::string::npos);
  EXPECT_NE(show.out.find("\"epochSecondsNoEval\""), std::string::npos);

  Result text = Trainctl({"show", std::to_string(id)});
  EXPECT_NE(text.out.find("SUCCEEDED  (first)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("accuracy  test "), std::string::npos) << text.out;

  const int64_t second = SubmitSmall();
  Trainctl({"cancel", std::to_string(second)});
  Result list = Trainctl({"list"});
  EXPECT_EQ(list.exit_code, 0);
  EXPECT_NE(list.out.find("ID     STATE"), std::string::npos) << list.out;
  EXPECT_LT(list.out.find(std::to_string(second) + " "), list.out.find(std::to_string(id) + " "));

  Result succeeded = Trainctl({"list", "--state", "succeeded", "-o", "json"});
  trainer::v1::ListJobsResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(succeeded.out, &response).ok());
  ASSERT_EQ(response.jobs_size(), 1);
  EXPECT_EQ(response.jobs(0).id(), id);
  EXPECT_EQ(Trainctl({"list", "--state", "sleeping"}).exit_code, 2);
}

TEST_F(JobsTest, ListPagesThroughManyJobs) {
  std::vector<int64_t> ids;
  for (int i = 0; i < 25; ++i) {
    trainer::v1::SubmitJobRequest request;
    request.mutable_spec()->set_model("mlp");
    request.mutable_spec()->set_dataset("fashion-mnist");
    request.mutable_spec()->set_device("cpu");
    Job job;
    grpc::ClientContext context;
    ASSERT_TRUE(stub().SubmitJob(&context, request, &job).ok());
    ids.push_back(job.id());
  }
  for (int64_t id : ids) Trainctl({"cancel", std::to_string(id)});
  trainer::v1::ListJobsResponse page;
  trainer::v1::ListJobsRequest request;
  request.set_page_size(10);
  std::vector<int64_t> seen;
  do {
    grpc::ClientContext context;
    ASSERT_TRUE(stub().ListJobs(&context, request, &page).ok());
    for (const Job& job : page.jobs()) seen.push_back(job.id());
    request.set_page_token(page.next_page_token());
  } while (!page.next_page_token().empty());
  EXPECT_EQ(seen.size(), 25u);
  EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
  Result all = Trainctl({"list", "--all", "-o", "json"});
  trainer::v1::ListJobsResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(all.out, &response).ok());
  EXPECT_EQ(response.jobs_size(), 25);
}

TEST_F(JobsTest, DownloadTouchesNoFileButItsOutput) {
  const int64_t id = SubmitSmall();
  WaitForState(id, Job::SUCCEEDED);
  const std::string output = state_dir_ + "/weights.pt";
  // A file of the user's where the old code kept its partial download (and removed it on error).
  std::ofstream(output + ".part") << "mine";
  Result missing = Trainctl({"download", std::to_string(id), "nope", "-o", output});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("has no artifact 'nope'"), std::string::npos) << missing.err;
  Result got = Trainctl({"download", std::to_string(id), "-o", output});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_GT(std::filesystem::file_size(output), 1000u);
  std::ifstream part(output + ".part");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(part), {}), "mine");
  // Again without --force: refused, the first download intact; no temporary file left behind.
  const auto size = std::filesystem::file_size(output);
  EXPECT_EQ(Trainctl({"download", std::to_string(id), "-o", output}).exit_code, 2);
  EXPECT_EQ(std::filesystem::file_size(output), size);
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(state_dir_)) {
    entries += entry.path().filename().string().rfind(".weights.pt.", 0) == 0;
  }
  EXPECT_EQ(entries, 0);
}

TEST_F(JobsTest, DevicesListsTheCpu) {
  Result devices = Trainctl({"devices", "--output", "json"});
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  trainer::v1::ListDevicesResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(devices.out, &response).ok());
  ASSERT_GE(response.devices_size(), 1);
  EXPECT_EQ(response.devices(response.devices_size() - 1).name(), "cpu");
  EXPECT_GT(response.devices(response.devices_size() - 1).total_memory_bytes(), 0);
  EXPECT_NE(Trainctl({"devices"}).out.find("cpu "), std::string::npos);
}

// `devices` is now, not a snapshot from start-up: the CPU's free memory is read per call (with
// its time) and the jobs running on each device are listed.
TEST_F(JobsTest, DevicesSaysWhatRunsOnEachDeviceNow) {
  // Long enough to be running when looked at, on any machine: 50 ms before each step.
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_model("mlp");
  request.mutable_spec()->set_dataset("fashion-mnist");
  request.mutable_spec()->set_device("cpu");
  request.mutable_spec()->set_limit_train(100000);
  request.mutable_spec()->mutable_debug()->set_step_delay_ms(50);
  trainer::v1::Job job;
  grpc::ClientContext context;
  ASSERT_TRUE(stub().SubmitJob(&context, request, &job).ok());
  WaitForState(job.id(), trainer::v1::Job::RUNNING);
  Result devices = Trainctl({"devices", "--output", "json"});
  ASSERT_EQ(devices.exit_code, 0) << devices.err;
  trainer::v1::ListDevicesResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(devices.out, &response).ok());
  const trainer::v1::Device& cpu = response.devices(response.devices_size() - 1);
  ASSERT_EQ(cpu.running_jobs_size(), 1);
  EXPECT_EQ(cpu.running_jobs(0), job.id());
  EXPECT_GT(cpu.free_memory_bytes(), 0);
  EXPECT_GE(cpu.free_memory_time().seconds(), job.create_time().seconds());  // read just now
  EXPECT_NE(Trainctl({"devices"}).out.find("job " + std::to_string(job.id())), std::string::npos);
  EXPECT_EQ(Trainctl({"cancel", std::to_string(job.id())}).exit_code, 0);
  WaitForState(job.id(), trainer::v1::Job::CANCELLED);
}

TEST_F(JobsTest, ARestartedJobResumesFromItsCheckpoint) {
  Result submit = Trainctl({"submit", "--model", "lenet5", "--dataset", "fashion-mnist", "--device",
                            "cpu", "--epochs", "3", "--checkpoint-every", "1", "--limit-train",
                            "20000", "--limit-test", "500", "--log-every", "20"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const int64_t id = std::stoll(submit.out);
  // Wait for the first epoch's checkpoint (a state: however long the epoch takes on this machine,
  // bounded only below ctest's timeout), then restart the daemon under the running job.
  bool checkpointed = false;
  for (int i = 0; i < 9 * 60 * 20 && !checkpointed; ++i) {
    for (const auto& e : Events(id)) {
      checkpointed |= e.has_log() && e.log().text().rfind("Checkpoint", 0) == 0;
    }
    if (!checkpointed) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Without a checkpoint first the restart below would prove nothing: say so, do not go on.
  ASSERT_TRUE(checkpointed) << "job " << id << " never wrote its first checkpoint in 9 minutes";
  StopDaemon();
  StartDaemon();
  Job job = WaitForState(id, Job::SUCCEEDED);
  EXPECT_EQ(job.result().epoch_seconds_no_eval_size(), 3);
  Result logs = Trainctl({"logs", std::to_string(id)});
  // The graceful stop made the worker checkpoint where it stood; the next run continued there.
  EXPECT_NE(logs.out.find("(before stopping)"), std::string::npos) << logs.out;
  EXPECT_NE(logs.out.find("Resumed from the checkpoint at epoch"), std::string::npos) << logs.out;
  // Epoch 1 ran once: after the resume the log continues with a later epoch.
  int first_epoch_summaries = 0;
  for (const auto& e : Events(id)) {
    first_epoch_summaries += e.has_epoch_summary() && e.epoch_summary().epoch() == 1;
  }
  EXPECT_EQ(first_epoch_summaries, 1);
  const auto events = Events(id);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
}

TEST_F(JobsTest, RestartKeepsQueuedJobsAndFinishedHistory) {
  const int64_t done = SubmitSmall();
  WaitForState(done, Job::SUCCEEDED);
  const auto history = Events(done);
  const int64_t running = SubmitLong();
  const int64_t queued = SubmitSmall();
  WaitForFirstStep(running);

  StopDaemon();  // graceful: the running job's worker is stopped and the job re-queued
  StartDaemon();

  // The finished job's history is intact, event for event.
  const auto after = Events(done);
  ASSERT_EQ(after.size(), history.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].SerializeAsString(), history[i].SerializeAsString());
  }
  EXPECT_EQ(GetJob(done).state(), Job::SUCCEEDED);
  // The interrupted job runs again; its events continue densely after the re-queue.
  const auto events = Events(running);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  bool requeued = false;
  for (const auto& e : events) {
    requeued |= e.has_state_change() && e.state_change().state() == Job::QUEUED &&
                e.state_change().reason().find("re-queued") != std::string::npos;
  }
  EXPECT_TRUE(requeued);
  Result cancel = Trainctl({"cancel", std::to_string(running)});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  WaitForState(running, Job::CANCELLED, absl::Seconds(30));
  // The queued job was kept and now runs.
  WaitForState(queued, Job::SUCCEEDED);
}

}  // namespace
}  // namespace traind
