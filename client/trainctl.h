// trainctl as a function, so integration tests drive the real client code in-process.
#ifndef TRAIND_CLIENT_TRAINCTL_H_
#define TRAIND_CLIENT_TRAINCTL_H_

#include <ostream>
#include <string>
#include <vector>

namespace traind {

// args[0] is the program name. Returns the exit code (client/exit_codes.h).
int RunTrainctl(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                bool out_is_terminal = false);

}  // namespace traind

#endif  // TRAIND_CLIENT_TRAINCTL_H_
