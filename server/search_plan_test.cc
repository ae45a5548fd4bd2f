// What a search means, without a daemon: the checks at submit (each error names the field), the
// ladder, a trial's spec, a rung's metric and what TPE learns from.
#include "server/search_plan.h"

#include <cmath>

#include "gtest/gtest.h"

namespace traind {
namespace {

trainer::v1::SweepSpec Search(const std::string& field, const std::string& distribution) {
  trainer::v1::SweepSpec spec;
  spec.mutable_base()->set_model("lenet5");
  spec.mutable_base()->set_epochs(30);
  spec.mutable_search()->set_method("random");
  spec.mutable_search()->set_trials(48);
  trainer::v1::SearchParam* param = spec.mutable_search()->add_params();
  param->set_field(field);
  param->set_distribution(distribution);
  return spec;
}

std::string Refusal(const trainer::v1::SweepSpec& spec) {
  absl::StatusOr<SearchPlan> plan = PlanSearch(spec);
  EXPECT_FALSE(plan.ok());
  if (plan.ok()) return "";
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(plan.status().message());
}

TEST(SearchPlanTest, RefusesWhatCannotRunNamingTheField) {
  trainer::v1::SweepSpec spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  spec.mutable_search()->set_method("grid");
  EXPECT_EQ(Refusal(spec), "search.method: 'grid' is not one; use random or tpe");
  spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  spec.mutable_search()->set_trials(0);
  EXPECT_EQ(Refusal(spec), "search.trials: must be 1 to 100000, got 0");
  spec.mutable_search()->set_trials(100001);
  EXPECT_EQ(Refusal(spec), "search.trials: must be 1 to 100000, got 100001");
  spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  spec.mutable_search()->set_metric("accuracy");
  EXPECT_NE(Refusal(spec).find("search.metric: 'accuracy' is not one a trial reports"),
            std::string::npos);
  EXPECT_NE(Refusal(Search("learning_rate", "loguniform:0:1")).find("learning_rate"),
            std::string::npos);
  EXPECT_NE(Refusal(Search("batch_size", "int:1.5:3")).find("batch_size"), std::string::npos);
  EXPECT_NE(Refusal(Search("batch_size", "uniform:1.5:2.5"))
                .find("search.params: batch_size cannot take uniform:1.5:2.5"),
            std::string::npos);
  EXPECT_NE(Refusal(Search("momentum", "uniform:0.5:1")).find("momentum"), std::string::npos);
  EXPECT_NE(Refusal(Search("name", "choice:a,b")).find("name cannot vary"), std::string::npos);
  spec = Search("epochs", "int:1:30");
  spec.mutable_search()->set_early_stop("asha");
  EXPECT_NE(Refusal(spec).find("epochs cannot vary under early stopping"), std::string::npos);
  spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  spec.set_repeat(2);
  EXPECT_NE(Refusal(spec).find("not with explicit configs or repeat"), std::string::npos);
  spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  spec.mutable_search()->set_early_stop("asha");
  spec.mutable_search()->set_min_epochs(31);
  EXPECT_EQ(Refusal(spec), "search.min_epochs: must be 1 to the epochs (30), got 31");
  spec.mutable_search()->set_min_epochs(1);
  spec.mutable_search()->set_early_stop("hyperband");
  EXPECT_NE(Refusal(spec).find("search.early_stop: 'hyperband' is not one"), std::string::npos);
  spec = Search("param.lr", "loguniform:1e-4:1e-1");
  spec.mutable_base()->mutable_script()->add_args("train.py");
  spec.mutable_search()->set_early_stop("asha");
  spec.mutable_base()->clear_epochs();
  EXPECT_NE(Refusal(spec).find("epochs: a program's search with early stopping needs the epochs"),
            std::string::npos);
  spec.mutable_base()->set_epochs(9);  // the program's own: its rungs are 1, 3, 9
  EXPECT_TRUE(PlanSearch(spec).ok()) << PlanSearch(spec).status();
  spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  spec.mutable_search()->clear_params();
  EXPECT_NE(Refusal(spec).find("nothing to search over"), std::string::npos);
}

TEST(SearchPlanTest, GridAxesAreChoicesAndTheLadderFollowsEarlyStopping) {
  trainer::v1::SweepSpec spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  trainer::v1::SweepAxis* axis = spec.add_axes();
  axis->set_field("batch_size");
  axis->add_values("64");
  axis->add_values("128");
  absl::StatusOr<SearchPlan> plan = PlanSearch(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->space.params.size(), 2u);
  EXPECT_EQ(plan->space.params[1].first, "batch_size");
  EXPECT_EQ(plan->space.params[1].second.choices, (std::vector<std::string>{"64", "128"}));
  EXPECT_EQ(AshaRungs(plan->asha), (std::vector<int64_t>{30}));  // no early stop: one rung
  spec.mutable_search()->set_early_stop("asha");
  plan = PlanSearch(spec);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(AshaRungs(plan->asha), (std::vector<int64_t>{1, 3, 9, 27, 30}));
  spec.mutable_search()->set_metric("validation_loss");
  EXPECT_FALSE(PlanSearch(spec)->asha.maximize);
}

TEST(SearchPlanTest, ATrialsSpecIsTheBaseWithItsDrawAndItsDrawRoundTrips) {
  const trainer::v1::SweepSpec spec = Search("learning_rate", "loguniform:1e-4:1e-1");
  const ParamValues draw = {{"learning_rate", "0.0031"}, {"batch_size", "128"}};
  absl::StatusOr<trainer::v1::JobSpec> trial = TrialSpec(spec, draw);
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->learning_rate(), 0.0031);
  EXPECT_EQ(trial->batch_size(), 128);
  EXPECT_EQ(trial->model(), "lenet5");
  EXPECT_EQ(ParseParamsText(ParamsText(draw)), draw);
}

TEST(SearchPlanTest, ARungsMetricIsItsEpochsEvaluation) {
  std::vector<trainer::v1::JobEvent> events(3);
  events[0].mutable_epoch_summary()->set_epoch(1);
  events[0].mutable_epoch_summary()->set_evaluated(true);
  events[0].mutable_epoch_summary()->set_validation_accuracy(0.7);
  events[0].mutable_epoch_summary()->set_validation_loss(0.9);
  events[1].mutable_epoch_summary()->set_epoch(2);  // not evaluated
  events[2].mutable_log()->set_text("epoch 3");
  EXPECT_EQ(MetricAtEpoch(events, "validation_accuracy", 1), 0.7);
  EXPECT_EQ(MetricAtEpoch(events, "validation_loss", 1), 0.9);
  EXPECT_FALSE(MetricAtEpoch(events, "validation_accuracy", 2).has_value());
  EXPECT_FALSE(MetricAtEpoch(events, "validation_accuracy", 3).has_value());
}

TEST(SearchPlanTest, TpeRanksATrialThatGotFurtherAboveABetterOneThatStoppedEarlier) {
  absl::StatusOr<SearchPlan> plan = PlanSearch(Search("learning_rate", "loguniform:1e-4:1e-1"));
  ASSERT_TRUE(plan.ok());
  AshaState state;
  state.trials.resize(3);
  state.trials[0].metrics = {0.9};       // rung 0, the best there
  state.trials[1].metrics = {0.6, 0.7};  // rung 1
  const std::vector<ParamValues> params = {
      {{"learning_rate", "0.1"}}, {{"learning_rate", "0.01"}}, {{"learning_rate", "0.001"}}};
  const std::vector<Observation> observations = Observations(*plan, state, params);
  ASSERT_EQ(observations.size(), 2u);  // trial 2 has no result yet
  EXPECT_GT(observations[1].value, observations[0].value);
}

}  // namespace
}  // namespace traind
