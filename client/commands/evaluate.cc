// trainctl evaluate ID [NAME] [--dataset ... data flags]: run a finished job's trained weights
// (best by default) over a test set — the job's own, or another given with the data flags — and
// print accuracy, per-class accuracy and the confusion matrix. It is a queued job itself
// (evaluate_only), so it runs on the daemon's device; `show` and `-o json` keep its result.
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/render/job_text.h"
#include "client/rpc.h"
#include "client/spec_files.h"
#include "client/spec_flags.h"
#include "common/grpc_status.h"

namespace traind {

namespace {

struct EvaluateFlags {
  int64_t id = 0;
  std::string name = "best";
  SpecFlags spec;
  bool upload = false;
  CLI::App* cmd = nullptr;
};

int RunEvaluate(Context& ctx, const EvaluateFlags& flags) {
  trainer::v1::Job source;
  {
    trainer::v1::GetJobRequest get;
    get.set_id(flags.id);
    auto call = UnaryCall();
    grpc::Status status = ctx.stub().GetJob(call.get(), get, &source);
    if (!status.ok()) return ctx.Fail(status);
  }
  trainer::v1::SubmitJobRequest request;
  trainer::v1::JobSpec* spec = request.mutable_spec();
  *spec = source.spec();
  // What evaluation does not use; a new dataset brings its own files.
  for (const char* field : {"name", "checkpoint_every", "profile_steps", "batch_size_auto",
                            "cuda_graph", "debug", "benchmark", "epochs", "eval_every"}) {
    spec->GetReflection()->ClearField(spec, spec->GetDescriptor()->FindFieldByName(field));
  }
  if (flags.cmd->get_option("--dataset")->count() > 0) {
    for (const char* field : {"data_dir", "data_file", "label_column", "limit_train", "limit_test",
                              "num_samples", "channels", "classes"}) {
      spec->GetReflection()->ClearField(spec, spec->GetDescriptor()->FindFieldByName(field));
    }
  }
  spec->set_init_from(absl::StrCat(flags.id, ":", flags.name));
  spec->set_evaluate_only(true);
  spec->set_name(absl::StrCat("evaluate ", flags.id, ":", flags.name));
  if (absl::Status s = ApplySpecFlags(flags.spec, spec); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  if (absl::Status s = ResolveSpecFiles(ctx.stub(), flags.upload, spec, ctx.err()); !s.ok()) {
    return ctx.Fail(ToGrpcStatus(s));
  }
  trainer::v1::Job job;
  if (int code = RunJobToEnd(ctx, request, "evaluation", /*show_events=*/false, &job);
      code != kExitOk) {
    return code;
  }
  if (ctx.json()) {
    ctx.PrintJson(job.result().evaluation());
    return kExitOk;
  }
  ctx.out() << DescribeEvaluation(job.result().evaluation(), job.spec().dataset());
  return kExitOk;
}

}  // namespace

void AddEvaluateCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<EvaluateFlags>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "Run a job's trained weights over a test set: accuracy, per class, confusion");
  cmd->footer(
      "Examples:\n"
      "  trainctl evaluate 7                     # best weights, the job's own test set\n"
      "  trainctl evaluate 7 final --dataset mnist --data-dir /data/mnist\n"
      "  trainctl evaluate 7 --dataset tensors --data-file other.pt --upload");
  flags->cmd = cmd;
  cmd->add_option("id", flags->id, "The job whose weights to evaluate")->required();
  cmd->add_option("name", flags->name, "best (default) | final")->capture_default_str();
  AddSpecFlags(cmd, &flags->spec,
               {"--dataset", "--data-dir", "--data-file", "--label-column", "--limit-test",
                "--image-size", "--device", "--batch-size", "--amp"});
  cmd->add_flag("--upload", flags->upload, "Send --data-file to the daemon (once, by content)");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunEvaluate(ctx, *flags); });
}

}  // namespace traind
