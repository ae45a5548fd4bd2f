// A TCP port on the loopback interface that nothing listens on right now (the kernel's pick), for
// a data-parallel job's rendezvous store (and tests that need one). Another process could take it
// before the job's rank 0 binds it; that rank then fails to start and says so.
#ifndef TRAIND_COMMON_FREE_PORT_H_
#define TRAIND_COMMON_FREE_PORT_H_

#include "absl/status/statusor.h"

namespace traind {

absl::StatusOr<int> FreeLoopbackPort();
// The same on every interface: for a rendezvous that ranks on other hosts reach.
absl::StatusOr<int> FreePortOnAllInterfaces();

}  // namespace traind

#endif  // TRAIND_COMMON_FREE_PORT_H_
