// trainctl run [flags] -- INTERPRETER PROGRAM [ARGS...]: a user's program as a job
// (docs/scripts.md). The working directory goes to traind file by file, by content (only what the
// daemon lacks is sent: a re-run after a one-line edit sends one file); traind queues the job, runs
// the program in a private copy of it on the device it chose, and reads its output as the job's log
// and metrics. Prints the job's id, or follows it with --watch.
#include "absl/strings/str_cat.h"
#include "client/commands/commands.h"
#include "client/script_command.h"
#include "common/grpc_status.h"
#include "common/job_spec.h"
#include "common/time_limit.h"

namespace traind {

namespace {

struct RunFlags {
  ScriptCommand script;
  std::string device;
  int processes = 0;
  int gpus = 0;
  std::string devices;
  int threads = 0;
  std::string name;
  double stop_at_accuracy = 0;
  std::string time_limit;
  bool watch = false;
  int priority = 0;
  std::vector<int64_t> after;
};

int RunProgram(Context& ctx, const RunFlags& flags) {
  trainer::v1::SubmitJobRequest request;
  trainer::v1::JobSpec* spec = request.mutable_spec();
  trainer::v1::ScriptSpec* script = spec->mutable_script();
  if (absl::Status s = SetScriptCommand(flags.script, script); !s.ok()) {
    return ctx.UsageError(absl::StrCat("run: ", s.message()));
  }
  spec->set_device(flags.device);
  spec->set_processes(flags.processes);
  spec->set_gpus(flags.gpus);
  spec->set_devices(flags.devices);
  if (flags.threads > 0) spec->set_threads(flags.threads);
  spec->set_name(flags.name.empty() ? script->args(0) : flags.name);
  spec->set_stop_at_accuracy(flags.stop_at_accuracy);
  spec->set_time_limit(flags.time_limit);
  // Checked before the working directory is sent: a typo costs no upload.
  if (!flags.time_limit.empty()) {
    if (absl::Status s = ParseTimeLimit(flags.time_limit).status(); !s.ok()) {
      return ctx.UsageError(std::string(s.message()));
    }
  }
  if (absl::Status s = UploadWorkingDir(ctx, flags.script, script); !s.ok()) {
    return s.code() == absl::StatusCode::kInvalidArgument || s.code() == absl::StatusCode::kNotFound
               ? ctx.UsageError(std::string(s.message()))
               : ctx.Fail(ToGrpcStatus(s));
  }
  trainer::v1::JobSpec checked = *spec;
  ApplyDefaults(&checked);
  if (absl::Status s = ValidateJobSpec(checked); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  request.set_priority(flags.priority);
  for (int64_t id : flags.after) request.add_after(id);
  return SubmitAndFollow(ctx, request, flags.watch);
}

}  // namespace

void AddRunCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Run your own program as a job: trainctl run [flags] -- python3 train.py ARGS");
  AddScriptCommandOptions(cmd, &flags->script);
  cmd->add_option("--device", flags->device,
                  "cpu | cuda | cuda:N | mps (default: the best free one); the program reads "
                  "it from TRAIND_DEVICE and sees only that GPU");
  cmd->add_option("--processes", flags->processes,
                  "Start N ranks on the CPU with torchrun's environment (RANK, WORLD_SIZE, "
                  "MASTER_ADDR...)");
  cmd->add_option("--gpus", flags->gpus, "Start one rank on each of N free GPUs");
  cmd->add_option("--devices", flags->devices, "One rank on each of these GPUs: cuda:0,cuda:1");
  cmd->add_option("--threads", flags->threads, "OMP_NUM_THREADS and MKL_NUM_THREADS for it");
  cmd->add_option("--name", flags->name, "A label for `trainctl list` (default: the program)");
  cmd->add_option("--stop-at-accuracy", flags->stop_at_accuracy,
                  "Stop it once a validation accuracy it prints reaches this (0..1]");
  cmd->add_option("--time", flags->time_limit,
                  "Stop it and fail the job once it has run this long: 30 (minutes), 2:00:00, "
                  "1-00:00:00; a hung program does not hold the queue")
      ->type_name("TIME");
  cmd->add_flag("--watch,-w", flags->watch, "Follow the job to its end, like `trainctl watch`");
  cmd->add_option("--priority", flags->priority, "Higher runs first (default 0)");
  cmd->add_option("--after", flags->after, "Start only after these jobs succeeded (repeatable)")
      ->delimiter(',');
  cmd->footer(
      "Examples:\n"
      "  trainctl run --device cuda -- python3 train.py --epochs 10\n"
      "  trainctl run --device cpu --watch -- python3 lenet.py\n"
      "  trainctl run --time 2:00:00 -- python3 train.py     (fails the job after two hours)\n"
      "  trainctl run --processes 2 -- python3 ddp_train.py     (torchrun's environment)\n"
      "  trainctl run -C ~/experiments/resnet -- python3 main.py --batch-size 256\n"
      "The program's output is the job's log (trainctl logs ID); lines such as `Epoch: 001/010 | "
      "Batch 0100/0421 | Loss: 0.2646`, `loss=0.3` or `Test accuracy 97.41%` become its curves.\n"
      ".gitignore and .traindignore decide what is sent. See docs/scripts.md.");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunProgram(ctx, *flags); });
}

}  // namespace traind
