// DaemonTest: starts a real traind (the Daemon library, real traind-worker processes, real SQLite
// in a temp state dir, real gRPC over a Unix socket) and drives it with the real trainctl code.
#ifndef TRAIND_TESTS_DAEMON_FIXTURE_H_
#define TRAIND_TESTS_DAEMON_FIXTURE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/daemon.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  void StartDaemon();
  void StopDaemon();

  struct Result {
    int exit_code;
    std::string out;
    std::string err;
  };
  // Runs `trainctl --addr <this daemon> args...` in-process.
  Result Trainctl(const std::vector<std::string>& args);

  // Submits a job that trains for a few seconds on the first Fashion-MNIST images.
  int64_t SubmitSmall(const std::string& model = "mlp", const std::vector<std::string>& extra = {});
  // Polls until the job is in `state` (or fails the test after `timeout`).
  trainer::v1::Job WaitForState(int64_t id, trainer::v1::Job::State state,
                                absl::Duration timeout = absl::Seconds(120));
  trainer::v1::Job GetJob(int64_t id);
  // Every stored event of the job, via ListJobEvents.
  std::vector<trainer::v1::JobEvent> Events(int64_t id);

  trainer::v1::Trainer::Stub& stub();

  std::string state_dir_;
  std::string address_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<trainer::v1::Trainer::Stub> stub_;
  std::map<std::string, int> slots_;  // set before StartDaemon to run jobs side by side
  bool fault_injection_ = true;       // the tests may crash workers on purpose
  std::string http_;                  // DaemonOptions.http (the dashboard), e.g. "127.0.0.1:0"
  std::string token_file_;            // DaemonOptions.token_file
  AccessControl::Limits limits_;      // DaemonOptions.limits
  int worker_nice_ = DaemonOptions().worker_nice;
  double checkpoint_minutes_ = DaemonOptions().checkpoint_minutes;
};

// A directory of small IDX files (gzip'd), written by the test: `corrupt` truncates one.
// A token file for traind --token-file: `text`, readable by its owner only (traind refuses one
// every user may read).
void WriteTokenFile(const std::string& path, const std::string& text);

std::string WriteTinyIdxDataset(const std::string& dir, int images, bool truncate_train_images);

}  // namespace traind

#endif  // TRAIND_TESTS_DAEMON_FIXTURE_H_
