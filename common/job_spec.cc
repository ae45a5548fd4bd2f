#include "common/job_spec.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/catalog.h"
#include "common/script_spec.h"
#include "common/spec_ranges.h"
#include "common/status_macros.h"
#include "common/time_limit.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

using trainer::v1::JobSpec;

const std::vector<std::string>& KnownOptimizers() {
  static const auto* optimizers = new std::vector<std::string>{"adam", "adamw", "sgd"};
  return *optimizers;
}

void ApplyDefaults(JobSpec* spec) {
  // "fp32" names no autocast, so that a sweep axis can list it beside bf16 (--amp fp32,bf16).
  if (spec->amp() == "fp32") spec->clear_amp();
  if (spec->gradient_allreduce() == "fp32") spec->clear_gradient_allreduce();
  if (spec->backend() == "local") spec->clear_backend();
  // Several GPUs are CUDA devices; which ones is the daemon's choice (gpus) or the user's
  // (devices).
  if ((spec->gpus() > 0 || !spec->devices().empty()) && spec->device().empty()) {
    spec->set_device("cuda");
  }
  if (IsScriptJob(*spec)) return;  // the program has its own epochs, batch size...
  if (!spec->has_epochs()) spec->set_epochs(kDefaultEpochs);
  if (!spec->has_batch_size()) spec->set_batch_size(kDefaultBatchSize);
  if (!spec->has_learning_rate()) spec->set_learning_rate(kDefaultLearningRate);
  if (spec->optimizer().empty()) spec->set_optimizer(kDefaultOptimizer);
  if (spec->loss().empty()) spec->set_loss("cross_entropy");
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
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", value.empty() ? "missing" : absl::StrCat("unknown value '", value, "'"),
      "; allowed: ", absl::StrJoin(allowed, ", ")));
}

// Options the chosen optimizer would ignore are refused, not dropped: momentum and nesterov are
// SGD's (Adam and AdamW keep moment estimates of their own), and LibTorch's SGD refuses Nesterov
// without a momentum only when the worker builds it.
absl::Status ValidateOptimizerOptions(const JobSpec& spec) {
  if (spec.optimizer() != "sgd") {
    const char* sgd_only = spec.momentum() != 0 ? "momentum"
                           : spec.nesterov()    ? "nesterov"
                                                : nullptr;
    if (sgd_only != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(sgd_only, ": only with optimizer sgd, not '", spec.optimizer(), "'"));
    }
    return absl::OkStatus();
  }
  if (spec.nesterov() && spec.momentum() == 0) {
    return absl::InvalidArgumentError(
        "nesterov: needs momentum greater than 0 (Nesterov momentum), e.g. --momentum 0.9");
  }
  return absl::OkStatus();
}

// lr_schedule and its parameters, label smoothing, clipping, stopping: the rules between fields
// (each field's own range is in common/spec_ranges.cc).
absl::Status ValidateScheduleAndStopping(const JobSpec& spec) {
  if (!spec.lr_schedule().empty()) {
    RETURN_IF_ERROR(
        OneOf("lr_schedule", spec.lr_schedule(), {"constant", "step", "cosine", "onecycle"}));
  }
  if (spec.epochs() > 0 && spec.warmup_epochs() > spec.epochs()) {
    return absl::InvalidArgumentError(absl::StrCat("warmup_epochs: at most epochs (", spec.epochs(),
                                                   "), got ", spec.warmup_epochs()));
  }
  if ((spec.lr_step_epochs() > 0 || spec.has_lr_step_gamma()) && spec.lr_schedule() != "step") {
    return absl::InvalidArgumentError("lr_step_epochs, lr_step_gamma: only with lr_schedule step");
  }
  if (spec.label_smoothing() > 0 && spec.loss() == "mse") {
    return absl::InvalidArgumentError("label_smoothing: only with loss cross_entropy");
  }
  if (spec.stop_at_accuracy() > 0 && spec.loss() == "mse") {
    return absl::InvalidArgumentError("stop_at_accuracy: only with loss cross_entropy");
  }
  return absl::OkStatus();
}

// Only these characters, at most `max_length` of them: what reaches sbatch's command line.
absl::Status SlurmWord(const char* field, const std::string& value, const char* allowed_chars,
                       size_t max_length, const char* example) {
  if (value.size() > max_length || value.find_first_not_of(allowed_chars) != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": at most ", max_length, " of ", example, ", got '", value, "'"));
  }
  return absl::OkStatus();
}

// JobSpec.hosts: names of traind hosts (whether this traind knows them is its own check).
absl::Status ValidateHosts(const JobSpec& spec) {
  if (spec.hosts().empty()) return absl::OkStatus();
  if (IsSlurmJob(spec)) {
    return absl::InvalidArgumentError(
        "hosts: not with backend slurm (Slurm places the tasks; --nodes N asks for nodes)");
  }
  const std::vector<std::string> hosts = HostNames(spec);
  // The count first: the checks below are quadratic in it.
  if (hosts.size() < 2 || hosts.size() > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "hosts: 2 to 16 names separated by commas (one host is a job of its own), got ",
        hosts.size()));
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    RETURN_IF_ERROR(ValidateHostName("hosts", hosts[i]));
    if (std::find(hosts.begin(), hosts.begin() + i, hosts[i]) != hosts.begin() + i) {
      return absl::InvalidArgumentError(absl::StrCat("hosts: '", hosts[i], "' is listed twice"));
    }
  }
  if (spec.gpus() > 0 || !spec.devices().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.gpus() > 0 ? "gpus" : "devices",
        ": with hosts each rank takes one GPU on its host: --device cuda --processes N"));
  }
  if (spec.device() != "cpu" && spec.device() != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("device: cpu (Gloo) or cuda (NCCL) with hosts, got '",
                     spec.device().empty() ? "best available" : spec.device(), "'"));
  }
  if (spec.processes() > 1 && spec.processes() % static_cast<int>(hosts.size()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("processes: ", spec.processes(),
                                                   " ranks do not spread evenly over ",
                                                   hosts.size(), " hosts"));
  }
  const char* one_host_only = !spec.model_file().empty()  ? "model_file"
                              : !spec.data_file().empty() ? "data_file"
                              : !spec.init_from().empty() ? "init_from"
                                                          : nullptr;
  if (one_host_only != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        one_host_only, ": not with hosts yet (an upload or a job's weights live on one traind)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateBackend(const JobSpec& spec) {
  if (!spec.backend().empty() && spec.backend() != "slurm") {
    return absl::InvalidArgumentError(
        absl::StrCat("backend: local (default) or slurm, got '", spec.backend(), "'"));
  }
  RETURN_IF_ERROR(ValidateHosts(spec));
  // Any job may have a time limit: sbatch's on Slurm, traind's own otherwise.
  if (!spec.time_limit().empty()) RETURN_IF_ERROR(ParseTimeLimit(spec.time_limit()).status());
  if (!IsSlurmJob(spec)) {
    // nodes: this traind and its first peers (the daemon turns it into hosts). Slurm's may be
    // more (the table's range).
    if (spec.nodes() > 16) {
      return absl::InvalidArgumentError(
          absl::StrCat("nodes: 0 to 16 traind hosts (this one and its peers), got ", spec.nodes()));
    }
    if (spec.nodes() != 0 && !spec.hosts().empty()) {
      return absl::InvalidArgumentError("nodes: give hosts or nodes, not both");
    }
    const char* slurm_only = spec.gpus_per_node() != 0   ? "gpus_per_node"
                             : !spec.partition().empty() ? "partition"
                                                         : nullptr;
    if (slurm_only != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(slurm_only, ": only for jobs on Slurm (--backend slurm)"));
    }
    return absl::OkStatus();
  }
  if (spec.gpus() > 0 || !spec.devices().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.gpus() > 0 ? "gpus" : "devices",
        ": this machine's GPUs; on Slurm ask for --gpus-per-node N and --processes (tasks)"));
  }
  if (spec.device() != "cpu" && spec.device() != "cuda") {
    return absl::InvalidArgumentError(
        absl::StrCat("device: cpu or cuda on Slurm (the node's GPU for each task), got '",
                     spec.device().empty() ? "best available" : spec.device(), "'"));
  }
  if (spec.nodes() > RankCount(spec)) {
    return absl::InvalidArgumentError(absl::StrCat("nodes: ", spec.nodes(), " for ",
                                                   RankCount(spec),
                                                   " task(s): at least one task per node "
                                                   "(--processes N)"));
  }
  if (spec.device() == "cuda" && spec.gpus_per_node() == 0) {
    return absl::InvalidArgumentError(
        "gpus_per_node: device cuda on Slurm needs GPUs allocated: --gpus-per-node N");
  }
  if (spec.device() == "cuda" && spec.nodes() > 0 &&
      RankCount(spec) > spec.nodes() * spec.gpus_per_node()) {
    return absl::InvalidArgumentError(
        absl::StrCat("processes: ", RankCount(spec), " tasks, one GPU each, do not fit on ",
                     spec.nodes(), " node(s) x ", spec.gpus_per_node(), " GPU(s)"));
  }
  if (spec.device() == "cpu" && spec.gpus_per_node() > 0) {
    return absl::InvalidArgumentError("gpus_per_node: for device cuda, not cpu");
  }
  RETURN_IF_ERROR(SlurmWord("partition", spec.partition(),
                            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-,",
                            64, "letters, digits, _ . - and commas"));
  RETURN_IF_ERROR(SlurmWord("time_limit", spec.time_limit(), "0123456789:-", 16,
                            "Slurm's time format (minutes, H:MM:SS or D-HH:MM:SS)"));
  return absl::OkStatus();
}

absl::Status ValidateDataParallel(const JobSpec& spec) {
  const bool on_gpus = spec.gpus() > 0 || !spec.devices().empty();
  if (on_gpus) {
    ASSIGN_OR_RETURN(std::vector<std::string> listed, ParseDeviceList(spec.devices()));
    if (spec.gpus() > 0 && !listed.empty() && static_cast<size_t>(spec.gpus()) != listed.size()) {
      return absl::InvalidArgumentError(absl::StrCat("gpus: ", spec.gpus(), ", but devices names ",
                                                     listed.size(), " (give one or the other)"));
    }
    if (spec.processes() > 1) {
      return absl::InvalidArgumentError(
          "processes: for CPU ranks; on GPUs the ranks are gpus (or devices), one per GPU");
    }
    if (!spec.device().empty() && spec.device() != "cuda") {
      return absl::InvalidArgumentError(absl::StrCat(
          spec.gpus() > 0 ? "gpus" : "devices",
          ": CUDA GPUs (NCCL), so device must be cuda or "
          "unset, got '",
          spec.device(), "'", spec.device() == "cpu" ? "; on the CPU use --processes N" : ""));
    }
  } else if (spec.processes() > 1) {
    if (spec.device() == "mps") {
      return absl::InvalidArgumentError(
          "processes: MPS has no collective library (no NCCL); a Mac runs data-parallel jobs on "
          "the CPU: --device cpu --processes N");
    }
    // On Slurm, `processes` counts tasks, each on a CPU or on one GPU of its node.
    // So do jobs on several hosts: one GPU each on its host.
    const bool gpu_tasks = (IsSlurmJob(spec) || !spec.hosts().empty()) && spec.device() == "cuda";
    if (spec.device() != "cpu" && !gpu_tasks) {
      return absl::InvalidArgumentError(
          absl::StrCat("processes: CPU ranks (Gloo), so device must be cpu, got '",
                       spec.device().empty() ? "best available" : spec.device(),
                       "'; on GPUs use --gpus N or --devices cuda:0,cuda:1"));
    }
  }
  if (!spec.gradient_allreduce().empty() && spec.gradient_allreduce() != "bf16") {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient_allreduce: fp32 (default) or bf16, got '", spec.gradient_allreduce(), "'"));
  }
  if (spec.gradient_allreduce() == "bf16" && !on_gpus &&
      !(spec.device() == "cuda" && !spec.hosts().empty())) {
    return absl::InvalidArgumentError(
        "gradient_allreduce: bf16 is for jobs on several GPUs (NCCL): with --gpus N or --devices");
  }
  if (RankCount(spec) <= 1) return absl::OkStatus();
  if (spec.has_benchmark() || spec.batch_size_auto() || spec.cuda_graph() || spec.evaluate_only()) {
    return absl::InvalidArgumentError(absl::StrCat(
        spec.processes() > 1    ? "processes"
        : spec.gpus() > 0       ? "gpus"
        : !spec.hosts().empty() ? "hosts"
                                : "devices",
        ": not with a benchmark, batch_size auto, cuda_graph or evaluate_only (those run in one "
        "process)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseDeviceList(const std::string& devices) {
  std::vector<std::string> listed;
  if (devices.empty()) return listed;
  for (absl::string_view part : absl::StrSplit(devices, ',')) {
    const std::string name(absl::StripAsciiWhitespace(part));
    int index = -1;
    if (!absl::StartsWith(name, "cuda:") || !absl::SimpleAtoi(name.substr(5), &index) ||
        index < 0 || name != absl::StrCat("cuda:", index)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "devices: CUDA devices separated by commas, e.g. cuda:0,cuda:1; got '", name, "'"));
    }
    if (std::find(listed.begin(), listed.end(), name) != listed.end()) {
      return absl::InvalidArgumentError(absl::StrCat("devices: ", name, " is listed twice"));
    }
    if (listed.size() == static_cast<size_t>(kMaxProcesses)) {
      return absl::InvalidArgumentError(
          absl::StrCat("devices: at most ", kMaxProcesses, " (one rank per GPU)"));
    }
    listed.push_back(name);
  }
  return listed;
}

bool IsSlurmJob(const JobSpec& spec) { return spec.backend() == "slurm"; }

std::vector<std::string> HostNames(const JobSpec& spec) {
  if (spec.hosts().empty()) return {};
  return absl::StrSplit(spec.hosts(), ',');
}

int RanksPerHost(const JobSpec& spec) {
  const int hosts = static_cast<int>(HostNames(spec).size());
  return hosts == 0 ? RankCount(spec) : std::max(1, RankCount(spec) / hosts);
}

absl::Status ValidateHostName(const char* field, const std::string& name) {
  constexpr char kAllowed[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
  if (name.empty() || name.size() > 64 || name.find_first_not_of(kAllowed) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": host names are 1 to 64 letters, digits, _ . or -, got '", name, "'"));
  }
  return absl::OkStatus();
}

int RankCount(const JobSpec& spec) {
  if (!spec.hosts().empty()) {
    const int hosts =
        static_cast<int>(std::count(spec.hosts().begin(), spec.hosts().end(), ',')) + 1;
    return spec.processes() > 1 ? spec.processes() : hosts;
  }
  if (spec.gpus() > 0) return spec.gpus();
  if (!spec.devices().empty()) {
    return static_cast<int>(std::count(spec.devices().begin(), spec.devices().end(), ',')) + 1;
  }
  return std::max(1, spec.processes());
}

bool IsCudaDevice(const std::string& device) {
  return device == "cuda" || absl::StartsWith(device, "cuda:");
}

absl::Status ValidateDeviceName(const std::string& device) {
  if (device == "cpu" || device == "mps" || device == "cuda") return absl::OkStatus();
  int index = 0;
  if (absl::StartsWith(device, "cuda:") && absl::SimpleAtoi(device.substr(5), &index) &&
      index >= 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("device: unknown device '", device,
                   "'; allowed: cpu, cuda, cuda:N, mps (or empty for the best available)"));
}

namespace {

absl::Status ValidateBenchmark(const JobSpec& spec) {
  const trainer::v1::Benchmark& bench = spec.benchmark();
  RETURN_IF_ERROR(OneOf("benchmark.kind", bench.kind(), {"matmul", "train"}));
  // Each kind's fields are refused with the other, where they would be ignored.
  if (bench.kind() == "matmul") {
    if (bench.has_steps()) {
      return absl::InvalidArgumentError(
          "benchmark.steps: only for benchmark kind train (matmul times `repeat` products)");
    }
    RETURN_IF_ERROR(OneOf("benchmark.dtype", bench.dtype(), KnownMatmulDtypes()));
    const bool cpu = spec.device() == "cpu";
    if (cpu && (bench.dtype() == "tf32" || bench.dtype() == "fp16")) {
      return absl::InvalidArgumentError(absl::StrCat(
          "benchmark.dtype: ", bench.dtype(), " is not supported on cpu; supported: fp32, bf16"));
    }
    return absl::OkStatus();
  }
  const char* matmul_only = bench.has_size()         ? "benchmark.size"
                            : bench.has_repeat()     ? "benchmark.repeat"
                            : bench.has_warmup()     ? "benchmark.warmup"
                            : !bench.dtype().empty() ? "benchmark.dtype"
                                                     : nullptr;
  if (matmul_only != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        matmul_only, ": only for benchmark kind matmul (train times `steps` training steps)"));
  }
  return absl::OkStatus();
}

// What the model and the dataset need from the spec's file fields, by their catalog entries.
absl::Status ValidateModelAndDataFiles(const JobSpec& spec) {
  const ModelInfo& model = *FindModel(spec.model());
  const DatasetInfo& dataset = *FindDataset(spec.dataset());
  if (model.needs_model_file) {
    if (spec.model_file().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model_file: required for model '", model.name,
          "' (the digest of an uploaded TorchScript file: trainctl submit --model-file net.pt)"));
    }
    RETURN_IF_ERROR(ValidateBlobDigest("model_file", spec.model_file()));
  } else if (!spec.model_file().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model_file: only for model 'torchscript', not '", spec.model(), "'"));
  }
  using Source = DatasetInfo::Source;
  if (dataset.source == Source::kDirectory && !dataset.has_default_dir && spec.data_dir().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("data_dir: required for dataset '", dataset.name,
                                                   "' (", dataset.expects, ")"));
  }
  if (dataset.source != Source::kDirectory && !spec.data_dir().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_dir: not for dataset '", dataset.name, "'",
                     dataset.source == Source::kFile ? "; it reads data_file" : ""));
  }
  if (dataset.source == Source::kFile && spec.data_file().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("data_file: required for dataset '",
                                                   dataset.name, "' (", dataset.expects, ")"));
  }
  if (dataset.source != Source::kFile && !spec.data_file().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_file: only for datasets tensors and csv, not '", dataset.name, "'"));
  }
  if (absl::StartsWith(spec.data_file(), "sha256:")) {
    RETURN_IF_ERROR(ValidateBlobDigest("data_file", spec.data_file()));
  }
  if (!spec.label_column().empty() && dataset.name != "csv") {
    return absl::InvalidArgumentError("label_column: only for dataset 'csv'");
  }
  if (spec.label_column().size() > 256) {
    return absl::InvalidArgumentError("label_column: at most 256 characters");
  }
  if (!spec.loss().empty()) RETURN_IF_ERROR(OneOf("loss", spec.loss(), {"cross_entropy", "mse"}));
  if (!spec.init_from().empty()) {
    absl::StatusOr<InitFrom> init = ParseInitFrom(spec.init_from());
    if (!init.ok()) return init.status();
  }
  if (spec.evaluate_only() && spec.init_from().empty()) {
    return absl::InvalidArgumentError(
        "init_from: required with evaluate_only (the weights to evaluate: JOB[:best|final])");
  }
  if (!dataset.images && (spec.random_crop_padding() > 0 || spec.horizontal_flip())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "random_crop_padding, horizontal_flip: only for image datasets, not '", dataset.name, "'"));
  }
  if (!dataset.images && spec.has_image_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("image_size: only for image datasets, not '", dataset.name, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string InitFrom::Describe() const {
  if (!digest.empty()) return absl::StrCat("the uploaded weights ", digest.substr(0, 19));
  return absl::StrCat("job ", job_id, "'s ", artifact, " weights");
}

absl::StatusOr<InitFrom> ParseInitFrom(const std::string& text) {
  InitFrom init;
  if (absl::StartsWith(text, "sha256:")) {
    RETURN_IF_ERROR(ValidateBlobDigest("init_from", text));
    init.digest = text;
    return init;
  }
  const size_t colon = text.find(':');
  init.artifact = colon == std::string::npos ? "best" : text.substr(colon + 1);
  if (!absl::SimpleAtoi(text.substr(0, colon), &init.job_id) || init.job_id <= 0 ||
      (init.artifact != "best" && init.artifact != "final")) {
    return absl::InvalidArgumentError(
        absl::StrCat("init_from: '", text.substr(0, 80),
                     "'; expected JOB, JOB:best, JOB:final (another job's "
                     "weights) or sha256:HEX (uploaded weights: trainctl --init-from-file FILE)"));
  }
  return init;
}

absl::Status ValidateBlobDigest(const char* field, const std::string& digest) {
  constexpr size_t kHexDigits = 64;
  const bool well_formed = absl::StartsWith(digest, "sha256:") && digest.size() == 7 + kHexDigits &&
                           std::all_of(digest.begin() + 7, digest.end(), [](char c) {
                             return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                           });
  if (well_formed) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", digest.substr(0, 80),
                   "' is not a digest; expected sha256: and 64 lowercase hex digits"));
}

absl::Status ValidateJobSpec(const JobSpec& spec) {
  // A stored job is sent whole (GetJob, a page of ListJobs): with its spec at most this size it
  // fits the 4 MiB any gRPC client accepts by default, its result and events beside it.
  if (const size_t bytes = spec.ByteSizeLong(); bytes > kMaxSpecBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec: at most ", kMaxSpecBytes,
                     " bytes (a job is sent whole to every client that reads "
                     "it), got ",
                     bytes,
                     IsScriptJob(spec) ? ": fewer files in the working directory, or "
                                         "shorter names"
                                       : ""));
  }
  // Every number first, each against its range (common/spec_ranges.cc): the rules below may
  // then rely on them.
  RETURN_IF_ERROR(CheckSpecRanges(spec));
  if (IsScriptJob(spec)) {
    RETURN_IF_ERROR(ValidateScriptJob(spec));
    if (!spec.device().empty()) RETURN_IF_ERROR(ValidateDeviceName(spec.device()));
    return ValidateDataParallel(spec);
  }
  absl::Status status;
  if (spec.has_benchmark() && spec.benchmark().kind() == "matmul") {
    if (!spec.device().empty()) RETURN_IF_ERROR(ValidateDeviceName(spec.device()));
    // It reads nothing: a file named here would be recorded as used (and removed with the job)
    // without ever being checked as the caller's.
    if (!spec.model_file().empty() || !spec.data_file().empty() || !spec.init_from().empty() ||
        !spec.data_dir().empty()) {
      return absl::InvalidArgumentError(
          "model_file, data_file, init_from, data_dir: not for a matmul benchmark");
    }
    return ValidateBenchmark(spec);
  }
  status.Update(OneOf("model", spec.model(), ModelNames()));
  if (!status.ok()) return status;
  status.Update(OneOf("dataset", spec.dataset(), DatasetNames()));
  if (!status.ok()) return status;
  RETURN_IF_ERROR(ValidateModelAndDataFiles(spec));
  if (!spec.device().empty()) {
    status.Update(ValidateDeviceName(spec.device()));
    if (!status.ok()) return status;
  }
  RETURN_IF_ERROR(OneOf("optimizer", spec.optimizer(), KnownOptimizers()));
  RETURN_IF_ERROR(ValidateOptimizerOptions(spec));
  if (!spec.amp().empty()) RETURN_IF_ERROR(OneOf("amp", spec.amp(), KnownAmpModes()));
  if (!spec.tf32().empty()) {
    RETURN_IF_ERROR(OneOf("tf32", spec.tf32(), {"off", "on"}));
    // "off" is how the CPU computes anyway; "on" asks for hardware only CUDA has.
    if (spec.tf32() == "on" && (spec.device() == "cpu" || spec.device() == "mps")) {
      return absl::InvalidArgumentError(
          absl::StrCat("tf32: on needs a cuda device, not ", spec.device()));
    }
  }
  if (spec.has_benchmark()) RETURN_IF_ERROR(ValidateBenchmark(spec));
  if (spec.dataset() != "fake" &&
      (spec.has_num_samples() || spec.has_channels() || spec.has_classes())) {
    return absl::InvalidArgumentError("num_samples, channels, classes: only for dataset 'fake'");
  }
  RETURN_IF_ERROR(ValidateScheduleAndStopping(spec));
  RETURN_IF_ERROR(ValidateBackend(spec));
  RETURN_IF_ERROR(ValidateDataParallel(spec));
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
    if (!spec.debug().crash_kind().empty() || spec.debug().crash_at_step() != 0) {
      RETURN_IF_ERROR(OneOf("debug.crash_kind", spec.debug().crash_kind(),
                            {"abort", "exit", "hang", "oom", "segfault"}));
    }
  }
  if (spec.cifar_stem() && spec.model() != "resnet18") {
    return absl::InvalidArgumentError("cifar_stem: only for model 'resnet18'");
  }
  return absl::OkStatus();
}

absl::Status ParseJobSpecJson(const std::string& text, JobSpec* spec) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(text, spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job file: ", std::string(status.message().data(), status.message().size())));
  }
  return absl::OkStatus();
}

}  // namespace traind
