#include "script/metric_lines.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace traind {
namespace {

using trainer::v1::JobEvent;

// A number as printed: "0.2646", "97.32%", "1e-3", "nan", "001". Sets *percent for a trailing '%'.
std::optional<double> Number(absl::string_view token, bool* percent = nullptr) {
  token = absl::StripSuffix(token, ",");
  const bool pct = absl::ConsumeSuffix(&token, "%");
  if (percent != nullptr) *percent = pct;
  double value = 0;
  if (token.empty() || !absl::SimpleAtod(token, &value)) return std::nullopt;
  return value;
}

// "001/010" -> 1 and 10.
bool Fraction(absl::string_view token, double* done, double* of) {
  const size_t slash = token.find('/');
  if (slash == absl::string_view::npos) return false;
  std::optional<double> a = Number(token.substr(0, slash));
  std::optional<double> b = Number(token.substr(slash + 1));
  if (!a || !b) return false;
  *done = *a;
  *of = *b;
  return true;
}

// A fraction from 0 to 1 from what a script printed: 97.32% and 97.32 are percent, 0.9732 is not.
double Accuracy(double value, bool percent) {
  return percent || value > 1.0 ? value / 100.0 : value;
}

// Seconds from "0.18 min", "12.5 s", "1.2 h" (unit in the token after the number; seconds when
// there is none).
std::optional<double> Seconds(const std::vector<absl::string_view>& tokens, size_t at) {
  if (at >= tokens.size()) return std::nullopt;
  std::optional<double> value = Number(tokens[at]);
  if (!value) return std::nullopt;
  const absl::string_view unit = at + 1 < tokens.size() ? tokens[at + 1] : "";
  if (absl::StartsWith(unit, "min")) return *value * 60;
  if (unit == "h" || absl::StartsWith(unit, "hour")) return *value * 3600;
  return *value;
}

// Removes `phrase` and returns the words after it (up to the next '|'), or nothing.
std::optional<std::string> TakePhrase(std::string* line, absl::string_view phrase) {
  const size_t at = line->find(phrase.data(), 0, phrase.size());
  if (at == std::string::npos) return std::nullopt;
  size_t end = line->find('|', at);
  if (end == std::string::npos) end = line->size();
  std::string after = line->substr(at + phrase.size(), end - at - phrase.size());
  line->erase(at, end - at);
  return after;
}

// A count or index a script printed, if it is a whole number that fits: a float far out of
// range converted to int is undefined behaviour (the fuzzer's first finding: a best epoch of
// 1e41).
std::optional<int> WholeNumber(std::optional<double> value, double lowest, double highest) {
  if (!value || !(*value >= lowest && *value <= highest)) return std::nullopt;
  return static_cast<int>(*value);
}

enum class Split { kTrain, kValidation, kTest };  // in this order: it indexes Parse's tables
struct Metric {
  enum Kind { kNone, kLoss, kAccuracy } kind = kNone;
  Split split = Split::kTrain;
};
// "loss", "acc", "accuracy", each with an optional split prefix: "train_" / "training_" (the
// default), "val_" / "valid_" / "validation_" / "eval_", "test_".
Metric MetricOf(absl::string_view key) {
  Metric m;
  const size_t underscore = key.rfind('_');
  const absl::string_view prefix =
      underscore == absl::string_view::npos ? "" : key.substr(0, underscore);
  const absl::string_view name =
      underscore == absl::string_view::npos ? key : key.substr(underscore + 1);
  if (name == "loss") {
    m.kind = Metric::kLoss;
  } else if (name == "acc" || name == "accuracy") {
    m.kind = Metric::kAccuracy;
  } else {
    return m;
  }
  if (prefix.empty() || prefix == "train" || prefix == "training") {
    m.split = Split::kTrain;
  } else if (prefix == "val" || prefix == "valid" || prefix == "validation" || prefix == "eval") {
    m.split = Split::kValidation;
  } else if (prefix == "test") {
    m.split = Split::kTest;
  } else {
    m.kind = Metric::kNone;  // another loss (e.g. kl_loss): not the training curve
  }
  return m;
}

// A table of 256 bytes: whether each is one of `chars`. (Every line of a program's output is
// parsed: at 100,000 lines a second a table beats searching a string of characters per byte.)
struct ByteSet {
  explicit constexpr ByteSet(const char* chars) : member() {
    for (; *chars != '\0'; ++chars) member[static_cast<unsigned char>(*chars)] = true;
  }
  bool operator()(char c) const { return member[static_cast<unsigned char>(c)]; }
  bool member[256];
};
constexpr ByteSet kWordSeparators(" \t:=");
constexpr ByteSet kPunctuation("{}[](),|'\"<");  // read as spaces

// A name a program's own metric may have: a letter, then letters, digits and _ . / - (W&B's
// "train/grad_norm"), at most kMaxEventMetricName characters.
bool IsCustomMetricName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxEventMetricName || !absl::ascii_isalpha(name.front())) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '/' || c == '-';
  });
}

// `text`'s words, into `words` (cleared first: a buffer kept from line to line).
void SplitWords(absl::string_view text, std::vector<absl::string_view>* words) {
  words->clear();
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && kWordSeparators(text[i])) ++i;
    const size_t start = i;
    while (i < text.size() && !kWordSeparators(text[i])) ++i;
    if (i > start) words->push_back(text.substr(start, i - start));
  }
}

std::vector<absl::string_view> Words(absl::string_view text) {
  std::vector<absl::string_view> words;
  SplitWords(text, &words);
  return words;
}

}  // namespace

void MetricLines::TakePhrases() {
  if (auto best = TakePhrase(&lower_, "best validation (ep.")) {
    const std::string best_text = absl::StrReplaceAll(*best, {{")", " "}});  // outlives `words`
    std::vector<absl::string_view> words = Words(best_text);
    if (words.size() >= 2) {
      fields_.best_epoch = Number(words[0]);
      bool percent = false;
      if (std::optional<double> v = Number(words[1], &percent)) {
        fields_.best_validation_accuracy = Accuracy(*v, percent);
      }
    }
  }
  if (auto time = TakePhrase(&lower_, "time / epoch without evaluation")) {
    fields_.epoch_seconds = Seconds(Words(*time), 0);
  }
  if (auto time = TakePhrase(&lower_, "time elapsed"))
    fields_.elapsed_seconds = Seconds(Words(*time), 0);
  if (auto time = TakePhrase(&lower_, "total training time")) {
    fields_.total_training_seconds = Seconds(Words(*time), 0);
  }
  if (auto time = TakePhrase(&lower_, "total time"))
    fields_.total_seconds = Seconds(Words(*time), 0);
  for (const char* phrase : {"test accuracy", "test acc"}) {
    if (auto test = TakePhrase(&lower_, phrase)) {
      std::vector<absl::string_view> words = Words(*test);
      bool percent = false;
      if (!words.empty()) {
        if (std::optional<double> v = Number(words[0], &percent)) {
          fields_.test_accuracy = Accuracy(*v, percent);
        }
      }
    }
  }
}

void MetricLines::MarkFixed(absl::string_view value) {
  if (fields_.fixed_count == fields_.fixed.size()) {
    fields_.offsets_valid = false;  // more than a line of one step has: not a form to remember
    return;
  }
  const auto at = reinterpret_cast<uintptr_t>(value.data());
  const auto line = reinterpret_cast<uintptr_t>(lower_.data());
  if (at < line || at + value.size() > line + lower_.size()) {
    fields_.offsets_valid = false;  // not a view of the line (a joined key): no offsets
    return;
  }
  const size_t begin = static_cast<size_t>(value.data() - lower_.data());
  fields_.fixed[fields_.fixed_count++] = {begin, begin + value.size()};
}

void MetricLines::Parse(absl::string_view raw) {
  fields_ = Fields();
  Fields& fields = fields_;
  lower_.assign(raw.data(), raw.size());
  absl::AsciiStrToLower(&lower_);
  const absl::string_view trimmed = absl::StripLeadingAsciiWhitespace(lower_);
  fields.structured = absl::StartsWith(trimmed, "{") || absl::StartsWith(trimmed, "[traind] {");
  TakePhrases();
  fields.offsets_valid = lower_.size() == raw.size();
  // A tqdm bar: "Epoch 0:  45%|####5     | 190/421 [00:05<00:06, 35.2it/s, loss=0.352]".
  const bool tqdm = lower_.find("%|") != std::string::npos;
  for (char& c : lower_) {
    if (kPunctuation(c)) c = ' ';
  }
  SplitWords(lower_, &words_);
  const std::vector<absl::string_view>& words = words_;
  for (size_t i = 0; i < words.size(); ++i) {
    absl::string_view key = words[i];
    // "val loss 0.4", "train acc: 0.9": a spaced prefix names the split, as val_loss would.
    if (i + 1 < words.size() && absl::ascii_isalpha(words[i + 1].front())) {
      joined_.assign(key.data(), key.size());
      joined_ += '_';
      joined_.append(words[i + 1].data(), words[i + 1].size());
      if (MetricOf(joined_).kind != Metric::kNone) {
        key = joined_;
        ++i;
      }
    }
    const absl::string_view next = i + 1 < words.size() ? words[i + 1] : "";
    // A tqdm bar's "190/421": its count is fixed whether or not it is taken (a 0/0 bar that
    // becomes 0/5 is read again in full).
    double tqdm_done = 0, tqdm_of = 0;
    const bool tqdm_fraction = tqdm && !fields.batches && Fraction(key, &tqdm_done, &tqdm_of);
    if (tqdm_fraction) MarkFixed(key.substr(key.find('/')));
    double done = 0, of = 0;
    bool percent = false;
    const std::optional<double> value = Number(next, &percent);
    if (key == "epoch") {
      if (Fraction(next, &done, &of)) {
        fields.epoch = done;
        fields.epochs = of;
        MarkFixed(next);
      } else if (value) {
        fields.epoch = value;
        fields.lightning_epoch = tqdm;
        MarkFixed(next);
      }
    } else if (key == "batch" || key == "step" || key == "global_step" || key == "iteration" ||
               key == "iter") {
      if (Fraction(next, &done, &of)) {
        fields.batch = done;
        fields.batches = of;
        MarkFixed(next.substr(next.find('/')));  // the count; the index changes from line to line
      } else if (value) {
        (key == "batch" ? fields.batch : fields.step) = value;
      }
    } else if (tqdm_fraction && tqdm_of > 0) {
      fields.batch = std::max(0.0, tqdm_done - 1);  // tqdm counts batches done; 0-based index
      fields.batches = tqdm_of;
    } else if (!value) {
      continue;
    } else if (key == "train" && percent) {  // rasbt: "Train: 97.32%"
      fields.train_accuracy = Accuracy(*value, percent);
    } else if (key == "validation" && percent) {  // rasbt: "Validation: 97.77%"
      fields.validation_accuracy = Accuracy(*value, percent);
    } else if (const Metric m = MetricOf(key); m.kind != Metric::kNone) {
      // Where a loss and an accuracy go, by split (train, validation, test).
      static constexpr std::optional<double> Fields::*kLoss[] = {
          &Fields::loss, &Fields::validation_loss, &Fields::test_loss};
      static constexpr std::optional<double> Fields::*kAccuracy[] = {
          &Fields::train_accuracy, &Fields::validation_accuracy, &Fields::test_accuracy};
      const int split = static_cast<int>(m.split);
      if (m.kind == Metric::kLoss) {
        fields.*kLoss[split] = value;
      } else {
        fields.*kAccuracy[split] = Accuracy(*value, percent);
      }
    } else if (key == "lr" || key == "learning_rate") {
      fields.learning_rate = value;
    } else if (key == "current_allocated_bytes") {
      fields.current_bytes = value;
    } else if (key == "driver_allocated_bytes") {
      fields.driver_bytes = value;
    } else if (fields.structured && key == "batch_size") {
      fields.batch_size = value;
    } else if (fields.structured && fields.custom_count < fields.custom.size() &&
               IsCustomMetricName(key)) {
      fields.custom[fields.custom_count++] = {key, *value};
    }
  }
}

int MetricLines::EpochOf(const Fields& fields) {
  if (!fields.epoch) return epoch_;
  const double e = *fields.epoch;
  if (!std::isfinite(e) || e < 0 || e > 1e6) return epoch_;
  if (fields.lightning_epoch && e == 0) zero_based_epochs_ = true;
  if (zero_based_epochs_) return static_cast<int>(e) + 1;
  // Hugging Face's epoch is fractional: 0.5 is halfway through the first.
  if (e != std::floor(e)) return static_cast<int>(std::floor(e)) + 1;
  return std::max(1, static_cast<int>(e));
}

void MetricLines::AddCustom(google::protobuf::Map<std::string, double>* metrics) {
  for (size_t i = 0; i < fields_.custom_count; ++i) {
    const auto& [name, value] = fields_.custom[i];
    const bool known =
        std::find(custom_names_.begin(), custom_names_.end(), name) != custom_names_.end();
    if (!known && custom_names_.size() >= kMaxEventMetrics) continue;
    if (!known) custom_names_.emplace_back(name);
    (*metrics)[std::string(name)] = value;
  }
}

void MetricLines::Flush(std::vector<JobEvent>* events) {
  if (!held_) return;
  *events->emplace_back().mutable_epoch_summary() = *std::move(held_);
  held_.reset();
}

std::vector<JobEvent> MetricLines::Read(absl::string_view line, Steps steps) {
  std::vector<JobEvent> events;
  if (steps == Steps::kCountOnly && step_form_.Matches(line)) {
    // What the full read of a step line of this epoch would do, with no event made.
    Flush(&events);
    ++steps_read_;
    ++steps_in_epoch_;
    ++metric_lines_;
    return events;
  }
  const StepState before = state();
  Parse(line);
  const Fields& f = fields_;
  // An epoch's times: "Time / epoch without evaluation" comes before the epoch's summary line (it
  // is kept for the next summary), "Time elapsed" after it (folded into the one held).
  if (f.epoch_seconds || f.elapsed_seconds) {
    if (f.epoch_seconds) pending_epoch_seconds_ = f.epoch_seconds;
    if (f.elapsed_seconds && held_) held_->set_elapsed_seconds(*f.elapsed_seconds);
    ++metric_lines_;
    return events;
  }
  if (f.test_accuracy || f.test_loss || f.total_seconds || f.total_training_seconds) {
    Flush(&events);
    if (f.test_accuracy) result_.set_test_accuracy(*f.test_accuracy);
    if (f.test_loss) result_.set_test_loss(*f.test_loss);
    if (f.total_seconds) result_.set_total_seconds(*f.total_seconds);
    if (f.total_training_seconds) result_.set_total_training_seconds(*f.total_training_seconds);
    ++metric_lines_;
    return events;
  }
  if (std::optional<int> size = WholeNumber(f.batch_size, 1, 1e7)) batch_size_ = *size;
  const int epoch = EpochOf(f);
  if (std::optional<int> epochs = WholeNumber(f.epochs, 1, 1e6)) epochs_ = *epochs;
  if (std::optional<int> batches = WholeNumber(f.batches, 1, 1e9)) batches_per_epoch_ = *batches;
  if (epoch != epoch_) steps_in_epoch_ = 0;
  epoch_ = epoch;
  const bool step_level = f.batch || f.step || f.batches;
  const bool epoch_level = !step_level && (f.train_accuracy || f.validation_accuracy ||
                                           f.validation_loss || f.best_validation_accuracy);
  const bool step_line = f.loss && !epoch_level;
  if (step_line) {
    Flush(&events);
    ++steps_read_;
  }
  if (step_line && steps == Steps::kMake) {
    trainer::v1::StepMetrics* step = events.emplace_back().mutable_step();
    step->set_epoch(epoch_);
    step->set_epochs(epochs_);
    const std::optional<double> batch = f.batch ? f.batch : f.step ? f.step : steps_in_epoch_;
    step->set_batch(WholeNumber(batch, 0, 1e9).value_or(0));
    step->set_batches_per_epoch(batches_per_epoch_);
    step->set_loss(*f.loss);
    if (f.learning_rate) step->set_learning_rate(*f.learning_rate);
    // Bytes, as whole numbers that fit: a printed 1e300 is not memory.
    if (f.current_bytes && *f.current_bytes >= 0 && *f.current_bytes < 1e18) {
      step->set_current_allocated_bytes(static_cast<int64_t>(*f.current_bytes));
    }
    if (f.driver_bytes && *f.driver_bytes >= 0 && *f.driver_bytes < 1e18) {
      step->set_driver_allocated_bytes(static_cast<int64_t>(*f.driver_bytes));
    }
    AddCustom(step->mutable_metrics());
  }
  if (step_line) ++steps_in_epoch_;
  if (step_line && f.offsets_valid) {
    step_form_.Remember(line, absl::MakeConstSpan(f.fixed.data(), f.fixed_count));
  } else if (step_line || !(state() == before)) {
    step_form_.Forget();  // a line of its form would now be read otherwise
  }
  if (epoch_level) {
    Flush(&events);
    trainer::v1::EpochSummary summary;
    summary.set_epoch(epoch_);
    summary.set_epochs(epochs_);
    summary.set_evaluated(f.validation_accuracy.has_value() || f.validation_loss.has_value());
    if (f.train_accuracy) summary.set_train_accuracy(*f.train_accuracy);
    if (f.validation_accuracy) summary.set_validation_accuracy(*f.validation_accuracy);
    if (f.validation_loss) summary.set_validation_loss(*f.validation_loss);
    if (f.loss) summary.set_train_loss(*f.loss);
    if (f.best_validation_accuracy) {
      best_validation_ = *f.best_validation_accuracy;
      best_epoch_ = WholeNumber(f.best_epoch, 1, 1e6).value_or(epoch_);
    } else if (f.validation_accuracy &&
               (!best_validation_ || *f.validation_accuracy > *best_validation_)) {
      best_validation_ = *f.validation_accuracy;
      best_epoch_ = epoch_;
    }
    if (best_validation_) {
      summary.set_best_validation_accuracy(*best_validation_);
      summary.set_best_epoch(best_epoch_);
    }
    if (f.learning_rate) summary.set_learning_rate(*f.learning_rate);
    AddCustom(summary.mutable_metrics());
    if (pending_epoch_seconds_) summary.set_epoch_seconds_no_eval(*pending_epoch_seconds_);
    pending_epoch_seconds_.reset();
    held_ = std::move(summary);
    ++summaries_read_;
  }
  if (!events.empty() || epoch_level || step_line) ++metric_lines_;
  return events;
}

std::vector<JobEvent> MetricLines::Finish() {
  std::vector<JobEvent> events;
  Flush(&events);
  return events;
}

}  // namespace traind
