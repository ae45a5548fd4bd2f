// trainctl submit [JOB_FILE] [flags]: queue a job; prints its id (or the Job as JSON).
// --model-file and --data-file --upload send those files first (only what the daemon lacks).
// Flags override fields of the job file. Checked locally first, so a typo is exit code 2 even
// when the daemon is down; the daemon checks again (it decides about devices and paths).
#include <unistd.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "client/command_words.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/job_file.h"
#include "client/rpc.h"
#include "client/spec_files.h"
#include "client/spec_flags.h"
#include "common/grpc_status.h"

namespace traind {

namespace {

struct SubmitFlags {
  std::string job_file;
  SpecFlags spec;
  bool watch = false;
  bool upload = false;
  int priority = 0;
  std::vector<int64_t> after;
  std::string idempotency_key;
  std::optional<bool> exclusive;
};

int RunSubmit(Context& ctx, const SubmitFlags& flags) {
  trainer::v1::SubmitJobRequest request;
  if (!flags.job_file.empty() && access(flags.job_file.c_str(), F_OK) != 0) {
    return ctx.UsageError(absl::StrCat("submit: ", flags.job_file,
                                       ": no such job file (the one word submit takes is a job "
                                       "file; options are --flags)",
                                       FlagForName(flags.job_file)));
  }
  if (!flags.job_file.empty()) {
    if (absl::Status s = LoadJobFile(flags.job_file, request.mutable_spec()); !s.ok()) {
      return ctx.UsageError(std::string(s.message()));
    }
  }
  if (absl::Status s = ApplySpecFlags(flags.spec, request.mutable_spec()); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  if (absl::Status s =
          ResolveSpecFiles(ctx.stub(), flags.upload, request.mutable_spec(), ctx.err());
      !s.ok()) {
    return ctx.Fail(ToGrpcStatus(s));
  }
  request.set_priority(flags.priority);
  for (int64_t id : flags.after) request.add_after(id);
  request.set_idempotency_key(flags.idempotency_key);
  if (flags.exclusive.has_value()) request.set_exclusive(*flags.exclusive);
  return SubmitAndFollow(ctx, request, flags.watch);
}

}  // namespace

int SubmitAndFollow(Context& ctx, const trainer::v1::SubmitJobRequest& request, bool watch) {
  trainer::v1::Job job;
  auto call = UnaryCall();
  const grpc::Status status = ctx.stub().SubmitJob(call.get(), request, &job);
  if (!status.ok()) return ctx.Fail(status);
  if (ctx.json()) {
    if (!watch) ctx.PrintJson(job);
  } else {
    ctx.out() << job.id() << "\n";
  }
  ctx.out().flush();
  if (watch) return WatchJob(ctx, job.id(), 0);
  return kExitOk;
}

void AddSubmitCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<SubmitFlags>();
  CLI::App* cmd = app.add_subcommand(
      "submit", "Queue a training job; prints its id. Flags override the job file's fields");
  cmd->add_option("job_file", flags->job_file, "A JobSpec as YAML or JSON (docs/jobs.md)");
  AddSpecFlags(cmd, &flags->spec);
  cmd->add_flag("--watch,-w", flags->watch, "Follow the job to its end, like `trainctl watch`");
  cmd->add_flag("--upload", flags->upload,
                "Send --data-file to the daemon (once, by content) instead of naming a path there");
  cmd->add_option("--priority", flags->priority, "Higher runs first (default 0)");
  cmd->add_option("--after", flags->after, "Start only after these jobs succeeded (repeatable)")
      ->delimiter(',');
  cmd->add_option("--idempotency-key", flags->idempotency_key,
                  "Submitting the same key again returns the first job instead of a new one");
  cmd->add_flag_callback(
      "--exclusive", [flags] { flags->exclusive = true; },
      "Run with nothing else on any device (default for benchmarks)");
  cmd->add_flag_callback(
      "--shared", [flags] { flags->exclusive = false; },
      "May share the machine, even for a benchmark");
  cmd->footer(
      "Examples:\n"
      "  trainctl submit --model lenet5 --dataset fashion-mnist --epochs 5 --watch\n"
      "  trainctl submit job.yaml --lr 3e-4\n"
      "  trainctl submit --model lenet5 --dataset fashion-mnist --device cpu --processes 2\n"
      "  trainctl submit --model resnet18 --dataset fake --image-size 224 --gpus 2\n"
      "  trainctl submit --model lenet5 --dataset fashion-mnist --device cpu --hosts a,b\n"
      "  trainctl submit --backend slurm --processes 2 --model lenet5 --dataset fashion-mnist "
      "--device cpu\n"
      "See docs/jobs.md and docs/scale-out.md.");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunSubmit(ctx, *flags); });
}

}  // namespace traind
