#include "common/program_pid_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/proc_file.h"

namespace traind {

std::string ProgramPidFile(const std::string& job_dir, int rank) {
  return rank == 0 ? job_dir + "/program.pid"
                   : absl::StrCat(job_dir, "/program-rank", rank, ".pid");
}

void WriteProgramPidFile(const std::string& job_dir, int rank, pid_t pid) {
  const std::string path = ProgramPidFile(job_dir, rank);
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = absl::StrCat(pid, "\n");
  (void)!write(fd, text.data(), text.size());
  close(fd);
}

void RemoveProgramPidFile(const std::string& job_dir, int rank) {
  unlink(ProgramPidFile(job_dir, rank).c_str());
}

int KillLeftoverPrograms(const std::string& job_dir, int ranks) {
  int signalled = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string path = ProgramPidFile(job_dir, rank);
    const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    char text[32] = {};
    const ssize_t got = read(fd, text, sizeof(text) - 1);
    close(fd);
    unlink(path.c_str());
    pid_t pid = 0;
    if (got <= 0 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid) || pid <= 1) {
      continue;
    }
    // Still alive and not the leader of its own session: the pid is another process's now.
    if (const std::optional<ProcStat> stat = ReadProcStat(pid);
        stat.has_value() && stat->session != pid) {
      continue;
    }
    if (kill(-pid, SIGKILL) == 0) ++signalled;
  }
  return signalled;
}

}  // namespace traind
