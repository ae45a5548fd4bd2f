// How a script job's program is made ready to start: its working copy and directories
// (checkpoints, outputs, temp), its output log, its command line and environment (the traind
// package on its PYTHONPATH), its limits and its sandbox. The process side of traind-script;
// OutputEvents is the side that reads what it prints.
#ifndef TRAIND_SCRIPT_PROGRAM_LAUNCH_H_
#define TRAIND_SCRIPT_PROGRAM_LAUNCH_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "script/program_process.h"
#include "trainer/v1/trainer.pb.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

using LogFunction = std::function<void(const std::string&, trainer::v1::LogLine::Severity)>;

struct PreparedProgram {
  ProgramProcess::Options options;
  bool resumed = false;    // the working directory was there: an earlier start made it
  int output_log_fd = -1;  // where its whole output is kept (rank 0: output.log); -1: nowhere
  // Its limits in words: "each of its processes may allocate 256.0 MiB (traind
  // --script-memory-limit)"; empty without limits.
  std::string limits;
};

// Makes `request`'s job directory ready for rank `rank` of the job and says how to start its
// program (at `program_nice`); `log` says where an operator's limit cannot be applied in full.
absl::StatusOr<PreparedProgram> PrepareProgram(const trainer::v1::WorkerRequest& request, int rank,
                                               int program_nice, const LogFunction& log);

}  // namespace traind

#endif  // TRAIND_SCRIPT_PROGRAM_LAUNCH_H_
