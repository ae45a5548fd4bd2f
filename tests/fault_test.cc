// Issue 5: a worker that dies — segfault, abort, an unexpected exit, SIGKILL — fails only its own
// job, with the reason and its last stderr lines, and the queue moves on. Crashes are real:
// JobSpec.debug makes the worker crash itself (traind --enable-fault-injection).
#include <grpcpp/grpcpp.h>

#include <thread>

#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using trainer::v1::Job;

class FaultTest : public DaemonTest {
 protected:
  int64_t SubmitCrashing(const std::string& kind) {
    trainer::v1::SubmitJobRequest request;
    auto* spec = request.mutable_spec();
    spec->set_model("mlp");
    spec->set_dataset("fashion-mnist");
    spec->set_device("cpu");
    spec->set_limit_train(2000);
    spec->set_limit_test(100);
    spec->mutable_debug()->set_crash_at_step(3);
    spec->mutable_debug()->set_crash_kind(kind);
    Job job;
    grpc::ClientContext context;
    grpc::Status status = stub().SubmitJob(&context, request, &job);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return job.id();
  }
};

TEST_F(FaultTest, SegfaultAbortAndExitFailOnlyTheirJob) {
  const int64_t segfault = SubmitCrashing("segfault");
  const int64_t abort = SubmitCrashing("abort");
  const int64_t exit = SubmitCrashing("exit");
  const int64_t healthy = SubmitSmall();
  Job a = WaitForState(segfault, Job::FAILED);
  EXPECT_NE(a.result().error().find("worker killed by signal 11"), std::string::npos)
      << a.result().error();
  EXPECT_NE(a.result().error().find("injecting fault 'segfault'"), std::string::npos)
      << "the stderr tail is kept: " << a.result().error();
  Job b = WaitForState(abort, Job::FAILED);
  EXPECT_NE(b.result().error().find("worker killed by signal 6"), std::string::npos)
      << b.result().error();
  Job c = WaitForState(exit, Job::FAILED);
  EXPECT_NE(c.result().error().find("worker exited with code 42"), std::string::npos)
      << c.result().error();
  WaitForState(healthy, Job::SUCCEEDED);
  // The events of a crashed job are still dense and end with the failure.
  const auto events = Events(segfault);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ(events.back().state_change().state(), Job::FAILED);
}

// Promise 4: the device runs out of memory inside a job (a real allocation the allocator refuses).
TEST_F(FaultTest, OutOfMemoryFailsTheJobWithResourceExhaustedAndTheQueueGoesOn) {
  const int64_t oom = SubmitCrashing("oom");
  const int64_t healthy = SubmitSmall();
  Job job = WaitForState(oom, Job::FAILED);
  const std::string& error = job.result().error();
  EXPECT_NE(error.find("RESOURCE_EXHAUSTED: out of memory on cpu while training at batch size 128 "
                       "with "),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("MiB in use"), std::string::npos) << error;
  WaitForState(healthy, Job::SUCCEEDED);
}

TEST_F(FaultTest, RunningOutOfMemoryForTheDatasetDoesNotBlameTheBatchSize) {
  // 10 million 3x1024x1024 images: about 120 TB, refused by the allocator while loading.
  const Result submitted = Trainctl({"submit", "--model", "mlp", "--dataset", "fake", "--device",
                                     "cpu", "--num-samples", "10000000", "--image-size", "1024"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  const int64_t id = std::stoll(submitted.out);
  const std::string error = WaitForState(id, Job::FAILED).result().error();
  EXPECT_NE(error.find("out of memory on cpu while loading the dataset"), std::string::npos)
      << error;
  EXPECT_EQ(error.find("batch size"), std::string::npos) << error;
}

TEST_F(FaultTest, ADivergingLossFailsTheJobSayingWhen) {
  // SGD with an absurd (finite, so accepted) learning rate: the weights blow up within steps.
  const int64_t sgd = SubmitSmall("mlp", {"--optimizer", "sgd", "--lr", "1e30"});
  Job failed = WaitForState(sgd, Job::FAILED);
  EXPECT_NE(failed.result().error().find("training diverged"), std::string::npos)
      << failed.result().error();
  EXPECT_NE(failed.result().error().find("at epoch 1, batch"), std::string::npos);
  // With the option the same job trains to the end (its loss NaN throughout).
  const int64_t allowed =
      SubmitSmall("mlp", {"--optimizer", "sgd", "--lr", "1e30", "--allow-nonfinite-loss"});
  WaitForState(allowed, Job::SUCCEEDED);
}

TEST_F(FaultTest, AHungWorkerIsKilledOnCancel) {
  const int64_t hung = SubmitCrashing("hang");
  WaitForState(hung, Job::RUNNING);
  std::this_thread::sleep_for(std::chrono::seconds(2));  // well into the hang
  EXPECT_EQ(Trainctl({"cancel", std::to_string(hung)}).exit_code, 0);
  // The hung worker never reaches a batch boundary to see SIGTERM: the grace period (3 s in the
  // fixture) ends in SIGKILL, and the job is still recorded as cancelled.
  Job job = WaitForState(hung, Job::CANCELLED, absl::Seconds(20));
  EXPECT_EQ(job.result().error(), "cancelled by request");
}

// A worker killed by a signal (the OOM killer, kill -9) after its job checkpointed: the job
// resumes from the checkpoint instead of failing (docs/jobs.md: a crash costs at most
// --checkpoint-minutes of work), and says why.
TEST_F(FaultTest, AKilledWorkerResumesFromItsCheckpoint) {
  StopDaemon();
  checkpoint_minutes_ = 0.005;  // every 0.3 s
  StartDaemon();
  trainer::v1::SubmitJobRequest request;
  auto* spec = request.mutable_spec();
  spec->set_model("mlp");
  spec->set_dataset("fashion-mnist");
  spec->set_device("cpu");
  spec->set_epochs(2);
  spec->set_limit_train(2000);
  spec->set_limit_test(100);
  // Each step takes at least 50 ms, so checkpoints come before the crash at step 20 on any machine.
  spec->mutable_debug()->set_step_delay_ms(50);
  spec->mutable_debug()->set_crash_at_step(20);
  spec->mutable_debug()->set_crash_kind("segfault");
  Job job;
  grpc::ClientContext context;
  ASSERT_TRUE(stub().SubmitJob(&context, request, &job).ok());
  WaitForState(job.id(), Job::SUCCEEDED);
  bool requeued = false, resumed = false;
  for (const trainer::v1::JobEvent& event : Events(job.id())) {
    if (event.has_state_change() && event.state_change().state() == Job::QUEUED &&
        event.state_change().reason() ==
            "worker killed by signal 11 (Segmentation fault); the job restarts from the last "
            "checkpoint (restart 1 of 3)") {
      requeued = true;
    }
    if (event.has_log() && event.log().text().rfind("Resumed from the checkpoint", 0) == 0) {
      resumed = true;
    }
  }
  EXPECT_TRUE(requeued) << "the job was re-queued, saying why";
  EXPECT_TRUE(resumed) << "and resumed from its checkpoint";
}

TEST_F(FaultTest, DebugSpecIsRefusedWithoutTheDaemonFlag) {
  StopDaemon();
  fault_injection_ = false;
  StartDaemon();
  trainer::v1::SubmitJobRequest request;
  request.mutable_spec()->set_model("mlp");
  request.mutable_spec()->set_dataset("fashion-mnist");
  request.mutable_spec()->mutable_debug()->set_crash_kind("segfault");
  Job job;
  grpc::ClientContext context;
  grpc::Status status = stub().SubmitJob(&context, request, &job);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("--enable-fault-injection"), std::string::npos);
}

}  // namespace
}  // namespace traind
