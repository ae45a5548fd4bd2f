// RankGroup with fake workers (supervise/fake_worker.cc): real processes, real signals.
#include "supervise/rank_group.h"

#include <signal.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "supervise/worker_exit.h"

namespace traind {
namespace {

// A bound that a group whose ranks have all ended never comes near: reaching it fails the test.
constexpr absl::Duration kEnds = absl::Seconds(60);

RankGroup StartGroup(const std::vector<std::string>& modes, bool serve_another = false) {
  std::vector<std::unique_ptr<WorkerProcess>> ranks;
  for (size_t r = 0; r < modes.size(); ++r) {
    trainer::v1::WorkerRequest request;
    request.set_job_id(static_cast<int64_t>(r));
    request.set_serve_another(serve_another);
    absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
        WorkerProcess::Start(TRAIND_FAKE_WORKER, request, {"FAKE_WORKER_MODE=" + modes[r]});
    EXPECT_TRUE(worker.ok()) << worker.status();
    if (worker.ok()) ranks.push_back(*std::move(worker));
  }
  return RankGroup(std::move(ranks));
}

// What the pump reported, in order.
struct Seen {
  std::vector<std::string> events;  // "rank R: text"
  std::vector<int> exits;           // ranks, in the order they were reaped
  int last_events_ended = -1;       // the rank whose events ended last
  size_t events_when_ended = 0;     // events.size() then
  size_t bursts_when_ended = 0;     // burst_ends.size() then
  std::vector<size_t> burst_ends;   // events.size() at each on_burst_end
  RankGroup::Callbacks callbacks() {
    return {[this](int r, trainer::v1::JobEvent e) {
              events.push_back("rank " + std::to_string(r) + ": " + e.log().text());
            },
            [this](int r, bool last) {
              if (last) last_events_ended = r;
              events_when_ended = events.size();
              bursts_when_ended = burst_ends.size();
            },
            [this](int r, const WorkerProcess::Exit&) { exits.push_back(r); },
            [this](int) { burst_ends.push_back(events.size()); }};
  }
};

// Pumps until `done` or kEnds.
template <typename Done>
bool PumpUntil(RankGroup& group, Seen& seen, Done done) {
  const absl::Time give_up = absl::Now() + kEnds;
  RankGroup::Callbacks callbacks = seen.callbacks();
  while (!done() && absl::Now() < give_up) group.PumpRound(callbacks);
  return done();
}

TEST(RankGroupTest, RanksThatSucceedPassOnTheirEventsAndEndClean) {
  RankGroup group = StartGroup({"succeed", "succeed"});
  ASSERT_EQ(group.size(), 2);
  Seen seen;
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 0; }));
  EXPECT_EQ(seen.events.size(), 2u);
  EXPECT_NE(
      std::find(seen.events.begin(), seen.events.end(), "rank 1: fake worker for job 1: succeed"),
      seen.events.end());
  EXPECT_EQ(seen.exits.size(), 2u);
  EXPECT_EQ(group.failed_rank(), -1);
  EXPECT_TRUE(group.exit(0)->clean());
  EXPECT_TRUE(group.exit(1)->clean());
  EXPECT_EQ(seen.last_events_ended, seen.exits.back());
}

// The policy: one rank killed (the OOM killer) takes the others down, though they would hang.
TEST(RankGroupTest, ARankThatDiesTakesTheOthersDown) {
  RankGroup group = StartGroup({"hang", "signal", "hang"});
  Seen seen;
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 0; }));
  EXPECT_EQ(group.failed_rank(), 1);
  EXPECT_EQ(seen.exits.front(), 1);
  EXPECT_EQ(group.exit(1)->signal, SIGKILL);
  EXPECT_NE(group.exit(1)->stderr_tail.find("out of memory"), std::string::npos);
  EXPECT_EQ(group.exit(0)->signal, SIGKILL);
  EXPECT_EQ(group.exit(2)->signal, SIGKILL);
}

// A hung group (SIGTERM ignored) ends when its owner kills it; ranks already reaped are left be.
TEST(RankGroupTest, KillAllEndsHungRanks) {
  RankGroup group = StartGroup({"succeed", "hang", "hang"});
  Seen seen;
  // Rank 0 ends by itself; the others have greeted and hang.
  ASSERT_TRUE(
      PumpUntil(group, seen, [&] { return group.alive() == 2 && seen.events.size() == 3; }));
  group.TerminateAll();  // ignored by the hung ones
  group.PumpRound(seen.callbacks(), absl::Milliseconds(100));
  EXPECT_EQ(group.alive(), 2);
  group.KillAll();
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 0; }));
  EXPECT_TRUE(group.exit(0)->clean());
  EXPECT_EQ(group.exit(1)->signal, SIGKILL);
  EXPECT_EQ(group.exit(2)->signal, SIGKILL);
  EXPECT_EQ(group.failed_rank(), 1);  // killed: not clean, whoever asked for it
}

// A group told to stop: a rank that stops as asked does not take the others down (rank 0 may be
// writing the checkpoint); one that stops unasked does.
TEST(RankGroupTest, ARankStoppingAsAskedLeavesTheOthersToStop) {
  RankGroup group = StartGroup({"hang", "stop-on-term"});
  Seen seen;
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return seen.events.size() == 2; }));
  group.TerminateAll();  // rank 1 stops; rank 0 ignores it
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 1; }));
  EXPECT_EQ(group.exit(1)->exit_code, kWorkerStopped);
  group.PumpRound(seen.callbacks(), absl::Milliseconds(100));
  EXPECT_EQ(group.alive(), 1);  // rank 0 is left alone
  group.KillAll();
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 0; }));

  RankGroup unasked = StartGroup({"hang", "stopped"});
  Seen seen_unasked;
  ASSERT_TRUE(PumpUntil(unasked, seen_unasked, [&] { return unasked.alive() == 0; }));
  EXPECT_EQ(unasked.exit(0)->signal, SIGKILL);
}

// A rank that sends many events at once: they come in order, in bursts of at most kMaxBurst, each
// burst closed by on_burst_end (where the scheduler commits them), the last before the rank's
// events end.
TEST(RankGroupTest, ABurstOfEventsIsPassedOnInOrderAndClosedBeforeTheEnd) {
  RankGroup group = StartGroup({"burst"});
  Seen seen;
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 0; }));
  ASSERT_EQ(seen.events.size(), 601u);
  for (int n = 0; n < 600; ++n) EXPECT_EQ(seen.events[n + 1], "rank 0: event " + std::to_string(n));
  ASSERT_FALSE(seen.burst_ends.empty());
  EXPECT_EQ(seen.burst_ends.back(), 601u);
  EXPECT_EQ(seen.events_when_ended, 601u);
  EXPECT_EQ(seen.bursts_when_ended, seen.burst_ends.size());
  size_t before = 0;
  for (size_t end : seen.burst_ends) {
    EXPECT_GT(end, before);
    EXPECT_LE(end - before, static_cast<size_t>(RankGroup::kMaxBurst));
    before = end;
  }
  EXPECT_TRUE(group.exit(0)->clean());
}

// A rank asked to serve another ends clean without exiting, and its process can be taken for the
// next job; one that was signalled (a cancel that came as it ended) or that failed cannot.
TEST(RankGroupTest, AnIdleRankIsTakenForTheNextJobUnlessItWasSignalled) {
  RankGroup group = StartGroup({"result", "result"}, /*serve_another=*/true);
  Seen seen;
  ASSERT_TRUE(PumpUntil(group, seen, [&] { return group.alive() == 0; }));
  EXPECT_TRUE(group.exit(0)->clean());
  EXPECT_TRUE(group.exit(1)->clean());
  EXPECT_EQ(group.failed_rank(), -1);
  group.rank(1).Terminate();
  EXPECT_EQ(group.TakeIdle(1), nullptr);
  std::unique_ptr<WorkerProcess> idle = group.TakeIdle(0);
  ASSERT_NE(idle, nullptr);
  EXPECT_FALSE(idle->HasExited());
  EXPECT_EQ(group.TakeIdle(0), nullptr);  // taken once

  RankGroup failed = StartGroup({"signal"}, /*serve_another=*/true);
  Seen seen_failed;
  ASSERT_TRUE(PumpUntil(failed, seen_failed, [&] { return failed.alive() == 0; }));
  EXPECT_EQ(failed.TakeIdle(0), nullptr);
}

TEST(RankGroupTest, AnExitTravelsAsItsProtoWithTheSameFields) {
  WorkerProcess::Exit exit;
  exit.signal = SIGKILL;
  exit.stderr_tail = "last words";
  const trainer::v1::ProcessExit proto = exit.ToProto();
  EXPECT_EQ(proto.signal(), SIGKILL);
  EXPECT_EQ(proto.exit_code(), -1);
  EXPECT_EQ(proto.stderr_tail(), "last words");
  EXPECT_FALSE(exit.clean());
}

}  // namespace
}  // namespace traind
