#include "client/trainctl.h"

#include <cstdlib>

#include "CLI/CLI.hpp"
#include "client/commands/commands.h"
#include "client/context.h"
#include "client/exit_codes.h"
#include "common/paths.h"

namespace traind {

int RunTrainctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                bool out_is_terminal) {
  Context ctx(out, err, out_is_terminal);
  GlobalOptions& options = ctx.options();
  const char* env_addr = std::getenv("TRAINCTL_ADDR");
  options.addr = env_addr != nullptr && *env_addr != '\0' ? env_addr
                                                          : DefaultAddress(DefaultStateDir());

  CLI::App app{"trainctl: submit, follow and inspect training jobs on traind"};
  app.name("trainctl");
  app.fallthrough();  // global options may follow the verb: `trainctl devices --output json`
  app.require_subcommand(1);
  app.add_option("--addr", options.addr,
                 "unix:PATH or HOST:PORT of traind (env TRAINCTL_ADDR; default: the local "
                 "socket)")
      ->capture_default_str();
  app.add_option("--output,-o", options.output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();

  int exit_code = kExitOk;
  AddDevicesCommand(app, ctx, &exit_code);
  AddSubmitCommand(app, ctx, &exit_code);
  AddListCommand(app, ctx, &exit_code);
  AddShowCommand(app, ctx, &exit_code);
  AddWatchCommand(app, ctx, &exit_code);
  AddLogsCommand(app, ctx, &exit_code);
  AddCancelCommand(app, ctx, &exit_code);
  AddBenchCommand(app, ctx, &exit_code);
  AddSweepCommand(app, ctx, &exit_code);
  AddReportCommand(app, ctx, &exit_code);
  AddQueueCommands(app, ctx, &exit_code);

  std::vector<char*> argv;
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exit_code;
}

}  // namespace traind
