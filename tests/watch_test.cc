// trainctl watch and logs against a real daemon running real jobs.
#include <regex>
#include <sstream>
#include <thread>

#include "google/protobuf/util/json_util.h"
#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::JobEvent;

class WatchTest : public DaemonTest {};

std::vector<JobEvent> ParseJsonLines(const std::string& text) {
  std::vector<JobEvent> events;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    JobEvent event;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(line, &event).ok()) << line;
    events.push_back(event);
  }
  return events;
}

TEST_F(WatchTest, FollowsAJobToSuccessAndExitsZero) {
  const int64_t id = SubmitSmall("lenet5");
  Result watch = Trainctl({"watch", std::to_string(id)});
  EXPECT_EQ(watch.exit_code, 0) << watch.err;
  EXPECT_NE(watch.out.find("Job " + std::to_string(id) + " RUNNING"), std::string::npos);
  EXPECT_NE(watch.out.find("Epoch: 001/001 | Batch 0000/0018 | Loss: "), std::string::npos)
      << watch.out;
  EXPECT_NE(watch.out.find("Test accuracy "), std::string::npos);
  EXPECT_NE(watch.out.find("SUCCEEDED"), std::string::npos);

  Job job = GetJob(id);
  EXPECT_EQ(job.state(), Job::SUCCEEDED);
  EXPECT_GT(job.result().test_accuracy(), 0.3);
  EXPECT_EQ(job.result().epoch_seconds_no_eval_size(), 1);
  EXPECT_GT(job.result().peak_current_allocated_bytes(), 0);
}

TEST_F(WatchTest, JsonStreamIsDenseFromTheFirstEvent) {
  const int64_t id = SubmitSmall();
  Result watch = Trainctl({"watch", std::to_string(id), "--output", "json"});
  ASSERT_EQ(watch.exit_code, 0) << watch.err;
  std::vector<JobEvent> events = ParseJsonLines(watch.out);
  ASSERT_GE(events.size(), 5u);
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 1));
  EXPECT_EQ(events.front().state_change().state(), Job::QUEUED);
  EXPECT_EQ(events.back().state_change().state(), Job::SUCCEEDED);
}

TEST_F(WatchTest, FromSeqGetsEveryLaterEventExactlyOnce) {
  const int64_t id = SubmitSmall("mlp", {"--epochs", "2"});
  // Start watching mid-job from seq 4, while events are still being produced.
  WaitForState(id, Job::RUNNING);
  Result watch = Trainctl({"watch", std::to_string(id), "--from-seq", "4", "-o", "json"});
  ASSERT_EQ(watch.exit_code, 0) << watch.err;
  std::vector<JobEvent> events = ParseJsonLines(watch.out);
  std::vector<JobEvent> stored = Events(id);
  ASSERT_EQ(events.size(), stored.size() - 3);
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].seq(), static_cast<int64_t>(i + 4));
    EXPECT_EQ(events[i].SerializeAsString(), stored[i + 3].SerializeAsString());
  }
}

TEST_F(WatchTest, ManyConcurrentWatchersSeeTheSameStream) {
  const int64_t id = SubmitSmall();
  std::vector<std::thread> threads;
  std::vector<Result> results(8);
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      results[i] = Trainctl({"watch", std::to_string(id), "-o", "json"});
    });
  }
  for (auto& t : threads) t.join();
  for (const Result& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, results[0].out);
  }
}

TEST_F(WatchTest, WatchingAFinishedJobReplaysItAndPastTheEndReturnsItsOutcome) {
  const int64_t id = SubmitSmall();
  WaitForState(id, Job::SUCCEEDED);
  Result replay = Trainctl({"watch", std::to_string(id), "-o", "json"});
  EXPECT_EQ(replay.exit_code, 0);
  EXPECT_EQ(ParseJsonLines(replay.out).size(), Events(id).size());
  Result past = Trainctl({"watch", std::to_string(id), "--from-seq", "100000"});
  EXPECT_EQ(past.exit_code, 0) << past.err;
  EXPECT_EQ(past.out, "");
}

TEST_F(WatchTest, UnknownJobIsExitCode2) {
  Result watch = Trainctl({"watch", "4242"});
  EXPECT_EQ(watch.exit_code, 2);
  EXPECT_NE(watch.err.find("job 4242 not found"), std::string::npos) << watch.err;
  Result show = Trainctl({"show", "4242"});
  EXPECT_EQ(show.exit_code, 2);
  Result logs = Trainctl({"logs", "4242"});
  EXPECT_EQ(logs.exit_code, 2);
}

TEST_F(WatchTest, LogsPrintTheReferenceFormatLineForLine) {
  const int64_t id = SubmitSmall("lenet5", {"--epochs", "2"});
  WaitForState(id, Job::SUCCEEDED);
  Result logs = Trainctl({"logs", std::to_string(id)});
  ASSERT_EQ(logs.exit_code, 0) << logs.err;
  const std::string step = R"(Epoch: 00\d/002 \| Batch 00\d\d/0018 \| Loss: \d+\.\d{4})";
  const std::string epoch =
      R"(Time / epoch without evaluation: \d+\.\d\d min
Epoch: 00\d/002 \| Train: \d+\.\d\d% \| Validation: \d+\.\d\d% \| Best Validation \(Ep\. 00\d\): \d+\.\d\d%
Time elapsed: \d+\.\d\d min
)";
  // The job's own notes (the CPU threads it chose, its BLAS's threads where the BLAS has a switch,
  // the batch shards on a machine of a few cores, where its start-up went and how long its worker
  // took to be ready) come first; the rest is the reference's.
  std::string pattern = R"(CPU: \d+ intra-op threads?: [^\n]+
(BLAS: [^\n]+: \d+ threads?[^\n]*
)?(CPU: each batch trained in \d shards at once[^\n]+
)?Start-up: \d+\.\d\d s in this worker before the first step \(dataset \d+\.\d\d s, images \d+\.\d\d s, model \d+\.\d\d s\); the worker was ready \d+\.\d\d s after it started and waited \d+\.\d\d s for this job
)";
  for (int e = 0; e < 2; ++e) {
    for (int b = 0; b < 6; ++b) pattern += step + "\n";
    pattern += epoch;
  }
  pattern += R"(Total Training Time: \d+\.\d\d min
Test accuracy \d+\.\d\d%
Total Time: \d+\.\d\d min
)";
  EXPECT_TRUE(std::regex_match(logs.out, std::regex(pattern))) << logs.out;
}

TEST_F(WatchTest, CorruptDataFailsTheJobNamingTheFileAndTheDaemonGoesOn) {
  const std::string dir = WriteTinyIdxDataset(state_dir_ + "/corrupt", 200, true);
  Result submit = Trainctl(
      {"submit", "--model", "mlp", "--dataset", "mnist", "--data-dir", dir, "--device", "cpu"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  const int64_t id = std::stoll(submit.out);
  Result watch = Trainctl({"watch", std::to_string(id)});
  EXPECT_EQ(watch.exit_code, 1);
  Job job = GetJob(id);
  EXPECT_EQ(job.state(), Job::FAILED);
  EXPECT_NE(job.result().error().find(dir + "/train-images-idx3-ubyte.gz"), std::string::npos)
      << job.result().error();
  EXPECT_NE(job.result().error().find("truncated"), std::string::npos) << job.result().error();

  // The queue goes on: a good job after it succeeds, on a dataset the test made itself.
  const std::string good = WriteTinyIdxDataset(state_dir_ + "/good", 200, false);
  submit = Trainctl({"submit", "--model", "mlp", "--dataset", "mnist", "--data-dir", good,
                     "--device", "cpu", "--batch-size", "16"});
  ASSERT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_EQ(Trainctl({"watch", submit.out.substr(0, submit.out.size() - 1)}).exit_code, 0);
}

}  // namespace
}  // namespace traind
