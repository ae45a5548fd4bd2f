// The bubblewrap command a script job's program runs under (WorkerRequest.sandbox, chosen by
// traind: server/program_sandbox.h). The program sees, in this order of mounts:
//   the system read-only: /usr, /etc, /sys and /bin, /lib... (links into /usr where they are);
//   its own /tmp and HOME (empty, writable, gone with it), a /proc of its own processes only (a
//   PID namespace: no other process's /proc/PID/root, environ or fds), a /dev of the basic
//   devices plus the GPUs' (/dev/nvidia*), and its own /dev/shm (the machine's for a job of
//   several processes, whose ranks share memory there);
//   the data roots and the interpreter's tree (a venv, a conda prefix) read-only;
//   traind's own files and folders hidden (an empty folder in a folder's place, an unopenable
//   /dev/null in a file's), wherever they fall in what it sees;
//   its job's folders read-write: the working copy, checkpoints, outputs and temp folder.
// No capability even when traind runs as root (--cap-drop ALL); the network is the machine's.
// The program and everything it starts die with the sandbox (the PID namespace ends with it),
// even those that left its process group. Pure: it only builds the argument list (and looks at
// which of those paths exist).
#ifndef TRAIND_SCRIPT_SANDBOX_H_
#define TRAIND_SCRIPT_SANDBOX_H_

#include <string>
#include <vector>

#include "trainer/v1/worker.pb.h"

namespace traind {

struct SandboxView {
  std::vector<std::string> writable;   // the job's folders (they exist)
  std::vector<std::string> read_only;  // besides the sandbox's: the interpreter's tree, packages
  std::string working_dir;             // where the program starts
  std::string home;                    // $HOME, made an empty folder of its own ("": none)
  bool share_dev_shm = false;          // the machine's /dev/shm (ranks of one job share it)
};

// bwrap's arguments up to and including "--": the program's path and arguments follow.
std::vector<std::string> SandboxCommand(const trainer::v1::ProgramSandbox& sandbox,
                                        const SandboxView& view);

// The folders an interpreter needs besides the system's: a venv's or conda prefix's root
// (/opt/venv for /opt/venv/bin/python) for the path as given and as its links resolve; none for
// one under /usr.
std::vector<std::string> InterpreterTrees(const std::string& interpreter_path);

}  // namespace traind

#endif  // TRAIND_SCRIPT_SANDBOX_H_
