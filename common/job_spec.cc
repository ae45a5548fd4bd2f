#include "common/job_spec.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

using trainer::v1::JobSpec;

const std::vector<std::string>& KnownModels() {
  static const auto* models =
      new std::vector<std::string>{"lenet5", "mlp", "resnet18", "vgg16"};
  return *models;
}

const std::vector<std::string>& KnownDatasets() {
  static const auto* datasets =
      new std::vector<std::string>{"cifar10", "fake", "fashion-mnist", "mnist"};
  return *datasets;
}

const std::vector<std::string>& KnownOptimizers() {
  static const auto* optimizers = new std::vector<std::string>{"adam", "adamw", "sgd"};
  return *optimizers;
}

void ApplyDefaults(JobSpec* spec) {
  // "fp32" names no autocast, so that a sweep axis can list it beside bf16 (--amp fp32,bf16).
  if (spec->amp() == "fp32") spec->clear_amp();
  if (!spec->has_epochs()) spec->set_epochs(kDefaultEpochs);
  if (!spec->has_batch_size()) spec->set_batch_size(kDefaultBatchSize);
  if (!spec->has_learning_rate()) spec->set_learning_rate(kDefaultLearningRate);
  if (spec->optimizer().empty()) spec->set_optimizer(kDefaultOptimizer);
  if (!spec->has_seed()) spec->set_seed(kDefaultSeed);
  if (!spec->has_limit_train()) spec->set_limit_train(0);
  if (!spec->has_limit_test()) spec->set_limit_test(0);
  if (!spec->has_log_every()) spec->set_log_every(kDefaultLogEvery);
  if (!spec->has_accumulate()) spec->set_accumulate(1);
  if (!spec->has_eval_every()) spec->set_eval_every(1);
  if (!spec->has_checkpoint_every()) spec->set_checkpoint_every(0);
  if (spec->dataset() == "fake") {
    if (!spec->has_image_size()) spec->set_image_size(32);
    if (!spec->has_num_samples()) spec->set_num_samples(1000);
    if (!spec->has_channels()) spec->set_channels(3);
    if (!spec->has_classes()) spec->set_classes(10);
  }
  if (spec->has_benchmark()) {
    trainer::v1::Benchmark* bench = spec->mutable_benchmark();
    if (bench->kind() == "matmul") {
      if (!bench->has_size()) bench->set_size(4096);
      if (bench->dtype().empty()) bench->set_dtype("fp32");
      if (!bench->has_repeat()) bench->set_repeat(10);
      if (!bench->has_warmup()) bench->set_warmup(2);
    } else if (bench->kind() == "train") {
      if (!bench->has_steps()) bench->set_steps(50);
    }
  }
}

const std::vector<std::string>& KnownAmpModes() {
  static const auto* modes = new std::vector<std::string>{"bf16", "fp16"};
  return *modes;
}

const std::vector<std::string>& KnownMatmulDtypes() {
  static const auto* dtypes = new std::vector<std::string>{"bf16", "fp16", "fp32", "tf32"};
  return *dtypes;
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

namespace {

absl::Status ValidateBenchmark(const JobSpec& spec) {
  const trainer::v1::Benchmark& bench = spec.benchmark();
  RETURN_IF_ERROR(OneOf("benchmark.kind", bench.kind(), {"matmul", "train"}));
  if (bench.kind() == "matmul") {
    RETURN_IF_ERROR(OneOf("benchmark.dtype", bench.dtype(), KnownMatmulDtypes()));
    RETURN_IF_ERROR(Positive("benchmark.size", bench.size()));
    RETURN_IF_ERROR(Positive("benchmark.repeat", bench.repeat()));
    RETURN_IF_ERROR(NotNegative("benchmark.warmup", bench.warmup()));
    if (bench.size() > 65536) {
      return absl::InvalidArgumentError("benchmark.size: at most 65536");
    }
    const bool cpu = spec.device() == "cpu";
    if (cpu && (bench.dtype() == "tf32" || bench.dtype() == "fp16")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "benchmark.dtype: ", bench.dtype(), " is not supported on cpu; supported: fp32, bf16"));
    }
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Positive("benchmark.steps", bench.steps()));
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateJobSpec(const JobSpec& spec) {
  absl::Status status;
  if (spec.has_benchmark() && spec.benchmark().kind() == "matmul") {
    if (!spec.device().empty()) RETURN_IF_ERROR(ValidateDeviceName(spec.device()));
    return ValidateBenchmark(spec);
  }
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
  status.Update(Positive("accumulate", spec.accumulate()));
  status.Update(Positive("eval_every", spec.eval_every()));
  status.Update(NotNegative("checkpoint_every", spec.checkpoint_every()));
  status.Update(NotNegative("random_crop_padding", spec.random_crop_padding()));
  if (spec.has_image_size()) status.Update(Positive("image_size", spec.image_size()));
  if (spec.has_num_samples()) status.Update(Positive("num_samples", spec.num_samples()));
  if (spec.has_channels()) status.Update(Positive("channels", spec.channels()));
  if (spec.has_classes()) status.Update(Positive("classes", spec.classes()));
  if (!status.ok()) return status;
  if (!spec.amp().empty()) RETURN_IF_ERROR(OneOf("amp", spec.amp(), KnownAmpModes()));
  if (!spec.tf32().empty()) {
    RETURN_IF_ERROR(OneOf("tf32", spec.tf32(), {"off", "on"}));
    // "off" is how the CPU computes anyway; "on" asks for hardware only CUDA has.
    if (spec.tf32() == "on" && (spec.device() == "cpu" || spec.device() == "mps")) {
      return absl::InvalidArgumentError(
          absl::StrCat("tf32: on needs a cuda device, not ", spec.device()));
    }
  }
  if (spec.has_profile_steps()) RETURN_IF_ERROR(Positive("profile_steps", spec.profile_steps()));
  if (spec.has_benchmark()) RETURN_IF_ERROR(ValidateBenchmark(spec));
  if (spec.image_size() > 1024) return absl::InvalidArgumentError("image_size: at most 1024");
  if (spec.channels() > 64) return absl::InvalidArgumentError("channels: at most 64");
  if (spec.classes() > 100000) return absl::InvalidArgumentError("classes: at most 100000");
  if (spec.num_samples() > 10000000) {
    return absl::InvalidArgumentError("num_samples: at most 10000000");
  }
  if (spec.dataset() != "fake" &&
      (spec.has_num_samples() || spec.has_channels() || spec.has_classes())) {
    return absl::InvalidArgumentError(
        "num_samples, channels, classes: only for dataset 'fake'");
  }
  if (spec.cuda_graph()) {
    if (!spec.device().empty() && spec.device().rfind("cuda", 0) != 0) {
      return absl::InvalidArgumentError("cuda_graph: only on cuda devices");
    }
    if (spec.optimizer() != "adam" && spec.optimizer() != "adamw") {
      return absl::InvalidArgumentError("cuda_graph: needs optimizer adam or adamw (fused)");
    }
    if (spec.accumulate() != 1 || spec.amp() == "fp16" || spec.random_crop_padding() > 0 ||
        spec.horizontal_flip()) {
      return absl::InvalidArgumentError(
          "cuda_graph: not with accumulate > 1, amp fp16, random_crop or hflip");
    }
  }
  if (spec.has_debug()) {
    RETURN_IF_ERROR(OneOf("debug.crash_kind", spec.debug().crash_kind(),
                          {"abort", "exit", "hang", "oom", "segfault"}));
    RETURN_IF_ERROR(NotNegative("debug.crash_at_step", spec.debug().crash_at_step()));
  }
  if (spec.cifar_stem() && spec.model() != "resnet18") {
    return absl::InvalidArgumentError("cifar_stem: only for model 'resnet18'");
  }
  if (spec.epochs() > kMaxEpochs) {
    return absl::InvalidArgumentError(absl::StrCat("epochs: at most ", kMaxEpochs));
  }
  if (spec.batch_size() > (1 << 20)) {
    return absl::InvalidArgumentError("batch_size: at most 1048576");
  }
  if (spec.dataset() == "mnist" && spec.data_dir().empty()) {
    return absl::InvalidArgumentError(
        "data_dir: required for dataset 'mnist' (a directory with the four IDX files)");
  }
  if (spec.dataset() == "cifar10" && spec.data_dir().empty()) {
    return absl::InvalidArgumentError(
        "data_dir: required for dataset 'cifar10' (a directory with data_batch_1.bin ... "
        "test_batch.bin)");
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
