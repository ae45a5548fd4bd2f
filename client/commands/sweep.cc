// trainctl sweep [SWEEP_FILE] [--model a,b --device cpu,cuda --batch-size 64,128 ...] [--repeat N]
// Every flag takes a comma-separated list; a list of two or more values becomes an axis of the
// grid. A sweep file (YAML/JSON: base, grid, configs, repeat, name) maps onto SweepSpec. Prints
// the sweep id (or the Sweep as JSON); members are ordinary jobs, exclusive by default.
// A program's sweep: trainctl sweep --device cpu,cuda --param lr=1e-3,3e-3 -- python3 train.py
// --device {device} --lr {lr} (docs/scripts.md).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/command_words.h"
#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "client/job_file.h"
#include "client/rpc.h"
#include "client/script_command.h"
#include "client/spec_files.h"
#include "client/spec_flags.h"
#include "common/grpc_status.h"
#include "common/script_spec.h"
#include "common/spec_fields.h"
#include "common/status_macros.h"
#include "search/search_space.h"

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
  std::vector<std::string> words;   // a sweep file, or (two or more) a program's command
  ScriptCommand script;             // after "--": a program's sweep
  std::vector<std::string> params;  // NAME=A,B: the program's {NAME}
  CLI::App* cmd = nullptr;
  trainer::v1::SearchSpec search;  // --search, --trials, ... (set: a search)
  std::string resume;              // --resume SWEEP: a search goes on instead
};

// A flag's value that is a distribution (--lr loguniform:1e-4:1e-1): one dimension of a search,
// checked now so that a typo is exit code 2.
absl::Status AddSearchParam(const std::string& flag, const std::string& field,
                            const std::string& text, trainer::v1::SweepSpec* spec) {
  if (absl::StatusOr<Distribution> parsed = ParseDistribution(flag, text); !parsed.ok()) {
    return parsed.status();
  }
  trainer::v1::SearchParam* param = spec->mutable_search()->add_params();
  param->set_field(field);
  param->set_distribution(text);
  return absl::OkStatus();
}

// The search's own flags onto spec.search, when it is one: --search given, or a distribution
// among the values.
absl::Status AddSearch(const SweepFlags& flags, trainer::v1::SweepSpec* spec) {
  const bool asked = flags.cmd->get_option("--search")->count() > 0;
  if (!asked && !spec->has_search()) {
    for (const char* flag :
         {"--trials", "--search-seed", "--early-stop", "--metric", "--min-epochs",
          "--reduction-factor", "--brackets", "--parallel", "--max-pack", "--device-hours"}) {
      if (flags.cmd->get_option(flag)->count() > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag,
            " is for a search: add --search random (or tpe) and a distribution, e.g. --lr "
            "loguniform:1e-4:1e-1"));
      }
    }
    return absl::OkStatus();
  }
  // The flags over a sweep file's values: each of flags.search's fields is set only when its
  // flag was given (every one but --search-seed is at least 1, which MergeFrom copies).
  trainer::v1::SearchSpec* search = spec->mutable_search();
  search->MergeFrom(flags.search);
  if (flags.cmd->get_option("--search-seed")->count() > 0) search->set_seed(flags.search.seed());
  if (flags.cmd->get_option("--device-hours")->count() > 0) {
    search->set_device_hours(flags.search.device_hours());  // over a sweep file's
  }
  if (search->method().empty()) search->set_method("random");
  if (search->trials() == 0) {
    return absl::InvalidArgumentError(
        "a search needs --trials N (how many configurations to try in all)");
  }
  return absl::OkStatus();
}

// One flag's values: one value sets the base's field, two or more make an axis of the grid. Each
// value's type is checked now, so a typo is exit code 2; a value given twice would only make a
// member twice, and is refused.
absl::Status AddFieldValues(const std::string& flag, const std::string& field,
                            const std::vector<std::string>& values, trainer::v1::SweepSpec* spec) {
  if (values.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": no value"));
  if (values.size() == 1) return SetSpecField(spec->mutable_base(), field, values[0]);
  trainer::v1::SweepAxis* axis = spec->add_axes();
  axis->set_field(field);
  for (const std::string& value : values) {
    trainer::v1::JobSpec probe;
    RETURN_IF_ERROR(SetSpecField(&probe, field, value));
    if (std::find(axis->values().begin(), axis->values().end(), value) != axis->values().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", value, " is given twice (each value makes one member)"));
    }
    axis->add_values(value);
  }
  return absl::OkStatus();
}

// A program's sweep: its command into the base, each --param a value or an axis ("param.NAME"),
// then its working directory uploaded once for every member. A NAME given in several --param
// flags takes all their values, in order: --param lr=1e-3 --param lr=1e-2 is lr=1e-3,1e-2.
absl::Status AddProgram(Context& ctx, const SweepFlags& flags, trainer::v1::SweepSpec* spec) {
  RETURN_IF_ERROR(SetScriptCommand(flags.script, spec->mutable_base()->mutable_script()));
  std::vector<std::string> names;  // in the order first given
  std::map<std::string, std::vector<std::string>> values;
  for (const std::string& param : flags.params) {
    const size_t equals = param.find('=');
    if (equals == std::string::npos || equals == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--param ", param, ": expected NAME=VALUE[,VALUE...], e.g. lr=1e-3,3e-3"));
    }
    const std::string name = param.substr(0, equals);
    if (LooksLikeDistribution(param.substr(equals + 1))) {
      RETURN_IF_ERROR(AddSearchParam(absl::StrCat("--param ", name), absl::StrCat("param.", name),
                                     param.substr(equals + 1), spec));
      continue;
    }
    if (values.find(name) == values.end()) names.push_back(name);
    for (absl::string_view value :
         absl::StrSplit(param.substr(equals + 1), ',', absl::SkipEmpty())) {
      values[name].emplace_back(value);
    }
  }
  for (const std::string& name : names) {
    RETURN_IF_ERROR(AddFieldValues(absl::StrCat("--param ", name), absl::StrCat("param.", name),
                                   values[name], spec));
  }
  return absl::OkStatus();
}

// The spec flags' values: each a value of the base, an axis of the grid, or (a distribution) a
// dimension of a search; then the switches, which every member gets.
absl::Status AddFlagValues(const SweepFlags& flags, bool program, trainer::v1::SweepSpec* spec) {
  // A program's sweep: a flag of the built-in trainer (--seed 1,2, --lr 1e-3,3e-3) is the
  // program's placeholder of the flag's name ({seed}, {lr}; --batch-size: {batch_size}).
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!IsSweepFlag(row)) continue;
    const std::string flag = row.flag;
    const std::string field =
        program && !IsScriptJobField(row.field)
            ? absl::StrCat("param.",
                           absl::StrReplaceAll(absl::string_view(row.flag).substr(2), {{"-", "_"}}))
            : std::string(row.field);
    auto it = flags.values.find(flag);
    if (it == flags.values.end() || flags.cmd->get_option(flag)->count() == 0) continue;
    if (LooksLikeDistribution(it->second)) {
      RETURN_IF_ERROR(AddSearchParam(flag, field, it->second, spec));
      continue;
    }
    const std::vector<std::string> values = absl::StrSplit(it->second, ',', absl::SkipEmpty());
    RETURN_IF_ERROR(AddFieldValues(flag, field, values, spec));
  }
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!row.is_switch) continue;
    auto it = flags.switches.find(row.flag);
    if (it == flags.switches.end() || !it->second) continue;
    RETURN_IF_ERROR(
        SetSpecField(spec->mutable_base(), row.field, row.sets_false ? "false" : "true"));
  }
  return absl::OkStatus();
}

int RunSweep(Context& ctx, SweepFlags flags) {
  if (!flags.resume.empty()) {
    if (!flags.words.empty()) {
      return ctx.UsageError("sweep --resume: nothing else (no sweep file or program)");
    }
    // --trials and --device-hours go with it (as `trainctl extend` takes them).
    const bool trials = flags.cmd->get_option("--trials")->count() > 0;
    const bool hours = flags.cmd->get_option("--device-hours")->count() > 0;
    return ExtendSearch(ctx, flags.resume, trials ? flags.search.trials() : 0,
                        hours ? std::optional<double>(flags.search.device_hours()) : std::nullopt);
  }
  if (flags.words.size() == 1) {
    flags.file = flags.words[0];
    if (access(flags.file.c_str(), R_OK) != 0) {
      return ctx.UsageError(absl::StrCat("sweep: ", flags.file,
                                         ": no such file (a program's sweep names the interpreter "
                                         "and the program after --: -- python3 train.py)",
                                         FlagForName(flags.file)));
    }
  } else if (flags.words.size() > 1) {
    flags.script.command = flags.words;
  }
  trainer::v1::SubmitSweepRequest request;
  trainer::v1::SweepSpec* spec = request.mutable_spec();
  if (!flags.file.empty()) {
    if (absl::Status s = LoadSweepFile(flags.file, spec); !s.ok()) {
      return ctx.UsageError(std::string(s.message()));
    }
  }
  const bool program = flags.words.size() > 1 || !flags.params.empty();
  if (absl::Status s = AddFlagValues(flags, program, spec); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  if (flags.cmd->get_option("--repeat")->count()) spec->set_repeat(flags.repeat);
  if (flags.cmd->get_option("--priority")->count()) spec->set_priority(flags.priority);
  if (flags.cmd->get_option("--name")->count()) spec->set_name(flags.name);
  if (flags.not_exclusive) spec->set_exclusive(false);
  if (program) {
    if (absl::Status s = AddProgram(ctx, flags, spec); !s.ok()) {
      return ctx.UsageError(std::string(s.message()));
    }
  }
  if (absl::Status s = AddSearch(flags, spec); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  if (program) {
    if (absl::Status s =
            UploadWorkingDir(ctx, flags.script, spec->mutable_base()->mutable_script());
        !s.ok()) {
      return s.code() == absl::StatusCode::kInvalidArgument ||
                     s.code() == absl::StatusCode::kNotFound
                 ? ctx.UsageError(std::string(s.message()))
                 : ctx.Fail(ToGrpcStatus(s));
    }
  }
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
    if (spec->has_search()) {
      ctx.err() << "search " << sweep.id() << ": " << spec->search().trials() << " trials ("
                << spec->search().method()
                << (spec->search().early_stop().empty() ? "" : ", " + spec->search().early_stop())
                << "), proposed as it goes; follow with `trainctl watch --sweep " << sweep.id()
                << "`, read with `trainctl report " << sweep.id() << "`\n";
    } else {
      ctx.err() << "sweep " << sweep.id() << ": " << sweep.job_ids_size()
                << " jobs queued; follow with `trainctl watch --sweep " << sweep.id()
                << "`, read with `trainctl report " << sweep.id() << "`\n";
    }
  }
  if (flags.watch) return WatchSweep(ctx, sweep.id());
  return kExitOk;
}

}  // namespace

// A search's flags (docs/jobs.md, "Searches").
static void AddSearchOptions(CLI::App* cmd, trainer::v1::SearchSpec* search) {
  const char* group = "Search (a value like loguniform:1e-4:1e-1 makes a sweep a search)";
  cmd->add_option_function<std::string>(
         "--search", [search](const std::string& method) { search->set_method(method); },
         "Propose members instead of a grid: random, or tpe (model-based, from the results so "
         "far)")
      ->check(CLI::IsMember({"random", "tpe"}))
      ->group(group);
  cmd->add_option_function<int>(
         "--trials", [search](int trials) { search->set_trials(trials); },
         "How many configurations to try in all")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  cmd->add_option_function<int64_t>(
         "--search-seed", [search](int64_t seed) { search->set_seed(seed); },
         "The same seed proposes the same trials (default 0)")
      ->group(group);
  cmd->add_option_function<std::string>(
         "--early-stop", [search](const std::string& how) { search->set_early_stop(how); },
         "asha: trials pause at rungs (--min-epochs, x --reduction-factor, ... --epochs) and only "
         "the best of each rung resume, from their checkpoints")
      ->check(CLI::IsMember({"asha"}))
      ->group(group);
  cmd->add_option_function<std::string>(
         "--metric", [search](const std::string& metric) { search->set_metric(metric); },
         "What trials are compared by: validation_accuracy (default) or validation_loss")
      ->check(CLI::IsMember({"validation_accuracy", "validation_loss"}))
      ->group(group);
  cmd->add_option_function<int>(
         "--min-epochs", [search](int epochs) { search->set_min_epochs(epochs); },
         "ASHA's first rung, in epochs (default 1)")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  cmd->add_option_function<int>(
         "--reduction-factor", [search](int eta) { search->set_reduction_factor(eta); },
         "ASHA: each rung promotes its best 1/N (default 3)")
      ->check(CLI::Range(2, 1000))
      ->group(group);
  cmd->add_option_function<int>(
         "--brackets", [search](int brackets) { search->set_brackets(brackets); },
         "Hyperband brackets (default 1)")
      ->check(CLI::Range(1, 100))
      ->group(group);
  cmd->add_option_function<int>(
         "--parallel", [search](int parallel) { search->set_parallel(parallel); },
         "Trials queued or running at once (default: what the device runs at once, its --slots, "
         "times the trials that share a GPU or the CPU)")
      ->check(CLI::Range(1, 100000))
      ->group(group);
  cmd->add_option_function<double>(
         "--device-hours", [search](double hours) { search->set_device_hours(hours); },
         "A budget: no trial starts or resumes that would take the search's device-time (its "
         "trials' training time) past it")
      ->check(DeviceHoursCheck(/*zero_is_none=*/false))
      ->group(group);
  cmd->add_option_function<int>(
         "--max-pack", [search](int most) { search->set_max_pack(most); },
         "At most N trials at once on one GPU or on the CPU (default: as many as a trial "
         "measured alone leaves room for; 1: never shared)")
      ->check(CLI::Range(1, 32))
      ->group(group);
}

void AddSweepCommand(CLI::App& app, Context& ctx, int* exit_code) {
  auto flags = std::make_shared<SweepFlags>();
  CLI::App* cmd = app.add_subcommand(
      "sweep",
      "Queue a grid of jobs (a comma-separated list is an axis: --device cpu,cuda), or a search "
      "(--search tpe --lr loguniform:1e-4:1e-1)");
  flags->cmd = cmd;
  // One word: a sweep file; after --, two or more: a program's command (interpreter, program,
  // arguments). One positional takes both: CLI11 fills positionals in order.
  cmd->add_option("words", flags->words,
                  "A sweep file (YAML/JSON with base, grid, configs, repeat, name), or after --: "
                  "a program to sweep, e.g. -- python3 train.py --lr {lr}");
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (!IsSweepFlag(row)) continue;
    const std::string type = SpecFlagTypeName(row);
    cmd->add_option(row.flag, flags->values[row.flag],
                    absl::StrCat(SpecFlagHelp(row), " (a,b,...: an axis of the grid)"))
        ->type_name(absl::StrCat(type, "[,", type, "...]"))
        ->multi_option_policy(CLI::MultiOptionPolicy::Join)  // --lr 1e-3 --lr 1e-2: both
        ->delimiter(',')
        ->group(SpecFlagSection(row));
  }
  for (const SpecFlagInfo& row : SpecFlagTable()) {
    if (row.is_switch) {
      cmd->add_flag(row.flag, flags->switches[row.flag],
                    absl::StrCat(SpecFlagHelp(row), " (every member)"))
          ->group(SpecFlagSection(row));
    }
  }
  AddScriptCommandOptions(cmd, &flags->script, /*positional=*/false);
  cmd->add_option("--param", flags->params,
                  "A program's sweep: NAME=A,B puts each value in for {NAME} in its arguments "
                  "(repeatable); {device} is the member's device")
      ->allow_extra_args(false);
  AddSearchOptions(cmd, &flags->search);
  cmd->add_option("--repeat", flags->repeat, "Runs of each configuration (default 1)");
  cmd->add_option("--priority", flags->priority, "Priority of every member");
  cmd->add_option("--name", flags->name, "A label for the sweep and its report");
  cmd->add_flag("--not-exclusive", flags->not_exclusive,
                "Let members share the machine with other jobs (timings get noisier)");
  cmd->add_flag("--watch,-w", flags->watch, "Follow the sweep, like `trainctl watch --sweep`");
  cmd->add_option("--resume", flags->resume,
                  "A search (its id or name) that ended or was cancelled goes on where it stopped: "
                  "its trials cancelled in flight run again from their checkpoints");
  cmd->add_flag("--upload", flags->upload,
                "Send --data-file to the daemon (once, by content) instead of naming a path there");
  cmd->footer(
      "Examples:\n"
      "  trainctl sweep --model lenet5,mlp --dataset fashion-mnist --device cpu,cuda --repeat 3\n"
      "  trainctl sweep sweep.yaml --watch\n"
      "  trainctl sweep --device cpu,cuda --param seed=1,2 -- python3 lenet.py --device {device} "
      "--seed {seed}\n"
      "  trainctl sweep --param lr=1e-3,3e-3 --param bs=64,128 -- python3 train.py --lr {lr} "
      "--batch-size {bs}\n"
      "  trainctl sweep --model resnet18 --dataset cifar10 --search random --trials 48 --lr "
      "loguniform:1e-4:1e-1 --batch-size choice:64,128,256 --epochs 30 --early-stop asha\n"
      "  trainctl sweep --search tpe --trials 40 --param lr=loguniform:1e-4:1e-1 -- python3 "
      "train.py --lr {lr}\n"
      "  trainctl sweep --resume 9    (a cancelled search goes on; more: trainctl extend 9 "
      "--trials 80)\n"
      "Then: trainctl report SWEEP (speedup against the CPU, accuracy, memory). See docs/jobs.md "
      "and docs/scripts.md.");
  cmd->callback([&ctx, exit_code, flags] { *exit_code = RunSweep(ctx, *flags); });
}

}  // namespace traind
