// trainctl submit [JOB_FILE] [--model ... flags]: queue a job; prints its id (or the Job as JSON).
// Flags override fields of the job file. Checked locally first, so a typo is exit code 2 even
// when the daemon is down; the daemon checks again (it decides about devices and paths).
#include <filesystem>
#include <optional>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/job_file.h"
#include "client/rpc.h"
#include "common/job_spec.h"

namespace traind {

namespace {

struct SubmitFlags {
  std::string job_file;
  std::string model, dataset, data_dir, device, optimizer, name;
  int epochs = 0, batch_size = 0, limit_train = 0, limit_test = 0, log_every = 0, threads = 0;
  double lr = 0, momentum = 0, weight_decay = 0;
  uint64_t seed = 0;
  bool nesterov = false;
  bool watch = false;
  CLI::App* cmd = nullptr;
  bool given(const char* flag) const { return cmd->count(flag) > 0; }
};

absl::Status BuildSpec(const SubmitFlags& f, trainer::v1::JobSpec* spec) {
  if (!f.job_file.empty()) {
    if (absl::Status s = LoadJobFile(f.job_file, spec); !s.ok()) return s;
  }
  if (f.given("--model")) spec->set_model(f.model);
  if (f.given("--dataset")) spec->set_dataset(f.dataset);
  if (f.given("--data-dir")) spec->set_data_dir(f.data_dir);
  if (f.given("--device")) spec->set_device(f.device);
  if (f.given("--optimizer")) spec->set_optimizer(f.optimizer);
  if (f.given("--name")) spec->set_name(f.name);
  if (f.given("--epochs")) spec->set_epochs(f.epochs);
  if (f.given("--batch-size")) spec->set_batch_size(f.batch_size);
  if (f.given("--lr")) spec->set_learning_rate(f.lr);
  if (f.given("--momentum")) spec->set_momentum(f.momentum);
  if (f.given("--nesterov")) spec->set_nesterov(f.nesterov);
  if (f.given("--weight-decay")) spec->set_weight_decay(f.weight_decay);
  if (f.given("--seed")) spec->set_seed(f.seed);
  if (f.given("--limit-train")) spec->set_limit_train(f.limit_train);
  if (f.given("--limit-test")) spec->set_limit_test(f.limit_test);
  if (f.given("--log-every")) spec->set_log_every(f.log_every);
  if (f.given("--threads")) spec->set_threads(f.threads);
  // The daemon needs an absolute path; relative ones mean "from here" for a local user.
  if (!spec->data_dir().empty() && spec->data_dir()[0] != '/') {
    spec->set_data_dir(std::filesystem::absolute(spec->data_dir()).lexically_normal().string());
  }
  trainer::v1::JobSpec checked = *spec;
  ApplyDefaults(&checked);
  return ValidateJobSpec(checked);
}

int RunSubmit(Context& ctx, const SubmitFlags& flags) {
  trainer::v1::SubmitJobRequest request;
  if (absl::Status s = BuildSpec(flags, request.mutable_spec()); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  trainer::v1::Job job;
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().SubmitJob(call.get(), request, &job);
  if (!status.ok()) return ctx.Fail(status);
  if (ctx.json()) {
    if (!flags.watch) ctx.PrintJson(job);
  } else {
    ctx.out() << job.id() << "\n";
  }
  ctx.out().flush();
  if (flags.watch) return WatchJob(ctx, job.id(), 0);
  return kExitOk;
}

}  // namespace

void AddSubmitCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<SubmitFlags>();
  CLI::App* cmd = app.add_subcommand(
      "submit", "Queue a training job; prints its id. Flags override the job file's fields");
  flags->cmd = cmd;
  cmd->add_option("job_file", flags->job_file, "A JobSpec as YAML or JSON (docs/jobs.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--model", flags->model, "lenet5 | mlp");
  cmd->add_option("--dataset", flags->dataset, "fashion-mnist | mnist");
  cmd->add_option("--data-dir", flags->data_dir,
                  "Directory with the four IDX files (default for fashion-mnist: the Debian "
                  "package's)");
  cmd->add_option("--device", flags->device, "cpu | cuda | cuda:N | mps (default: best available)");
  cmd->add_option("--epochs", flags->epochs, "Default 1");
  cmd->add_option("--batch-size", flags->batch_size, "Default 128");
  cmd->add_option("--lr", flags->lr, "Learning rate, default 1e-3");
  cmd->add_option("--optimizer", flags->optimizer, "adam (default) | adamw | sgd");
  cmd->add_option("--momentum", flags->momentum, "SGD momentum, default 0");
  cmd->add_flag("--nesterov", flags->nesterov, "SGD with Nesterov momentum");
  cmd->add_option("--weight-decay", flags->weight_decay, "Default 0 (adamw: 0.01)");
  cmd->add_option("--seed", flags->seed, "Default 123");
  cmd->add_option("--limit-train", flags->limit_train,
                  "Use only the first N training images (10% of them validate)");
  cmd->add_option("--limit-test", flags->limit_test, "Use only the first N test images");
  cmd->add_option("--log-every", flags->log_every, "Report every N batches, default 100");
  cmd->add_option("--threads", flags->threads, "Intra-op CPU threads of the worker");
  cmd->add_option("--name", flags->name, "A label for `trainctl list`");
  cmd->add_flag("--watch,-w", flags->watch, "Follow the job to its end, like `trainctl watch`");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunSubmit(ctx, *flags); });
}

}  // namespace traind
