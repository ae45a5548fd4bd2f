// Trains on the first images of the real Fashion-MNIST files (fast) and checks the events.
#include "engine/training_job.h"

#include <sys/stat.h>

#include <vector>

#include "absl/strings/match.h"
#include "common/job_spec.h"
#include "common/small_spec_for_tests.h"
#include "common/temp_dir_for_tests.h"
#include "engine/cuda_graph_step.h"
#include "engine/training_loop.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;
using trainer::v1::JobSpec;

trainer::v1::WorkerRequest Request(const JobSpec& spec) {
  trainer::v1::WorkerRequest request;
  *request.mutable_spec() = spec;
  return request;
}

TEST(TrainingJobTest, EmitsTheReferenceEventsAndLearns) {
  for (const std::string model : {"lenet5", "mlp"}) {
    std::vector<JobEvent> events;
    std::atomic<bool> stop{false};
    absl::Status status = RunTrainingJob(
        Request(SmallSpecForTests(model)), [&](JobEvent e) { events.push_back(std::move(e)); },
        stop);
    ASSERT_TRUE(status.ok()) << status;
    int steps = 0, summaries = 0, training_shares = 0;
    for (const JobEvent& e : events) {
      if (e.has_step()) {
        ++steps;
        EXPECT_EQ(e.step().batches_per_epoch(), 1152 / 64);
        EXPECT_GT(e.step().current_allocated_bytes(), 0);
        EXPECT_TRUE(e.has_time());
        // How busy it kept the host's cores, and the host's memory (engine/device_activity.h):
        // what a search packs its CPU trials by.
        ASSERT_TRUE(e.step().has_device_busy());
        EXPECT_GE(e.step().device_busy(), 0.0);
        EXPECT_LE(e.step().device_busy(), 1.0);
        EXPECT_GT(e.step().device_used_bytes(), 0);
        EXPECT_GE(e.step().device_total_bytes(), e.step().device_used_bytes());
        training_shares += e.step().has_device_busy_training();
      }
      if (e.has_epoch_summary()) ++summaries;
    }
    EXPECT_EQ(steps, 2 * 6);  // batches 0,3,...,15 of 18, two epochs
    // From the second step report on: the first one starts the window.
    EXPECT_EQ(training_shares, steps - 1);
    EXPECT_EQ(summaries, 2);
    ASSERT_TRUE(events.back().has_final_result());
    // 10 classes: chance is 0.1; a few hundred steps of Adam gets far above it.
    EXPECT_GT(events.back().final_result().test_accuracy(), 0.5) << model;
  }
}

TEST(TrainingJobTest, SameSeedSameLoss) {
  auto first_loss = [] {
    std::vector<JobEvent> events;
    std::atomic<bool> stop{false};
    JobSpec spec = SmallSpecForTests("mlp");
    spec.set_epochs(1);
    EXPECT_TRUE(RunTrainingJob(
                    Request(spec), [&](JobEvent e) { events.push_back(e); }, stop)
                    .ok());
    return events.at(1).step().loss();
  };
  EXPECT_DOUBLE_EQ(first_loss(), first_loss());
}

TEST(TrainingJobTest, StopFlagCancels) {
  std::atomic<bool> stop{true};
  absl::Status status = RunTrainingJob(
      Request(SmallSpecForTests("mlp")), [](JobEvent) {}, stop);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
}

TEST(TrainingJobTest, MissingDataNamesTheFile) {
  JobSpec spec = SmallSpecForTests("mlp");
  spec.set_data_dir("/nonexistent/dir");
  std::atomic<bool> stop{false};
  absl::Status status = RunTrainingJob(
      Request(spec), [](JobEvent) {}, stop);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("/nonexistent/dir/train-images-idx3-ubyte"), std::string::npos);
}

TEST(TrainingJobTest, UnavailableDeviceIsRefused) {
  JobSpec spec = SmallSpecForTests("mlp");
  spec.set_device("cuda:7");
  std::atomic<bool> stop{false};
  EXPECT_EQ(RunTrainingJob(
                Request(spec), [](JobEvent) {}, stop)
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

std::vector<JobEvent> RunWhole(const JobSpec& spec) {
  std::atomic<bool> stop{false};
  std::vector<JobEvent> events;
  const absl::Status status = RunTrainingJob(
      Request(spec), [&](JobEvent e) { events.push_back(std::move(e)); }, stop);
  EXPECT_TRUE(status.ok()) << status;
  return events;
}

// Runs `spec` in `dir`, stopping it mid-way through epoch 2 the way traind's shutdown does
// (suspend + stop, as if SIGUSR1 arrived), then runs it again there. The events of each run.
struct InterruptedRun {
  absl::Status interrupted;
  std::vector<JobEvent> first, second;
};
InterruptedRun RunSuspendedAndResumed(const JobSpec& spec, const std::string& dir) {
  trainer::v1::WorkerRequest request = Request(spec);
  request.set_job_dir(dir);
  std::atomic<bool> stop{false}, suspend{false};
  InterruptedRun run;
  run.interrupted = RunTrainingJob(
      request,
      [&](JobEvent e) {
        if (e.has_step() && e.step().epoch() == 2 && e.step().batch() >= 6) {
          suspend = true;
          stop = true;
        }
        run.first.push_back(std::move(e));
      },
      stop, &suspend);
  stop = false;
  suspend = false;
  const absl::Status resumed = RunTrainingJob(
      request, [&](JobEvent e) { run.second.push_back(std::move(e)); }, stop, &suspend);
  EXPECT_TRUE(resumed.ok()) << resumed;
  return run;
}

bool HasLogStartingWith(const std::vector<JobEvent>& events, const std::string& prefix) {
  for (const JobEvent& e : events) {
    if (e.has_log() && e.log().text().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

double FinalAccuracy(const std::vector<JobEvent>& events) {
  return !events.empty() && events.back().has_final_result()
             ? events.back().final_result().test_accuracy()
             : -1;
}

// Stops a job mid-epoch the way traind's shutdown does, then runs it again in the same
// directory: it resumes at the checkpointed batch with the model, optimizer and generators
// restored, and ends exactly where an uninterrupted run ends.
TEST(TrainingJobTest, ASuspendedJobResumesMidEpochAndMatchesAnUninterruptedRun) {
  JobSpec spec = SmallSpecForTests("lenet5");
  spec.set_threads(1);              // bitwise-repeatable on the CPU
  spec.set_random_crop_padding(2);  // the augmentation generator must be restored too
  const std::vector<JobEvent> whole = RunWhole(spec);
  TempDirForTests temp;
  const InterruptedRun run = RunSuspendedAndResumed(spec, temp.path());
  EXPECT_TRUE(absl::IsCancelled(run.interrupted)) << run.interrupted;
  EXPECT_TRUE(HasLogStartingWith(run.first, "Checkpoint at epoch 2, batch 7/18 (before stopping)"));
  EXPECT_TRUE(HasLogStartingWith(run.second, "Resumed from the checkpoint at epoch 2, batch 7"));
  int first_batch = -1;
  for (const JobEvent& e : run.second) {
    if (e.has_step() && first_batch < 0) first_batch = e.step().batch();
  }
  EXPECT_EQ(first_batch, 9) << "continues at batch 7 (the first step reported is 9: every 3rd)";
  EXPECT_EQ(FinalAccuracy(run.second), FinalAccuracy(whole));
}

// What a run's epochs and result were, to the bit: each epoch's train loss and validation
// accuracy, then the test accuracy.
std::vector<double> Trajectory(const std::vector<JobEvent>& events) {
  std::vector<double> values;
  for (const JobEvent& e : events) {
    if (e.has_epoch_summary()) {
      values.push_back(e.epoch_summary().epoch());
      values.push_back(e.epoch_summary().train_loss());
      values.push_back(e.epoch_summary().validation_accuracy());
    }
    if (e.has_final_result()) values.push_back(e.final_result().test_accuracy());
  }
  return values;
}

// A search's trial paused at its rung (after epoch 1 of 3) and promoted: the second run trains
// epochs 2 and 3 only, and ends with the weights, curve and result of a run never paused, under
// a schedule that spans all three epochs and with the augmentation's generator restored.
TEST(TrainingJobTest, ATrialPausedAtItsRungResumesToTheWeightsOfAnUninterruptedRun) {
  JobSpec spec = SmallSpecForTests("lenet5");
  spec.set_epochs(3);
  spec.set_threads(1);  // bitwise-repeatable on the CPU
  spec.set_random_crop_padding(2);
  spec.set_lr_schedule("onecycle");
  spec.set_label_smoothing(0.1);
  std::atomic<bool> stop{false};
  TempDirForTests whole_dir;
  trainer::v1::WorkerRequest whole = Request(spec);
  whole.set_job_dir(whole_dir.path());
  std::vector<JobEvent> whole_events;
  ASSERT_TRUE(RunTrainingJob(
                  whole, [&](JobEvent e) { whole_events.push_back(std::move(e)); }, stop)
                  .ok());

  TempDirForTests trial_dir;
  trainer::v1::WorkerRequest trial = Request(spec);
  trial.set_job_dir(trial_dir.path());
  trial.set_pause_after_epoch(1);
  std::vector<JobEvent> paused_events, resumed_events;
  const absl::Status paused = RunTrainingJob(
      trial, [&](JobEvent e) { paused_events.push_back(std::move(e)); }, stop);
  EXPECT_TRUE(IsPausedAtRung(paused)) << paused;
  EXPECT_TRUE(HasLogStartingWith(paused_events, "Paused after epoch 1 of 3"));
  trial.set_pause_after_epoch(0);  // promoted to the last rung: to the end
  ASSERT_TRUE(RunTrainingJob(
                  trial, [&](JobEvent e) { resumed_events.push_back(std::move(e)); }, stop)
                  .ok());
  EXPECT_TRUE(HasLogStartingWith(resumed_events, "Resumed from the checkpoint after epoch 1"));
  int first_epoch = 0;
  for (const JobEvent& e : resumed_events) {
    if (e.has_step() && first_epoch == 0) first_epoch = e.step().epoch();
  }
  EXPECT_EQ(first_epoch, 2) << "epoch 1 is not trained again";
  std::vector<JobEvent> both = paused_events;
  both.insert(both.end(), resumed_events.begin(), resumed_events.end());
  EXPECT_EQ(Trajectory(both), Trajectory(whole_events));
  const absl::StatusOr<std::string> final_weights = ReadTextFile(whole_dir.path() + "/final.pt");
  ASSERT_TRUE(final_weights.ok() && !final_weights->empty()) << final_weights.status();
  EXPECT_TRUE(*final_weights == ReadTextFile(trial_dir.path() + "/final.pt").value_or(""))
      << "the final weights differ from an uninterrupted run's";
}

// A CPU job's prepared images go to traind's cache (TRAIND_CACHE_DIR); the next job that reads the
// same files the same way maps them instead of preparing them again, and trains exactly as the
// first did.
TEST(TrainingJobTest, TheNextJobMapsThePreparedImagesAndTrainsTheSame) {
  TempDirForTests cache;
  ASSERT_EQ(setenv("TRAIND_CACHE_DIR", cache.path().c_str(), 1), 0);
  JobSpec spec = SmallSpecForTests("mlp");
  spec.set_threads(1);
  const std::vector<JobEvent> first = RunWhole(spec);
  const std::vector<JobEvent> second = RunWhole(spec);
  unsetenv("TRAIND_CACHE_DIR");
  auto startup = [](const std::vector<JobEvent>& events) {
    for (const JobEvent& e : events) {
      if (e.has_log() && absl::StartsWith(e.log().text(), "Start-up:")) return e.log().text();
    }
    return std::string();
  };
  EXPECT_FALSE(absl::StrContains(startup(first), "from traind's cache")) << startup(first);
  EXPECT_TRUE(absl::StrContains(startup(second), "dataset (prepared, from traind's cache)"))
      << startup(second);
  EXPECT_EQ(Trajectory(second), Trajectory(first));
  // Another limit is another dataset: prepared, not mapped.
  spec.set_limit_train(640);
  ASSERT_EQ(setenv("TRAIND_CACHE_DIR", cache.path().c_str(), 1), 0);
  const std::vector<JobEvent> other = RunWhole(spec);
  unsetenv("TRAIND_CACHE_DIR");
  EXPECT_FALSE(absl::StrContains(startup(other), "from traind's cache")) << startup(other);
}

// The same for a job whose step is a CUDA graph, under a schedule: the graph updates the
// optimizer's own state, so the checkpoint holds it, and the resumed job captures it again.
// Deterministic, so the two runs are comparable bit for bit. Only on a CUDA host.
TEST(TrainingJobTest, ACudaGraphJobResumesFromItsCheckpointAndMatchesAnUninterruptedRun) {
  if (!torch::cuda::is_available() || !CudaGraphTrainStep::Available()) {
    GTEST_SKIP() << "no CUDA device, or this LibTorch cannot capture CUDA graphs";
  }
  JobSpec spec = SmallSpecForTests("lenet5");
  spec.set_device("cuda:0");
  spec.set_cuda_graph(true);
  spec.set_deterministic(true);
  spec.set_lr_schedule("cosine");
  spec.set_label_smoothing(0.1);
  auto last_loss = [](const std::vector<JobEvent>& events) {
    double loss = -1;
    for (const JobEvent& e : events) {
      if (e.has_step()) loss = e.step().loss();
    }
    return loss;
  };
  const std::vector<JobEvent> whole = RunWhole(spec);
  TempDirForTests temp;
  const InterruptedRun run = RunSuspendedAndResumed(spec, temp.path());
  EXPECT_TRUE(absl::IsCancelled(run.interrupted)) << run.interrupted;
  EXPECT_TRUE(HasLogStartingWith(run.second, "Resumed from the checkpoint at epoch 2, batch 7"));
  bool graph = false;  // "Fast paths: device-resident data (N MiB), CUDA graph"
  for (const JobEvent& e : run.second) {
    graph |= e.has_log() && e.log().text().rfind("Fast paths: ", 0) == 0 &&
             absl::EndsWith(e.log().text(), ", CUDA graph");
  }
  EXPECT_TRUE(graph) << "the resumed run captured its step again";
  EXPECT_EQ(last_loss(run.second), last_loss(whole));
  EXPECT_EQ(FinalAccuracy(run.second), FinalAccuracy(whole));
}

}  // namespace
}  // namespace traind
