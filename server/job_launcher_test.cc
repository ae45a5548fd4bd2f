// ProcessLauncher's pool of waiting workers, with stand-ins for traind-worker
// (supervise/fake_worker.cc): it grows for a packed search's trials and shrinks back after.
#include "server/job_launcher.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

TEST(ProcessLauncherTest, KeepsAsManyWarmAsTheWidestPackedSearchThenShrinksBack) {
  ProcessLauncher::Options options;
  options.programs = JobPrograms::Beside(TRAIND_FAKE_WORKER);
  options.warm_workers = 1;
  ProcessLauncher launcher(options);
  launcher.KeepWarm(0);
  EXPECT_EQ(launcher.warm_count(), 1);  // the pool's own size
  launcher.KeepWarm(4);                 // a search packs 4 trials on a GPU
  EXPECT_EQ(launcher.warm_count(), 4);
  launcher.KeepWarm(4);  // nothing taken: nothing started
  EXPECT_EQ(launcher.warm_count(), 4);
  launcher.KeepWarm(0);  // it ended
  EXPECT_EQ(launcher.warm_count(), 1);
  launcher.DropWarm();
  EXPECT_EQ(launcher.warm_count(), 0);
  launcher.KeepWarm(4);  // none after DropWarm (traind is stopping)
  EXPECT_EQ(launcher.warm_count(), 0);
}

// The pool's own workers create the GPU's context ahead; those added for a packed search do not
// (its trials' memory was measured without them), and go first when it ends.
TEST(ProcessLauncherTest, OnlyThePoolsOwnWorkersPrepareTheGpu) {
  ProcessLauncher::Options options;
  options.programs = JobPrograms::Beside(TRAIND_FAKE_WORKER);
  options.warm_workers = 1;
  options.prepare_device = "cuda:0";  // the stand-in ignores it
  ProcessLauncher launcher(options);
  launcher.KeepWarm(0);
  EXPECT_EQ(launcher.prepared_count(), 1);
  launcher.KeepWarm(5);
  EXPECT_EQ(launcher.warm_count(), 5);
  EXPECT_EQ(launcher.prepared_count(), 1);
  launcher.KeepWarm(0);
  EXPECT_EQ(launcher.warm_count(), 1);
  EXPECT_EQ(launcher.prepared_count(), 1);  // the unprepared ones went
}

TEST(ProcessLauncherTest, NoPoolOfItsOwnStillWarmsAPackedSearchsTrials) {
  ProcessLauncher::Options options;
  options.programs = JobPrograms::Beside(TRAIND_FAKE_WORKER);
  options.warm_workers = 0;  // traind --warm-workers 0
  ProcessLauncher launcher(options);
  launcher.KeepWarm(0);
  EXPECT_EQ(launcher.warm_count(), 0);
  launcher.KeepWarm(2);
  EXPECT_EQ(launcher.warm_count(), 2);
  launcher.KeepWarm(0);
  EXPECT_EQ(launcher.warm_count(), 0);
}

}  // namespace
}  // namespace traind
