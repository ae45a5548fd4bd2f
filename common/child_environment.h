// The environment a child process starts with: this process's own, with `extras` ("NAME=value")
// replacing any variables of the same names. Workers (supervise/worker_process.cc) and commands
// run with RunCommand (common/run_command.h) are started with one.
#ifndef TRAIND_COMMON_CHILD_ENVIRONMENT_H_
#define TRAIND_COMMON_CHILD_ENVIRONMENT_H_

#include <string>
#include <vector>

namespace traind {

class ChildEnvironment {
 public:
  explicit ChildEnvironment(std::vector<std::string> extras);
  // envp() points into the strings it holds.
  ChildEnvironment(const ChildEnvironment&) = delete;
  ChildEnvironment& operator=(const ChildEnvironment&) = delete;
  // For posix_spawn / execve: valid while this object lives, null-terminated.
  char* const* envp() const { return pointers_.data(); }

 private:
  std::vector<std::string> extras_;
  std::vector<char*> pointers_;
};

}  // namespace traind

#endif  // TRAIND_COMMON_CHILD_ENVIRONMENT_H_
