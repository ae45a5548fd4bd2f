#include "script/program_launch.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/artifact_names.h"
#include "common/log_format.h"
#include "common/script_spec.h"
#include "common/status_macros.h"
#include "script/sandbox.h"
#include "script/script_environment.h"
#include "script/working_copy.h"

extern char** environ;

namespace traind {

namespace {

using trainer::v1::LogLine;

// Puts `dir` first on the program's PYTHONPATH.
void AddPythonPath(std::vector<std::string>* environment, const std::string& dir) {
  for (std::string& entry : *environment) {
    if (absl::StartsWith(entry, "PYTHONPATH=")) {
      entry = absl::StrCat("PYTHONPATH=", dir, entry.size() > 11 ? ":" : "", entry.substr(11));
      return;
    }
  }
  environment->push_back("PYTHONPATH=" + dir);
}

// Sets NAME=value in the program's environment; an empty value removes it.
void SetVariable(std::vector<std::string>* environment, const std::string& name,
                 const std::string& value) {
  const std::string prefix = name + "=";
  environment->erase(
      std::remove_if(environment->begin(), environment->end(),
                     [&](const std::string& entry) { return absl::StartsWith(entry, prefix); }),
      environment->end());
  if (!value.empty()) environment->push_back(prefix + value);
}

// The traind package (python/traind), importable without installing it, and python/site's
// sitecustomize (stdout flushed every TRAIND_STDOUT_FLUSH_MS instead of line by line): beside the
// binaries in a build tree (build/python) or an install (lib/traind/python). Where it was found
// ("" where not).
std::string AddTraindPackage(std::vector<std::string>* environment) {
  std::error_code ignored;
  const std::filesystem::path bin = std::filesystem::read_symlink("/proc/self/exe", ignored);
  for (const char* relative : {"../python", "../lib/traind/python"}) {
    const std::filesystem::path root = (bin.parent_path() / relative).lexically_normal();
    if (!std::filesystem::is_directory(root / "traind", ignored)) continue;
    AddPythonPath(environment, root.string());
    if (std::filesystem::is_regular_file(root / "site" / "sitecustomize.py", ignored)) {
      AddPythonPath(environment, (root / "site").string());
      SetVariable(environment, "TRAIND_STDOUT_FLUSH_MS", "50");
      SetVariable(environment, "PYTHONUNBUFFERED", "");  // the flusher's job now
    }
    return root.string();
  }
  return "";
}

absl::Status MakeDirectory(const std::string& path) {
  if (mkdir(path.c_str(), 0700) == 0 || errno == EEXIST) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
}

// "each of its processes may allocate 256.0 MiB (traind --script-memory-limit) and write files of
// 1.0 MiB (traind --script-file-size-limit)"; empty without limits. Said when the program starts
// and when it fails, where a MemoryError or "File too large" would otherwise be a puzzle.
std::string DescribeLimits(const ProgramProcess::Options& program) {
  std::vector<std::string> parts;
  if (program.memory_bytes > 0) {
    parts.push_back(absl::StrCat("allocate ", FormatBytes(program.memory_bytes),
                                 " (traind --script-memory-limit)"));
  }
  if (program.file_size_bytes > 0) {
    parts.push_back(absl::StrCat("write files of ", FormatBytes(program.file_size_bytes),
                                 " (traind --script-file-size-limit)"));
  }
  if (parts.empty()) return "";
  return absl::StrCat("each of its processes may ", absl::StrJoin(parts, " and "));
}

// The operator's limit (WorkerRequest.program_limits) as it can be set, with a warning in the
// job's log where traind's own hard limit is lower.
int64_t Attainable(int resource, int64_t requested, const char* flag, const LogFunction& log) {
  const int64_t attainable = AttainableLimit(resource, requested);
  if (attainable < requested) {
    log(absl::StrCat("traind ", flag, " asks for ", FormatBytes(requested),
                     ", more than the hard limit traind itself runs under: ",
                     FormatBytes(attainable), " applies"),
        LogLine::WARNING);
  }
  return attainable;
}

}  // namespace

absl::StatusOr<PreparedProgram> PrepareProgram(const trainer::v1::WorkerRequest& request, int rank,
                                               int program_nice, const LogFunction& log) {
  PreparedProgram prepared;
  const std::string& job_dir = request.job_dir();
  const std::string working_dir = job_dir + "/work";
  struct stat st;
  prepared.resumed = lstat(working_dir.c_str(), &st) == 0;  // an earlier start of this job made it
  RETURN_IF_ERROR(MakeWorkingCopy(request.script_sources(), working_dir));
  ScriptDirectories directories{absl::StrCat(job_dir, "/", kScriptCheckpointsFolder),
                                absl::StrCat(job_dir, "/", kScriptOutputsFolder), job_dir + "/tmp"};
  for (const std::string* dir :
       {&directories.checkpoints, &directories.outputs, &directories.temp}) {
    RETURN_IF_ERROR(MakeDirectory(*dir));
  }
  const std::string output_log =
      rank == 0 ? "/output.log" : absl::StrCat("/output-rank", rank, ".log");
  prepared.output_log_fd = open((job_dir + output_log).c_str(),
                                O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);

  std::vector<std::string> inherited;
  for (char** entry = environ; *entry != nullptr; ++entry) inherited.emplace_back(*entry);
  const char* job_devices = std::getenv("TRAIND_JOB_DEVICES");
  ProgramProcess::Options& program = prepared.options;
  program.path = request.interpreter_path();
  program.argv.push_back(request.spec().script().interpreter().empty()
                             ? kDefaultInterpreter
                             : request.spec().script().interpreter());
  const std::string& device = request.spec().device();
  for (std::string& arg :
       ExpandScriptArgs(request.spec().script(), absl::StartsWith(device, "cuda") ? "cuda"
                                                 : device.empty()                 ? "cpu"
                                                                                  : device)) {
    program.argv.push_back(std::move(arg));
  }
  program.environment =
      ScriptEnvironment(request, directories, inherited, job_devices ? job_devices : "");
  if (prepared.resumed) program.environment.push_back("TRAIND_RESUMED=1");
  const std::string package_root = AddTraindPackage(&program.environment);
  program.working_dir = working_dir;
  program.nice = program_nice;
  program.memory_bytes = Attainable(RLIMIT_DATA, request.program_limits().memory_bytes(),
                                    "--script-memory-limit", log);
  program.file_size_bytes = Attainable(RLIMIT_FSIZE, request.program_limits().file_size_bytes(),
                                       "--script-file-size-limit", log);
  if (!request.sandbox().bwrap_path().empty()) {
    SandboxView view;
    view.writable = {working_dir, directories.checkpoints, directories.outputs, directories.temp};
    view.read_only = InterpreterTrees(program.path);
    if (!package_root.empty()) view.read_only.push_back(package_root);
    view.working_dir = working_dir;
    if (const char* home = std::getenv("HOME"); home != nullptr) view.home = home;
    const char* world_size = std::getenv("WORLD_SIZE");
    view.share_dev_shm = world_size != nullptr && std::atoi(world_size) > 1;
    program.wrapper = SandboxCommand(request.sandbox(), view);
  }
  prepared.limits = DescribeLimits(program);
  return prepared;
}

}  // namespace traind
