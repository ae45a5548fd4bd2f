// trainctl sweep [SWEEP_FILE] [--model a,b --device cpu,cuda --batch-size 64,128 ...] [--repeat N]
// Every flag takes a comma-separated list; a list of two or more values becomes an axis of the
// grid. A sweep file (YAML/JSON: base, grid, configs, repeat, name) maps onto SweepSpec. Prints
// the sweep id (or the Sweep as JSON); members are ordinary jobs, exclusive by default.
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/job_file.h"
#include "client/rpc.h"
#include "client/spec_files.h"
#include "client/spec_flags.h"
#include "common/grpc_status.h"
#include "common/spec_fields.h"

namespace traind {

namespace {

// The spec flags a sweep takes: every one with a value (each takes one value or a comma-separated
// list); --name is the sweep's own.
bool IsSweepFlag(const SpecFlagInfo& row) {
  return !row.is_switch && std::string(row.flag) != "--name";
}

struct SweepFlags {
  std::string file;
  std::map<std::string, std::string> values;  // flag -> raw text
  std::map<std::string, bool> switches;       // flag -> given (every member gets it)
  int repeat = 0;
  int priority = 0;
  std::string name;
  bool not_exclusive = false;
  bool watch = false;
  bool upload = false;
  CLI::App* cmd = nullptr;
};

int RunSweep(Context& ctx, const SweepFlags& flags) {
  trainer::v1::SubmitSweepRequest request;
  trainer::v1::SweepSpec* spec = request.mutable_spec();
  if (!flags.file.empty()) {
    if (absl::Status s = LoadSweepFile(flags.file, spec); !s.ok()) {
      return ctx.UsageError(std::string(s.message()));
    }
  }
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!IsSweepFlag(row)) continue;
    const std::string flag = row.flag, field = row.field;
    auto it = flags.values.find(flag);
    if (it == flags.values.end() || flags.cmd->get_option(flag)->count() == 0) continue;
    std::vector<std::string> values = absl::StrSplit(it->second, ',', absl::SkipEmpty());
    if (values.empty()) return ctx.UsageError(flag + ": no value");
    if (values.size() == 1) {
      if (absl::Status s = SetSpecField(spec->mutable_base(), field, values[0]); !s.ok()) {
        return ctx.UsageError(std::string(s.message()));
      }
      continue;
    }
    auto* axis = spec->add_axes();
    axis->set_field(field);
    for (const std::string& v : values) {
      trainer::v1::JobSpec probe;  // check the value's type now: a typo is exit code 2
      if (absl::Status s = SetSpecField(&probe, field, v); !s.ok()) {
        return ctx.UsageError(std::string(s.message()));
      }
      axis->add_values(v);
    }
  }
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!row.is_switch) continue;
    auto it = flags.switches.find(row.flag);
    if (it == flags.switches.end() || !it->second) continue;
    if (absl::Status s =
            SetSpecField(spec->mutable_base(), row.field, row.sets_false ? "false" : "true");
        !s.ok()) {
      return ctx.UsageError(std::string(s.message()));
    }
  }
  if (flags.cmd->get_option("--repeat")->count()) spec->set_repeat(flags.repeat);
  if (flags.cmd->get_option("--priority")->count()) spec->set_priority(flags.priority);
  if (flags.cmd->get_option("--name")->count()) spec->set_name(flags.name);
  if (flags.not_exclusive) spec->set_exclusive(false);
  if (!spec->base().data_dir().empty() && spec->base().data_dir()[0] != '/') {
    spec->mutable_base()->set_data_dir(std::filesystem::absolute(spec->base().data_dir()).string());
  }
  // Uploaded once for all members: they share the digest.
  trainer::v1::JobSpec* base = spec->mutable_base();
  if (!base->model_file().empty() && base->model().empty()) base->set_model("torchscript");
  if (absl::Status s = ResolveSpecFiles(ctx.stub(), flags.upload, base, ctx.err()); !s.ok()) {
    return ctx.Fail(ToGrpcStatus(s));
  }
  trainer::v1::Sweep sweep;
  auto call = UnaryCall();
  grpc::Status status = ctx.stub().SubmitSweep(call.get(), request, &sweep);
  if (!status.ok()) return ctx.Fail(status);
  if (ctx.json()) {
    ctx.PrintJson(sweep);
  } else {
    ctx.out() << sweep.id() << "\n";
    ctx.err() << "sweep " << sweep.id() << ": " << sweep.job_ids_size()
              << " jobs queued; follow with `trainctl watch --sweep " << sweep.id()
              << "`, read with `trainctl report " << sweep.id() << "`\n";
  }
  if (flags.watch) return WatchSweep(ctx, sweep.id());
  return kExitOk;
}

}  // namespace

void AddSweepCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Queue a grid of jobs: every flag takes a comma-separated list (--device cpu,cuda)");
  flags->cmd = cmd;
  cmd->add_option("sweep_file", flags->file,
                  "YAML/JSON with base, grid (field: [values]), configs, repeat, name")
      ->check(CLI::ExistingFile);
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!IsSweepFlag(row)) continue;
    cmd->add_option(row.flag, flags->values[row.flag],
                    absl::StrCat(SpecFlagHelp(row), " (a,b,...: an axis of the grid)"));
  }
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (row.is_switch) {
      cmd->add_flag(row.flag, flags->switches[row.flag],
                    absl::StrCat(SpecFlagHelp(row), " (every member)"));
    }
  }
  cmd->add_option("--repeat", flags->repeat, "Runs of each configuration (default 1)");
  cmd->add_option("--priority", flags->priority, "Priority of every member");
  cmd->add_option("--name", flags->name, "A label for the sweep and its report");
  cmd->add_flag("--not-exclusive", flags->not_exclusive,
                "Let members share the machine with other jobs (timings get noisier)");
  cmd->add_flag("--watch,-w", flags->watch, "Follow the sweep, like `trainctl watch --sweep`");
  cmd->add_flag("--upload", flags->upload,
                "Send --data-file to the daemon (once, by content) instead of naming a path there");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunSweep(ctx, *flags); });
}

}  // namespace traind
