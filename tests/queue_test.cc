// Issue 4: the scheduler's promises (priority, exclusive jobs, dependencies, drain, idempotent
// submit, retry) and sweeps with their report, through trainctl and a real daemon.
#include <algorithm>
#include <fstream>
#include <sstream>

#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using google::protobuf::util::TimeUtil;
using trainer::v1::Job;

class QueueTest : public DaemonTest {
 protected:
  int64_t Submit(const std::vector<std::string>& extra) {
    std::vector<std::string> args = {
        "submit",        "--model", "mlp",          "--dataset", "fashion-mnist", "--device", "cpu",
        "--limit-train", "1200",    "--limit-test", "100",       "--batch-size",  "64"};
    args.insert(args.end(), extra.begin(), extra.end());
    Result r = Trainctl(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::stoll(r.out);
  }
  static bool Overlap(const Job& a, const Job& b) {
    return a.start_time() < b.end_time() && b.start_time() < a.end_time();
  }
};

TEST_F(QueueTest, PriorityOrderWhilePausedThenResumed) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  const int64_t low = Submit({});
  const int64_t high = Submit({"--priority", "5"});
  const int64_t low2 = Submit({});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(GetJob(low).state(), Job::QUEUED);  // paused: nothing starts
  Result resume = Trainctl({"resume"});
  EXPECT_EQ(resume.exit_code, 0);
  EXPECT_NE(resume.out.find("queue running"), std::string::npos) << resume.out;
  Job a = WaitForState(low, Job::SUCCEEDED), b = WaitForState(high, Job::SUCCEEDED),
      c = WaitForState(low2, Job::SUCCEEDED);
  EXPECT_LT(b.start_time(), a.start_time());
  EXPECT_LT(a.start_time(), c.start_time());
}

TEST_F(QueueTest, PauseSurvivesARestart) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  const int64_t id = Submit({});
  StopDaemon();
  StartDaemon();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(GetJob(id).state(), Job::QUEUED);
  Trainctl({"resume"});
  WaitForState(id, Job::SUCCEEDED);
}

TEST_F(QueueTest, LanesRunSideBySideButExclusiveJobsRunAlone) {
  StopDaemon();
  slots_["cpu"] = 2;
  StartDaemon();
  Trainctl({"pause"});
  const int64_t a = Submit({"--epochs", "2"});
  const int64_t b = Submit({"--epochs", "2"});
  const int64_t exclusive = Submit({"--exclusive"});
  const int64_t c = Submit({"--epochs", "2"});
  Trainctl({"resume"});
  std::vector<Job> jobs;
  for (int64_t id : {a, b, exclusive, c}) jobs.push_back(WaitForState(id, Job::SUCCEEDED));
  EXPECT_TRUE(Overlap(jobs[0], jobs[1]));  // two slots on the cpu lane
  for (int i : {0, 1, 3}) EXPECT_FALSE(Overlap(jobs[2], jobs[i])) << "job " << jobs[i].id();
  // The exclusive job was next in line: c may not jump ahead of it.
  EXPECT_GT(jobs[3].start_time(), jobs[2].end_time());
  // Benchmarks are exclusive by default.
  Result bench = Trainctl({"bench", "matmul", "--size", "64", "--device", "cpu", "-o", "json"});
  Job bench_job;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(bench.out, &bench_job).ok());
  EXPECT_TRUE(bench_job.exclusive());
}

TEST_F(QueueTest, DependenciesWaitAndInheritFailure) {
  const int64_t first = Submit({"--epochs", "2"});
  const int64_t second = Submit({"--after", std::to_string(first), "--priority", "9"});
  Job a = WaitForState(first, Job::SUCCEEDED);
  Job b = WaitForState(second, Job::SUCCEEDED);
  EXPECT_GE(b.start_time(), a.end_time());

  Trainctl({"pause"});
  const int64_t doomed = Submit({});
  const int64_t dependent = Submit({"--after", std::to_string(doomed)});
  Trainctl({"cancel", std::to_string(doomed)});
  Trainctl({"resume"});
  Job d = WaitForState(dependent, Job::CANCELLED, absl::Seconds(20));
  EXPECT_EQ(d.result().error(), "dependency " + std::to_string(doomed) + " ended CANCELLED");
  Result bad =
      Trainctl({"submit", "--model", "mlp", "--dataset", "fashion-mnist", "--after", "999"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("after: job 999 not found"), std::string::npos);
}

TEST_F(QueueTest, DrainWaitsForRunningJobsAndStartsNothing) {
  const int64_t running = Submit({"--epochs", "3"});
  const int64_t queued = Submit({});
  WaitForState(running, Job::RUNNING);
  Result drain = Trainctl({"drain"});
  EXPECT_EQ(drain.exit_code, 0) << drain.err;
  EXPECT_NE(drain.out.find("queue paused: 0 running, 1 queued"), std::string::npos) << drain.out;
  EXPECT_EQ(GetJob(running).state(), Job::SUCCEEDED);
  EXPECT_EQ(GetJob(queued).state(), Job::QUEUED);
  Trainctl({"resume"});
  WaitForState(queued, Job::SUCCEEDED);
}

TEST_F(QueueTest, IdempotentSubmitAndRetry) {
  Trainctl({"pause"});
  const int64_t first = Submit({"--idempotency-key", "nightly-2026-11-29"});
  const int64_t again = Submit({"--idempotency-key", "nightly-2026-11-29"});
  EXPECT_EQ(first, again);
  Trainctl({"cancel", std::to_string(first)});
  Result retry = Trainctl({"retry", std::to_string(first)});
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  const int64_t retried = std::stoll(retry.out);
  EXPECT_NE(retried, first);
  EXPECT_EQ(GetJob(retried).retry_of(), first);
  EXPECT_EQ(GetJob(retried).spec().SerializeAsString(), GetJob(first).spec().SerializeAsString());
  Trainctl({"resume"});
  WaitForState(retried, Job::SUCCEEDED);
  EXPECT_EQ(Trainctl({"retry", "424242"}).exit_code, 2);
}

TEST_F(QueueTest, ARetryWaitsForWhatTheOriginalWaitedFor) {
  Trainctl({"pause"});
  const int64_t first = Submit({});
  const int64_t dependent = Submit({"--after", std::to_string(first)});
  Trainctl({"cancel", std::to_string(dependent)});
  Result retry = Trainctl({"retry", std::to_string(dependent)});
  ASSERT_EQ(retry.exit_code, 0) << retry.err;
  const Job retried = GetJob(std::stoll(retry.out));
  ASSERT_EQ(retried.after_size(), 1);
  EXPECT_EQ(retried.after(0), first);
  // A dependency deleted since: refused, naming it (deleting it was refused while the retry
  // waited for it).
  EXPECT_EQ(Trainctl({"delete", std::to_string(first)}).exit_code, 1);  // still queued
  Trainctl({"cancel", std::to_string(first), std::to_string(retried.id())});
  Result deleted = Trainctl({"delete", std::to_string(first)});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  Result refused = Trainctl({"retry", std::to_string(dependent)});
  EXPECT_EQ(refused.exit_code, 2);  // INVALID_ARGUMENT, as at submit
  EXPECT_NE(refused.err.find("after: job " + std::to_string(first) + " not found"),
            std::string::npos)
      << refused.err;
}

TEST_F(QueueTest, DeletingAJobThatAQueuedJobNeedsIsRefusedUnlessForced) {
  const int64_t source = Submit({});
  WaitForState(source, Job::SUCCEEDED);
  Trainctl({"pause"});
  const int64_t waiting = Submit({"--after", std::to_string(source)});
  Result refused = Trainctl({"delete", std::to_string(source)});
  EXPECT_EQ(refused.exit_code, 1);  // FAILED_PRECONDITION, as for a job still running
  EXPECT_NE(refused.err.find("job " + std::to_string(source) + " is needed by unfinished job " +
                             std::to_string(waiting)),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(GetJob(source).state(), Job::SUCCEEDED);  // nothing lost
  Result forced = Trainctl({"delete", "--force", std::to_string(source)});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
}

TEST_F(QueueTest, SweepWatchAndReport) {
  Result sweep = Trainctl({"sweep", "--model", "lenet5,mlp", "--dataset", "fashion-mnist",
                           "--device", "cpu", "--threads", "1,2", "--repeat", "2", "--epochs", "1",
                           "--limit-train", "1200", "--limit-test", "200"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  const std::string id = sweep.out.substr(0, sweep.out.size() - 1);
  Result watch = Trainctl({"watch", "--sweep", id});
  EXPECT_EQ(watch.exit_code, 0) << watch.out;
  EXPECT_GE(std::count(watch.out.begin(), watch.out.end(), '\n'), 8) << watch.out;

  Result list = Trainctl({"list", "--sweep", id, "-o", "json"});
  trainer::v1::ListJobsResponse members;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(list.out, &members).ok());
  ASSERT_EQ(members.jobs_size(), 8);
  for (const Job& job : members.jobs()) {
    EXPECT_EQ(job.state(), Job::SUCCEEDED);
    EXPECT_TRUE(job.exclusive());
  }

  Result json = Trainctl({"report", id, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  trainer::v1::SweepReport report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.out, &report).ok()) << json.out;
  ASSERT_EQ(report.rows_size(), 4);  // 2 models x 2 thread counts, 2 runs each
  // All on the cpu: nothing to compare with the cpu baseline, and the report says so instead of
  // calling every row "1.00x (baseline)".
  EXPECT_EQ(report.no_speedup_reason(), "every run used device cpu");
  for (const auto& row : report.rows()) {
    EXPECT_EQ(row.runs(), 2);
    EXPECT_EQ(row.succeeded(), 2);
    EXPECT_GT(row.epoch_seconds_median(), 0);
    EXPECT_LE(row.epoch_seconds_min(), row.epoch_seconds_median());
    EXPECT_EQ(row.speedup(), 0);
    EXPECT_FALSE(row.is_baseline());
    EXPECT_NE(row.options().find("threads="), std::string::npos);
    EXPECT_FALSE(row.loss_curve().empty());
  }
  Result markdown = Trainctl({"report", id, "--format", "markdown"});
  EXPECT_NE(markdown.out.find("|---"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("lenet5"), std::string::npos);
  Result csv = Trainctl({"report", id, "--format", "csv"});
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5) << csv.out;
  const std::string svg_path = state_dir_ + "/sweep.svg";
  Result plot = Trainctl({"report", id, "--plot", svg_path});
  EXPECT_EQ(plot.exit_code, 0) << plot.err;
  std::ifstream svg(svg_path);
  std::stringstream svg_text;
  svg_text << svg.rdbuf();
  EXPECT_EQ(svg_text.str().rfind("<svg", 0), 0u);
  EXPECT_NE(svg_text.str().find("<polyline"), std::string::npos);

  // Against another field: each threads=2 row against the threads=1 row of its model.
  Result by_threads = Trainctl({"report", id, "--baseline", "threads=1", "-o", "json"});
  ASSERT_EQ(by_threads.exit_code, 0) << by_threads.err;
  trainer::v1::SweepReport threads_report;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(by_threads.out, &threads_report).ok());
  EXPECT_EQ(threads_report.baseline(), "threads=1");
  int baselines = 0;
  for (const auto& row : threads_report.rows()) {
    const bool one_thread = row.options().find("threads=1") != std::string::npos;
    EXPECT_EQ(row.is_baseline(), one_thread) << row.options();
    baselines += row.is_baseline();
    if (one_thread) {
      EXPECT_DOUBLE_EQ(row.speedup(), 1.0);
    } else {
      EXPECT_GT(row.speedup(), 0) << row.options();
    }
  }
  EXPECT_EQ(baselines, 2);
  Result table = Trainctl({"report", id, "--baseline", "threads=1"});
  EXPECT_NE(table.out.find("speedup against threads=1"), std::string::npos) << table.out;
  Result seven = Trainctl({"report", id, "--baseline", "threads=7"});
  EXPECT_EQ(seven.exit_code, 2);
  EXPECT_NE(seven.err.find("baseline: no member of sweep " + id +
                           " has threads=7; its threads "
                           "values: 1, 2"),
            std::string::npos)
      << seven.err;
  Result colour = Trainctl({"report", id, "--baseline", "colour=red"});
  EXPECT_EQ(colour.exit_code, 2);
  EXPECT_NE(colour.err.find("baseline: unknown job field 'colour'"), std::string::npos)
      << colour.err;

  EXPECT_EQ(Trainctl({"report", "999"}).exit_code, 2);
  Result bad = Trainctl({"sweep", "--model", "lenet5,nosuch", "--dataset", "fashion-mnist"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("member 2 of 2: model: unknown value 'nosuch'"), std::string::npos)
      << bad.err;
  Result typo = Trainctl({"sweep", "--model", "mlp", "--threads", "1,two"});
  EXPECT_EQ(typo.exit_code, 2);
}

TEST_F(QueueTest, SweepBatchSizeTakesAutoAlongsideNumbers) {
  Result sweep = Trainctl({"sweep", "--model", "mlp", "--dataset", "fake", "--num-samples", "64",
                           "--image-size", "28", "--channels", "1", "--device", "cpu",
                           "--batch-size", "auto,16", "-o", "json"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  trainer::v1::Sweep created;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(sweep.out, &created).ok()) << sweep.out;
  ASSERT_EQ(created.job_ids_size(), 2);
  const Job searched = GetJob(created.job_ids(0));
  const Job fixed = GetJob(created.job_ids(1));
  EXPECT_TRUE(searched.spec().batch_size_auto());
  EXPECT_FALSE(fixed.spec().batch_size_auto());
  EXPECT_EQ(fixed.spec().batch_size(), 16);
  EXPECT_EQ(Trainctl({"watch", "--sweep", std::to_string(created.id())}).exit_code, 0);
  Result report = Trainctl({"report", std::to_string(created.id()), "--format", "csv"});
  EXPECT_EQ(report.exit_code, 0) << report.err;

  Result bad = Trainctl({"sweep", "--model", "mlp", "--dataset", "fake", "--batch-size", "big"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("batch_size: expected 'auto' or an integer from 1 to 1048576, got 'big'"),
            std::string::npos)
      << bad.err;
}

TEST_F(QueueTest, SweepSwitchesGoToEveryMember) {
  // A switch takes no list: every member gets it (--hflip, --device-resident...).
  Result sweep = Trainctl({"sweep", "--model", "mlp", "--dataset", "fake", "--num-samples", "64",
                           "--image-size", "28", "--channels", "1", "--device", "cpu",
                           "--batch-size", "8,16", "--hflip", "--device-resident", "-o", "json"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  trainer::v1::Sweep created;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(sweep.out, &created).ok()) << sweep.out;
  ASSERT_EQ(created.job_ids_size(), 2);
  for (int64_t id : created.job_ids()) {
    const Job member = GetJob(id);
    EXPECT_TRUE(member.spec().horizontal_flip()) << member.spec().DebugString();
    EXPECT_TRUE(member.spec().device_resident()) << member.spec().DebugString();
    EXPECT_FALSE(member.spec().cifar_stem());  // not given: not set
  }
}

TEST_F(QueueTest, SweepFileWithGridAndConfigs) {
  const std::string path = state_dir_ + "/sweep.yaml";
  std::ofstream(path) << "name: file sweep\n"
                         "base: {dataset: fake, epochs: 1, num_samples: 64, batch_size: 16,\n"
                         "       device: cpu}\n"
                         "configs:\n"
                         "  - {model: mlp, image_size: 28, channels: 1}\n"
                         "  - {model: lenet5, image_size: 32, channels: 1}\n"
                         "grid: {lr: [0.001, 0.01]}\n";
  Result sweep = Trainctl({"sweep", path, "-o", "json"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  trainer::v1::Sweep created;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(sweep.out, &created).ok()) << sweep.out;
  EXPECT_EQ(created.job_ids_size(), 4);
  EXPECT_EQ(created.spec().name(), "file sweep");
  EXPECT_EQ(Trainctl({"watch", "--sweep", std::to_string(created.id())}).exit_code, 0);
}

}  // namespace
}  // namespace traind
