#include "client/process_ended.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "common/proc_file.h"

namespace traind {

bool ProcessEnded(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A zombie has ended too. Elsewhere there is no /proc: only "gone" counts.
  const std::optional<ProcStat> stat = ReadProcStat(pid);
  return stat.has_value() && stat->state == 'Z';
}

pid_t ListenerPid(const std::string& path) {
#ifdef SO_PEERCRED
  sockaddr_un address{};
  if (path.size() >= sizeof(address.sun_path)) return 0;
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  pid_t pid = 0;
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0) {
    pid = credentials.pid;
  }
  close(fd);
  return pid;
#else
  (void)path;
  return 0;
#endif
}

}  // namespace traind
