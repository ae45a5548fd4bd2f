// Workers run below the daemon (traind --worker-nice, worker/priority.h): every thread of a real
// running worker, LibTorch's included, has the nice value the daemon's own plus the increment.
// The daemon runs in this test process, so its workers are this process's children.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/daemon_fixture.h"
#include "tests/worker_children.h"

namespace traind {
namespace {

// This daemon's workers but the fork server, which runs no job: it forks them at the daemon's
// priority, and each lowers its own.
std::vector<std::string> WorkerPids() {
  std::vector<std::string> pids;
  for (const WorkerChild& child : WorkerChildren()) {
    if (!child.fork_server) pids.push_back(child.pid);
  }
  return pids;
}

// The nice value of every thread of `pid`.
std::vector<int> ThreadNices(const std::string& pid) {
  std::vector<int> nices;
  const std::string tasks = "/proc/" + pid + "/task/";
  for (const std::string& tid : NumberedEntries(tasks)) {
    const std::string stat = ReadProcLine(tasks + tid + "/stat");
    if (!stat.empty()) nices.push_back(std::stoi(StatField(stat, 19)));
  }
  return nices;
}

class WorkerPriorityTest : public DaemonTest {
 protected:
  // Runs a job until it has trained a few steps, then returns the nice values of the threads of
  // this daemon's workers (the job's and a waiting warm one) once they all equal `expected`, or
  // after 10 s. A worker still loading LibTorch (a warm one just started) has not reached main()
  // yet, hence the wait.
  std::vector<int> NicesWhileTraining(int expected) {
    // Two intra-op threads, so LibTorch starts one of its own after the worker lowered itself.
    const int64_t id = SubmitSmall("lenet5", {"--epochs", "200", "--threads", "2"});
    for (int tries = 0; tries < 600; ++tries) {
      bool stepped = false;
      for (const auto& e : Events(id)) stepped = stepped || e.has_step();
      if (stepped) break;
      usleep(50 * 1000);
    }
    std::vector<int> nices;
    for (int tries = 0; tries < 100; ++tries) {
      nices.clear();
      for (const std::string& pid : WorkerPids()) {
        std::vector<int> threads = ThreadNices(pid);
        nices.insert(nices.end(), threads.begin(), threads.end());
      }
      if (nices.size() > 1 &&
          std::all_of(nices.begin(), nices.end(), [&](int n) { return n == expected; })) {
        break;
      }
      usleep(100 * 1000);
    }
    Trainctl({"cancel", std::to_string(id)});
    WaitForState(id, trainer::v1::Job::CANCELLED);
    return nices;
  }

  static int OwnNice() {
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, 0);
    EXPECT_EQ(errno, 0);
    return nice;
  }
};

TEST_F(WorkerPriorityTest, EveryWorkerThreadRunsBelowTheDaemon) {
  const int expected = std::min(19, OwnNice() + 10);
  const std::vector<int> nices = NicesWhileTraining(expected);
  ASSERT_GT(nices.size(), 2u) << "no training worker with LibTorch's threads found";
  for (int nice : nices) EXPECT_EQ(nice, expected);
}

TEST_F(WorkerPriorityTest, ZeroKeepsTheDaemonsPriority) {
  StopDaemon();
  worker_nice_ = 0;
  StartDaemon();
  const int expected = OwnNice();
  const std::vector<int> nices = NicesWhileTraining(expected);
  ASSERT_GT(nices.size(), 2u) << "no training worker with LibTorch's threads found";
  for (int nice : nices) EXPECT_EQ(nice, expected);
}

}  // namespace
}  // namespace traind
