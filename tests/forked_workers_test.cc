// Jobs run in workers forked from traind's fork server (supervise/fork_server.h) once it has
// loaded: the real traind-worker, LibTorch loaded, one thread; and a forked worker trains exactly
// as one started as a program does.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/daemon_fixture.h"
#include "tests/worker_children.h"

namespace traind {
namespace {

// Whether `child` was forked: a forked worker's /proc/PID/environ shows the server's environment
// (the one exec set up), which lacks what traind gives each worker (TRAIND_CPU_SLOTS); a worker
// started as a program shows its own. Empty: gone, or not yet exec'd.
bool Forked(const WorkerChild& child) {
  const std::string environment = ReadProcFile("/proc/" + child.pid + "/environ");
  return !environment.empty() && !absl::StrContains(environment, "TRAIND_CPU_SLOTS=");
}

class ForkedWorkersTest : public DaemonTest {
 protected:
  // A waiting worker forked from the server; "" when none waits.
  static std::string ForkedWaitingWorker() {
    for (const WorkerChild& child : WorkerChildren()) {
      if (!child.fork_server && Forked(child)) return child.pid;
    }
    return "";
  }
  double TrainOne() {
    const int64_t id = SubmitSmall("mlp", {"--epochs", "1"});
    return WaitForState(id, trainer::v1::Job::SUCCEEDED).result().test_accuracy();
  }
};

TEST_F(ForkedWorkersTest, JobsRunInWorkersForkedFromALoadedServer) {
  // Workers started while the server loads (the pool's first, and the replacement started the
  // moment a job takes it) start as programs. Each job takes the waiting one and a replacement
  // starts at once: once the server has loaded, that replacement is forked. A bound that only a
  // server that never loads reaches.
  const double first = TrainOne();
  std::string forked = ForkedWaitingWorker();
  for (int jobs = 1; forked.empty() && jobs < 40; ++jobs) {
    TrainOne();
    forked = ForkedWaitingWorker();
  }
  ASSERT_FALSE(forked.empty()) << "no worker forked from the fork server is waiting";
  std::vector<std::string> servers;
  for (const WorkerChild& child : WorkerChildren()) {
    if (child.fork_server) servers.push_back(child.pid);
  }
  ASSERT_EQ(servers.size(), 1u);
  const std::string status = ReadProcFile("/proc/" + servers[0] + "/status");
  EXPECT_TRUE(absl::StrContains(status, "\nThreads:\t1\n")) << status;
  // The forked worker shows as a worker, not as the server it was forked from.
  EXPECT_FALSE(absl::StrContains(ReadProcFile("/proc/" + forked + "/cmdline"), kForkServerFlag));

  // The next job takes the forked worker, and trains exactly as the first did.
  EXPECT_EQ(TrainOne(), first);
}

}  // namespace
}  // namespace traind
