// MetricLines: what a training script prints, read as traind's own events, with no change to the
// script (issue 35: a user's program as a job). Fed one line at a time, as it arrives on the
// script's stdout or stderr (a tqdm bar's '\r' ends a line too), it returns the StepMetrics and
// EpochSummary events the line stands for, the same ones built-in jobs send, so curves, reports,
// CSV export and Prometheus work on scripts. What it reads:
//   - the seed scripts' lines (rasbt's helper_train.py, which `trainctl logs` prints for built-in
//     jobs too):
//       Epoch: 001/010 | Batch 0100/0421 | Loss: 0.2646
//       Epoch: 001/010 | Train: 97.32% | Validation: 97.77% | Best Validation (Ep. 001): 97.77%
//       Time / epoch without evaluation: 0.18 min (before the epoch's line: kept for it)
//       Time elapsed: 0.18 min (after the epoch's line: folded into it)
//       Test accuracy 97.41%      Total Training Time: 0.27 min      Total Time: 0.27 min
//   - the ResNet-18 FakeData loop's `Epoch 1, Batch 10: loss 2.301`;
//   - plain forms: `loss 2.301`, `loss=0.3`, `loss: 0.3`, `step 10 loss 0.3 lr 1e-3`, with
//     train/val/valid/eval/test prefixes (`val_loss`, `val loss`) and acc/accuracy;
//   - Python dicts and JSON objects, as Hugging Face's Trainer logs them:
//       {'loss': 0.3, 'learning_rate': 5e-05, 'epoch': 1.0}   {'eval_accuracy': 0.91, 'epoch': 1.0}
//   - tqdm bars and their postfix, Lightning's included (its epochs count from 0):
//       Epoch 0:  45%|####5     | 190/421 [00:05<00:06, 35.2it/s, loss=0.352, v_num=0]
//   - the traind package's traind.report() (python/traind), which adds device memory:
//       [traind] {"epoch": "1/10", "batch": "5/421", "loss": 0.3, "current_allocated_bytes": 5e6}
// In a dict or JSON line (traind.report's, Hugging Face's), a number under any other name is the
// program's own metric (`grad_norm`): it goes with the step or epoch the line reports, in
// StepMetrics.metrics / EpochSummary.metrics: at most kMaxEventMetrics names a job (the first
// seen; later ones are dropped), each at most kMaxEventMetricName characters (the bounds every
// event is held to, common/event_values.h).
// A line it cannot read is not an error: it is only a log line. NaN and infinite values are kept
// as they are (a loss of NaN is news: the run diverged). Accuracies printed in percent (97.3% or a
// value above 1) become fractions. Not thread-safe: one reader per job.
#ifndef TRAIND_SCRIPT_METRIC_LINES_H_
#define TRAIND_SCRIPT_METRIC_LINES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/event_values.h"
#include "script/line_form.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class MetricLines {
 public:
  // Whether Read makes an event of a step line, or only counts it (its epoch, its place in the
  // epoch): the runner stores at most a few steps a second, and at 100,000 lines a second
  // building each step's event only to drop it was most of its work. A line counted only that
  // is the last step line read in full with other numbers, its epoch and counts the same, is
  // counted without being parsed (LineForm).
  enum class Steps { kMake, kCountOnly };

  // The events `line` completes, in order: usually none or one. An epoch's summary is held until
  // the next line that is not about that epoch's time (which is folded into it), or Finish().
  std::vector<trainer::v1::JobEvent> Read(absl::string_view line, Steps steps = Steps::kMake);
  // At the end of the output: the summary still held, if any. Also when the output pauses (its
  // time lines follow it at once or not at all): reading goes on after it.
  std::vector<trainer::v1::JobEvent> Finish();

  // What the script said of the whole run (test accuracy, total time), for the job's result.
  const trainer::v1::FinalResult& result() const { return result_; }
  // How many lines were metrics: made into events, held, folded into a summary or counted.
  int64_t metric_lines() const { return metric_lines_; }
  // How many lines were an epoch's summary (one is held until the next line: see Read).
  int64_t summaries_read() const { return summaries_read_; }
  // How many lines were a step (made into an event or only counted), and the epoch of the last.
  int64_t steps_read() const { return steps_read_; }
  int epoch() const { return epoch_; }
  // The batch size the program gave (`batch_size` in a dict or JSON line, traind.report's
  // batch_size=64), for its samples a second; 0 when it gave none.
  int batch_size() const { return batch_size_; }

 private:
  // The values one line names, before they become events.
  struct Fields {
    std::optional<double> epoch, epochs, batch, batches, step, loss, learning_rate;
    std::optional<double> train_accuracy, validation_accuracy, best_validation_accuracy, best_epoch;
    std::optional<double> validation_loss, test_accuracy, test_loss;
    std::optional<double> epoch_seconds, elapsed_seconds, total_seconds, total_training_seconds;
    std::optional<double> current_bytes, driver_bytes;  // device memory (the traind package's)
    bool structured = false;  // a dict or JSON line: its other numbers are the program's metrics
    std::optional<double> batch_size;                            // `batch_size` in such a line
    std::array<std::pair<absl::string_view, double>, 8> custom;  // views into lower_
    size_t custom_count = 0;
    bool lightning_epoch = false;  // "Epoch N:" before a tqdm bar (Lightning counts from 0)
    // Where the values naming the epoch, the epoch count and the batch count are in the line
    // (for step_form_); `offsets_valid` is false where a phrase was taken out of it (the
    // offsets moved) or they did not fit in `fixed`.
    std::array<LineForm::Range, 4> fixed;
    size_t fixed_count = 0;
    bool offsets_valid = true;
  };
  // The reader's state a step line's count depends on, besides the line itself.
  struct StepState {
    int epoch, epochs, batches_per_epoch;
    bool zero_based_epochs;
    bool operator==(const StepState& other) const {
      return epoch == other.epoch && epochs == other.epochs &&
             batches_per_epoch == other.batches_per_epoch &&
             zero_based_epochs == other.zero_based_epochs;
    }
  };
  StepState state() const { return {epoch_, epochs_, batches_per_epoch_, zero_based_epochs_}; }
  // Marks the part of lower_ that `value` views as one of fields_.fixed (offsets_valid false
  // where it is no view of lower_ or there are more than fixed holds).
  void MarkFixed(absl::string_view value);
  // Reads `line` into fields_ (its buffers, lower_ words_ joined_, are members so that a line
  // costs no allocation).
  void Parse(absl::string_view line);
  // Parse's first half: the whole phrases ("test accuracy", "time / epoch ..."), taken out of
  // the lowercased line (lower_) so that the key scan after does not misread their words.
  void TakePhrases();
  // The 1-based epoch a line's "epoch" value names (Lightning's 0-based count and Hugging Face's
  // fractional epochs included).
  int EpochOf(const Fields& fields);
  void Flush(std::vector<trainer::v1::JobEvent>* events);
  // The line's own metrics (fields_.custom) into `metrics`, within the job's name budget.
  void AddCustom(google::protobuf::Map<std::string, double>* metrics);

  Fields fields_;  // the line Read reads, as Parse left it
  std::string lower_;
  std::vector<absl::string_view> words_;
  std::string joined_;
  // The last step line read in full, while the state it left holds: a line of its form with the
  // same epoch is counted without a parse (Steps::kCountOnly).
  LineForm step_form_;

  trainer::v1::FinalResult result_;
  std::optional<trainer::v1::EpochSummary> held_;  // the last epoch's, until its time is read
  std::optional<double> pending_epoch_seconds_;    // "Time / epoch ...", for the next summary
  // The best validation accuracy so far and its epoch: the program's own "Best Validation (Ep.
  // N)", else the highest validation accuracy it printed (the job's best, as a built-in job's).
  std::optional<double> best_validation_;
  int best_epoch_ = 0;
  int epoch_ = 1;
  int epochs_ = 0;
  int batches_per_epoch_ = 0;
  int64_t steps_in_epoch_ = 0;  // step lines of this epoch read so far (a batch index)
  bool zero_based_epochs_ = false;
  int64_t metric_lines_ = 0;
  int64_t summaries_read_ = 0;
  int64_t steps_read_ = 0;
  std::vector<std::string> custom_names_;  // the program's metrics' names, in the order first seen
  int batch_size_ = 0;
};

}  // namespace traind

#endif  // TRAIND_SCRIPT_METRIC_LINES_H_
