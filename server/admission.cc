#include "server/admission.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/beneath.h"
#include "common/catalog.h"
#include "common/job_spec.h"
#include "common/paths.h"
#include "common/script_spec.h"
#include "common/spec_fields.h"
#include "common/status_macros.h"
#include "server/device_plan.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobSpec;

namespace {

std::vector<std::string> GpusHere(const trainer::v1::ListDevicesResponse& devices) {
  std::vector<std::string> gpus;
  for (const auto& device : devices.devices()) {
    if (absl::StartsWith(device.name(), "cuda:")) gpus.push_back(device.name());
  }
  return gpus;
}

}  // namespace

Admission::Admission(Store* store, BlobStore* blobs, Options options)
    : store_(store), blobs_(blobs), options_(std::move(options)) {}

absl::Status Admission::ResolveHosts(JobSpec* spec) const {
  const std::string peers = options_.peer_names.empty()
                                ? "none: traind --peer NAME=HOST:PORT adds them"
                                : absl::StrJoin(options_.peer_names, ", ");
  if (!IsSlurmJob(*spec) && spec->nodes() != 0) {
    if (!spec->hosts().empty())
      return absl::InvalidArgumentError("nodes: give hosts or nodes, not both");
    const int available = 1 + static_cast<int>(options_.peer_names.size());
    if (spec->nodes() < 1 || spec->nodes() > available) {
      return absl::InvalidArgumentError(absl::StrCat("nodes: 1 to ", available,
                                                     " (this traind and its peers: ", peers,
                                                     "), got ", spec->nodes()));
    }
    std::vector<std::string> hosts = {options_.host_name};
    hosts.insert(hosts.end(), options_.peer_names.begin(),
                 options_.peer_names.begin() + (spec->nodes() - 1));
    if (hosts.size() > 1) spec->set_hosts(absl::StrJoin(hosts, ","));
    spec->set_nodes(0);
  }
  if (spec->hosts().empty()) return absl::OkStatus();
  const std::vector<std::string> hosts = HostNames(*spec);
  if (std::find(hosts.begin(), hosts.end(), options_.host_name) == hosts.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("hosts: must include this traind, '", options_.host_name,
                     "' (rank 0 runs where the job is submitted); its peers: ", peers));
  }
  for (const std::string& host : hosts) {
    if (host != options_.host_name &&
        std::find(options_.peer_names.begin(), options_.peer_names.end(), host) ==
            options_.peer_names.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hosts: '", host, "' is not a peer of this traind (its peers: ", peers, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> Admission::PrepareSpec(JobSpec spec, const Caller& caller) const {
  ApplyDefaults(&spec);
  RETURN_IF_ERROR(ResolveHosts(&spec));
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  if (spec.has_debug() && !options_.enable_fault_injection) {
    return absl::InvalidArgumentError(
        "debug: fault injection is disabled (start traind with --enable-fault-injection)");
  }

  if (IsScriptJob(spec)) {  // on this traind's devices (backend and hosts were refused)
    RETURN_IF_ERROR(CheckScript(spec, caller));
    RETURN_IF_ERROR(ResolveDevice(&spec));
    return spec;
  }
  if (IsSlurmJob(spec)) {
    // Slurm's nodes, not this machine's devices: nothing here to check device or amp against
    // (the worker on the node says what it lacks).
    if (!options_.slurm_available) {
      return absl::FailedPreconditionError(
          "backend: slurm needs Slurm's sbatch, squeue and scancel on traind's PATH (a machine "
          "that can submit to the cluster); this traind found none when it started");
    }
    RETURN_IF_ERROR(ResolveFiles(&spec, caller));
    return spec;
  }
  if (!spec.hosts().empty()) {
    // Device cpu or cuda on every host (validated); this one must have it too (the others check
    // when asked to reserve). It keeps "cuda": the scheduler picks this host's GPUs.
    if (spec.device() == "cuda" && GpusHere(options_.devices).empty()) {
      return absl::InvalidArgumentError(
          "device: cuda, but this machine has no GPU (with hosts, rank 0 runs here)");
    }
    RETURN_IF_ERROR(ResolveFiles(&spec, caller));
    return spec;
  }
  RETURN_IF_ERROR(ResolveDevice(&spec));
  if (spec.has_benchmark() && spec.benchmark().kind() == "matmul") return spec;
  RETURN_IF_ERROR(ResolveFiles(&spec, caller));
  return spec;
}

absl::Status Admission::ResolveDevice(JobSpec* spec) const {
  std::vector<std::string> available;
  const std::vector<std::string> gpus_here = GpusHere(options_.devices);
  for (const auto& device : options_.devices.devices()) available.push_back(device.name());
  // A job on several GPUs keeps device "cuda": the scheduler picks its GPUs (gpus) or takes the
  // ones listed (devices) when it starts.
  const bool on_gpus = spec->gpus() > 0 || !spec->devices().empty();
  if (on_gpus) {
    RETURN_IF_ERROR(CheckGpusExist(*spec, gpus_here));
  } else if (spec->device().empty()) {
    spec->set_device(available.empty() ? "cpu" : available.front());  // best first
  } else if (spec->device() == "cuda") {
    spec->set_device("cuda:0");
  }
  if (!on_gpus &&
      std::find(available.begin(), available.end(), spec->device()) == available.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device: '", spec->device(),
        "' is not available on this machine; available: ", absl::StrJoin(available, ", ")));
  }

  RETURN_IF_ERROR(ValidateJobSpec(*spec));  // again: some rules depend on the resolved device
  const trainer::v1::Device* device = nullptr;
  for (const auto& d : options_.devices.devices()) {
    // Several GPUs of one machine are alike: the first stands for them.
    if (d.name() == (on_gpus ? gpus_here.front() : spec->device())) device = &d;
  }
  if (!spec->amp().empty() && device != nullptr &&
      std::find(device->amp_dtypes().begin(), device->amp_dtypes().end(), spec->amp()) ==
          device->amp_dtypes().end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "amp: ", spec->amp(), " is not supported on ", spec->device(), "; supported: ",
        device->amp_dtypes().empty() ? "none" : absl::StrJoin(device->amp_dtypes(), ", ")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Admission::UnderDataRoot(const char* field, const std::string& path,
                                                     bool directory, const Caller& caller) const {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": must be an absolute path, got '", path, "'"));
  }
  // By name first, then opened beneath its root (common/beneath.h): a path outside every root and
  // one inside that leads out (a symlink, `..`) get this one answer, decided without looking
  // outside, so it says nothing of what is there. Where the roots are is the daemon's business:
  // only its own user (a local caller: the Unix socket, a local dashboard session) is told.
  const bool local = caller.owner == "local" && !caller.limited;
  auto outside = [&] {
    return absl::InvalidArgumentError(
        local ? absl::StrCat(field, ": ", path, " is outside the daemon's data roots (",
                             absl::StrJoin(options_.data_roots, ", "),
                             "); start traind with --data-root DIR to allow it, or upload it "
                             "(trainctl --upload)")
              : absl::StrCat(field, ": ", path,
                             " is outside the daemon's data roots; ask its operator for a data "
                             "root (traind --data-root), or upload it (trainctl --upload)"));
  };
  const std::string normal = LexicallyNormal(path);
  const BeneathRoots roots(options_.data_roots);
  if (!roots.confined() || !roots.Contains(normal)) return outside();
  absl::StatusOr<UniqueFd> opened =
      roots.Open(normal, O_RDONLY | O_NONBLOCK | (directory ? O_DIRECTORY : 0));
  if (!opened.ok()) {
    switch (opened.status().code()) {
      case absl::StatusCode::kPermissionDenied:
        return outside();
      case absl::StatusCode::kNotFound:  // inside a root: the caller may know what is there
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": no such ", directory ? "directory" : "file or directory",
                         " on the daemon's machine: ", path));
      default:
        return absl::InvalidArgumentError(absl::StrCat(field, ": ", opened.status().message()));
    }
  }
  struct stat st;
  if (!directory && (fstat(opened->get(), &st) != 0 || !S_ISREG(st.st_mode))) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", path, " is not a regular file"));
  }
  // Recorded resolved, as the file opened is named; the worker opens it beneath the roots again
  // (WorkerRequest.data_roots), since it may change before the job starts.
  absl::StatusOr<std::string> resolved = PathOfFd(opened->get());
  if (!resolved.ok()) {
    std::error_code error;
    resolved = std::filesystem::canonical(normal, error).string();
    if (error) return outside();  // changed while we looked
  }
  if (!roots.Contains(*resolved) || IsDaemonsOwn(*resolved)) return outside();
  return *resolved;
}

bool Admission::IsDaemonsOwn(const std::string& resolved) const {
  // A data root that holds the state directory (an operator's choice; the tests' too) must not
  // open its database, tokens, uploads or jobs' files to whoever names them: those have owners
  // and rules of their own. Other files there (a test's dataset) are data like any other.
  std::error_code error;
  const std::filesystem::path jobs = std::filesystem::weakly_canonical(options_.jobs_dir, error);
  if (error) return false;
  const std::string state = jobs.parent_path().string();
  if (!absl::StartsWith(resolved, state + "/")) return false;
  const std::string first =
      resolved.substr(state.size() + 1, resolved.find('/', state.size() + 1) - (state.size() + 1));
  return first == "blobs" || first == "jobs" || first == "peer-jobs" || first == "cache" ||
         absl::StartsWith(first, "traind.") || first == "http.token";
}

absl::Status Admission::ResolveFiles(JobSpec* spec, const Caller& caller) const {
  if (!spec->model_file().empty()) {
    absl::StatusOr<trainer::v1::Blob> blob = UsableBlob(caller, spec->model_file());
    if (!blob.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("model_file: ", spec->model_file(),
                       " is not stored on this daemon; upload it first "
                       "(trainctl submit --model-file FILE does)"));
    }
    if (blob->kind() != "model") {
      return absl::InvalidArgumentError(absl::StrCat(
          "model_file: ", spec->model_file(), " was uploaded as ", blob->kind(), ", not a model"));
    }
  }
  RETURN_IF_ERROR(ResolveInitFrom(spec, caller));
  const DatasetInfo* dataset = FindDataset(spec->dataset());
  if (dataset == nullptr) return absl::OkStatus();  // validated before: unreachable
  if (dataset->source == DatasetInfo::Source::kFile) {
    if (absl::StartsWith(spec->data_file(), "sha256:")) {
      if (!UsableBlob(caller, spec->data_file()).ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("data_file: ", spec->data_file(),
                         " is not stored on this daemon; upload it first "
                         "(trainctl submit --data-file FILE --upload)"));
      }
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(std::string resolved,
                     UnderDataRoot("data_file", spec->data_file(), /*directory=*/false, caller));
    spec->set_data_file(resolved);
    return absl::OkStatus();
  }
  if (dataset->source != DatasetInfo::Source::kDirectory) return absl::OkStatus();
  if (spec->data_dir().empty() && dataset->has_default_dir) {
    spec->set_data_dir(DefaultFashionMnistDir());
  }
  ASSIGN_OR_RETURN(std::string resolved,
                   UnderDataRoot("data_dir", spec->data_dir(), /*directory=*/true, caller));
  spec->set_data_dir(resolved);
  return absl::OkStatus();
}

absl::Status Admission::ResolveInitFrom(JobSpec* spec, const Caller& caller) const {
  if (spec->init_from().empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(InitFrom init, ParseInitFrom(spec->init_from()));
  if (!init.digest.empty()) {
    if (!UsableBlob(caller, init.digest).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("init_from: ", init.digest,
                       " is not stored on this daemon; upload it first "
                       "(trainctl submit --init-from-file FILE does)"));
    }
  } else {
    absl::StatusOr<Job> source = store_->GetJob(init.job_id);
    if (!source.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("init_from: job ", init.job_id, " not found"));
    }
    if (!caller.MayActFor(source->owner())) {
      return NotYours(caller, absl::StrCat("init_from: job ", init.job_id));
    }
    if (IsScriptJob(source->spec())) {  // its artifacts are a program's files, not weights
      return absl::InvalidArgumentError(
          absl::StrCat("init_from: job ", init.job_id,
                       " ran a program: its files are not weights; download one and pass it with "
                       "--init-from-file"));
    }
    const auto& artifacts = source->result().artifacts();
    if (std::none_of(artifacts.begin(), artifacts.end(),
                     [&](const auto& a) { return a.name() == init.artifact; })) {
      return absl::InvalidArgumentError(absl::StrCat("init_from: job ", init.job_id, " (",
                                                     Job::State_Name(source->state()), ") has no ",
                                                     init.artifact, " weights yet"));
    }
    spec->set_init_from(absl::StrCat(init.job_id, ":", init.artifact));  // explicit
  }
  return absl::OkStatus();
}

absl::Status Admission::CheckDependency(const Caller& caller, int64_t after) const {
  absl::StatusOr<Job> dependency = store_->GetJob(after);
  if (!dependency.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("after: job ", after, " not found"));
  }
  if (!caller.MayActFor(dependency->owner())) {
    return NotYours(caller, absl::StrCat("after: job ", after));
  }
  return absl::OkStatus();
}

absl::StatusOr<trainer::v1::Sweep> Admission::OwnSweep(const Caller& caller, int64_t id) const {
  ASSIGN_OR_RETURN(trainer::v1::Sweep sweep, store_->GetSweep(id));
  std::string owner = sweep.owner();
  if (owner.empty() && !sweep.job_ids().empty()) {  // stored before sweeps named their owner
    ASSIGN_OR_RETURN(Job first, store_->GetJob(sweep.job_ids(0)));
    owner = first.owner();
  }
  if (!caller.MayActFor(owner)) return NotYours(caller, absl::StrCat("sweep ", id));
  return sweep;
}

absl::StatusOr<Job> Admission::OwnJob(const Caller& caller, int64_t id) const {
  ASSIGN_OR_RETURN(Job job, store_->GetJob(id));
  if (!caller.MayActFor(job.owner())) return NotYours(caller, absl::StrCat("job ", id));
  return job;
}

absl::StatusOr<trainer::v1::Blob> Admission::UsableBlob(const Caller& caller,
                                                        const std::string& digest) const {
  ASSIGN_OR_RETURN(trainer::v1::Blob blob, blobs_->Get(digest));
  // Someone else's upload is as good as absent: a digest seen in a log is not the content.
  if (!caller.is_admin() && !IsBlobOwner(blob, caller.owner)) {
    return absl::NotFoundError(absl::StrCat("blob ", digest, " is not stored on this daemon"));
  }
  return blob;
}

}  // namespace traind
