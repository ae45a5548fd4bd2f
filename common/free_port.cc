#include "common/free_port.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace traind {

namespace {

absl::StatusOr<int> FreePortOn(in_addr_t interface) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(interface);
  socklen_t length = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("no free port for the ranks' rendezvous: ", std::strerror(error)));
  }
  close(fd);
  return ntohs(address.sin_port);
}

}  // namespace

absl::StatusOr<int> FreeLoopbackPort() { return FreePortOn(INADDR_LOOPBACK); }

absl::StatusOr<int> FreePortOnAllInterfaces() { return FreePortOn(INADDR_ANY); }

}  // namespace traind
