// Which program runs a job, and what each of its ranks is told, in one table; then real ranks
// started from it (supervise/fake_worker.cc).
#include "supervise/rank_launch.h"

#include <algorithm>

#include "gtest/gtest.h"

namespace traind {
namespace {

bool Has(const std::vector<std::string>& environment, const std::string& variable) {
  return std::find(environment.begin(), environment.end(), variable) != environment.end();
}

bool HasName(const std::vector<std::string>& environment, const std::string& name) {
  return std::any_of(environment.begin(), environment.end(),
                     [&](const std::string& v) { return v.rfind(name + "=", 0) == 0; });
}

TEST(JobProgramsTest, EachKindOfJobRunsItsProgram) {
  const JobPrograms programs = JobPrograms::In("/opt/traind/bin");
  trainer::v1::JobSpec builtin;
  builtin.set_model("lenet5");
  trainer::v1::JobSpec script;
  script.mutable_script()->add_args("train.py");
  trainer::v1::JobSpec slurm;
  slurm.set_backend("slurm");
  trainer::v1::JobSpec hosts;
  hosts.set_hosts("a,b");
  EXPECT_EQ(programs.For(builtin), "/opt/traind/bin/traind-worker");
  EXPECT_EQ(programs.For(script), "/opt/traind/bin/traind-script");
  EXPECT_EQ(programs.For(slurm), "/opt/traind/bin/traind-slurm");
  EXPECT_EQ(programs.For(hosts), "/opt/traind/bin/traind-hosts");
  EXPECT_FALSE(JobPrograms::OneForAllRanks(builtin));
  EXPECT_FALSE(JobPrograms::OneForAllRanks(script));
  EXPECT_TRUE(JobPrograms::OneForAllRanks(slurm));
  EXPECT_TRUE(JobPrograms::OneForAllRanks(hosts));
  // A test's stand-in worker keeps its own name; the others are found beside it.
  const JobPrograms beside = JobPrograms::Beside("/build/bin/fake_worker");
  EXPECT_EQ(beside.worker, "/build/bin/fake_worker");
  EXPECT_EQ(beside.script_runner, "/build/bin/traind-script");
}

TEST(RankLaunchTest, OneRankGetsTheHostsEnvironmentAndNoTorchrunVariables) {
  RankLaunch launch;
  launch.request.mutable_spec()->set_device("cuda");
  launch.devices = {"cuda:1"};
  launch.environment = {"TRAIND_CPU_SLOTS=2"};
  EXPECT_EQ(RankRequest(launch, 0).spec().device(), "cuda:1");
  const std::vector<std::string> environment = RankEnvironment(launch, 0);
  EXPECT_EQ(environment, (std::vector<std::string>{"TRAIND_CPU_SLOTS=2"}));
}

TEST(RankLaunchTest, EachRankOfSeveralKnowsWhereItStands) {
  // A peer's two ranks of a job of four: ranks 2 and 3, local ranks 0 and 1.
  RankLaunch launch;
  launch.devices = {"cuda:0", "cuda:1"};
  launch.first_rank = 2;
  launch.world_size = 4;
  launch.master_addr = "10.0.0.1";
  launch.master_port = 29500;
  const std::vector<std::string> second = RankEnvironment(launch, 1);
  EXPECT_TRUE(Has(second, "RANK=3"));
  EXPECT_TRUE(Has(second, "LOCAL_RANK=1"));
  EXPECT_TRUE(Has(second, "WORLD_SIZE=4"));
  EXPECT_TRUE(Has(second, "MASTER_ADDR=10.0.0.1"));
  EXPECT_TRUE(Has(second, "MASTER_PORT=29500"));
  EXPECT_FALSE(HasName(second, "TRAIND_JOB_DEVICES"));  // built-in ranks are told one device
  EXPECT_EQ(RankRequest(launch, 1).spec().device(), "cuda:1");
  // A Slurm task: its LOCAL_RANK is Slurm's.
  RankLaunch task;
  task.devices = {"cuda:3"};
  task.first_rank = 7;
  task.first_local_rank = 3;
  task.world_size = 8;
  EXPECT_TRUE(Has(RankEnvironment(task, 0), "LOCAL_RANK=3"));
  EXPECT_TRUE(Has(RankEnvironment(task, 0), "RANK=7"));
}

TEST(RankLaunchTest, AProgramsRanksLearnAllTheJobsDevices) {
  RankLaunch launch;
  launch.request.mutable_spec()->mutable_script()->add_args("train.py");
  launch.devices = {"cuda:0", "cuda:1"};
  launch.world_size = 2;
  EXPECT_TRUE(Has(RankEnvironment(launch, 0), "TRAIND_JOB_DEVICES=cuda:0,cuda:1"));
  launch.devices = {"cpu"};
  launch.world_size = 1;
  EXPECT_EQ(RankEnvironment(launch, 0), (std::vector<std::string>{"TRAIND_JOB_DEVICES=cpu"}));
}

TEST(RankLaunchTest, StartsEveryRankAndNamesTheOneThatCannotStart) {
  RankLaunch launch;
  launch.program = TRAIND_FAKE_WORKER;
  launch.request.set_job_id(5);
  launch.devices = {"cpu", "cpu"};
  launch.world_size = 2;
  launch.environment = {"FAKE_WORKER_MODE=succeed"};
  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> ranks = StartRanks(launch);
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(ranks->size(), 2u);
  for (auto& rank : *ranks) {
    trainer::v1::JobEvent event;
    ASSERT_EQ(rank->ReadEvent(&event, absl::Seconds(60)), WorkerProcess::ReadResult::kEvent);
    EXPECT_EQ(event.log().text(), "fake worker for job 5: succeed");
  }
  launch.program = "/nonexistent/traind-worker";
  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> missing = StartRanks(launch);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message().substr(0, 8), "rank 0: ");
}

}  // namespace
}  // namespace traind
