#include "slurm/slurm_commands.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/on_path.h"

extern char** environ;

namespace traind {

absl::StatusOr<int64_t> ParseSbatchJobId(const std::string& out) {
  absl::string_view text = absl::StripAsciiWhitespace(out);
  text = text.substr(0, text.find(';'));
  int64_t id = 0;
  if (!absl::SimpleAtoi(text, &id) || id <= 0) {
    return absl::InternalError(absl::StrCat("sbatch printed no job id: '", out, "'"));
  }
  return id;
}

namespace {

// The first line's first word, or "" when the command failed or printed nothing.
std::string FirstWord(const absl::StatusOr<CommandResult>& result) {
  if (!result.ok() || result->exit_code != 0) return "";
  absl::string_view text = absl::StripLeadingAsciiWhitespace(result->out);
  text = text.substr(0, text.find_first_of(" \n\t"));
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

}  // namespace

absl::StatusOr<std::string> SlurmJobState(int64_t job_id, const std::atomic<bool>* stop) {
  const std::string id = absl::StrCat(job_id);
  // Short: the launcher polls every few seconds and must notice a cancel meanwhile.
  const absl::Duration kQuery = absl::Seconds(10);
  // squeue knows pending and running jobs, and (--states=all) those that ended within MinJobAge.
  std::string state = FirstWord(RunCommand(
      {"squeue", "--noheader", "--states=all", "--jobs", id, "--format", "%T"}, kQuery, stop));
  if (!state.empty()) return state;
  // sacct, where the cluster keeps accounting: the allocation's own line (-X).
  if (OnPath("sacct")) {
    state = FirstWord(RunCommand(
        {"sacct", "--noheader", "-X", "--jobs", id, "--format", "State%30", "--parsable2"}, kQuery,
        stop));
    if (!state.empty()) return state;
  }
  absl::StatusOr<CommandResult> shown =
      RunCommand({"scontrol", "show", "job", id, "--oneliner"}, kQuery, stop);
  if (shown.ok() && shown->exit_code == 0) {
    const size_t at = shown->out.find("JobState=");
    if (at != std::string::npos) {
      const size_t begin = at + std::strlen("JobState=");
      return shown->out.substr(begin, shown->out.find_first_of(" \n", begin) - begin);
    }
  }
  return absl::NotFoundError(absl::StrCat("Slurm does not know job ", job_id, " (any more)"));
}

bool IsFinalSlurmState(const std::string& state) {
  static const char* const kActive[] = {
      "PENDING",      "RUNNING",     "CONFIGURING",   "COMPLETING",  "REQUEUED",
      "RESIZING",     "SUSPENDED",   "STOPPED",       "SIGNALING",   "STAGE_OUT",
      "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "SPECIAL_EXIT"};
  const std::string word = state.substr(0, state.find(' '));
  if (word.empty()) return false;
  for (const char* active : kActive) {
    if (word == active) return false;
  }
  return true;
}

}  // namespace traind
