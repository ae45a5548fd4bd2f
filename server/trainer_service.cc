#include "server/trainer_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/beneath.h"
#include "common/catalog.h"
#include "common/grpc_status.h"
#include "common/job_spec.h"
#include "common/paths.h"
#include "common/proc_file.h"
#include "common/spec_fields.h"
#include "common/status_macros.h"
#include "google/protobuf/util/time_util.h"
#include "server/device_plan.h"
#include "server/download_reactor.h"
#include "server/job_files.h"
#include "server/job_fold.h"
#include "server/storage_quota.h"
#include "server/sweep_expansion.h"
#include "server/sweep_report.h"
#include "server/upload_reactor.h"
#include "server/watch_reactor.h"

namespace traind {

using trainer::v1::Job;
using trainer::v1::JobSpec;

namespace {
constexpr int kDefaultPageSize = 100;

// A WatchJob refused before it starts (authentication, limits).
class RejectedWatch : public grpc::ServerWriteReactor<trainer::v1::JobEvent> {
 public:
  explicit RejectedWatch(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

constexpr int kMaxPageSize = 1000;
// Replies stay under the 4 MiB that gRPC clients accept by default, whatever the page size asked.
constexpr size_t kMaxReplyBytes = 3 << 20;
constexpr int kDefaultEventPage = 1000;
constexpr int kMaxEventPage = 10000;
}  // namespace

TrainerService::TrainerService(Store* store, EventHub* hub, Executor* executor,
                               Scheduler* scheduler, AccessControl* access,
                               trainer::v1::ListDevicesResponse devices, Files files,
                               bool enable_fault_injection, std::vector<std::string> data_roots)
    : store_(store),
      hub_(hub),
      executor_(executor),
      scheduler_(scheduler),
      access_(access),
      devices_(std::move(devices)),
      devices_time_(google::protobuf::util::TimeUtil::GetCurrentTime()),
      files_(std::move(files)),
      uploads_({files_.max_storage_per_token, access->limits().max_uploads}),
      enable_fault_injection_(enable_fault_injection),
      data_roots_(std::move(data_roots)) {}

template <typename Work>
grpc::ServerUnaryReactor* TrainerService::Offload(grpc::CallbackServerContext* context,
                                                  const char* method,
                                                  const google::protobuf::Message* request,
                                                  Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  absl::StatusOr<Caller> caller = access_->Admit(*context, method, request);  // no I/O
  if (!caller.ok()) {
    reactor->Finish(ToGrpcStatus(caller.status()));
    return reactor;
  }
  executor_->Schedule([reactor, caller = *std::move(caller), work = std::move(work)]() mutable {
    if constexpr (std::is_invocable_v<Work&, const Caller&>) {
      reactor->Finish(ToGrpcStatus(work(caller)));
    } else {
      reactor->Finish(ToGrpcStatus(work()));
    }
  });
  return reactor;
}

template <typename Request, typename Reply, typename Work>
grpc::ServerUnaryReactor* TrainerService::OffloadChecked(grpc::CallbackServerContext* context,
                                                         const char* method,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* reply_bytes, Work work) {
  // Who calls first (a caller without a valid token learns nothing about its request's fields,
  // and costs no parse); then the bytes; then Offload admits again with the request's bounds.
  if (absl::StatusOr<Caller> caller = access_->Admit(*context, method, nullptr); !caller.ok()) {
    return FinishNow(context, caller.status());
  }
  auto call = std::make_shared<CheckedCall<Request, Reply>>(reply_bytes);
  if (absl::Status parsed = call->Parse(*request_bytes); !parsed.ok()) {
    return FinishNow(context, parsed);
  }
  return Offload(context, method, call->request(),
                 [call, work = std::move(work)](const Caller& caller) mutable {
                   return call->Seal(work(call->request(), call->reply(), caller));
                 });
}

absl::Status TrainerService::ResolveHosts(JobSpec* spec) const {
  const std::string peers = peer_names_.empty() ? "none: traind --peer NAME=HOST:PORT adds them"
                                                : absl::StrJoin(peer_names_, ", ");
  if (!IsSlurmJob(*spec) && spec->nodes() != 0) {
    if (!spec->hosts().empty())
      return absl::InvalidArgumentError("nodes: give hosts or nodes, not both");
    const int available = 1 + static_cast<int>(peer_names_.size());
    if (spec->nodes() < 1 || spec->nodes() > available) {
      return absl::InvalidArgumentError(absl::StrCat("nodes: 1 to ", available,
                                                     " (this traind and its peers: ", peers,
                                                     "), got ", spec->nodes()));
    }
    std::vector<std::string> hosts = {host_name_};
    hosts.insert(hosts.end(), peer_names_.begin(), peer_names_.begin() + (spec->nodes() - 1));
    if (hosts.size() > 1) spec->set_hosts(absl::StrJoin(hosts, ","));
    spec->set_nodes(0);
  }
  if (spec->hosts().empty()) return absl::OkStatus();
  const std::vector<std::string> hosts = HostNames(*spec);
  if (std::find(hosts.begin(), hosts.end(), host_name_) == hosts.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("hosts: must include this traind, '", host_name_,
                     "' (rank 0 runs where the job is submitted); its peers: ", peers));
  }
  for (const std::string& host : hosts) {
    if (host != host_name_ &&
        std::find(peer_names_.begin(), peer_names_.end(), host) == peer_names_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hosts: '", host, "' is not a peer of this traind (its peers: ", peers, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<JobSpec> TrainerService::PrepareSpec(JobSpec spec, const Caller& caller) const {
  ApplyDefaults(&spec);
  RETURN_IF_ERROR(ResolveHosts(&spec));
  RETURN_IF_ERROR(ValidateJobSpec(spec));
  if (spec.has_debug() && !enable_fault_injection_) {
    return absl::InvalidArgumentError(
        "debug: fault injection is disabled (start traind with --enable-fault-injection)");
  }

  if (IsSlurmJob(spec)) {
    // Slurm's nodes, not this machine's devices: nothing here to check device or amp against
    // (the worker on the node says what it lacks).
    if (!slurm_available_) {
      return absl::FailedPreconditionError(
          "backend: slurm needs Slurm's sbatch, squeue and scancel on traind's PATH (a machine "
          "that can submit to the cluster); this traind found none when it started");
    }
    RETURN_IF_ERROR(ResolveFiles(&spec, caller));
    return spec;
  }
  std::vector<std::string> available;
  std::vector<std::string> gpus_here;
  for (const auto& device : devices_.devices()) {
    available.push_back(device.name());
    if (absl::StartsWith(device.name(), "cuda:")) gpus_here.push_back(device.name());
  }
  if (!spec.hosts().empty()) {
    // Device cpu or cuda on every host (validated); this one must have it too (the others check
    // when asked to reserve). It keeps "cuda": the scheduler picks this host's GPUs.
    if (spec.device() == "cuda" && gpus_here.empty()) {
      return absl::InvalidArgumentError(
          "device: cuda, but this machine has no GPU (with hosts, rank 0 runs here)");
    }
    RETURN_IF_ERROR(ResolveFiles(&spec, caller));
    return spec;
  }
  // A job on several GPUs keeps device "cuda": the scheduler picks its GPUs (gpus) or takes the
  // ones listed (devices) when it starts.
  const bool on_gpus = spec.gpus() > 0 || !spec.devices().empty();
  if (on_gpus) {
    RETURN_IF_ERROR(CheckGpusExist(spec, gpus_here));
  } else if (spec.device().empty()) {
    spec.set_device(available.empty() ? "cpu" : available.front());  // best first
  } else if (spec.device() == "cuda") {
    spec.set_device("cuda:0");
  }
  if (!on_gpus && std::find(available.begin(), available.end(), spec.device()) == available.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device: '", spec.device(),
        "' is not available on this machine; available: ", absl::StrJoin(available, ", ")));
  }

  RETURN_IF_ERROR(ValidateJobSpec(spec));  // again: some rules depend on the resolved device
  const trainer::v1::Device* device = nullptr;
  for (const auto& d : devices_.devices()) {
    // Several GPUs of one machine are alike: the first stands for them.
    if (d.name() == (on_gpus ? gpus_here.front() : spec.device())) device = &d;
  }
  if (!spec.amp().empty() && device != nullptr &&
      std::find(device->amp_dtypes().begin(), device->amp_dtypes().end(), spec.amp()) ==
          device->amp_dtypes().end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "amp: ", spec.amp(), " is not supported on ", spec.device(), "; supported: ",
        device->amp_dtypes().empty() ? "none" : absl::StrJoin(device->amp_dtypes(), ", ")));
  }
  if (spec.has_benchmark() && spec.benchmark().kind() == "matmul") return spec;
  RETURN_IF_ERROR(ResolveFiles(&spec, caller));
  return spec;
}

absl::StatusOr<std::string> TrainerService::UnderDataRoot(const char* field,
                                                          const std::string& path, bool directory,
                                                          const Caller& caller) const {
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
                             absl::StrJoin(data_roots_, ", "),
                             "); start traind with --data-root DIR to allow it, or upload it "
                             "(trainctl --upload)")
              : absl::StrCat(field, ": ", path,
                             " is outside the daemon's data roots; ask its operator for a data "
                             "root (traind --data-root), or upload it (trainctl --upload)"));
  };
  const std::string normal = LexicallyNormal(path);
  const BeneathRoots roots(data_roots_);
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

bool TrainerService::IsDaemonsOwn(const std::string& resolved) const {
  // A data root that holds the state directory (an operator's choice; the tests' too) must not
  // open its database, tokens, uploads or jobs' files to whoever names them: those have owners
  // and rules of their own. Other files there (a test's dataset) are data like any other.
  std::error_code error;
  const std::filesystem::path jobs = std::filesystem::weakly_canonical(files_.jobs_dir, error);
  if (error) return false;
  const std::string state = jobs.parent_path().string();
  if (!absl::StartsWith(resolved, state + "/")) return false;
  const std::string first =
      resolved.substr(state.size() + 1, resolved.find('/', state.size() + 1) - (state.size() + 1));
  return first == "blobs" || first == "jobs" || first == "peer-jobs" || first == "cache" ||
         absl::StartsWith(first, "traind.") || first == "http.token";
}

absl::Status TrainerService::ResolveFiles(JobSpec* spec, const Caller& caller) const {
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
  if (!spec->init_from().empty()) {
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
        return absl::InvalidArgumentError(
            absl::StrCat("init_from: job ", init.job_id, " not found"));
      }
      if (!caller.MayActFor(source->owner())) {
        return NotYours(caller, absl::StrCat("init_from: job ", init.job_id));
      }
      const auto& artifacts = source->result().artifacts();
      if (std::none_of(artifacts.begin(), artifacts.end(),
                       [&](const auto& a) { return a.name() == init.artifact; })) {
        return absl::InvalidArgumentError(absl::StrCat("init_from: job ", init.job_id, " (",
                                                       Job::State_Name(source->state()),
                                                       ") has no ", init.artifact, " weights yet"));
      }
      spec->set_init_from(absl::StrCat(init.job_id, ":", init.artifact));  // explicit
    }
  }
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

absl::Status TrainerService::CheckDependency(const Caller& caller, int64_t after) const {
  absl::StatusOr<Job> dependency = store_->GetJob(after);
  if (!dependency.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("after: job ", after, " not found"));
  }
  if (!caller.MayActFor(dependency->owner())) {
    return NotYours(caller, absl::StrCat("after: job ", after));
  }
  return absl::OkStatus();
}

int TrainerService::QueueLimitFor(const Caller& caller) const {
  return caller.limited ? access_->limits().max_queued_jobs : 0;
}

absl::Status TrainerService::Submit(const trainer::v1::SubmitJobRequest& request,
                                    const Caller& caller, Job* response) {
  Job job;
  job.set_owner(caller.owner);
  ASSIGN_OR_RETURN(*job.mutable_spec(), PrepareSpec(request.spec(), caller));
  job.set_priority(request.priority());
  for (int64_t after : request.after()) {
    RETURN_IF_ERROR(CheckDependency(caller, after));
    job.add_after(after);
  }
  if (request.idempotency_key().size() > 256) {
    return absl::InvalidArgumentError("idempotency_key: at most 256 characters");
  }
  job.set_idempotency_key(request.idempotency_key());
  // Benchmarks run alone by default: a neighbour would distort the timing they exist for.
  job.set_exclusive(request.has_exclusive() ? request.exclusive() : job.spec().has_benchmark());
  bool existed = false;
  ASSIGN_OR_RETURN(*response, store_->CreateJob(job, &existed, QueueLimitFor(caller)));
  if (!existed) scheduler_->Wake();  // the store told the hub (watchers) itself
  return absl::OkStatus();
}

absl::Status TrainerService::Retry(const trainer::v1::RetryJobRequest& request,
                                   const Caller& caller, Job* response) {
  ASSIGN_OR_RETURN(Job old, OwnJob(caller, request.id()));
  if (!IsTerminal(old.state())) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", old.id(), " is still ", Job::State_Name(old.state())));
  }
  Job job;
  // Admitted again, as a new submission would be: its files, roots and uploads may have changed.
  ASSIGN_OR_RETURN(*job.mutable_spec(), PrepareSpec(old.spec(), caller));
  for (int64_t after : old.after()) {  // it waits for what the original waited for
    RETURN_IF_ERROR(CheckDependency(caller, after));
    job.add_after(after);
  }
  job.set_priority(old.priority());
  job.set_exclusive(old.exclusive());
  job.set_retry_of(old.id());
  job.set_owner(caller.owner);
  ASSIGN_OR_RETURN(*response, store_->CreateJob(job, nullptr, QueueLimitFor(caller)));
  scheduler_->Wake();
  return absl::OkStatus();
}

absl::Status TrainerService::CreateSweep(const trainer::v1::SubmitSweepRequest& request,
                                         const Caller& caller, trainer::v1::Sweep* response) {
  ASSIGN_OR_RETURN(std::vector<JobSpec> specs, ExpandSweep(request.spec()));
  std::vector<Job> members;
  const bool exclusive = request.spec().has_exclusive() ? request.spec().exclusive() : true;
  for (size_t i = 0; i < specs.size(); ++i) {
    absl::StatusOr<JobSpec> prepared = PrepareSpec(specs[i], caller);
    if (!prepared.ok()) {
      return absl::Status(
          prepared.status().code(),
          absl::StrCat("member ", i + 1, " of ", specs.size(), ": ", prepared.status().message()));
    }
    Job job;
    *job.mutable_spec() = std::move(*prepared);
    job.set_exclusive(exclusive);
    job.set_priority(request.spec().priority());
    job.set_owner(caller.owner);
    members.push_back(std::move(job));
  }
  ASSIGN_OR_RETURN(*response, store_->CreateSweep(request.spec(), members, QueueLimitFor(caller)));
  scheduler_->Wake();
  return absl::OkStatus();
}

absl::StatusOr<trainer::v1::Sweep> TrainerService::OwnSweep(const Caller& caller,
                                                            int64_t id) const {
  ASSIGN_OR_RETURN(trainer::v1::Sweep sweep, store_->GetSweep(id));
  std::string owner = sweep.owner();
  if (owner.empty() && !sweep.job_ids().empty()) {  // stored before sweeps named their owner
    ASSIGN_OR_RETURN(Job first, store_->GetJob(sweep.job_ids(0)));
    owner = first.owner();
  }
  if (!caller.MayActFor(owner)) return NotYours(caller, absl::StrCat("sweep ", id));
  return sweep;
}

absl::StatusOr<Job> TrainerService::OwnJob(const Caller& caller, int64_t id) const {
  ASSIGN_OR_RETURN(Job job, store_->GetJob(id));
  if (!caller.MayActFor(job.owner())) return NotYours(caller, absl::StrCat("job ", id));
  return job;
}

absl::StatusOr<trainer::v1::Blob> TrainerService::UsableBlob(const Caller& caller,
                                                             const std::string& digest) const {
  ASSIGN_OR_RETURN(trainer::v1::Blob blob, files_.blobs->Get(digest));
  // Someone else's upload is as good as absent: a digest seen in a log is not the content.
  if (!caller.is_admin() && !IsBlobOwner(blob, caller.owner)) {
    return absl::NotFoundError(absl::StrCat("blob ", digest, " is not stored on this daemon"));
  }
  return blob;
}

absl::Status TrainerService::Report(const trainer::v1::GetSweepReportRequest& request,
                                    const Caller& caller, trainer::v1::SweepReport* response) {
  ASSIGN_OR_RETURN(trainer::v1::Sweep sweep, OwnSweep(caller, request.id()));
  std::vector<Job> jobs;
  std::map<int64_t, JobTrace> traces;
  for (int64_t id : sweep.job_ids()) {
    ASSIGN_OR_RETURN(Job job, store_->GetJob(id));
    if (job.state() == Job::SUCCEEDED) {
      int64_t from = 1;
      // Wall time counts from when the job first started running: sweep members run one after
      // another, and time spent queued behind the others is not this configuration's.
      std::optional<google::protobuf::Timestamp> started;
      while (true) {
        ASSIGN_OR_RETURN(std::vector<trainer::v1::JobEvent> events,
                         store_->ReadEvents(id, from, 1000));
        for (const auto& e : events) {
          if (e.has_step()) traces[id].steps.push_back(e.step());
          if (!started && e.has_state_change() && e.state_change().state() == Job::RUNNING) {
            started = e.time();
          }
          if (e.has_epoch_summary()) {
            const trainer::v1::EpochSummary& summary = e.epoch_summary();
            traces[id].final_train_loss = summary.train_loss();
            if (summary.evaluated()) {
              const google::protobuf::Timestamp& from_time = started ? *started : job.create_time();
              const double wall = static_cast<double>(e.time().seconds() - from_time.seconds()) +
                                  (e.time().nanos() - from_time.nanos()) / 1e9;
              traces[id].evaluated.push_back(
                  {summary.validation_accuracy(), summary.elapsed_seconds(), wall});
            }
          }
        }
        if (events.size() < 1000) break;
        from = events.back().seq() + 1;
      }
    }
    jobs.push_back(std::move(job));
  }
  SweepReportOptions options;
  const std::string& baseline =
      request.baseline().empty() ? request.baseline_device() : request.baseline();
  if (!baseline.empty()) RETURN_IF_ERROR(ParseBaseline(baseline, &options));
  if (request.accuracy_tolerance() < 0 || request.loss_tolerance() < 0) {
    return absl::InvalidArgumentError("accuracy_tolerance, loss_tolerance: must be 0 or more");
  }
  if (request.accuracy_tolerance() > 0) options.accuracy_tolerance = request.accuracy_tolerance();
  if (request.loss_tolerance() > 0) options.loss_tolerance = request.loss_tolerance();
  if (!(request.time_to_accuracy() >= 0 && request.time_to_accuracy() <= 1)) {
    return absl::InvalidArgumentError("time_to_accuracy: a fraction from 0 to 1 (0.89 for 89%)");
  }
  options.time_to_accuracy = request.time_to_accuracy();
  *response = BuildSweepReport(sweep, jobs, traces, options);
  // A FIELD=VALUE baseline that no member has is a typo, not a table of dashes. (The default cpu
  // baseline of a sweep without cpu members has no baseline row either, and that is fine.)
  const auto& rows = response->rows();
  if (options.baseline_field != "device" && !jobs.empty() &&
      std::none_of(rows.begin(), rows.end(), [](const auto& row) { return row.is_baseline(); })) {
    std::set<std::string> values;
    for (const Job& job : jobs) values.insert(GetSpecField(job.spec(), options.baseline_field));
    return absl::InvalidArgumentError(absl::StrCat(
        "baseline: no member of sweep ", sweep.id(), " has ", options.baseline_text, "; its ",
        options.baseline_field,
        " values: ", absl::StrJoin(values, ", ", [](std::string* out, const std::string& v) {
          absl::StrAppend(out, v.empty() ? "(default)" : v);
        })));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* TrainerService::SubmitJob(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SubmitJobRequest, Job>(
      context, "SubmitJob", request, response,
      [this](const trainer::v1::SubmitJobRequest* request, Job* response, const Caller& caller) {
        return Submit(*request, caller, response);
      });
}

grpc::ServerUnaryReactor* TrainerService::GetJob(grpc::CallbackServerContext* context,
                                                 const trainer::v1::GetJobRequest* request,
                                                 Job* response) {
  return Offload(context, "GetJob", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(*response, OwnJob(caller, request->id()));
                   response->set_disk_bytes(JobDiskBytes(files_.jobs_dir, response->id()));
                   return absl::OkStatus();
                 });
}

absl::Status TrainerService::List(const trainer::v1::ListJobsRequest& request, const Caller& caller,
                                  trainer::v1::ListJobsResponse* response) {
  int page_size = request.page_size() == 0 ? kDefaultPageSize : request.page_size();
  if (page_size < 0 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must be between 1 and ", kMaxPageSize, ", got ", page_size));
  }
  int64_t before_id = 0;
  if (!request.page_token().empty() &&
      (!absl::SimpleAtoi(request.page_token(), &before_id) || before_id <= 0)) {
    return absl::InvalidArgumentError("page_token: not a token from a previous ListJobs");
  }
  Store::JobFilter filter;
  for (int state : request.states()) {
    if (!Job::State_IsValid(state) || state == Job::STATE_UNSPECIFIED) {
      return absl::InvalidArgumentError(absl::StrCat("states: unknown state ", state));
    }
    filter.states.push_back(static_cast<Job::State>(state));
  }
  filter.sweep_id = request.sweep_id();
  filter.model = request.model();
  filter.device = request.device() == "cuda" ? "cuda:0" : request.device();
  if (!caller.is_admin()) filter.owner = caller.owner;
  ASSIGN_OR_RETURN(std::vector<Job> jobs, store_->ListJobs(filter, before_id, page_size + 1));
  const bool more = static_cast<int>(jobs.size()) > page_size;
  if (more) jobs.resize(page_size);
  size_t reply_bytes = 0;
  for (Job& job : jobs) {
    job.set_disk_bytes(JobDiskBytes(files_.jobs_dir, job.id()));
    // The page ends early rather than outgrow what any client accepts by default.
    reply_bytes += job.ByteSizeLong() + 8;
    if (response->jobs_size() > 0 && reply_bytes > kMaxReplyBytes) break;
    *response->add_jobs() = std::move(job);
  }
  if (more || response->jobs_size() < static_cast<int>(jobs.size())) {
    response->set_next_page_token(absl::StrCat(response->jobs().rbegin()->id()));
  }
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* TrainerService::ListJobs(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* request,
                                                   grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::ListJobsRequest, trainer::v1::ListJobsResponse>(
      context, "ListJobs", request, response,
      [this](const trainer::v1::ListJobsRequest* request, trainer::v1::ListJobsResponse* response,
             const Caller& caller) { return List(*request, caller, response); });
}

grpc::ServerUnaryReactor* TrainerService::CancelJob(grpc::CallbackServerContext* context,
                                                    const trainer::v1::CancelJobRequest* request,
                                                    Job* response) {
  return Offload(context, "CancelJob", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   RETURN_IF_ERROR(OwnJob(caller, request->id()).status());
                   ASSIGN_OR_RETURN(*response, scheduler_->Cancel(request->id()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::SetJobPriority(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SetJobPriorityRequest, Job>(
      context, "SetJobPriority", request, response,
      [this](const trainer::v1::SetJobPriorityRequest* request, Job* response,
             const Caller& caller) -> absl::Status {
        RETURN_IF_ERROR(OwnJob(caller, request->id()).status());
        ASSIGN_OR_RETURN(*response, store_->SetPriority(request->id(), request->priority()));
        scheduler_->Wake();  // the new order may start it now
        return absl::OkStatus();
      });
}

grpc::ServerWriteReactor<trainer::v1::JobEvent>* TrainerService::WatchJob(
    grpc::CallbackServerContext* context, const trainer::v1::WatchJobRequest* request) {
  absl::StatusOr<Caller> caller = access_->Admit(*context, "WatchJob", request);
  if (!caller.ok()) return new RejectedWatch(ToGrpcStatus(caller.status()));
  absl::StatusOr<std::unique_ptr<AccessControl::WatchLease>> lease = access_->AcquireWatch(*caller);
  if (!lease.ok()) return new RejectedWatch(ToGrpcStatus(lease.status()));
  return WatchReactor::Start(store_, hub_, executor_, request->id(), request->from_seq(),
                             *std::move(lease), [caller = *caller](const Job& job) {
                               return caller.MayActFor(job.owner())
                                          ? absl::OkStatus()
                                          : NotYours(caller, absl::StrCat("job ", job.id()));
                             });
}

grpc::ServerUnaryReactor* TrainerService::ListJobEvents(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::ListJobEventsRequest, trainer::v1::ListJobEventsResponse>(
      context, "ListJobEvents", request, response,
      [this](const trainer::v1::ListJobEventsRequest* request,
             trainer::v1::ListJobEventsResponse* response, const Caller& caller) -> absl::Status {
        const int page_size = request->page_size() == 0 ? kDefaultEventPage : request->page_size();
        if (page_size < 0 || page_size > kMaxEventPage) {
          return absl::InvalidArgumentError(absl::StrCat("page_size: must be between 1 and ",
                                                         kMaxEventPage, ", got ", page_size));
        }
        ASSIGN_OR_RETURN(Job job, OwnJob(caller, request->id()));
        const int64_t from_seq = std::max<int64_t>(request->from_seq(), 1);
        ASSIGN_OR_RETURN(std::vector<trainer::v1::JobEvent> events,
                         store_->ReadEvents(job.id(), from_seq, page_size));
        size_t reply_bytes = 0;
        for (auto& event : events) {
          reply_bytes += event.ByteSizeLong() + 8;
          if (response->events_size() > 0 && reply_bytes > kMaxReplyBytes) break;
          *response->add_events() = std::move(event);
        }
        const int64_t last = response->events().empty() ? 0 : response->events().rbegin()->seq();
        const bool cut = response->events_size() < static_cast<int>(events.size());
        if (cut || (static_cast<int>(events.size()) == page_size && last < job.last_seq())) {
          response->set_next_seq(last + 1);
        }
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* TrainerService::RetryJob(grpc::CallbackServerContext* context,
                                                   const trainer::v1::RetryJobRequest* request,
                                                   Job* response) {
  return Offload(context, "RetryJob", request, [this, request, response](const Caller& caller) {
    return Retry(*request, caller, response);
  });
}

grpc::ServerUnaryReactor* TrainerService::SubmitSweep(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request,
                                                      grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SubmitSweepRequest, trainer::v1::Sweep>(
      context, "SubmitSweep", request, response,
      [this](const trainer::v1::SubmitSweepRequest* request, trainer::v1::Sweep* response,
             const Caller& caller) { return CreateSweep(*request, caller, response); });
}

grpc::ServerUnaryReactor* TrainerService::GetSweep(grpc::CallbackServerContext* context,
                                                   const trainer::v1::GetSweepRequest* request,
                                                   trainer::v1::Sweep* response) {
  return Offload(context, "GetSweep", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(*response, OwnSweep(caller, request->id()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::GetSweepReport(
    grpc::CallbackServerContext* context, const trainer::v1::GetSweepReportRequest* request,
    trainer::v1::SweepReport* response) {
  return Offload(context, "GetSweepReport", request,
                 [this, request, response](const Caller& caller) {
                   return Report(*request, caller, response);
                 });
}

grpc::ServerUnaryReactor* TrainerService::SetQueueState(grpc::CallbackServerContext* context,
                                                        const grpc::ByteBuffer* request,
                                                        grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::SetQueueStateRequest, trainer::v1::QueueState>(
      context, "SetQueueState", request, response,
      [this](const trainer::v1::SetQueueStateRequest* request, trainer::v1::QueueState* response,
             const Caller& caller) -> absl::Status {
        using Action = trainer::v1::SetQueueStateRequest;
        if (request->action() != Action::GET && !caller.is_admin()) {
          return absl::PermissionDeniedError(
              absl::StrCat("action: ", Action::Action_Name(request->action()),
                           " changes the queue for everyone "
                           "and needs an admin token; '",
                           caller.owner, "' is a user (GET is allowed)"));
        }
        absl::StatusOr<trainer::v1::QueueState> state;
        switch (request->action()) {
          case Action::PAUSE:
          case Action::DRAIN:  // the client polls until nothing runs
            state = scheduler_->SetPaused(true);
            break;
          case Action::RESUME:
            state = scheduler_->SetPaused(false);
            break;
          case Action::GET:
            state = scheduler_->State();
            break;
          default:
            return absl::InvalidArgumentError("action: one of PAUSE, RESUME, DRAIN, GET");
        }
        ASSIGN_OR_RETURN(*response, std::move(state));
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* TrainerService::ListDevices(
    grpc::CallbackServerContext* context, const trainer::v1::ListDevicesRequest* request,
    trainer::v1::ListDevicesResponse* response) {
  // Offloaded: the CPU's free memory is read from /proc, now.
  return Offload(context, "ListDevices", request, [this, response](const Caller&) -> absl::Status {
    *response = devices_;
    const std::map<std::string, std::vector<int64_t>> running = scheduler_->RunningJobsByDevice();
    const google::protobuf::Timestamp now = google::protobuf::util::TimeUtil::GetCurrentTime();
    for (trainer::v1::Device& device : *response->mutable_devices()) {
      if (auto it = running.find(device.name()); it != running.end()) {
        for (int64_t id : it->second) device.add_running_jobs(id);
      }
      if (device.name() == "cpu") {
        device.set_free_memory_bytes(ProcKilobytes("/proc/meminfo", "MemAvailable"));
        *device.mutable_free_memory_time() = now;
      } else {
        *device.mutable_free_memory_time() = devices_time_;
      }
    }
    return absl::OkStatus();
  });
}

namespace {

// A grpc::ServerReadReactor refused before it starts (authentication).
class RejectedUpload : public grpc::ServerReadReactor<trainer::v1::UploadBlobRequest> {
 public:
  explicit RejectedUpload(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// Download names are file names in the job's directory: nothing that could climb out of it.
absl::Status ValidateArtifactName(const std::string& name) {
  const bool plain =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      });
  if (plain) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("name: '", name.substr(0, 64),
                   "' is not an artifact name (letters, digits, '-' and '_'; "
                   "e.g. best, final)"));
}

}  // namespace

grpc::ServerReadReactor<trainer::v1::UploadBlobRequest>* TrainerService::UploadBlob(
    grpc::CallbackServerContext* context, trainer::v1::Blob* response) {
  absl::StatusOr<Caller> caller = access_->Admit(*context, "UploadBlob", nullptr);
  if (!caller.ok()) return new RejectedUpload(ToGrpcStatus(caller.status()));
  UploadReactor::Options options{files_.worker_path, files_.max_upload_bytes, caller->owner,
                                 caller->limited};
  options.measure_stored = [this, owner = caller->owner] {
    return MeasureStorage(*store_, *files_.blobs, files_.jobs_dir, owner);
  };
  return UploadReactor::Start(files_.blobs, executor_, &uploads_, std::move(options), response);
}

grpc::ServerUnaryReactor* TrainerService::GetBlob(grpc::CallbackServerContext* context,
                                                  const trainer::v1::GetBlobRequest* request,
                                                  trainer::v1::Blob* response) {
  return Offload(context, "GetBlob", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(*response, UsableBlob(caller, request->digest()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::DeleteJob(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) {
  return OffloadChecked<trainer::v1::DeleteJobRequest, trainer::v1::DeleteJobResponse>(
      context, "DeleteJob", request, response,
      [this](const trainer::v1::DeleteJobRequest* request, trainer::v1::DeleteJobResponse* response,
             const Caller& caller) -> absl::Status {
        ASSIGN_OR_RETURN(const Job job, OwnJob(caller, request->id()));
        const int64_t bytes = JobDiskBytes(files_.jobs_dir, request->id());
        ASSIGN_OR_RETURN(std::vector<std::string> unused,
                         store_->DeleteJob(request->id(), request->force()));
        // The job is gone from the store (committed); its files follow. A crash in between leaves
        // files no job names, never a job without its files.
        response->set_id(request->id());
        int64_t freed = bytes;
        RETURN_IF_ERROR(RemoveJobFiles(files_.jobs_dir, request->id()));
        for (const std::string& digest : unused) {
          absl::StatusOr<trainer::v1::Blob> blob = files_.blobs->Get(digest);
          ASSIGN_OR_RETURN(const bool removed, files_.blobs->Release(digest, job.owner()));
          if (!removed) continue;  // another token uploaded it too: theirs stays
          if (blob.ok()) freed += blob->size_bytes();
          response->add_removed_blobs(digest);
        }
        response->set_freed_bytes(freed);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* TrainerService::Shutdown(grpc::CallbackServerContext* context,
                                                   const trainer::v1::ShutdownRequest* request,
                                                   trainer::v1::ShutdownResponse* response) {
  return Offload(context, "Shutdown", request, [this, response]() -> absl::Status {
    if (!shutdown_hook_) {
      return absl::FailedPreconditionError(
          "this traind is embedded in another program and cannot be stopped remotely");
    }
    response->set_pid(getpid());
    shutdown_hook_();  // asynchronous: the reply goes out before the server stops
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* TrainerService::ListArtifacts(
    grpc::CallbackServerContext* context, const trainer::v1::ListArtifactsRequest* request,
    trainer::v1::ListArtifactsResponse* response) {
  return Offload(context, "ListArtifacts", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(Job job, OwnJob(caller, request->id()));
                   *response->mutable_artifacts() = job.result().artifacts();
                   return absl::OkStatus();
                 });
}

grpc::ServerWriteReactor<trainer::v1::DownloadArtifactResponse>* TrainerService::DownloadArtifact(
    grpc::CallbackServerContext* context, const trainer::v1::DownloadArtifactRequest* request) {
  absl::StatusOr<Caller> caller = access_->Admit(*context, "DownloadArtifact", request);
  if (!caller.ok()) {
    return DownloadReactor::Start(
        executor_,
        [status = caller.status()]() -> absl::StatusOr<DownloadReactor::Source> { return status; });
  }
  return DownloadReactor::Start(
      executor_,
      [this, id = request->id(), caller = *caller,
       name = request->name().empty()
                  ? std::string("best")
                  : request->name()]() -> absl::StatusOr<DownloadReactor::Source> {
        RETURN_IF_ERROR(ValidateArtifactName(name));
        ASSIGN_OR_RETURN(Job job, OwnJob(caller, id));
        std::vector<std::string> names;
        for (const trainer::v1::Artifact& artifact : job.result().artifacts()) {
          if (artifact.name() == name) {
            return DownloadReactor::Source{
                artifact, absl::StrCat(files_.jobs_dir, "/", id, "/", name, ".pt")};
          }
          names.push_back(artifact.name());
        }
        return absl::NotFoundError(
            absl::StrCat("job ", id, " has no artifact '", name,
                         "'; it has: ", names.empty() ? "none (yet)" : absl::StrJoin(names, ", ")));
      });
}

}  // namespace traind
