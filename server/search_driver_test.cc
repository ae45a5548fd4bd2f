// The search driver against a real store, its trials' outcomes played by the test: what a worker
// and the scheduler would record (RUNNING, an epoch's evaluation, PAUSED or SUCCEEDED) is
// appended to the trial's job, then the driver takes one pass.
#include "server/search_driver.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "search/asha.h"
#include "server/search_budget.h"
#include "server/search_plan.h"

namespace traind {
namespace {

using trainer::v1::Job;
using trainer::v1::JobEvent;

class SearchDriverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("search_driver_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open((dir_ / "traind.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    driver_ = std::make_unique<SearchDriver>(store_.get(), SearchDriver::Options{});
  }
  void TearDown() override {
    driver_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A random search with ASHA over 3 epochs (rungs 1 and 3, eta 3).
  static trainer::v1::SweepSpec Spec(int trials, int parallel) {
    trainer::v1::SweepSpec spec;
    spec.mutable_base()->set_model("lenet5");
    spec.mutable_base()->set_device("cpu");
    spec.mutable_base()->set_epochs(3);
    trainer::v1::SearchSpec* search = spec.mutable_search();
    search->set_method("random");
    search->set_trials(trials);
    search->set_seed(11);
    search->set_early_stop("asha");
    search->set_parallel(parallel);
    trainer::v1::SearchParam* lr = search->add_params();
    lr->set_field("learning_rate");
    lr->set_distribution("loguniform:1e-4:1e-1");
    return spec;
  }

  int64_t Create(const trainer::v1::SweepSpec& spec) {
    absl::StatusOr<trainer::v1::Sweep> sweep =
        store_->CreateSearch(spec, "alice", SerializeAshaState({}));
    EXPECT_TRUE(sweep.ok()) << sweep.status();
    return sweep.ok() ? sweep->id() : 0;
  }

  std::vector<Job> Trials(int64_t sweep_id) {
    absl::StatusOr<Store::SearchRecord> record = store_->GetSearch(sweep_id);
    EXPECT_TRUE(record.ok()) << record.status();
    std::vector<Job> jobs;
    for (const auto& trial : record->trials) jobs.push_back(*store_->GetJob(trial.job_id));
    return jobs;
  }

  void Transition(int64_t job_id, Job::State state) {
    JobEvent event;
    event.mutable_state_change()->set_state(state);
    ASSERT_TRUE(store_->AppendEvent(job_id, event).ok());
  }

  // What a trial's run reports: it runs, evaluates `epoch` at `accuracy`, then ends in `state`.
  void Report(int64_t job_id, int epoch, double accuracy, Job::State state,
              double epoch_seconds = 1) {
    Transition(job_id, Job::RUNNING);
    JobEvent summary;
    summary.mutable_epoch_summary()->set_epoch_seconds_no_eval(epoch_seconds);
    summary.mutable_epoch_summary()->set_epoch(epoch);
    summary.mutable_epoch_summary()->set_evaluated(true);
    summary.mutable_epoch_summary()->set_validation_accuracy(accuracy);
    ASSERT_TRUE(store_->AppendEvent(job_id, summary).ok());
    Transition(job_id, state);
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SearchDriver> driver_;
};

TEST_F(SearchDriverTest, KeepsParallelTrialsQueuedEachToPauseAtItsFirstRung) {
  const int64_t id = Create(Spec(/*trials=*/6, /*parallel=*/2));
  ASSERT_TRUE(driver_->Advance(id).ok());
  std::vector<Job> trials = Trials(id);
  ASSERT_EQ(trials.size(), 2u);
  for (const Job& job : trials) {
    EXPECT_EQ(job.state(), Job::QUEUED);
    EXPECT_EQ(job.sweep_id(), id);
    EXPECT_EQ(job.owner(), "alice");
    EXPECT_EQ(job.pause_after_epoch(), 1);
    EXPECT_EQ(job.spec().checkpoint_every(), 1);
    EXPECT_FALSE(job.exclusive());
  }
  EXPECT_NE(trials[0].spec().learning_rate(), trials[1].spec().learning_rate());
  // Nothing reported: another pass adds nothing.
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(Trials(id).size(), 2u);
  // One paused: a third trial takes its place (one result is too few to promote at eta 3).
  Report(trials[0].id(), 1, 0.5, Job::PAUSED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(Trials(id).size(), 3u);
}

TEST_F(SearchDriverTest, PromotesTheBestOfARungThenEndsThePausedOnesWhenNothingCanMove) {
  const int64_t id = Create(Spec(/*trials=*/3, /*parallel=*/3));
  ASSERT_TRUE(driver_->Advance(id).ok());
  std::vector<Job> trials = Trials(id);
  ASSERT_EQ(trials.size(), 3u);
  Report(trials[0].id(), 1, 0.50, Job::PAUSED);
  Report(trials[1].id(), 1, 0.80, Job::PAUSED);
  Report(trials[2].id(), 1, 0.60, Job::PAUSED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  trials = Trials(id);
  ASSERT_EQ(trials.size(), 3u);  // its budget is spent
  // The best third of 3 results: trial 1, resumed to the last rung (its end: no pause).
  EXPECT_EQ(trials[1].state(), Job::QUEUED);
  EXPECT_EQ(trials[1].pause_after_epoch(), 0);
  EXPECT_EQ(trials[0].state(), Job::PAUSED);
  EXPECT_EQ(trials[2].state(), Job::PAUSED);
  Report(trials[1].id(), 3, 0.85, Job::SUCCEEDED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  trials = Trials(id);
  EXPECT_EQ(trials[0].state(), Job::SUCCEEDED);
  EXPECT_EQ(trials[2].state(), Job::SUCCEEDED);
  // Where and why they stopped, as an early stop says it (`trainctl show`).
  EXPECT_EQ(trials[0].result().stopped().epoch(), 1);
  EXPECT_NE(trials[0].result().stopped().reason().find("is over: stopped after epoch 1, its rung"),
            std::string::npos)
      << trials[0].result().stopped().reason();
  EXPECT_FALSE(trials[1].result().has_stopped());  // it trained to its end
  absl::StatusOr<Store::SearchRecord> record = store_->GetSearch(id);
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(record->done);
  absl::StatusOr<AshaState> state = ParseAshaState(record->state);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->trials[1].metrics, (std::vector<double>{0.80, 0.85}));
  EXPECT_EQ(state->trials[1].status, AshaTrialStatus::kEnded);
  // Done: a pass changes nothing.
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(Trials(id).size(), 3u);
}

TEST_F(SearchDriverTest, AFailedOrCancelledTrialIsCountedAndTheSearchGoesOn) {
  const int64_t id = Create(Spec(/*trials=*/4, /*parallel=*/1));
  ASSERT_TRUE(driver_->Advance(id).ok());
  Transition(Trials(id)[0].id(), Job::RUNNING);
  Transition(Trials(id)[0].id(), Job::FAILED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  ASSERT_EQ(Trials(id).size(), 2u);
  Transition(Trials(id)[1].id(), Job::CANCELLED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(Trials(id).size(), 3u);
  absl::StatusOr<AshaState> state = ParseAshaState(store_->GetSearch(id)->state);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->trials[0].status, AshaTrialStatus::kFailed);
  EXPECT_EQ(state->trials[1].status, AshaTrialStatus::kFailed);
}

TEST_F(SearchDriverTest, TheSameSeedProposesTheSameTrialsAndAnEndedSearchProposesNone) {
  const int64_t first = Create(Spec(4, 4));
  const int64_t second = Create(Spec(4, 4));
  ASSERT_TRUE(driver_->Advance(first).ok());
  ASSERT_TRUE(driver_->Advance(second).ok());
  const std::vector<Job> a = Trials(first), b = Trials(second);
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].spec().learning_rate(), b[k].spec().learning_rate()) << "trial " << k;
  }
  const int64_t cancelled = Create(Spec(4, 1));
  ASSERT_TRUE(store_->EndSearch(cancelled).ok());
  ASSERT_TRUE(driver_->Advance(cancelled).ok());
  EXPECT_TRUE(Trials(cancelled).empty());
}

// A trial's step report as a CUDA worker sends it: the GPU busy `busy` of the time, 2 of 80 GiB.
JobEvent StepReport(int batch, double busy) {
  JobEvent event;
  trainer::v1::StepMetrics* step = event.mutable_step();
  step->set_epoch(1);
  step->set_batch(batch);
  step->set_device_busy(busy);
  step->set_device_busy_training(busy);
  step->set_device_used_bytes(int64_t{2} << 30);
  step->set_device_total_bytes(int64_t{80} << 30);
  return event;
}

void ReportStep(Store* store, int64_t job_id, int batch, double busy) {
  ASSERT_TRUE(store->AppendEvent(job_id, StepReport(batch, busy)).ok());
}

TEST_F(SearchDriverTest, OnAGpuOneTrialRunsAloneUntilMeasuredThenTrialsShareIt) {
  std::vector<std::pair<int64_t, int>> widths;
  SearchDriver::Options options;
  options.lanes = [](const trainer::v1::JobSpec&) { return 1; };
  options.host_cores = 16;
  options.set_pack_width = [&](int64_t sweep, int width, PackedTrials) {
    widths.emplace_back(sweep, width);
  };
  driver_ = std::make_unique<SearchDriver>(store_.get(), options);
  trainer::v1::SweepSpec spec = Spec(/*trials=*/12, /*parallel=*/0);
  spec.mutable_base()->set_device("cuda:0");  // as admission names "cuda"
  const int64_t id = Create(spec);
  ASSERT_TRUE(driver_->Advance(id).ok());
  ASSERT_EQ(Trials(id).size(), 1u);
  const int64_t first = Trials(id)[0].id();
  Transition(first, Job::RUNNING);
  // While it runs, its share so far is no measurement.
  ReportStep(store_.get(), first, 99, 0.01);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(Trials(id).size(), 1u);
  EXPECT_TRUE(widths.empty());
  EXPECT_EQ(store_->GetSearch(id)->pack_width, 0);
  // Its run ended (paused at its rung) with the GPU busy 20% of it: 0.9 / 0.2 = 4 trials share
  // the GPU, and the search keeps 4 in flight (the paused one's place taken by a new one).
  ReportStep(store_.get(), first, 299, 0.2);
  JobEvent summary;
  summary.mutable_epoch_summary()->set_epoch(1);
  summary.mutable_epoch_summary()->set_evaluated(true);
  summary.mutable_epoch_summary()->set_validation_accuracy(0.5);
  ASSERT_TRUE(store_->AppendEvent(first, summary).ok());
  Transition(first, Job::PAUSED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(widths, (std::vector<std::pair<int64_t, int>>{{id, 4}}));
  EXPECT_EQ(Trials(id).size(), 5u);
  const std::string why = store_->GetSearch(id)->pack_why;
  EXPECT_NE(
      why.find("4 trials per GPU, bounded by its busy share while training; alone a trial kept "
               "the GPU busy 20%"),
      std::string::npos)
      << why;
  EXPECT_EQ(store_->GetSearch(id)->pack_width, 4);

  // A packed trial ends: its GPU was busy with its neighbours' work too (80%). A restarted traind
  // packs as it decided before, from the store, never from that reading.
  const int64_t packed = Trials(id)[1].id();
  Transition(packed, Job::RUNNING);
  ReportStep(store_.get(), packed, 299, 0.8);
  Transition(packed, Job::SUCCEEDED);
  widths.clear();
  driver_ = std::make_unique<SearchDriver>(store_.get(), options);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(widths, (std::vector<std::pair<int64_t, int>>{{id, 4}}));
  EXPECT_EQ(store_->GetSearch(id)->pack_why, why);
}

// Through MPS the multiprocessors' share decides; MPS is asked about only once a reading is there
// (asking starts traind's daemon), and a width decided side by side is not used to take turns.
TEST_F(SearchDriverTest, SideBySideTheMultiprocessorsDecideWhileMpsRuns) {
  std::vector<int> widths;
  int asked = 0;
  bool mps = true;
  SearchDriver::Options options;
  options.lanes = [](const trainer::v1::JobSpec&) { return 1; };
  options.host_cores = 16;
  options.set_pack_width = [&](int64_t, int width, PackedTrials trials) {
    widths.push_back(width);
    EXPECT_EQ(trials, PackedTrials::kWorkersOnGpu);
  };
  options.gpu_side_by_side = [&] {
    ++asked;
    return mps;
  };
  driver_ = std::make_unique<SearchDriver>(store_.get(), options);
  trainer::v1::SweepSpec spec = Spec(/*trials=*/12, /*parallel=*/0);
  spec.mutable_base()->set_device("cuda:0");
  const int64_t id = Create(spec);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(asked, 0);  // nothing to decide from yet
  const int64_t first = Trials(id)[0].id();
  Transition(first, Job::RUNNING);
  for (int batch : {99, 299}) {  // a kernel running 70% of its training, in 4% of the GPU
    JobEvent event = StepReport(batch, 0.5);
    event.mutable_step()->set_device_busy_training(0.7);
    event.mutable_step()->set_device_sm_active(0.03);
    event.mutable_step()->set_device_sm_active_training(0.04);
    ASSERT_TRUE(store_->AppendEvent(first, event).ok());
  }
  Transition(first, Job::SUCCEEDED);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_GE(asked, 1);
  EXPECT_EQ(widths, (std::vector<int>{15}));  // bounded by 16 host cores, one left to traind
  const std::string why = store_->GetSearch(id)->pack_why;
  EXPECT_NE(why.find("15 trials per GPU side by side (MPS), bounded by 16 host cores"),
            std::string::npos)
      << why;
  EXPECT_TRUE(store_->GetSearch(id)->pack_side_by_side);
  EXPECT_FALSE(driver_->PackingNow(id).has_value());  // as stored
  // traind restarted with --mps off: that width would have the trials take turns. One at a time,
  // the decision kept for when MPS is back.
  mps = false;
  widths.clear();
  driver_ = std::make_unique<SearchDriver>(store_.get(), options);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(widths, (std::vector<int>{1}));
  EXPECT_EQ(store_->GetSearch(id)->pack_why, why);
  // The report says what holds now, and what was decided.
  EXPECT_EQ(driver_->PackingNow(id).value_or(""),
            "1 trial per GPU while traind runs no MPS: decided as \"" + why + "\"");
  mps = true;
  widths.clear();
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(widths, (std::vector<int>{15}));
  EXPECT_FALSE(driver_->PackingNow(id).has_value());
}

TEST_F(SearchDriverTest, MaxPackOneNeverShares) {
  std::vector<int> widths;
  SearchDriver::Options options;
  options.set_pack_width = [&](int64_t, int width, PackedTrials) { widths.push_back(width); };
  driver_ = std::make_unique<SearchDriver>(store_.get(), options);
  trainer::v1::SweepSpec spec = Spec(/*trials=*/4, /*parallel=*/0);
  spec.mutable_base()->set_device("cuda");
  spec.mutable_search()->set_max_pack(1);
  const int64_t off = Create(spec);
  ASSERT_TRUE(driver_->Advance(off).ok());
  EXPECT_EQ(store_->GetSearch(off)->pack_why, "1 trial per GPU (max_pack 1)");
  EXPECT_EQ(Trials(off).size(), 1u);
  EXPECT_EQ(widths, (std::vector<int>{1}));
}

// The CPU lane packs a search's trials as a GPU does, from a trial's reading alone (the share of
// the host's cores it kept busy); a data-parallel CPU trial (ranks of its own) never.
TEST_F(SearchDriverTest, OnTheCpuTrialsShareTheCoresOnceOneWasMeasured) {
  std::vector<int> widths;
  SearchDriver::Options options;
  options.lanes = [](const trainer::v1::JobSpec&) { return 1; };
  options.host_cores = 2;
  options.set_pack_width = [&](int64_t, int width, PackedTrials) { widths.push_back(width); };
  driver_ = std::make_unique<SearchDriver>(store_.get(), options);
  const int64_t cpu = Create(Spec(/*trials=*/4, /*parallel=*/0));
  ASSERT_TRUE(driver_->Advance(cpu).ok());
  ASSERT_EQ(Trials(cpu).size(), 1u);
  const int64_t job = Trials(cpu)[0].id();
  Transition(job, Job::RUNNING);
  ReportStep(store_.get(), job, 299, 0.1);
  Transition(job, Job::SUCCEEDED);
  ASSERT_TRUE(driver_->Advance(cpu).ok());
  EXPECT_EQ(widths, (std::vector<int>{2}));
  EXPECT_NE(store_->GetSearch(cpu)->pack_why.find(
                "2 trials at once on the CPU, bounded by 2 host cores; alone a trial kept the "
                "host's 2 cores busy 10%"),
            std::string::npos)
      << store_->GetSearch(cpu)->pack_why;
  EXPECT_EQ(Trials(cpu).size(), 3u);  // the ended one and two in flight

  widths.clear();
  trainer::v1::SweepSpec ranks = Spec(/*trials=*/4, /*parallel=*/0);
  ranks.mutable_base()->set_processes(2);
  const int64_t parallel = Create(ranks);
  ASSERT_TRUE(driver_->Advance(parallel).ok());
  const int64_t rank_job = Trials(parallel)[0].id();
  Transition(rank_job, Job::RUNNING);
  ReportStep(store_.get(), rank_job, 299, 0.1);
  Transition(rank_job, Job::SUCCEEDED);
  ASSERT_TRUE(driver_->Advance(parallel).ok());
  EXPECT_EQ(store_->GetSearch(parallel)->pack_why, "");
  EXPECT_TRUE(widths.empty());
}

TEST_F(SearchDriverTest, ABudgetStartsNoTrialThatWouldTakeTheSearchPastIt) {
  trainer::v1::SweepSpec spec = Spec(/*trials=*/20, /*parallel=*/1);
  spec.mutable_search()->set_device_hours(10.0 / 3600);  // 10 device-seconds
  const int64_t id = Create(spec);
  // Nothing measured yet: the first trial starts.
  ASSERT_TRUE(driver_->Advance(id).ok());
  ASSERT_EQ(Trials(id).size(), 1u);
  // Its epoch took 4 s: a second trial's first rung (4 s more, 8 in all) fits.
  Report(Trials(id)[0].id(), 1, 0.5, Job::PAUSED, /*epoch_seconds=*/4);
  ASSERT_TRUE(driver_->Advance(id).ok());
  ASSERT_EQ(Trials(id).size(), 2u);
  // A third (12 s) would not, nor would promoting one (two epochs: 16 s): the search is over.
  Report(Trials(id)[1].id(), 1, 0.6, Job::PAUSED, /*epoch_seconds=*/4);
  ASSERT_TRUE(driver_->Advance(id).ok());
  EXPECT_EQ(Trials(id).size(), 2u);
  absl::StatusOr<Store::SearchRecord> record = store_->GetSearch(id);
  ASSERT_TRUE(record.ok());
  EXPECT_TRUE(record->done);
  for (const Job& job : Trials(id)) EXPECT_EQ(job.state(), Job::SUCCEEDED);
}

TEST(AffordableTest, SpentAndCommittedAndTheNextEpochsWithinTheBudget) {
  EXPECT_TRUE(Affordable(Spend{0, 100, 5, 0}, 1000));  // no budget
  EXPECT_TRUE(Affordable(Spend{10, 0, 0, 0}, 1000));   // nothing measured yet
  EXPECT_TRUE(Affordable(Spend{10, 4, 2, 2}, 2));      // 4 + 2 + 4 = 10
  EXPECT_FALSE(Affordable(Spend{10, 4, 2, 2.5}, 2));
}

}  // namespace
}  // namespace traind
