// ProcessLauncher's pool of waiting workers, with stand-ins for traind-worker
// (supervise/fake_worker.cc): it grows for a packed search's trials and shrinks back after.
#include "server/job_launcher.h"

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "gtest/gtest.h"

namespace traind {
namespace {

// A variable of a live worker's environment (/proc/PID/environ): "" when it has none, "(unread)"
// when its environment cannot be read. The spawner goes on while the kernel still sets up the new
// program, whose environment reads as empty until then: that is waited for, up to 10 s (every
// stand-in here has FAKE_WORKER_MODE).
std::string VariableOf(pid_t pid, const std::string& name) {
  for (int tries = 0; tries < 10000; ++tries) {
    std::ifstream file("/proc/" + std::to_string(pid) + "/environ");
    std::string entry, value;
    bool live = false;
    while (std::getline(file, entry, '\0')) {
      live = live || entry.rfind("FAKE_WORKER_MODE=", 0) == 0;
      if (entry.rfind(name + "=", 0) == 0) value = entry.substr(name.size() + 1);
    }
    if (live) return value;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return "(unread)";
}

// Stand-ins for traind-worker (supervise/fake_worker.cc), `warm` kept waiting, the GPU `gpu`'s
// context prepared ahead ("": none; the stand-in ignores it).
ProcessLauncher::Options StandIns(int warm, const std::string& gpu = "") {
  ProcessLauncher::Options options;
  options.programs = JobPrograms::Beside(TRAIND_FAKE_WORKER);
  options.warm_workers = warm;
  options.prepare_device = gpu;
  // Forked stand-ins' variables do not show in /proc/PID/environ (VariableOf): forking has tests
  // of its own below.
  options.fork_workers = false;
  return options;
}

// StandIns on a machine whose GPU cuda:0 is shared by packed trials: their workers start with
// TEST_SHARING=yes (ProcessLauncher's packed_gpu_environment).
ProcessLauncher::Options PackingStandIns(int warm) {
  ProcessLauncher::Options options = StandIns(warm, "cuda:0");
  options.packed_gpu_environment = [] { return std::vector<std::string>{"TEST_SHARING=yes"}; };
  return options;
}

// The first event of a launched stand-in: its greeting.
std::string GreetingOf(WorkerProcess& worker) {
  trainer::v1::JobEvent event;
  if (worker.ReadEvent(&event, absl::Seconds(60)) != WorkerProcess::ReadResult::kEvent) {
    return "(none)";
  }
  return event.log().text();
}

// Waits for the fork server to say it has loaded (a bound only a broken one reaches).
bool AwaitForking(ProcessLauncher& launcher) {
  for (int tries = 0; tries < 60000 && !launcher.forks_workers(); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return launcher.forks_workers();
}

trainer::v1::WorkerRequest Trial(int sharers) {
  trainer::v1::WorkerRequest request;
  request.set_job_id(7);
  request.mutable_spec()->set_model("mlp");
  request.set_cpu_sharers(sharers);
  return request;
}

TEST(ProcessLauncherTest, KeepsAsManyWarmAsTheWidestPackedSearchThenShrinksBack) {
  ProcessLauncher launcher(StandIns(1));
  launcher.KeepWarm(0, false);
  EXPECT_EQ(launcher.warm_count(), 1);  // the pool's own size
  launcher.KeepWarm(4, false);          // a search packs 4 trials
  EXPECT_EQ(launcher.warm_count(), 4);
  launcher.KeepWarm(4, false);  // nothing taken: nothing started
  EXPECT_EQ(launcher.warm_count(), 4);
  launcher.KeepWarm(0, false);  // it ended
  EXPECT_EQ(launcher.warm_count(), 1);
  launcher.DropWarm();
  EXPECT_EQ(launcher.warm_count(), 0);
  launcher.KeepWarm(4, false);  // none after DropWarm (traind is stopping)
  EXPECT_EQ(launcher.warm_count(), 0);
}

// The pool's own workers create the GPU's context ahead; those added for a packed search do not
// (its trials' memory was measured without them), and go first when it ends.
TEST(ProcessLauncherTest, OnlyThePoolsOwnWorkersPrepareTheGpu) {
  ProcessLauncher launcher(StandIns(1, "cuda:0"));
  launcher.KeepWarm(0, false);
  EXPECT_EQ(launcher.prepared_count(), 1);
  launcher.KeepWarm(5, false);
  EXPECT_EQ(launcher.warm_count(), 5);
  EXPECT_EQ(launcher.prepared_count(), 1);
  launcher.KeepWarm(0, false);
  EXPECT_EQ(launcher.warm_count(), 1);
  EXPECT_EQ(launcher.prepared_count(), 1);  // the unprepared ones went
}

TEST(ProcessLauncherTest, NoPoolOfItsOwnStillWarmsAPackedSearchsTrials) {
  ProcessLauncher launcher(StandIns(0));  // traind --warm-workers 0
  launcher.KeepWarm(0, false);
  EXPECT_EQ(launcher.warm_count(), 0);
  launcher.KeepWarm(2, false);
  EXPECT_EQ(launcher.warm_count(), 2);
  launcher.KeepWarm(0, false);
  EXPECT_EQ(launcher.warm_count(), 0);
}

// A search's trials packed on a GPU start with the variables that connect them to traind's MPS
// daemon, in workers of their own; any other job on the GPU never does.
TEST(ProcessLauncherTest, OnlyTrialsPackedOnAGpuStartConnectedToItsSharing) {
  ProcessLauncher::Options options = PackingStandIns(1);
  // Launched stand-ins wait for SIGTERM, so their environment can be read.
  options.worker_environment = {"FAKE_WORKER_MODE=stop-on-term"};
  ProcessLauncher launcher(options);
  launcher.KeepWarm(3, true);  // a search packs 3 trials on the GPU
  EXPECT_EQ(launcher.warm_count(), 3);
  EXPECT_EQ(launcher.prepared_count(), 1);
  EXPECT_EQ(launcher.sharing_count(), 2);  // those added for it

  auto trial = launcher.Launch(Trial(3), {"cuda:0"});
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(VariableOf((*trial)[0]->pid(), "TEST_SHARING"), "yes");
  EXPECT_EQ(VariableOf((*trial)[0]->pid(), "TRAIND_PREPARE_DEVICE"), "");  // as it starts
  EXPECT_EQ(launcher.sharing_count(), 1);                                  // a warm one was taken

  auto job = launcher.Launch(Trial(0), {"cuda:0"});  // a job of its own on the GPU
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(VariableOf((*job)[0]->pid(), "TEST_SHARING"), "");
  EXPECT_EQ(launcher.prepared_count(), 0);  // it took the pool's own
  EXPECT_EQ(launcher.sharing_count(), 1);

  auto another = launcher.Launch(Trial(0), {"cuda:0"});  // none suits it: a new one
  ASSERT_TRUE(another.ok()) << another.status();
  EXPECT_EQ(VariableOf((*another)[0]->pid(), "TEST_SHARING"), "");
  EXPECT_EQ(launcher.sharing_count(), 1);

  auto on_cpu = launcher.Launch(Trial(2), {"cpu"});  // never connects: any warm one will do
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
  EXPECT_EQ(launcher.warm_count(), 0);

  auto last = launcher.Launch(Trial(3), {"cuda:0"});  // none waits: a new one, connected
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(VariableOf((*last)[0]->pid(), "TEST_SHARING"), "yes");
}

// A job takes the worker that has waited longest: the likeliest to have loaded LibTorch (and
// created its context). A packed search's trials often end together, and each taking the one just
// started to replace the last would wait for it to load. A GPU job prefers the pool's prepared
// worker, a CPU job one that holds no GPU context.
TEST(ProcessLauncherTest, AJobTakesTheWorkerThatHasWaitedLongest) {
  ProcessLauncher::Options options = PackingStandIns(1);
  options.worker_environment = {"FAKE_WORKER_MODE=stop-on-term"};
  ProcessLauncher launcher(options);
  launcher.KeepWarm(3, true);
  const std::vector<pid_t> first = launcher.waiting_pids();  // the pool's own, then 2 sharing
  ASSERT_EQ(first.size(), 3u);

  auto trial = launcher.Launch(Trial(3), {"cuda:0"});
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ((*trial)[0]->pid(), first[1]);
  launcher.KeepWarm(3, true);  // its replacement waits behind the other
  auto next = launcher.Launch(Trial(3), {"cuda:0"});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)[0]->pid(), first[2]);

  const pid_t replacement = launcher.waiting_pids().back();
  auto on_cpu = launcher.Launch(Trial(2), {"cpu"});
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
  EXPECT_EQ((*on_cpu)[0]->pid(), replacement);  // not the pool's prepared one
  EXPECT_EQ(launcher.prepared_count(), 1);

  launcher.KeepWarm(3, true);
  auto job = launcher.Launch(Trial(0), {"cuda:0"});  // a job of its own on the GPU
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)[0]->pid(), first[0]);  // the prepared one
}

// TRAIND_PACKED_PREPARE (a measurement's knob): the workers waiting for a packed search's GPU
// trials create the context, through the sharing, and with "step" rehearse a training step too.
TEST(ProcessLauncherTest, TheKnobHasPackedTrialsWorkersPrepareAhead) {
  for (const auto& [knob, rehearse] : {std::pair<std::string, std::string>{"context", "0"},
                                       std::pair<std::string, std::string>{"step", ""}}) {
    SCOPED_TRACE(knob);
    ProcessLauncher::Options options = PackingStandIns(1);
    options.worker_environment = {"FAKE_WORKER_MODE=stop-on-term"};
    ASSERT_EQ(setenv("TRAIND_PACKED_PREPARE", knob.c_str(), 1), 0);
    ProcessLauncher launcher(options);
    launcher.KeepWarm(2, true);
    unsetenv("TRAIND_PACKED_PREPARE");
    auto trial = launcher.Launch(Trial(3), {"cuda:0"});
    ASSERT_TRUE(trial.ok()) << trial.status();
    EXPECT_EQ(VariableOf((*trial)[0]->pid(), "TEST_SHARING"), "yes");
    EXPECT_EQ(VariableOf((*trial)[0]->pid(), "TRAIND_PREPARE_DEVICE"), "cuda:0");
    EXPECT_EQ(VariableOf((*trial)[0]->pid(), "TRAIND_REHEARSE"), rehearse);
    EXPECT_EQ(launcher.prepared_count(), 1);  // the pool's own, as before
  }
}

// TRAIND_PACKED_POOL_DEPTH (a measurement's knob): that many times the packed search's width wait.
TEST(ProcessLauncherTest, TheKnobKeepsMoreWorkersWaitingForAPackedSearch) {
  ProcessLauncher launcher(StandIns(1));
  ASSERT_EQ(setenv("TRAIND_PACKED_POOL_DEPTH", "2", 1), 0);
  launcher.KeepWarm(3, false);
  EXPECT_EQ(launcher.warm_count(), 6);
  launcher.KeepWarm(0, false);  // none packs: the pool's own size
  EXPECT_EQ(launcher.warm_count(), 1);
  ASSERT_EQ(setenv("TRAIND_PACKED_POOL_DEPTH", "100", 1), 0);
  launcher.KeepWarm(3, false);
  EXPECT_EQ(launcher.warm_count(), 12);  // at most 4 times
  unsetenv("TRAIND_PACKED_POOL_DEPTH");
  launcher.KeepWarm(3, false);
  EXPECT_EQ(launcher.warm_count(), 3);
}

// A search packed on the CPU asks for no sharing (no MPS daemon is started for it), on a machine
// with a GPU or without.
TEST(ProcessLauncherTest, ASearchPackedOnTheCpuAsksForNoSharing) {
  for (const std::string& gpu : {"cuda:0", ""}) {
    ProcessLauncher::Options options = StandIns(1, gpu);
    int asked = 0;
    options.packed_gpu_environment = [&asked] {
      ++asked;
      return std::vector<std::string>{"TEST_SHARING=yes"};
    };
    ProcessLauncher launcher(options);
    launcher.KeepWarm(4, false);
    EXPECT_EQ(launcher.warm_count(), 4);
    EXPECT_EQ(launcher.sharing_count(), 0);
    EXPECT_EQ(asked, 0) << gpu;
    if (gpu.empty()) {
      launcher.KeepWarm(0, false);
      launcher.KeepWarm(4, true);  // no GPU here: nothing to connect to
      EXPECT_EQ(asked, 0);
    }
  }
}

}  // namespace
}  // namespace traind

namespace traind {
namespace {

// Once the fork server has loaded, new workers are forked from it, each with its own environment:
// a packed trial's connects it to the GPU's sharing, another job's does not.
TEST(ProcessLauncherTest, WorkersAreForkedOnceTheForkServerHasLoaded) {
  ProcessLauncher::Options options = PackingStandIns(1);
  options.fork_workers = true;
  options.worker_environment = {"FAKE_WORKER_ECHO=TEST_SHARING"};
  ProcessLauncher launcher(options);
  launcher.KeepWarm(0, false);  // starts the server; the pool's worker may start before it loads
  ASSERT_TRUE(AwaitForking(launcher));
  launcher.KeepWarm(3, true);  // two more, for a search's trials: forked
  EXPECT_EQ(launcher.sharing_count(), 2);

  auto trial = launcher.Launch(Trial(3), {"cuda:0"});
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(GreetingOf(*(*trial)[0]),
            "fake worker for job 7: succeed (forked) (serves another) TEST_SHARING=yes");
  auto job = launcher.Launch(Trial(0), {"cuda:0"});  // takes the pool's own
  ASSERT_TRUE(job.ok()) << job.status();
  auto another = launcher.Launch(Trial(0), {"cuda:0"});  // none suits it: a new one, forked
  ASSERT_TRUE(another.ok()) << another.status();
  EXPECT_EQ(GreetingOf(*(*another)[0]), "fake worker for job 7: succeed (forked) TEST_SHARING=");
}

// A fork server that dies (killed, out of memory) costs nothing but the speed: the next worker
// starts as a program, and the server is not started again.
TEST(ProcessLauncherTest, WorkersStartAsProgramsWhenTheForkServerDies) {
  ProcessLauncher::Options options = StandIns(0);
  options.fork_workers = true;
  ProcessLauncher launcher(options);
  launcher.KeepWarm(1, false);  // starts the server
  ASSERT_TRUE(AwaitForking(launcher));
  auto first = launcher.Launch(Trial(0), {"cpu"});  // the waiting one, started either way
  ASSERT_TRUE(first.ok()) << first.status();
  launcher.KeepWarm(1, false);  // its replacement, forked
  const pid_t server = launcher.fork_server_pid();
  ASSERT_GT(server, 0);
  ASSERT_EQ(kill(server, SIGKILL), 0);

  auto job = launcher.Launch(Trial(0), {"cpu"});  // the waiting one, forked before
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(GreetingOf(*(*job)[0]), "fake worker for job 7: succeed (forked)");
  auto next = launcher.Launch(Trial(0), {"cpu"});  // none waits: a new one, as a program
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(GreetingOf(*(*next)[0]), "fake worker for job 7: succeed");
  EXPECT_EQ(launcher.fork_server_pid(), 0);
  launcher.KeepWarm(1, false);
  EXPECT_FALSE(launcher.forks_workers());
}

// Runs a launched stand-in's job to its end: true when it then waits for another.
bool RunToIdle(WorkerProcess& worker) {
  trainer::v1::JobEvent event;
  while (worker.ReadEvent(&event, absl::Seconds(60)) == WorkerProcess::ReadResult::kEvent) {
  }
  return worker.idle();
}

// A packed GPU trial's worker whose trial ended well is kept, beside the pool, for the search's
// next trial on that GPU (its context made), which then runs in the same process; not for a trial
// on another GPU, a deterministic one or another kind of job, and none once no packed search runs.
TEST(ProcessLauncherTest, APackedTrialsWorkerServesTheSearchsNextTrialOnItsGpu) {
  ProcessLauncher::Options options = PackingStandIns(1);
  ProcessLauncher launcher(options);
  launcher.KeepWarm(2, true);
  auto trial = launcher.Launch(Trial(2), {"cuda:0"});
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(GreetingOf(*(*trial)[0]), "fake worker for job 7: succeed (serves another)");
  ASSERT_TRUE(RunToIdle(*(*trial)[0]));
  const pid_t served = (*trial)[0]->pid();
  launcher.TakeBack(std::move((*trial)[0]), "cuda:0");
  EXPECT_EQ(launcher.served_count(), 1);

  auto elsewhere = launcher.Launch(Trial(2), {"cuda:1"});
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_NE((*elsewhere)[0]->pid(), served);
  auto job = launcher.Launch(Trial(0), {"cuda:0"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(GreetingOf(*(*job)[0]), "fake worker for job 7: succeed");
  trainer::v1::WorkerRequest deterministic = Trial(2);
  deterministic.mutable_spec()->set_deterministic(true);
  auto exact = launcher.Launch(deterministic, {"cuda:0"});
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(GreetingOf(*(*exact)[0]), "fake worker for job 7: succeed");
  EXPECT_EQ(launcher.served_count(), 1);

  auto next = launcher.Launch(Trial(2), {"cuda:0"});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ((*next)[0]->pid(), served);
  EXPECT_EQ(launcher.served_count(), 0);
  EXPECT_EQ(GreetingOf(*(*next)[0]), "fake worker for job 7: succeed (serves another)");
  ASSERT_TRUE(RunToIdle(*(*next)[0]));
  launcher.TakeBack(std::move((*next)[0]), "cuda:0");
  EXPECT_EQ(launcher.served_count(), 1);
  launcher.KeepWarm(0, false);  // the search ended
  EXPECT_EQ(launcher.served_count(), 0);
  EXPECT_EQ(kill(served, 0), -1);  // stopped and reaped
}

// Served workers are kept up to the search's width on each GPU; one that dies while idle is
// replaced by a fresh worker for the next trial; DropWarm stops them all.
TEST(ProcessLauncherTest, ServedWorkersAreKeptPerGpuAndReplacedWhenTheyDie) {
  ProcessLauncher::Options options = PackingStandIns(0);
  options.fork_workers = true;  // the trials' own workers are forked: they may serve another
  ProcessLauncher launcher(options);
  launcher.KeepWarm(1, true);
  ASSERT_TRUE(AwaitForking(launcher));
  // Three trials at once: two on cuda:0, one on cuda:1.
  std::vector<std::pair<std::unique_ptr<WorkerProcess>, std::string>> idle;
  for (const std::string device : {"cuda:0", "cuda:0", "cuda:1"}) {
    auto trial = launcher.Launch(Trial(2), {device});
    ASSERT_TRUE(trial.ok()) << trial.status();
    idle.emplace_back(std::move((*trial)[0]), device);
  }
  for (auto& [worker, device] : idle) {
    ASSERT_TRUE(RunToIdle(*worker));
    launcher.TakeBack(std::move(worker), device);
  }
  EXPECT_EQ(launcher.served_count(), 2);  // one a GPU: the width is 1

  auto next = launcher.Launch(Trial(2), {"cuda:1"});
  ASSERT_TRUE(next.ok()) << next.status();
  const pid_t on_cuda1 = (*next)[0]->pid();
  ASSERT_TRUE(RunToIdle(*(*next)[0]));
  launcher.TakeBack(std::move((*next)[0]), "cuda:1");
  ASSERT_EQ(kill(on_cuda1, SIGKILL), 0);  // dies while idle
  siginfo_t died{};  // dead (a zombie, left for the launcher to reap), not dying
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(on_cuda1), &died, WEXITED | WNOWAIT), 0);
  auto after = launcher.Launch(Trial(2), {"cuda:1"});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NE((*after)[0]->pid(), on_cuda1);
  EXPECT_EQ(GreetingOf(*(*after)[0]), "fake worker for job 7: succeed (forked) (serves another)");
  launcher.KeepWarm(1, true);  // reaps the dead one
  EXPECT_EQ(launcher.served_count(), 1);

  launcher.DropWarm();
  EXPECT_EQ(launcher.served_count(), 0);
}

// A worker started as a program for a trial (none waiting, no fork server) has its parent-death
// signal follow the job's supervising thread, which ends with the job: it serves no other. One
// forked for it does.
TEST(ProcessLauncherTest, AWorkerAJobStartsServesAnotherOnlyWhenForked) {
  for (const bool fork : {false, true}) {
    ProcessLauncher::Options options = PackingStandIns(0);
    options.fork_workers = fork;
    ProcessLauncher launcher(options);
    launcher.KeepWarm(1, true);  // one waiting, and the fork server
    if (fork) ASSERT_TRUE(AwaitForking(launcher));
    auto first = launcher.Launch(Trial(2), {"cuda:0"});  // takes the waiting one
    ASSERT_TRUE(first.ok()) << first.status();
    std::string greeting;
    std::thread supervising([&] {  // as a job's supervising thread, which ends with its job
      auto trial = launcher.Launch(Trial(2), {"cuda:0"});
      greeting = trial.ok() ? GreetingOf(*(*trial)[0]) : trial.status().ToString();
    });
    supervising.join();
    EXPECT_EQ(greeting, fork ? "fake worker for job 7: succeed (forked) (serves another)"
                             : "fake worker for job 7: succeed");
  }
}

// One worker serves at most kJobsPerReusedWorker trials, the last told to end with its trial; with
// reuse off, none serves a second.
TEST(ProcessLauncherTest, AWorkerServesABoundedNumberOfTrials) {
  ProcessLauncher::Options options = PackingStandIns(0);
  ProcessLauncher launcher(options);
  launcher.KeepWarm(1, true);
  pid_t first = 0;
  int trials = 0;
  for (bool idle = true; idle && trials <= ProcessLauncher::kJobsPerReusedWorker; ++trials) {
    auto trial = launcher.Launch(Trial(2), {"cuda:0"});
    ASSERT_TRUE(trial.ok()) << trial.status();
    if (first == 0) first = (*trial)[0]->pid();
    EXPECT_EQ((*trial)[0]->pid(), first);
    idle = RunToIdle(*(*trial)[0]);
    if (idle) launcher.TakeBack(std::move((*trial)[0]), "cuda:0");
  }
  EXPECT_EQ(trials, ProcessLauncher::kJobsPerReusedWorker);

  options.reuse_packed_workers = false;
  ProcessLauncher fresh(options);
  fresh.KeepWarm(1, true);
  auto trial = fresh.Launch(Trial(2), {"cuda:0"});
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(GreetingOf(*(*trial)[0]), "fake worker for job 7: succeed");
  EXPECT_FALSE(RunToIdle(*(*trial)[0]));
}

}  // namespace
}  // namespace traind
