// Where script jobs' programs run (traind --script-sandbox): under bubblewrap, a well-kept tool
// Debian and Flatpak use for this, when it works here, so that a program with the run-code grant
// sees its own job's folders, the data roots and the system, but none of traind's state (its
// database, tokens, TLS key, other jobs, other users' uploads). traind decides once, at start,
// by running bubblewrap as it will run programs; the runner (script/sandbox.h) builds each
// program's command. docs/security.md "Programs" has the table of what a program reaches.
#ifndef TRAIND_SERVER_PROGRAM_SANDBOX_H_
#define TRAIND_SERVER_PROGRAM_SANDBOX_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

enum class SandboxMode {
  kAuto,        // bubblewrap where it works; otherwise programs run unconfined, with a warning
  kBubblewrap,  // bubblewrap, or traind does not start
  kNone,        // unconfined (the operator's choice: a dedicated machine, a container)
};
// "auto", "bubblewrap", "none"; INVALID_ARGUMENT naming them otherwise.
absl::StatusOr<SandboxMode> ParseSandboxMode(std::string_view text);

struct SandboxChoice {
  trainer::v1::ProgramSandbox sandbox;  // bwrap_path empty: unconfined
  std::string description;              // one line for traind's start, e.g. why it is unconfined
  bool warn = false;                    // the line is a warning (programs unconfined by default)
};

// What traind confines programs with. `hidden`: traind's own files and folders (state directory,
// token files, TLS keys); `read_only`: the data roots. FAILED_PRECONDITION when `mode` is
// kBubblewrap and bubblewrap is missing or cannot make a sandbox here (why, from bubblewrap).
absl::StatusOr<SandboxChoice> ChooseSandbox(SandboxMode mode, std::vector<std::string> hidden,
                                            const std::vector<std::string>& read_only);

}  // namespace traind

#endif  // TRAIND_SERVER_PROGRAM_SANDBOX_H_
