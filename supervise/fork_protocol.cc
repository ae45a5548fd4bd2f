#include "supervise/fork_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/errno_status.h"

namespace traind {

namespace {

constexpr size_t kFdBytes = sizeof(int) * 3;

// Retries a call interrupted by a signal.
template <typename Call>
ssize_t Retrying(Call call) {
  ssize_t n;
  do {
    n = call();
  } while (n < 0 && errno == EINTR);
  return n;
}

// Room for a request's three descriptors in a message's control data.
struct FdControl {
  alignas(cmsghdr) char bytes[CMSG_SPACE(kFdBytes)] = {};
};

// A message of one buffer, `data`, with `control` for its descriptors.
msghdr Message(iovec* data, FdControl* control) {
  msghdr message{};
  message.msg_iov = data;
  message.msg_iovlen = 1;
  message.msg_control = control->bytes;
  message.msg_controllen = sizeof control->bytes;
  return message;
}

// The descriptors a received message carried (none: all -1).
std::array<int, 3> CarriedFds(msghdr& message, size_t* count) {
  std::array<int, 3> fds{-1, -1, -1};
  *count = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      if (*count < fds.size()) {
        fds[*count] = fd;
      } else {
        close(fd);  // more than a request carries
      }
      ++*count;
    }
  }
  return fds;
}

}  // namespace

absl::Status SendForkRequest(int socket, char* const* envp, const std::array<int, 3>& fds) {
  std::string payload;
  for (char* const* entry = envp; *entry != nullptr; ++entry) {
    payload.append(*entry);
    payload.push_back('\0');
  }
  if (payload.size() > kMaxForkRequestBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the environment is ", payload.size(),
                                                   " bytes, over the fork server's ",
                                                   kMaxForkRequestBytes));
  }
  iovec data{payload.data(), payload.size()};
  FdControl control;
  msghdr message = Message(&data, &control);
  cmsghdr* carried = CMSG_FIRSTHDR(&message);
  carried->cmsg_level = SOL_SOCKET;
  carried->cmsg_type = SCM_RIGHTS;
  carried->cmsg_len = CMSG_LEN(kFdBytes);
  std::memcpy(CMSG_DATA(carried), fds.data(), kFdBytes);
  if (Retrying([&] { return sendmsg(socket, &message, MSG_NOSIGNAL); }) < 0) {
    if (errno == EMSGSIZE || errno == ENOBUFS) {
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot ask the fork server: ", std::strerror(errno)));
    }
    return Errno("cannot ask the fork server");
  }
  return absl::OkStatus();
}

absl::StatusOr<ForkRequest> ReceiveForkRequest(int socket) {
  std::string payload(kMaxForkRequestBytes, '\0');
  iovec data{payload.data(), payload.size()};
  FdControl control;
  msghdr message = Message(&data, &control);
  const ssize_t n = Retrying([&] { return recvmsg(socket, &message, MSG_CMSG_CLOEXEC); });
  if (n < 0) return Errno("cannot read a fork request");
  size_t fd_count = 0;
  ForkRequest request;
  request.fds = CarriedFds(message, &fd_count);
  if (n == 0 && fd_count == 0) return absl::NotFoundError("the fork server's socket closed");
  if ((message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || fd_count != 3) {
    for (int fd : request.fds) {
      if (fd >= 0) close(fd);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("a fork request must carry 3 descriptors and at most ", kMaxForkRequestBytes,
                     " bytes; got ", fd_count, " and ", n,
                     (message.msg_flags & MSG_TRUNC) != 0 ? " (truncated)" : ""));
  }
  payload.resize(static_cast<size_t>(n));
  for (size_t start = 0; start < payload.size();) {
    const size_t end = payload.find('\0', start);
    if (end == std::string::npos) {
      request.environment.push_back(payload.substr(start));
      break;
    }
    request.environment.push_back(payload.substr(start, end - start));
    start = end + 1;
  }
  return request;
}

absl::Status SendForkAnswer(int socket, int pid_or_minus_errno) {
  const int32_t answer = pid_or_minus_errno;
  if (Retrying([&] { return send(socket, &answer, sizeof answer, MSG_NOSIGNAL); }) < 0) {
    return Errno("cannot answer traind");
  }
  return absl::OkStatus();
}

absl::StatusOr<int> ReceiveForkAnswer(int socket) {
  int32_t answer = 0;
  const ssize_t n = Retrying([&] { return recv(socket, &answer, sizeof answer, 0); });
  if (n < 0) return Errno("cannot read the fork server's answer");
  if (n != sizeof answer) return absl::UnavailableError("the fork server is gone");
  return answer;
}

}  // namespace traind
