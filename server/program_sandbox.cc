#include "server/program_sandbox.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/on_path.h"
#include "common/paths.h"
#include "common/run_command.h"

namespace traind {

namespace {

// Runs bubblewrap with what a program's sandbox needs of the kernel (a mount namespace, a PID
// namespace and its /proc, a /dev): OK, or why not in bubblewrap's words ("No permissions to
// creating new namespace", "Creating new namespace failed: Operation not permitted").
absl::Status ProbeBubblewrap(const std::string& bwrap) {
  absl::StatusOr<CommandResult> ran =
      RunCommand({bwrap, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", "--proc",
                  "/proc", "--dev", "/dev", "--", "true"},
                 absl::Seconds(10));
  if (!ran.ok()) return ran.status();
  if (ran->exit_code != 0) {
    std::string why(absl::StripAsciiWhitespace(ran->err));
    return absl::FailedPreconditionError(
        why.empty() ? absl::StrCat("it exited with ", ran->exit_code) : why);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SandboxMode> ParseSandboxMode(std::string_view text) {
  if (text == "auto") return SandboxMode::kAuto;
  if (text == "bubblewrap") return SandboxMode::kBubblewrap;
  if (text == "none") return SandboxMode::kNone;
  return absl::InvalidArgumentError(absl::StrCat("--script-sandbox: '", std::string(text),
                                                 "' is not one of auto, bubblewrap, none"));
}

absl::StatusOr<SandboxChoice> ChooseSandbox(SandboxMode mode, std::vector<std::string> hidden,
                                            const std::vector<std::string>& read_only) {
  SandboxChoice choice;
  if (mode == SandboxMode::kNone) {
    choice.description =
        "programs (script jobs) run unconfined, as traind's user (--script-sandbox none)";
    return choice;
  }
  const std::string bwrap = FindOnPath("bwrap");
  absl::Status usable = bwrap.empty() ? absl::NotFoundError(
                                            "bubblewrap (bwrap) is not installed "
                                            "(apt-get install bubblewrap)")
                                      : ProbeBubblewrap(bwrap);
  if (!usable.ok()) {
    if (mode == SandboxMode::kBubblewrap) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--script-sandbox bubblewrap: cannot make a sandbox here: ", usable.message()));
    }
    choice.warn = true;
    choice.description = absl::StrCat(
        "programs (script jobs) run UNCONFINED: they can read traind's state, tokens and keys. "
        "No sandbox: ",
        usable.message(), " (docs/security.md; --script-sandbox none silences this)");
    return choice;
  }
  choice.sandbox.set_bwrap_path(bwrap);
  for (std::string& path : AsGivenAndResolved(read_only))
    choice.sandbox.add_read_only(std::move(path));
  for (std::string& path : AsGivenAndResolved(hidden)) choice.sandbox.add_hidden(std::move(path));
  choice.description =
      absl::StrCat("programs (script jobs) run in a bubblewrap sandbox (", bwrap,
                   "): their job's folders, the data roots and the system, none of traind's state");
  return choice;
}

}  // namespace traind
