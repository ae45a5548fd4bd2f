#include "client/spec_flags.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/catalog.h"
#include "common/job_spec.h"
#include "common/spec_fields.h"

namespace traind {

const std::vector<SpecFlagInfo>& SpecFlagTable() {
  static const auto* table = new std::vector<SpecFlagInfo>{
      {"--model", "model", nullptr, false, false},
      {"--model-file", "model_file",
       "Your TorchScript module (torch.jit.save): uploaded once, by content; implies --model "
       "torchscript",
       false, false},
      {"--dataset", "dataset", nullptr, false, false},
      {"--data-dir", "data_dir",
       "Directory with the dataset's files, on the daemon's machine under a --data-root "
       "(default for fashion-mnist: the Debian package's)",
       false, false},
      {"--data-file", "data_file",
       "tensors, csv: the file, under the daemon's --data-root, or sent with --upload", false,
       false},
      {"--label-column", "label_column", "csv: the label column's name or index (default: last)",
       false, false},
      {"--init-from", "init_from",
       "Start from trained weights: JOB, JOB:best or JOB:final (another job's artifact)", false,
       false},
      {"--init-from-file", "init_from",
       "Start from weights in a file (a state dict or TorchScript module), uploaded by content",
       false, false},
      {"--loss", "loss", "cross_entropy (default: [N, classes] logits) | mse (regression)", false,
       false},
      {"--device", "device", "cpu | cuda | cuda:N | mps (default: best available)", false, false},
      {"--batch-size", "batch_size",
       "Default 128; `auto`: the largest that fits in 80% of free device memory", false, false},
      {"--image-size", "image_size", "Resize images to N x N (fake: generate N x N)", false, false},
      {"--num-samples", "num_samples", "fake: training images (default 1000)", false, false},
      {"--channels", "channels", "fake: image channels (default 3)", false, false},
      {"--classes", "classes", "fake: classes (default 10)", false, false},
      {"--cifar-stem", "cifar_stem", "resnet18: 3x3 stem without max-pool", true, false},
      {"--amp", "amp", "Mixed precision: bf16 | fp16 (autocast), fp32 (none, the default)", false,
       false},
      {"--tf32", "tf32",
       "CUDA fp32 math: on (TF32 for convolutions and matrix products) | off (strict fp32); "
       "default: LibTorch's (TF32 convolutions only)",
       false, false},
      {"--threads", "threads", "Intra-op CPU threads of the worker", false, false},
      {"--device-resident", "device_resident",
       "Copy the whole dataset to the device once (default on CUDA when it takes at most a "
       "quarter of the free memory)",
       true, false},
      {"--no-device-resident", "device_resident", "Keep the dataset on the host", true, false,
       true},
      {"--cuda-graph", "cuda_graph",
       "CUDA: capture the training step in a CUDA graph and replay it (default where the job "
       "allows: adam/adamw, no accumulation, fp16 or augmentation, one process)",
       true, false},
      {"--no-cuda-graph", "cuda_graph", "CUDA: train without a CUDA graph", true, false, true},
      {"--optimizer", "optimizer", "adam (default) | adamw | sgd", false, false},
      {"--lr", "learning_rate", "Learning rate, default 1e-3", false, false},
      {"--momentum", "momentum", "SGD momentum, default 0", false, false},
      {"--nesterov", "nesterov", "SGD with Nesterov momentum", true, false},
      {"--weight-decay", "weight_decay", "Default 0 (adamw: 0.01)", false, false},
      {"--accumulate", "accumulate", "Gradient accumulation over N batches (loss / N), default 1",
       false, false},
      {"--seed", "seed", "Default 123", false, false},
      {"--lr-schedule", "lr_schedule",
       "constant (default) | step | cosine | onecycle; --lr is the peak", false, false},
      {"--warmup-epochs", "warmup_epochs",
       "Ramp the learning rate up linearly over N epochs (fractions allowed) first", false, false},
      {"--lr-step-epochs", "lr_step_epochs", "step: decay every N epochs (default epochs / 3)",
       false, false},
      {"--lr-step-gamma", "lr_step_gamma", "step: multiply by this at each decay (default 0.1)",
       false, false},
      {"--label-smoothing", "label_smoothing", "Cross-entropy label smoothing, 0 to < 1", false,
       false},
      {"--clip-grad-norm", "clip_grad_norm", "Clip the gradients' global L2 norm to this", false,
       false},
      {"--stop-at-accuracy", "stop_at_accuracy",
       "Stop once validation accuracy reaches this fraction (e.g. 0.89); the best weights are kept",
       false, false},
      {"--early-stop-patience", "early_stop_patience",
       "Stop after N evaluations without a better validation score", false, false},
      {"--processes", "processes",
       "Data parallel on the CPU: N ranks, one worker process each, gradients averaged over them "
       "(Gloo); --batch-size is per rank",
       false, true},
      {"--gpus", "gpus",
       "Data parallel on N GPUs (NCCL): any N free ones, one rank each, all at once; --batch-size "
       "is per GPU. 1: one process on whichever GPU is free",
       false, true},
      {"--devices", "devices",
       "Data parallel on these GPUs, one rank each: cuda:0,cuda:1 (as --gpus, but you choose)",
       false, true},
      {"--gradient-allreduce", "gradient_allreduce",
       "Several GPUs: average gradients in fp32 (default) or bf16 (half the traffic; rounded sums)",
       false, true},
      {"--backend", "backend",
       "local (default: this traind's devices) | slurm: submit to the Slurm cluster traind's "
       "machine submits to, with --processes tasks (docs/scale-out.md)",
       false, true},
      {"--nodes", "nodes",
       "Slurm: spread the tasks over N nodes (default: as Slurm places them). Otherwise: run on N "
       "traind hosts, this one and its first N-1 peers (as --hosts)",
       false, true},
      {"--hosts", "hosts",
       "Run on these traind hosts at once: this one and its peers (traind --name, --peer), e.g. "
       "a,b; --processes ranks in all (default one per host), rank 0 here; --device cpu or cuda",
       false, true},
      {"--gpus-per-node", "gpus_per_node", "Slurm: GPUs per node (--device cuda; one per task)",
       false, true},
      {"--partition", "partition", "Slurm: the partition (default: the cluster's)", false, true},
      {"--time", "time_limit",
       "Time limit: the job fails once it has run this long, e.g. 30 (minutes), 2:00:00, "
       "1-00:00:00 (sbatch's format; on Slurm, sbatch --time)",
       false, true},
      {"--deterministic", "deterministic",
       "Deterministic algorithms and seeded device generators: repeatable on CUDA too (slower)",
       true, false},
      {"--allow-nonfinite-loss", "allow_nonfinite_loss",
       "Keep training when the loss becomes NaN or infinite (default: the job fails, saying when)",
       true, false},
      {"--limit-train", "limit_train",
       "Use only the first N training images (10% of them validate)", false, false},
      {"--name", "name", "A label for `trainctl list`", false, false},
      {"--epochs", "epochs", "Default 1", false, true},
      {"--limit-test", "limit_test", "Use only the first N test images", false, true},
      {"--log-every", "log_every", "Report every N batches, default 100", false, true},
      {"--eval-every", "eval_every", "Evaluate every N epochs (and after the last)", false, true},
      {"--checkpoint-every", "checkpoint_every", "Checkpoint every N epochs", false, true},
      {"--random-crop", "random_crop_padding",
       "Training augmentation: random crop after padding by N pixels", false, true},
      {"--hflip", "horizontal_flip", "Training augmentation: random horizontal flip", true, true},
      {"--profile-steps", "profile_steps",
       "Profile N training steps: top operators in `show`, a Chrome trace in the job's directory",
       false, true},
  };
  return *table;
}

namespace {

// --help's headings: each takes the table's rows from the one named here to the next heading's.
struct FlagSection {
  const char* first_flag;
  const char* heading;
};
constexpr FlagSection kSections[] = {
    {"--model", "Model and data"},
    {"--amp", "Precision and speed"},
    {"--optimizer", "Optimiser and learning rate"},
    {"--stop-at-accuracy", "Stopping early"},
    {"--processes", "Where it runs (several processes, GPUs, hosts, Slurm)"},
    {"--deterministic", "Training loop"},
};

}  // namespace

std::string SpecFlagSection(const SpecFlagInfo& row) {
  std::string heading = kSections[0].heading;
  for (const SpecFlagInfo& each : SpecFlagTable()) {
    for (const FlagSection& section : kSections) {
      if (std::string(each.flag) == section.first_flag) heading = section.heading;
    }
    if (&each == &row) return heading;
  }
  return heading;
}

std::string SpecFlagTypeName(const SpecFlagInfo& row) {
  if (row.is_switch) return "";
  if (std::string(row.field) == "batch_size") return "INT|auto";
  const google::protobuf::FieldDescriptor* field =
      trainer::v1::JobSpec::descriptor()->FindFieldByName(row.field);
  if (field == nullptr) return "TEXT";
  switch (field->cpp_type()) {
    case google::protobuf::FieldDescriptor::CPPTYPE_INT32:
    case google::protobuf::FieldDescriptor::CPPTYPE_INT64:
    case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
    case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
      return "INT";
    case google::protobuf::FieldDescriptor::CPPTYPE_FLOAT:
    case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
      return "NUMBER";
    default:
      break;
  }
  const std::string name = row.field;
  if (name == "model" || name == "dataset") return "NAME";
  if (name == "data_dir") return "DIR";
  if (name == "time_limit") return "TIME";
  if (std::string(row.flag) == "--init-from") return "JOB[:NAME]";
  if (absl::EndsWith(name, "_file") || name == "init_from") return "FILE";
  return "TEXT";
}

std::string SpecFlagHelp(const SpecFlagInfo& row) {
  if (row.help != nullptr) return row.help;
  const std::vector<std::string> names =
      std::string(row.field) == "model" ? ModelNames() : DatasetNames();
  return absl::StrJoin(names, " | ");
}

namespace {

void AddRow(CLI::App* app, SpecFlags* flags, const SpecFlagInfo& row) {
  CLI::Option* option = row.is_switch
                            ? app->add_flag(row.flag, flags->switches[row.flag], SpecFlagHelp(row))
                            : app->add_option(row.flag, flags->values[row.flag], SpecFlagHelp(row))
                                  ->type_name(SpecFlagTypeName(row));
  option->group(SpecFlagSection(row));
}

bool Given(const SpecFlags& f, const char* flag) {
  if (f.app == nullptr) return false;
  CLI::Option* option = f.app->get_option_no_throw(flag);
  return option != nullptr && option->count() > 0;
}

}  // namespace

bool AnySpecFlagGiven(const SpecFlags& flags) {
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (Given(flags, row.flag)) return true;
  }
  return false;
}

bool IsLocalWeights(const std::string& init_from) {
  // Digits first ("7", "7:best", "7:typo") are a job reference, valid or not; never a file.
  const bool job_reference = !init_from.empty() && absl::ascii_isdigit(init_from[0]);
  return !init_from.empty() && !job_reference && init_from.rfind("sha256:", 0) != 0;
}

bool IsLocalFile(const std::string& spec_value) {
  return !spec_value.empty() && spec_value.rfind("sha256:", 0) != 0;
}

void AddSpecFlags(CLI::App* app, SpecFlags* flags, bool training) {
  flags->app = app;
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (training || !row.training_only) AddRow(app, flags, row);
  }
}

void AddSpecFlags(CLI::App* app, SpecFlags* flags, const std::vector<std::string>& only) {
  flags->app = app;
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (std::find(only.begin(), only.end(), row.flag) != only.end()) AddRow(app, flags, row);
  }
}

absl::Status ApplySpecFlags(const SpecFlags& f, trainer::v1::JobSpec* spec) {
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!Given(f, row.flag)) continue;
    const std::string flag = row.flag;
    if (row.is_switch) {
      // A field's two switches (--cuda-graph, --no-cuda-graph) together: not "last one wins".
      for (const SpecFlagInfo& other : SpecFlagTable()) {
        if (&other != &row && other.is_switch && std::string(other.field) == row.field &&
            other.sets_false && Given(f, other.flag)) {
          return absl::InvalidArgumentError(
              absl::StrCat(flag, " and ", other.flag, ": give one of them"));
        }
      }
      spec->GetReflection()->SetBool(spec, spec->GetDescriptor()->FindFieldByName(row.field),
                                     !row.sets_false);
      continue;
    }
    if (absl::Status s = SetSpecField(spec, row.field, f.values.at(flag)); !s.ok()) return s;
  }
  // The daemon needs an absolute path; relative ones mean "from here" for a local user.
  if (!spec->data_dir().empty() && spec->data_dir()[0] != '/') {
    spec->set_data_dir(std::filesystem::absolute(spec->data_dir()).lexically_normal().string());
  }
  if (!spec->model_file().empty() && spec->model().empty()) spec->set_model("torchscript");
  trainer::v1::JobSpec checked = *spec;
  // Local files are uploaded (or made absolute) after this check: validate what they will be.
  constexpr char kStandIn[] =
      "sha256:0000000000000000000000000000000000000000000000000000000000000000";
  if (IsLocalFile(checked.model_file())) checked.set_model_file(kStandIn);
  if (IsLocalFile(checked.data_file())) checked.set_data_file("/" + checked.data_file());
  if (IsLocalWeights(checked.init_from())) checked.set_init_from(kStandIn);
  ApplyDefaults(&checked);
  return ValidateJobSpec(checked);
}

}  // namespace traind
