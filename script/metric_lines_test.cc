// MetricLines on the lines real scripts print (script/metric_lines.h lists where each comes from).
#include "script/metric_lines.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;

// Every event the lines make, Finish() included.
std::vector<JobEvent> ReadAll(MetricLines& reader, const std::vector<std::string>& lines) {
  std::vector<JobEvent> all;
  for (const std::string& line : lines) {
    for (JobEvent& e : reader.Read(line)) all.push_back(std::move(e));
  }
  for (JobEvent& e : reader.Finish()) all.push_back(std::move(e));
  return all;
}

TEST(MetricLinesTest, TheSeedScriptsLinesBecomeStepsEpochsAndTheResult) {
  MetricLines reader;
  const std::vector<JobEvent> events = ReadAll(
      reader,
      {"Epoch: 001/010 | Batch 0000/0421 | Loss: 2.3021",
       "Epoch: 001/010 | Batch 0100/0421 | Loss: 0.2646",
       "Time / epoch without evaluation: 0.15 min",
       "Epoch: 001/010 | Train: 97.32% | Validation: 97.77% | Best Validation (Ep. 001): 97.77%",
       "Time elapsed: 0.18 min", "Epoch: 002/010 | Batch 0000/0421 | Loss: 0.1990",
       "Total Training Time: 0.27 min", "Test accuracy 97.41%"});
  ASSERT_EQ(events.size(), 4u);
  ASSERT_TRUE(events[1].has_step());
  const trainer::v1::StepMetrics& step = events[1].step();
  EXPECT_EQ(step.epoch(), 1);
  EXPECT_EQ(step.epochs(), 10);
  EXPECT_EQ(step.batch(), 100);
  EXPECT_EQ(step.batches_per_epoch(), 421);
  EXPECT_DOUBLE_EQ(step.loss(), 0.2646);
  ASSERT_TRUE(events[2].has_epoch_summary());
  const trainer::v1::EpochSummary& summary = events[2].epoch_summary();
  EXPECT_EQ(summary.epoch(), 1);
  EXPECT_TRUE(summary.evaluated());
  EXPECT_DOUBLE_EQ(summary.train_accuracy(), 0.9732);
  EXPECT_DOUBLE_EQ(summary.validation_accuracy(), 0.9777);
  EXPECT_DOUBLE_EQ(summary.best_validation_accuracy(), 0.9777);
  EXPECT_EQ(summary.best_epoch(), 1);
  EXPECT_DOUBLE_EQ(summary.epoch_seconds_no_eval(), 0.15 * 60);  // the line before it
  EXPECT_DOUBLE_EQ(summary.elapsed_seconds(), 0.18 * 60);        // the line after it
  EXPECT_EQ(events[3].step().epoch(), 2);
  EXPECT_DOUBLE_EQ(reader.result().test_accuracy(), 0.9741);
  EXPECT_DOUBLE_EQ(reader.result().total_training_seconds(), 0.27 * 60);
  EXPECT_EQ(reader.metric_lines(), 8);
}

// A program that prints only each epoch's validation accuracy: the job's best is the highest it
// printed, with its epoch (not 0, which `show` would have called "best validation 0.00%").
TEST(MetricLinesTest, TheBestValidationAccuracyIsTheHighestPrinted) {
  MetricLines reader;
  std::vector<trainer::v1::EpochSummary> summaries;
  for (const JobEvent& event : ReadAll(reader, {"epoch 1 loss 0.6867 acc 0.7557 val_acc 0.7835",
                                                "epoch 2 loss 0.5120 acc 0.8011 val_acc 0.7702",
                                                "epoch 3 loss 0.4410 acc 0.8302 val_acc 0.8120"})) {
    if (event.has_epoch_summary()) summaries.push_back(event.epoch_summary());
  }
  ASSERT_EQ(summaries.size(), 3u);
  EXPECT_DOUBLE_EQ(summaries[0].best_validation_accuracy(), 0.7835);
  EXPECT_EQ(summaries[0].best_epoch(), 1);
  EXPECT_DOUBLE_EQ(summaries[1].best_validation_accuracy(), 0.7835);  // epoch 2 was worse
  EXPECT_EQ(summaries[1].best_epoch(), 1);
  EXPECT_DOUBLE_EQ(summaries[2].best_validation_accuracy(), 0.8120);
  EXPECT_EQ(summaries[2].best_epoch(), 3);
}

// A dict or JSON line's other numbers are the program's own metrics (traind.report(grad_norm=...),
// Hugging Face's grad_norm), with the step or epoch they came with; a plain line's are not (any
// print would make curves), and a job has at most kMaxEventMetrics names.
TEST(MetricLinesTest, AProgramsOwnMetricsComeWithItsStepsAndEpochs) {
  MetricLines reader;
  std::vector<JobEvent> events =
      ReadAll(reader, {"{'loss': 0.3, 'grad_norm': 1.25, 'learning_rate': 5e-05, 'epoch': 0.5}",
                       "[traind] {\"epoch\": \"1/2\", \"val_accuracy\": 0.91, \"train/ece\": 0.04}",
                       "step 3 loss 0.2 grad_norm 9"});
  ASSERT_EQ(events.size(), 3u);
  ASSERT_TRUE(events[0].has_step());
  EXPECT_DOUBLE_EQ(events[0].step().metrics().at("grad_norm"), 1.25);
  EXPECT_EQ(events[0].step().metrics().size(), 1u);  // loss, learning_rate, epoch are its own
  ASSERT_TRUE(events[1].has_epoch_summary());
  EXPECT_DOUBLE_EQ(events[1].epoch_summary().metrics().at("train/ece"), 0.04);
  ASSERT_TRUE(events[2].has_step());
  EXPECT_TRUE(events[2].step().metrics().empty());  // a plain line: no metrics of its own

  MetricLines sized;  // its batch size, for samples a second: not a metric of its own
  const std::vector<JobEvent> sized_events =
      ReadAll(sized, {"[traind] {\"batch_size\": 64}", "{'loss': 0.4, 'batch_size': 32}"});
  EXPECT_EQ(sized.batch_size(), 32);
  ASSERT_EQ(sized_events.size(), 1u);
  EXPECT_TRUE(sized_events[0].step().metrics().empty());

  MetricLines many;
  std::vector<std::string> lines;
  for (int i = 0; i < 20; ++i) {
    lines.push_back(absl::StrCat("{\"loss\": 0.5, \"m", i, "\": ", i, "}"));
  }
  size_t names = 0;
  for (const JobEvent& event : ReadAll(many, lines)) names += event.step().metrics().size();
  EXPECT_EQ(names, kMaxEventMetrics);
}

TEST(MetricLinesTest, TheResNetFakeDataLoopsLines) {
  MetricLines reader;
  const std::vector<JobEvent> events =
      ReadAll(reader, {"Epoch 1, Batch 10: loss 2.301", "Epoch 2, Batch 0: loss 1.75"});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].step().epoch(), 1);
  EXPECT_EQ(events[0].step().batch(), 10);
  EXPECT_DOUBLE_EQ(events[0].step().loss(), 2.301);
  EXPECT_EQ(events[1].step().epoch(), 2);
}

TEST(MetricLinesTest, PlainFormsCountTheirOwnSteps) {
  MetricLines reader;
  const std::vector<JobEvent> events = ReadAll(reader, {"loss 2.301", "loss=0.9", "train loss: 0.5",
                                                        "loss: 0.3", "step 40 loss 0.25 lr 1e-3"});
  ASSERT_EQ(events.size(), 5u);
  EXPECT_DOUBLE_EQ(events[0].step().loss(), 2.301);
  EXPECT_EQ(events[0].step().batch(), 0);
  EXPECT_EQ(events[1].step().batch(), 1);
  EXPECT_DOUBLE_EQ(events[2].step().loss(), 0.5);
  EXPECT_EQ(events[3].step().batch(), 3);
  EXPECT_DOUBLE_EQ(events[4].step().loss(), 0.25);
  EXPECT_EQ(events[4].step().batch(), 40);
  EXPECT_DOUBLE_EQ(events[4].step().learning_rate(), 1e-3);
}

// Each epoch's "Time / epoch" belongs to the summary after it, not the one held before it.
TEST(MetricLinesTest, EveryEpochGetsItsOwnTime) {
  MetricLines reader;
  const std::vector<JobEvent> events =
      ReadAll(reader, {"Time / epoch without evaluation: 0.30 min",
                       "Epoch: 001/002 | Train: 90.00% | Validation: 91.00%",
                       "Time / epoch without evaluation: 0.20 min",
                       "Epoch: 002/002 | Train: 92.00% | Validation: 93.00%"});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_DOUBLE_EQ(events[0].epoch_summary().epoch_seconds_no_eval(), 18);
  EXPECT_DOUBLE_EQ(events[1].epoch_summary().epoch_seconds_no_eval(), 12);
}

// A split named as a separate word counts as its prefix would: "val loss" is val_loss.
TEST(MetricLinesTest, SpacedSplitPrefixesNameTheirSplit) {
  MetricLines reader;
  const std::vector<JobEvent> events = ReadAll(
      reader,
      {"epoch 1 train loss 0.50 val loss 0.40 val acc: 91%", "kl_loss 3.0", "test loss 0.45"});
  ASSERT_EQ(events.size(), 1u);
  const trainer::v1::EpochSummary& summary = events[0].epoch_summary();
  EXPECT_DOUBLE_EQ(summary.train_loss(), 0.50);
  EXPECT_DOUBLE_EQ(summary.validation_loss(), 0.40);
  EXPECT_DOUBLE_EQ(summary.validation_accuracy(), 0.91);
  EXPECT_DOUBLE_EQ(reader.result().test_loss(), 0.45);
}

TEST(MetricLinesTest, HuggingFaceDictsAndJsonObjects) {
  MetricLines reader;
  const std::vector<JobEvent> events = ReadAll(
      reader, {"{'loss': 0.3, 'learning_rate': 5e-05, 'epoch': 0.5}",
               "{\"loss\": 0.2, \"learning_rate\": 4e-05, \"epoch\": 1.0}",
               "{'eval_loss': 0.25, 'eval_accuracy': 0.91, 'eval_runtime': 1.2, 'epoch': 1.0}"});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].step().epoch(), 1);  // halfway through the first
  EXPECT_DOUBLE_EQ(events[0].step().learning_rate(), 5e-05);
  EXPECT_EQ(events[1].step().epoch(), 1);
  ASSERT_TRUE(events[2].has_epoch_summary());
  EXPECT_DOUBLE_EQ(events[2].epoch_summary().validation_accuracy(), 0.91);
  EXPECT_DOUBLE_EQ(events[2].epoch_summary().validation_loss(), 0.25);
}

TEST(MetricLinesTest, TqdmBarsAndLightningsZeroBasedEpochs) {
  MetricLines reader;
  const std::vector<JobEvent> events = ReadAll(
      reader, {"Epoch 0:  45%|####5     | 190/421 [00:05<00:06, 35.2it/s, loss=0.352, v_num=0]",
               "Epoch 1:   0%|          | 1/421 [00:00<00:06, 35.2it/s, train_loss=0.300, v_num=0]",
               "100%|##########| 421/421 [00:12<00:00, 35.0it/s, loss=0.2, acc=0.9]"});
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].step().epoch(), 1);
  EXPECT_EQ(events[0].step().batch(), 189);
  EXPECT_EQ(events[0].step().batches_per_epoch(), 421);
  EXPECT_DOUBLE_EQ(events[0].step().loss(), 0.352);
  EXPECT_EQ(events[1].step().epoch(), 2);
  EXPECT_DOUBLE_EQ(events[1].step().loss(), 0.3);
  EXPECT_EQ(events[2].step().batch(), 420);  // a bar's accuracy is a batch's: no epoch summary
}

TEST(MetricLinesTest, NaNIsKeptAndProseIsOnlyALogLine) {
  MetricLines reader;
  const std::vector<JobEvent> events = ReadAll(
      reader, {"Downloading data...", "loss nan", "Epoch: 001/002 | Batch 0000/0010 | Loss: inf",
               "the loss function is cross entropy", "accuracy looks fine", ""});
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(std::isnan(events[0].step().loss()));
  EXPECT_TRUE(std::isinf(events[1].step().loss()));
  EXPECT_EQ(reader.metric_lines(), 2);
}

TEST(MetricLinesTest, AHeldSummaryIsFlushedByTheNextEpochsStep) {
  MetricLines reader;
  std::vector<JobEvent> first = reader.Read("epoch 1 val_acc 0.8 val_loss 0.5");
  EXPECT_TRUE(first.empty());  // held for its time line
  std::vector<JobEvent> next = reader.Read("epoch 2 step 0 loss 0.4");
  ASSERT_EQ(next.size(), 2u);
  EXPECT_TRUE(next[0].has_epoch_summary());
  EXPECT_EQ(next[0].epoch_summary().epoch(), 1);
  EXPECT_EQ(next[1].step().epoch(), 2);
  EXPECT_TRUE(reader.Finish().empty());
}

TEST(MetricLinesTest, StepsOnlyCountedKeepTheirPlaceAndFlushTheHeldSummary) {
  MetricLines reader;
  reader.Read("epoch 1 val_acc 0.8");  // held for its time line
  std::vector<JobEvent> counted = reader.Read("epoch 2 loss 0.5", MetricLines::Steps::kCountOnly);
  ASSERT_EQ(counted.size(), 1u);  // the held summary, and no step
  EXPECT_EQ(counted[0].epoch_summary().epoch(), 1);
  EXPECT_TRUE(reader.Read("epoch 2 loss 0.4", MetricLines::Steps::kCountOnly).empty());
  EXPECT_EQ(reader.steps_read(), 2);
  EXPECT_EQ(reader.epoch(), 2);
  // The next step made is the epoch's third: its index counts the two only counted.
  std::vector<JobEvent> made = reader.Read("epoch 2 loss 0.3");
  ASSERT_EQ(made.size(), 1u);
  EXPECT_EQ(made[0].step().epoch(), 2);
  EXPECT_EQ(made[0].step().batch(), 2);
  EXPECT_EQ(reader.steps_read(), 3);
  // Summaries and results do not depend on it.
  EXPECT_TRUE(reader.Read("epoch 2 val_acc 0.9", MetricLines::Steps::kCountOnly).empty());
  std::vector<JobEvent> end = reader.Read("test accuracy 0.85", MetricLines::Steps::kCountOnly);
  ASSERT_EQ(end.size(), 1u);
  EXPECT_EQ(end[0].epoch_summary().epoch(), 2);
  EXPECT_DOUBLE_EQ(reader.result().test_accuracy(), 0.85);
  EXPECT_EQ(reader.metric_lines(), 6);
}

// Counting a step without a parse (a line of the last step line's form) must leave the reader
// as reading it in full does: the same events, less the steps not made, in any mix of lines.
TEST(MetricLinesTest, StepsCountedOnlyAreCountedAsAFullReadCountsThem) {
  const std::vector<std::string> pool = {
      "Epoch 1, Batch 5: loss 2.301",
      "Epoch 1, Batch 6: loss 2.2",
      "Epoch 2, Batch 0: loss 1.9",
      "Epoch 12, Batch 0: loss 1.9",
      "Epoch: 001/010 | Batch 0100/0421 | Loss: 0.2646",
      "Epoch: 001/010 | Batch 0101/0421 | Loss: 0.2600",
      "Epoch: 001/010 | Batch 0101/0500 | Loss: 0.2600",
      "Epoch: 002/010 | Batch 0000/0421 | Loss: 0.1990",
      "Epoch: 001/010 | Train: 97.32% | Validation: 97.77% | Best Validation (Ep. 001): 97.77%",
      "Time elapsed: 0.18 min",
      "Time / epoch without evaluation: 0.15 min",
      "loss 0.3",
      "loss 0.31",
      "step 10 loss 0.3",
      "epoch 3 step 11 loss 0.2",
      "epoch 3 val_acc 0.9",
      "Epoch 0:  45%|####5     | 190/421 [00:05<00:06, 35.2it/s, loss=0.352]",
      "Epoch 0:  46%|####6     | 191/421 [00:05<00:06, 35.2it/s, loss=0.350]",
      "Epoch 1: 0%| | 0/0 [00:00<?, ?it/s, loss=0.3]",
      "Epoch 1: 0%| | 0/5 [00:00<?, ?it/s, loss=0.3]",
      "{'loss': 0.3, 'epoch': 1.5}",
      "{'loss': 0.2, 'epoch': 1.75}",
      "some prose 12 34",
      "Test accuracy 97.41%"};
  std::mt19937 random(11);
  for (int trial = 0; trial < 300; ++trial) {
    MetricLines full, counting;
    std::vector<JobEvent> expected, got;
    for (int n = 0; n < 40; ++n) {
      // Runs of one line's form, as a flood prints them.
      const std::string& line = pool[random() % pool.size()];
      for (int repeat = 1 + static_cast<int>(random() % 4); repeat > 0; --repeat) {
        const bool count_only = random() % 3 != 0;
        for (JobEvent& e : full.Read(line)) {
          if (!(count_only && e.has_step())) expected.push_back(std::move(e));
        }
        for (JobEvent& e : counting.Read(
                 line, count_only ? MetricLines::Steps::kCountOnly : MetricLines::Steps::kMake)) {
          got.push_back(std::move(e));
        }
        ASSERT_EQ(counting.steps_read(), full.steps_read()) << "trial " << trial << ": " << line;
        ASSERT_EQ(counting.epoch(), full.epoch()) << "trial " << trial << ": " << line;
        ASSERT_EQ(counting.metric_lines(), full.metric_lines()) << "trial " << trial;
      }
    }
    for (JobEvent& e : full.Finish()) expected.push_back(std::move(e));
    for (JobEvent& e : counting.Finish()) got.push_back(std::move(e));
    ASSERT_EQ(got.size(), expected.size()) << "trial " << trial;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].SerializeAsString(), expected[i].SerializeAsString())
          << "trial " << trial << " event " << i << ": " << got[i].ShortDebugString() << " vs "
          << expected[i].ShortDebugString();
    }
  }
}

TEST(MetricLinesTest, HostileLinesAreReadWithoutHarm) {
  MetricLines reader;
  std::string long_line(1 << 20, 'x');
  long_line += " loss 0.5";
  EXPECT_EQ(reader.Read(long_line).size(), 1u);
  for (const char* line : {"epoch 99999999999999999999 loss 1", "batch -5 loss 1",
                           "epoch nan loss 1", "batch 1/0 loss 1", "epoch 1/-3 loss 1", "loss",
                           "loss=", "=:=:", "\xff\xfe loss 0.1 \x1b[31m", "%|%|%|"}) {
    for (const JobEvent& e : reader.Read(line)) {
      if (!e.has_step()) continue;
      EXPECT_GE(e.step().epoch(), 1) << line;
      EXPECT_GE(e.step().batch(), 0) << line;
      EXPECT_GE(e.step().batches_per_epoch(), 0) << line;
    }
  }
}

}  // namespace
}  // namespace traind
