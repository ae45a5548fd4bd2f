#include "search/asha.h"

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace traind {
namespace {

using Kind = AshaAction::Kind;
using Status = AshaTrialStatus;

AshaConfig Config(int64_t r, int64_t big_r, int64_t eta, int64_t max_trials, int brackets = 1) {
  AshaConfig c;
  c.min_resource = r;
  c.max_resource = big_r;
  c.reduction_factor = eta;
  c.max_trials = max_trials;
  c.brackets = brackets;
  return c;
}

AshaAction Next(const AshaConfig& config, const AshaState& state, bool can_start = true) {
  absl::StatusOr<AshaAction> action = NextAction(config, state, can_start);
  EXPECT_TRUE(action.ok()) << action.status();
  return action.ok() ? *action : AshaAction{};
}

// Starts the next trial (NextAction must say so) and reports `metric` at its first rung.
void StartAndReport(const AshaConfig& config, AshaState* state, double metric) {
  const AshaAction action = Next(config, *state);
  ASSERT_EQ(action.kind, Kind::kStartNew);
  ASSERT_TRUE(ApplyAction(config, action, state).ok());
  ASSERT_TRUE(RecordResult(config, action.trial, metric, state).ok());
}

TEST(AshaTest, RungLadders) {
  struct Case {
    int64_t r, big_r, eta;
    std::vector<int64_t> rungs;
  };
  const std::vector<Case> cases = {
      {1, 30, 3, {1, 3, 9, 27, 30}},  // the last rung is always R
      {1, 27, 3, {1, 3, 9, 27}},      // R on the ladder: no extra rung
      {1, 28, 3, {1, 3, 9, 27, 28}},
      {2, 100, 2, {2, 4, 8, 16, 32, 64, 100}},
      {5, 5, 3, {5}},  // r = R: one rung, every trial trains in full
      {1, 2, 3, {1, 2}},
      {1,
       int64_t{1} << 62,
       1000,
       {1, 1000, 1000000, 1000000000, 1000000000000, 1000000000000000, 1000000000000000000,
        int64_t{1} << 62}},  // no overflow
  };
  for (const Case& c : cases) {
    const AshaConfig config = Config(c.r, c.big_r, c.eta, 1);
    ASSERT_TRUE(ValidateAshaConfig(config).ok()) << c.big_r;
    EXPECT_EQ(AshaRungs(config), c.rungs) << c.r << " " << c.big_r << " " << c.eta;
  }
}

TEST(AshaTest, ValidateConfigNamesTheField) {
  const std::vector<std::pair<AshaConfig, std::string>> cases = {
      {Config(0, 30, 3, 9), "asha: min_resource must be 1 or more, got 0"},
      {Config(5, 4, 3, 9), "asha: max_resource must be at least min_resource (5), got 4"},
      {Config(1, 30, 1, 9), "asha: reduction_factor must be 2 to 1000, got 1"},
      {Config(1, 30, 3, -1), "asha: max_trials must be 0 to 100000, got -1"},
      {Config(1, 30, 3, 9, 6), "asha: brackets must be 1 to the number of rungs (5), got 6"},
      {Config(1, 30, 3, 9, 0), "asha: brackets must be 1 to the number of rungs (5), got 0"},
  };
  for (const auto& [config, message] : cases) {
    EXPECT_EQ(ValidateAshaConfig(config).message(), message);
    EXPECT_EQ(NextAction(config, {}, true).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(AshaTest, NoPromotionBeforeEtaResultsAtARung) {
  const AshaConfig config = Config(1, 30, 3, 9);
  AshaState state;
  StartAndReport(config, &state, 0.9);
  StartAndReport(config, &state, 0.8);
  // Two results at rung 0: floor(2 / 3) = 0 may move up, so a third trial starts.
  EXPECT_EQ(Next(config, state).kind, Kind::kStartNew);
  EXPECT_EQ(Next(config, state, false).kind, Kind::kWait);
  StartAndReport(config, &state, 0.1);
  const AshaAction action = Next(config, state);
  EXPECT_EQ(action.kind, Kind::kPromote);
  EXPECT_EQ(action.trial, 0);
  EXPECT_EQ(action.rung, 1);
  EXPECT_EQ(action.epochs, 3);
}

TEST(AshaTest, NineResultsPromoteTheTopThreeBestFirst) {
  const AshaConfig config = Config(1, 30, 3, 9);
  AshaState state;
  // Reported one by one, promoting whatever may be promoted only at the end.
  const std::vector<double> metrics = {0.5, 0.9, 0.1, 0.7, 0.3, 0.8, 0.2, 0.6, 0.4};
  for (double m : metrics) {
    state.trials.push_back({0, Status::kRunning, {}});
    ASSERT_TRUE(RecordResult(config, state.trials.size() - 1, m, &state).ok());
  }
  std::vector<int64_t> promoted;
  while (true) {
    const AshaAction action = Next(config, state);
    if (action.kind != Kind::kPromote) {
      // The budget is spent; the three promoted run, and may yet be promoted again.
      EXPECT_EQ(action.kind, Kind::kWait);
      break;
    }
    EXPECT_EQ(action.rung, 1);
    promoted.push_back(action.trial);
    ASSERT_TRUE(ApplyAction(config, action, &state).ok());
    // Still running: none reports, so rung 1 has no results yet.
    EXPECT_EQ(NextStopEpochs(config, state.trials[action.trial]), 3);
  }
  EXPECT_EQ(promoted, (std::vector<int64_t>{1, 5, 3}));  // 0.9, 0.8, 0.7
}

TEST(AshaTest, MinimizeRanksTheLowestFirstAndTiesByTrial) {
  AshaConfig config = Config(1, 9, 3, 6);
  config.maximize = false;
  AshaState state;
  for (double m : std::vector<double>{0.5, 0.2, 0.2, 0.9, NAN, 0.2}) {
    state.trials.push_back({0, Status::kRunning, {}});
    ASSERT_TRUE(RecordResult(config, state.trials.size() - 1, m, &state).ok());
  }
  // 6 results: the top 2 are the two oldest of the three 0.2s.
  AshaAction action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kPromote);
  EXPECT_EQ(action.trial, 1);
  ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kPromote);
  EXPECT_EQ(action.trial, 2);
  ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  EXPECT_EQ(Next(config, state).kind, Kind::kWait);  // two running
}

TEST(AshaTest, PromotesFromTheTopRungDownAndNeverPastTheLast) {
  const AshaConfig config = Config(1, 9, 3, 100);  // rungs 1, 3, 9
  AshaState state;
  // Three trials at rung 1 (3 epochs), two more paused at rung 0: the rung-1 promotion first.
  for (int i = 0; i < 3; ++i) state.trials.push_back({0, Status::kPaused, {0.1, 0.5 + i}});
  for (int i = 0; i < 6; ++i) state.trials.push_back({0, Status::kPaused, {0.01 * i}});
  AshaAction action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kPromote);
  EXPECT_EQ(action.trial, 2);
  EXPECT_EQ(action.rung, 2);
  EXPECT_EQ(action.epochs, 9);
  ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  ASSERT_TRUE(RecordResult(config, 2, 0.99, &state).ok());
  EXPECT_EQ(state.trials[2].status, Status::kEnded);
  EXPECT_EQ(NextStopEpochs(config, state.trials[2]), 9);
  // Rung 0 has 9 results: the top 3 are trials 0, 1 and 2 (0.1 against at most 0.05), all
  // already promoted, so nothing at rung 0 moves; a new trial starts.
  action = Next(config, state);
  EXPECT_EQ(action.kind, Kind::kStartNew);
  EXPECT_EQ(action.trial, 9);
  // The trial at the last rung cannot be promoted or report again.
  const AshaAction past{Kind::kPromote, 2, 0, 3, 27};
  EXPECT_EQ(ApplyAction(config, past, &state).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RecordResult(config, 2, 1.0, &state).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(AshaTest, FailedTrialsKeepTheirResultsButAreNeverPromoted) {
  const AshaConfig config = Config(1, 30, 3, 3);
  AshaState state;
  StartAndReport(config, &state, 0.9);
  StartAndReport(config, &state, 0.5);
  StartAndReport(config, &state, 0.1);
  ASSERT_TRUE(RecordFailure(0, &state).ok());  // e.g. its checkpoint was lost
  ASSERT_TRUE(RecordFailure(0, &state).ok());  // again: no change
  // Trial 0 is still the top 1 of rung 0's 3 results, so trial 1 is not promoted either.
  EXPECT_EQ(Next(config, state).kind, Kind::kDone);
  EXPECT_EQ(state.trials[0].metrics, std::vector<double>{0.9});
}

TEST(AshaTest, WaitsForRunningTrialsThenIsDone) {
  const AshaConfig config = Config(1, 3, 3, 2);  // rungs 1, 3
  AshaState state;
  AshaAction action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kStartNew);
  EXPECT_EQ(action.epochs, 1);
  ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kStartNew);
  ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  EXPECT_EQ(Next(config, state).kind, Kind::kWait);  // budget spent, two running
  ASSERT_TRUE(RecordResult(config, 0, 1.0, &state).ok());
  EXPECT_EQ(Next(config, state).kind, Kind::kWait);  // one running
  ASSERT_TRUE(RecordFailure(1, &state).ok());
  EXPECT_EQ(Next(config, state).kind, Kind::kDone);  // 1 result < eta: nobody moves
  EXPECT_EQ(Next(Config(1, 3, 3, 0), AshaState{}).kind, Kind::kDone);
}

TEST(AshaTest, BracketsTakeTurnsStartHigherAndRankApart) {
  const AshaConfig config = Config(1, 9, 3, 6, 2);  // bracket 0: 1, 3, 9; bracket 1: 3, 9
  AshaState state;
  std::vector<int> brackets;
  std::vector<int64_t> epochs;
  for (int i = 0; i < 6; ++i) {  // all six start before any reports
    const AshaAction action = Next(config, state);
    ASSERT_EQ(action.kind, Kind::kStartNew);
    EXPECT_EQ(action.trial, i);
    brackets.push_back(action.bracket);
    epochs.push_back(action.epochs);
    ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  }
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(RecordResult(config, i, i, &state).ok());
  EXPECT_EQ(brackets, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(epochs, (std::vector<int64_t>{1, 3, 1, 3, 1, 3}));
  // Bracket 1's three results at rung 1 promote its best (trial 5) to rung 2 first; bracket 0's
  // rung 0 then promotes its best (trial 4) to rung 1.
  AshaAction action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kPromote);
  EXPECT_EQ(action.trial, 5);
  EXPECT_EQ(action.rung, 2);
  ASSERT_TRUE(ApplyAction(config, action, &state).ok());
  action = Next(config, state);
  ASSERT_EQ(action.kind, Kind::kPromote);
  EXPECT_EQ(action.trial, 4);
  EXPECT_EQ(action.epochs, 3);
}

TEST(AshaTest, TransitionsCheckTheyApply) {
  const AshaConfig config = Config(1, 30, 3, 1);
  AshaState state;
  EXPECT_EQ(RecordResult(config, 0, 1.0, &state).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(RecordFailure(-1, &state).code(), absl::StatusCode::kNotFound);
  const AshaAction wrong{Kind::kStartNew, 3, 0, 0, 1};
  EXPECT_EQ(ApplyAction(config, wrong, &state).code(), absl::StatusCode::kFailedPrecondition);
  StartAndReport(config, &state, 0.5);
  EXPECT_EQ(RecordResult(config, 0, 1.0, &state).code(), absl::StatusCode::kFailedPrecondition);
  const AshaAction again{Kind::kStartNew, 1, 0, 0, 1};
  EXPECT_EQ(ApplyAction(config, again, &state).message(), "asha: all 1 trials have started");
  const AshaAction skip{Kind::kPromote, 0, 0, 2, 9};
  EXPECT_EQ(ApplyAction(config, skip, &state).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(state.trials.size(), 1u);
  EXPECT_EQ(state.trials[0].status, Status::kPaused);
}

TEST(AshaTest, RejectsAStateThatDoesNotFitTheConfig) {
  const AshaConfig config = Config(1, 9, 3, 10);  // rungs 1, 3, 9
  const std::vector<AshaTrial> bad = {
      {1, Status::kRunning, {}},            // bracket 1 of 1
      {0, Status::kPaused, {}},             // paused without a result
      {0, Status::kPaused, {1, 2, 3}},      // at the last rung but not ended
      {0, Status::kEnded, {1, 2}},          // ended below the last rung
      {0, Status::kRunning, {1, 2, 3, 4}},  // more results than rungs
  };
  for (const AshaTrial& t : bad) {
    AshaState state;
    state.trials.push_back(t);
    EXPECT_EQ(NextAction(config, state, true).status().code(), absl::StatusCode::kInvalidArgument)
        << SerializeAshaState(state);
  }
}

TEST(AshaTest, ComputeSpentCountsEachTrialsHighestRung) {
  const AshaConfig config = Config(1, 30, 3, 10);
  AshaState state;
  state.trials = {{0, Status::kEnded, {1, 1, 1, 1, 1}},  // 30
                  {0, Status::kPaused, {1, 1}},          // 3
                  {0, Status::kPaused, {1}},             // 1
                  {0, Status::kFailed, {}},              // 0
                  {0, Status::kRunning, {1, 1, 1}}};     // 9 so far
  const AshaCompute compute = ComputeSpent(config, state);
  EXPECT_EQ(compute.epochs_spent, 43);
  EXPECT_EQ(compute.epochs_full, 150);
}

TEST(AshaTest, StateRoundTripsThroughText) {
  AshaState state;
  state.trials = {{0, Status::kEnded, {0.1, 0.30000000000000004, 1e-300, -2, 5}},
                  {1, Status::kPaused, {NAN}},
                  {0, Status::kFailed, {}},
                  {0, Status::kRunning, {HUGE_VAL}}};
  const std::string text = SerializeAshaState(state);
  EXPECT_EQ(text,
            "asha-state 1\n"
            "trial 0 ended 0.1 0.30000000000000004 1e-300 -2 5\n"
            "trial 1 paused nan\n"
            "trial 0 failed\n"
            "trial 0 running inf\n");
  absl::StatusOr<AshaState> back = ParseAshaState(text);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->trials.size(), state.trials.size());
  for (size_t k = 0; k < state.trials.size(); ++k) {
    EXPECT_EQ(back->trials[k].bracket, state.trials[k].bracket);
    EXPECT_EQ(back->trials[k].status, state.trials[k].status);
    ASSERT_EQ(back->trials[k].metrics.size(), state.trials[k].metrics.size());
    for (size_t i = 0; i < state.trials[k].metrics.size(); ++i) {
      const double a = back->trials[k].metrics[i], b = state.trials[k].metrics[i];
      EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << a << " " << b;
    }
  }
  EXPECT_EQ(SerializeAshaState(*back), text);
  EXPECT_TRUE(ParseAshaState("asha-state 1\n")->trials.empty());
}

TEST(AshaTest, ParseRefusesWhatSerializeCouldNotHaveWritten) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", "asha state line 1: expected 'asha-state 1'"},
      {"asha-state 2\n", "asha state line 1: expected 'asha-state 1'"},
      {"asha-state 1\ntrial 0\n", "asha state line 2: expected 'trial BRACKET STATUS"},
      {"asha-state 1\ntrial x paused\n", "asha state line 2: 'x' is not a bracket"},
      {"asha-state 1\ntrial -1 paused\n", "asha state line 2: '-1' is not a bracket"},
      {"asha-state 1\ntrial 0 ended 1\ntrial 0 sleeping\n",
       "asha state line 3: 'sleeping' is not a status"},
      {"asha-state 1\ntrial 0 paused 0.5x\n", "asha state line 2: '0.5x' is not a metric"},
      {"asha-state 1\n\n", "asha state line 2: expected"},
  };
  for (const auto& [text, message] : cases) {
    const absl::Status status = ParseAshaState(text).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << text;
    EXPECT_EQ(status.message().substr(0, message.size()), message) << status.message();
  }
}

}  // namespace
}  // namespace traind
