// trainctl as a function, so integration tests drive the real client code in-process.
#ifndef TRAIND_CLIENT_TRAINCTL_H_
#define TRAIND_CLIENT_TRAINCTL_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "client/context.h"

namespace traind {

// The command line's app with every verb; parsing it runs the verb named, which stores its exit
// code in `*exit_code`. `ctx` and `exit_code` must outlive the app.
std::unique_ptr<CLI::App> MakeTrainctlApp(Context& ctx, int* exit_code);

// args[0] is the program name. Returns the exit code (client/exit_codes.h).
int RunTrainctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                bool out_is_terminal = false);

}  // namespace traind

#endif  // TRAIND_CLIENT_TRAINCTL_H_
