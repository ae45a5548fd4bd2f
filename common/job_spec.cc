#include "common/job_spec.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

using trainer::v1::JobSpec;

const std::vector<std::string>& KnownModels() {
  static const auto* models = new std::vector<std::string>{"lenet5", "mlp"};
  return *models;
}

const std::vector<std::string>& KnownDatasets() {
  static const auto* datasets = new std::vector<std::string>{"fashion-mnist", "mnist"};
  return *datasets;
}

const std::vector<std::string>& KnownOptimizers() {
  static const auto* optimizers = new std::vector<std::string>{"adam", "adamw", "sgd"};
  return *optimizers;
}

void ApplyDefaults(JobSpec* spec) {
  if (!spec->has_epochs()) spec->set_epochs(kDefaultEpochs);
  if (!spec->has_batch_size()) spec->set_batch_size(kDefaultBatchSize);
  if (!spec->has_learning_rate()) spec->set_learning_rate(kDefaultLearningRate);
  if (spec->optimizer().empty()) spec->set_optimizer(kDefaultOptimizer);
  if (!spec->has_seed()) spec->set_seed(kDefaultSeed);
  if (!spec->has_limit_train()) spec->set_limit_train(0);
  if (!spec->has_limit_test()) spec->set_limit_test(0);
  if (!spec->has_log_every()) spec->set_log_every(kDefaultLogEvery);
}

namespace {

absl::Status OneOf(const char* field, const std::string& value,
                   const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": ", value.empty() ? "missing" : absl::StrCat("unknown value '", value, "'"),
                   "; allowed: ", absl::StrJoin(allowed, ", ")));
}

absl::Status Positive(const char* field, double value) {
  if (value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": must be greater than 0, got ", value));
}

absl::Status NotNegative(const char* field, double value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be 0 or more, got ", value));
}

}  // namespace

absl::Status ValidateDeviceName(const std::string& device) {
  if (device == "cpu" || device == "mps" || device == "cuda") return absl::OkStatus();
  int index = 0;
  if (absl::StartsWith(device, "cuda:") && absl::SimpleAtoi(device.substr(5), &index) &&
      index >= 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "device: unknown device '", device, "'; allowed: cpu, cuda, cuda:N, mps (or empty for the best available)"));
}

absl::Status ValidateJobSpec(const JobSpec& spec) {
  absl::Status status;
  status.Update(OneOf("model", spec.model(), KnownModels()));
  if (!status.ok()) return status;
  status.Update(OneOf("dataset", spec.dataset(), KnownDatasets()));
  if (!status.ok()) return status;
  if (!spec.device().empty()) {
    status.Update(ValidateDeviceName(spec.device()));
    if (!status.ok()) return status;
  }
  status.Update(OneOf("optimizer", spec.optimizer(), KnownOptimizers()));
  status.Update(Positive("epochs", spec.epochs()));
  status.Update(Positive("batch_size", spec.batch_size()));
  status.Update(Positive("learning_rate", spec.learning_rate()));
  status.Update(NotNegative("limit_train", spec.limit_train()));
  status.Update(NotNegative("limit_test", spec.limit_test()));
  status.Update(Positive("log_every", spec.log_every()));
  if (spec.has_threads()) status.Update(Positive("threads", spec.threads()));
  if (!status.ok()) return status;
  if (spec.epochs() > 100000) {
    return absl::InvalidArgumentError("epochs: at most 100000");
  }
  if (spec.batch_size() > (1 << 20)) {
    return absl::InvalidArgumentError("batch_size: at most 1048576");
  }
  if (spec.dataset() == "mnist" && spec.data_dir().empty()) {
    return absl::InvalidArgumentError(
        "data_dir: required for dataset 'mnist' (a directory with the four IDX files)");
  }
  return absl::OkStatus();
}

absl::Status ParseJobSpecJson(const std::string& text, JobSpec* spec) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(text, spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("job file: ", std::string(status.message().data(), status.message().size())));
  }
  return absl::OkStatus();
}

}  // namespace traind
