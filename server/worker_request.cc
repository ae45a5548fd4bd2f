#include "server/worker_request.h"

#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/durable_file.h"
#include "common/job_spec.h"
#include "common/script_spec.h"

namespace traind {

namespace {

void AddProgram(const trainer::v1::ScriptSpec& script, const WorkerRequestOptions& options,
                trainer::v1::WorkerRequest* request) {
  const auto interpreter = options.interpreters.find(
      script.interpreter().empty() ? kDefaultInterpreter : script.interpreter());
  // One allowed at submit may be gone since (traind restarted without it): the runner says so.
  if (interpreter != options.interpreters.end()) {
    request->set_interpreter_path(interpreter->second);
  }
  for (const trainer::v1::ScriptFile& file : script.files()) {
    trainer::v1::ScriptSource* source = request->add_script_sources();
    source->set_path(file.path());
    if (options.blobs != nullptr) source->set_source(options.blobs->PathOf(file.digest()));
    source->set_executable(file.executable());
  }
  request->mutable_program_limits()->set_memory_bytes(options.script_memory_bytes);
  request->mutable_program_limits()->set_file_size_bytes(options.script_file_size_bytes);
  if (!options.script_sandbox.bwrap_path().empty()) {
    *request->mutable_sandbox() = options.script_sandbox;
  }
}

}  // namespace

trainer::v1::WorkerRequest BuildWorkerRequest(const trainer::v1::Job& job,
                                              const std::string& job_dir,
                                              const WorkerRequestOptions& options) {
  const trainer::v1::JobSpec& spec = job.spec();
  trainer::v1::WorkerRequest request;
  request.set_job_id(job.id());
  *request.mutable_spec() = spec;
  request.set_job_dir(job_dir);
  if (options.blobs != nullptr && !spec.model_file().empty()) {
    request.set_model_path(options.blobs->PathOf(spec.model_file()));
  }
  if (absl::StatusOr<InitFrom> init = ParseInitFrom(spec.init_from());
      !spec.init_from().empty() && init.ok()) {
    request.set_init_path(
        !init->digest.empty() && options.blobs != nullptr
            ? options.blobs->PathOf(init->digest)
            : absl::StrCat(options.jobs_dir, "/", init->job_id, "/", init->artifact, ".pt"));
  }
  if (absl::StartsWith(spec.data_file(), "sha256:") && options.blobs != nullptr) {
    request.set_data_path(options.blobs->PathOf(spec.data_file()));
  } else {
    request.set_data_path(spec.data_file());  // resolved under a data root at submit
  }
  if (IsScriptJob(spec)) AddProgram(spec.script(), options, &request);
  // Checked again where the worker opens them: a path may have changed since submit.
  for (const std::string& root : options.data_roots) request.add_data_roots(root);
  request.set_checkpoint_interval_seconds(options.checkpoint_interval_seconds);
  request.set_exclusive(job.exclusive());
  request.set_pause_after_epoch(job.pause_after_epoch());
  return request;
}

absl::StatusOr<trainer::v1::WorkerRequest> RequestFor(const trainer::v1::Job& job,
                                                      const WorkerRequestOptions& options) {
  const std::string job_dir = absl::StrCat(options.jobs_dir, "/", job.id());
  std::error_code error;
  std::filesystem::create_directories(job_dir, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create ", job_dir, ": ", error.message()));
  }
  // No run of this job is under way: a temporary file here is a killed run's half-written one.
  RemoveStaleTemporaries(job_dir);
  return BuildWorkerRequest(job, job_dir, options);
}

}  // namespace traind
