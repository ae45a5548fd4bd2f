#include "client/trainctl.h"

#include <cstdlib>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "client/command_words.h"
#include "client/commands/commands.h"
#include "client/completion.h"
#include "client/config_defaults.h"
#include "client/context.h"
#include "client/exit_codes.h"
#include "common/build_version.h"
#include "common/man_page.h"
#include "common/paths.h"
#include "connect/config_file.h"

namespace traind {

namespace {

ManPageText TrainctlManPageText() {
  ManPageText text;
  text.name = "trainctl";
  text.section = 1;
  text.version = BuildVersion();
  text.summary = "submit, follow and inspect training jobs on traind";
  text.description =
      "trainctl talks to traind(8) over gRPC: on this machine through its Unix socket, on "
      "another over TLS with a bearer token (a context, see trainctl context). It submits "
      "training, benchmark and script jobs and sweeps, follows them live (watch), and reads "
      "their results, logs, reports and artifacts.\n\n"
      "Exit status: 0 on success; 1 when a job it waited for failed or was cancelled; 2 for a "
      "usage error (a one-line message says what is wrong); 3 when traind cannot be reached.\n\n"
      "Defaults for any verb's flags can live in the config file as [defaults.VERB] tables "
      "(FLAG = VALUE); the command line overrides them.";
  text.files =
      "~/.config/trainctl/config.toml\tContexts and [defaults.VERB] flags ($TRAINCTL_CONFIG).\n"
      "~/.local/state/traind/traind.sock\tThe local traind's socket (--addr).\n";
  text.see_also = "traind(8)";
  return text;
}

// `trainctl __man-page`: trainctl(1), from the same tables as --help (deploy/package.sh).
void AddManPageCommand(CLI::App& app, Context& ctx) {
  CLI::App* man = app.add_subcommand("__man-page", "");
  man->group("");  // hidden: the package's build step's
  man->callback([&ctx, &app] { ctx.out() << ManPage(app, TrainctlManPageText()); });
}

}  // namespace

std::unique_ptr<CLI::App> MakeTrainctlApp(Context& ctx, int* exit_code) {
  GlobalOptions& options = ctx.options();
  options.config_path = DefaultConfigPath();
  ConnectionOptions& connection = options.connection;

  auto owned = std::make_unique<CLI::App>(
      "trainctl: submit, follow and inspect training jobs on traind", "trainctl");
  CLI::App& app = *owned;
  app.fallthrough();  // global options may follow the verb: `trainctl devices --output json`
  app.require_subcommand(1);
  // Where traind is. Flags win over TRAINCTL_* variables, which win over the context.
  app.add_option(
         "--addr", connection.addr,
         "unix:PATH or HOST:PORT of traind (default: the context's, else the local socket " +
             DefaultAddress(DefaultStateDir()) + ")")
      ->envname("TRAINCTL_ADDR");
  app.add_option("--context", connection.context,
                 "Use this context from " + options.config_path + " (see `trainctl context`)")
      ->envname("TRAINCTL_CONTEXT");
  app.add_option("--tls-ca", connection.tls_ca, "CA certificate (PEM) that signed traind's")
      ->envname("TRAINCTL_TLS_CA");
  app.add_option("--tls-cert", connection.tls_cert,
                 "Client certificate (PEM), when traind requires one")
      ->envname("TRAINCTL_TLS_CERT");
  app.add_option("--tls-key", connection.tls_key, "Private key (PEM) of --tls-cert")
      ->envname("TRAINCTL_TLS_KEY");
  app.add_option("--token-file", connection.token_file,
                 "File holding the bearer token traind expects on TCP")
      ->envname("TRAINCTL_TOKEN_FILE");
  app.add_flag("--plaintext", connection.plaintext,
               "TCP without TLS (traind allows it on loopback only; the default there)");
  app.set_version_flag("--version", std::string("trainctl, ") + BuildVersion());
  app.add_option("--output,-o", options.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  // Before any verb runs: a bad context or unreadable TLS/token file is a usage error.
  app.parse_complete_callback([&app, &ctx] {
    if (app.got_subcommand("context") || app.got_subcommand("completion") ||
        app.got_subcommand("__man-page")) {
      return;
    }
    if (absl::Status status = ctx.ResolveConnection(); !status.ok()) {
      throw CLI::ValidationError(std::string(status.message()));
    }
  });
  AddDevicesCommand(app, ctx, exit_code);
  AddSubmitCommand(app, ctx, exit_code);
  AddRunCommand(app, ctx, exit_code);
  AddListCommand(app, ctx, exit_code);
  AddShowCommand(app, ctx, exit_code);
  AddWatchCommand(app, ctx, exit_code);
  AddLogsCommand(app, ctx, exit_code);
  AddCancelCommand(app, ctx, exit_code);
  AddWaitCommand(app, ctx, exit_code);
  AddBenchCommand(app, ctx, exit_code);
  AddSweepCommand(app, ctx, exit_code);
  AddExtendCommand(app, ctx, exit_code);
  AddSweepsCommand(app, ctx, exit_code);
  AddReportCommand(app, ctx, exit_code);
  AddArtifactsCommand(app, ctx, exit_code);
  AddDownloadCommand(app, ctx, exit_code);
  AddUploadCommand(app, ctx, exit_code);
  AddEvaluateCommand(app, ctx, exit_code);
  AddDeleteCommand(app, ctx, exit_code);
  AddQueueCommands(app, ctx, exit_code);
  AddShutdownCommand(app, ctx, exit_code);
  AddPriorityCommand(app, ctx, exit_code);
  AddExportCommand(app, ctx, exit_code);
  AddContextCommand(app, ctx, exit_code);
  AddCompletionCommands(app, ctx, exit_code);
  AddManPageCommand(app, ctx);
  return owned;
}

int RunTrainctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                bool out_is_terminal) {
  Context ctx(out, err, out_is_terminal);
  int exit_code = kExitOk;
  std::unique_ptr<CLI::App> app = MakeTrainctlApp(ctx, &exit_code);
  // A typo is named as one before CLI11 can read it as something else.
  const absl::StatusOr<VerbAt> named = ReadCommandWords(*app, args);
  if (!named.ok()) return ctx.UsageError(std::string(named.status().message()));
  // The config file's [defaults.VERB] flags, as if typed (the command line's own win).
  const std::string& config_path = ctx.options().config_path;
  const absl::StatusOr<ClientConfig> config = LoadClientConfig(config_path);
  if (!config.ok()) return ctx.UsageError(std::string(config.status().message()));
  if (absl::Status s = CheckConfigDefaults(*app, config->defaults, config_path); !s.ok()) {
    return ctx.UsageError(std::string(s.message()));
  }
  const std::vector<std::string> expanded =
      WithConfigDefaults(*app, *named, config->defaults, args);

  std::vector<char*> argv;
  for (const std::string& arg : expanded) argv.push_back(const_cast<char*>(arg.c_str()));
  try {
    app->parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    // --help and --version print what was asked for; a mistake is one line, as every other
    // usage error is: "trainctl: sweep: --trials: Value 0 not in range 1 to 100000 (see ...)".
    if (e.get_exit_code() == 0) {
      app->exit(e, out, err);
      return kExitOk;
    }
    std::string verb;
    for (const CLI::App* at = named->verb; at != nullptr && at != app.get();
         at = at->get_parent()) {
      verb = verb.empty() ? at->get_name() : absl::StrCat(at->get_name(), " ", verb);
    }
    return ctx.UsageError(absl::StrCat(verb.empty() ? "" : verb + ": ", e.what(),
                                       " (see `trainctl ", verb.empty() ? "" : verb + " ",
                                       "--help`)"));
  }
  return exit_code;
}

}  // namespace traind
