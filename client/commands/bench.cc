// trainctl bench matmul|train: queue a benchmark job, wait for it, print its result.
//   trainctl bench matmul --size 4096 --dtype fp32 --device cpu [--repeat 10] [--warmup 2]
//   trainctl bench train --model vgg16 --dataset fake --image-size 32 --steps 50
// They are ordinary jobs: `trainctl show ID` has the result too.
#include <sstream>

#include "absl/strings/str_format.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/rpc.h"
#include "client/spec_flags.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

struct BenchFlags {
  SpecFlags spec;
  int size = 0, repeat = 0, warmup = 0, steps = 0;
  std::string dtype;
  bool watch = false;
  CLI::App* cmd = nullptr;
};

void PrintResult(Context& ctx, const trainer::v1::Job& job) {
  if (ctx.json()) {
    ctx.PrintJson(job);
    return;
  }
  const auto& r = job.result().bench();
  if (r.kind() == "matmul") {
    const std::string threads =
        r.threads() > 0 ? absl::StrFormat(", %d thread%s", r.threads(), r.threads() == 1 ? "" : "s")
                        : "";
    ctx.out() << absl::StrFormat(
        "matmul %dx%d %s on %s: %.4f s per product, %.3f TFLOP/s (%d timed%s)\n", r.size(),
        r.size(), TerminalSafe(r.dtype()), TerminalSafe(r.device()), r.seconds(), r.tflops(),
        r.repeat(), threads);
  } else {
    ctx.out() << absl::StrFormat(
        "train %s on %s, batch %d: %.2f steps/s, %.1f samples/s, %.4f s per step (%d timed)\n",
        TerminalSafe(job.spec().model()), TerminalSafe(r.device()), job.spec().batch_size(),
        r.steps_per_second(), r.samples_per_second(), r.seconds(), r.repeat());
  }
}

int RunBench(Context& ctx, const std::string& kind, const BenchFlags& flags) {
  trainer::v1::SubmitJobRequest request;
  trainer::v1::JobSpec* spec = request.mutable_spec();
  trainer::v1::Benchmark* bench = spec->mutable_benchmark();
  bench->set_kind(kind);
  auto given = [&](const char* flag) { return flags.cmd->get_option(flag)->count() > 0; };
  if (kind == "matmul") {
    if (given("--size")) bench->set_size(flags.size);
    if (given("--dtype")) bench->set_dtype(flags.dtype);
    if (given("--repeat")) bench->set_repeat(flags.repeat);
    if (given("--warmup")) bench->set_warmup(flags.warmup);
  } else if (given("--steps")) {
    bench->set_steps(flags.steps);
  }
  if (absl::Status s = ApplySpecFlags(flags.spec, spec); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  // Follow quietly (or visibly with --watch), then print the result.
  trainer::v1::Job job;
  if (int code = RunJobToEnd(ctx, request, "benchmark", flags.watch, &job); code != kExitOk) {
    return code;
  }
  PrintResult(ctx, job);
  return kExitOk;
}

}  // namespace

void AddBenchCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* bench = app.add_subcommand("bench", "Run a benchmark job and print its result");
  bench->require_subcommand(1);

  auto matmul = std::make_shared<BenchFlags>();
  CLI::App* mm = bench->add_subcommand("matmul", "n x n matrix product: seconds and TFLOP/s");
  matmul->cmd = mm;
  mm->add_option("--size", matmul->size, "n (default 4096)");
  mm->add_option("--dtype", matmul->dtype, "fp32 (default) | tf32 | bf16 | fp16");
  mm->add_option("--repeat", matmul->repeat, "Timed products (default 10)");
  mm->add_option("--warmup", matmul->warmup, "Untimed products first (default 2)");
  AddSpecFlags(mm, &matmul->spec, {"--device", "--threads"});
  mm->add_flag("--watch,-w", matmul->watch, "Show the job's events while it runs");
  mm->callback([&ctx, exit_code, matmul] { *exit_code = RunBench(ctx, "matmul", *matmul); });

  auto train = std::make_shared<BenchFlags>();
  CLI::App* tr = bench->add_subcommand("train", "Training steps/s of a model, no evaluation");
  train->cmd = tr;
  AddSpecFlags(tr, &train->spec, /*training=*/false);
  tr->add_option("--steps", train->steps, "Timed steps (default 50, after 5 warm-up steps)");
  tr->add_flag("--watch,-w", train->watch, "Show the job's events while it runs");
  tr->callback([&ctx, exit_code, train] { *exit_code = RunBench(ctx, "train", *train); });
}

}  // namespace traind
