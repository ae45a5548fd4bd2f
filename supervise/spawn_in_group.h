// Starting a program as traind starts its children (a worker, the fork server): in a process group
// of its own (a Ctrl-C meant for traind does not reach it), every signal unblocked and at its
// default.
#ifndef TRAIND_SUPERVISE_SPAWN_IN_GROUP_H_
#define TRAIND_SUPERVISE_SPAWN_IN_GROUP_H_

#include <sys/types.h>

#include <array>
#include <string>
#include <vector>

namespace traind {

// posix_spawn of `argv` (argv[0] the program's path) with `envp`, `stdio[i]` dup'ed onto
// descriptor i (-1: left as inherited). Returns posix_spawn's answer (0, or an errno).
int SpawnInOwnGroup(const std::vector<std::string>& argv, const std::array<int, 3>& stdio,
                    char* const* envp, pid_t* pid);

}  // namespace traind

#endif  // TRAIND_SUPERVISE_SPAWN_IN_GROUP_H_
