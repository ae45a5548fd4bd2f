// The only ways traind removes or changes permissions of a path it did not just create: each
// function proves the thing at the path is traind's own first, and refuses anything else with a
// message naming the path and what is there. (`traind --listen unix:PATH` used to unlink whatever
// was at PATH: an ordinary file, or traind's own database.)
#ifndef TRAIND_SERVER_OWNED_PATHS_H_
#define TRAIND_SERVER_OWNED_PATHS_H_

#include <sys/types.h>
#include <time.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace traind {

// A directory for traind's state: created 0700 when missing. An existing one must be a directory
// of this user that no other user can write to (traind would not chmod someone's home); FAILED_
// PRECONDITION with what is wrong otherwise.
absl::Status PreparePrivateDir(const std::string& dir);

// Makes PATH free for a Unix socket: nothing there is fine; a socket of this user that nobody
// listens on (left by a traind that crashed) is removed; anything else (a file, a directory, a
// link, another user's socket, a live socket) is refused with FAILED_PRECONDITION.
absl::Status ClaimSocketPath(const std::string& path);

// Identity of the socket a listener bound, so that shutdown removes that socket and nothing that
// replaced it.
struct BoundSocket {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
  // An inode number is reused once its file is gone; the change time tells the two apart.
  struct timespec change_time {};
};
// After the bind: PATH must be a socket of this user; it is made 0600.
absl::StatusOr<BoundSocket> AdoptBoundSocket(const std::string& path);
// Removes the socket if PATH is still the one bound; leaves anything else alone.
void RemoveBoundSocket(const BoundSocket& socket);

}  // namespace traind

#endif  // TRAIND_SERVER_OWNED_PATHS_H_
