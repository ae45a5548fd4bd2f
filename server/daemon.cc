#include "server/daemon.h"

#include <fcntl.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/impl/server_builder_option.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/cpu_threads.h"
#include "common/durable_file.h"
#include "common/log_priority.h"
#include "common/loopback.h"
#include "common/on_path.h"
#include "common/paths.h"
#include "common/random_secret.h"
#include "common/script_spec.h"
#include "common/status_macros.h"
#include "server/http/http_sessions.h"
#include "server/http/prometheus_metrics.h"
#include "server/owned_paths.h"
#include "supervise/worker_process.h"

namespace traind {

namespace {

// Takes server reflection's plugin out of a ServerBuilder (the plugin names itself
// "proto_server_reflection").
class WithoutReflection : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [](const std::unique_ptr<grpc::ServerBuilderPlugin>& plugin) {
                                    return plugin->name() == "proto_server_reflection";
                                  }),
                   plugins->end());
  }
};

// One daemon per state directory: a second one would corrupt nothing (SQLite locks) but would
// run jobs twice.
absl::StatusOr<int> LockStateDir(const std::string& dir) {
  const std::string path = dir + "/traind.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return absl::AlreadyExistsError(
        absl::StrCat("another traind is already running with state directory ", dir));
  }
  return fd;
}

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  absl::StatusOr<std::string> pem = ReadTextFile(path);
  if (!pem.ok())
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", pem.status().message()));
  if (pem->find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": '", path, "' is not a PEM file"));
  }
  return pem;
}

// Asks traind-worker which devices this machine has (WorkerRequest.list_devices); the daemon itself
// never loads LibTorch. The worker needs about a second to start LibTorch, so the probe runs while
// the daemon opens its state (Start) and is collected when the devices are needed: a restart costs
// the longer of the two, not their sum. A probe never collected (start-up failed) is killed and
// reaped with its WorkerProcess.
class DeviceProbe {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceProbe>> Start(const std::string& worker_path) {
    trainer::v1::WorkerRequest request;
    request.set_list_devices(true);
    absl::StatusOr<std::unique_ptr<WorkerProcess>> worker =
        WorkerProcess::Start(worker_path, request);
    if (!worker.ok()) return CannotList(worker_path, worker.status().message());
    return std::unique_ptr<DeviceProbe>(new DeviceProbe(worker_path, *std::move(worker)));
  }

  // Waits for the worker's answer.
  absl::StatusOr<trainer::v1::ListDevicesResponse> Finish() {
    trainer::v1::ListDevicesResponse devices;
    const bool answered =
        worker_->Read(&devices, absl::InfiniteDuration()) == WorkerProcess::ReadResult::kEvent;
    trainer::v1::JobEvent nothing_more;
    while (worker_->ReadEvent(&nothing_more, absl::InfiniteDuration()) !=
           WorkerProcess::ReadResult::kEnd) {
    }
    const WorkerProcess::Exit exit = worker_->Wait();
    if (!answered || !exit.clean()) return CannotList(worker_path_, exit.Describe());
    return devices;
  }

 private:
  DeviceProbe(std::string worker_path, std::unique_ptr<WorkerProcess> worker)
      : worker_path_(std::move(worker_path)), worker_(std::move(worker)) {}
  static absl::Status CannotList(const std::string& worker_path, absl::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot list devices with ", worker_path,
        " (is traind-worker installed next to traind? --worker sets its path): ", why));
  }
  const std::string worker_path_;
  std::unique_ptr<WorkerProcess> worker_;
};

// The configured roots plus the default Fashion-MNIST directory, each twice: as named (made
// absolute, `..` taken by name) and resolved (symlinks too). A path is judged first by name
// against these, so either spelling of a root must be there: the name for the default directory
// a job gets when it names none (which may be a symlink), the resolved one for the paths
// admission stores. A root that does not exist stays by name: a path under it is then "no such
// directory", not "outside the roots".
std::vector<std::string> DataRoots(std::vector<std::string> roots) {
  roots.push_back(DefaultFashionMnistDir());
  return AsGivenAndResolved(roots);
}

}  // namespace

std::string DefaultWorkerPath() {
  std::error_code error;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "traind-worker";
  return (self.parent_path() / "traind-worker").string();
}

// The interpreters script jobs may name: the operator's (--python), else Debian's python3, which
// has PyTorch (python3-torch), when it is installed.
static std::map<std::string, std::string> Interpreters(
    const std::map<std::string, std::string>& configured) {
  if (!configured.empty()) return configured;
  if (access("/usr/bin/python3", X_OK) != 0) return {};
  return {{"python3", "/usr/bin/python3"}};
}

// What the listeners may be: TCP needs TLS, or loopback with --insecure-loopback, and tokens.
static absl::Status CheckListeners(const DaemonOptions& options, bool tls) {
  if (tls && (options.tls_cert.empty() || options.tls_key.empty())) {
    return absl::InvalidArgumentError("tls: --tls-cert and --tls-key go together");
  }
  if (!options.tls_client_ca.empty() && !tls) {
    return absl::InvalidArgumentError("tls-client-ca: needs --tls-cert and --tls-key");
  }
  for (const std::string& address : options.listen) {
    if (absl::StartsWith(address, "unix:")) continue;
    if (!tls && !(options.allow_insecure_tcp && IsLoopbackAddress(address))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "listen: ", address,
          ": TCP needs TLS (--tls-cert, --tls-key) and --token-file; plaintext TCP is allowed "
          "only on loopback (127.0.0.1:PORT) with --insecure-loopback"));
    }
    // Without tokens every local user (any process on a loopback address) would get the
    // daemon's powers, so plaintext loopback needs them as much as TLS does.
    if (options.token_file.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("listen: ", address,
                       ": a TCP listener needs --token-file (bearer tokens, one per "
                       "line: TOKEN [NAME [ROLE]]; deploy/make-certs.sh makes one)"));
    }
  }
  return absl::OkStatus();
}

// The TLS listeners' certificate, and the client CA when clients must present certificates.
static absl::StatusOr<grpc::SslServerCredentialsOptions> ReadServerTls(
    const DaemonOptions& options) {
  grpc::SslServerCredentialsOptions ssl;
  ASSIGN_OR_RETURN(std::string cert, ReadPem("tls-cert", options.tls_cert));
  ASSIGN_OR_RETURN(std::string key, ReadPem("tls-key", options.tls_key));
  ssl.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
  if (!options.tls_client_ca.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadPem("tls-client-ca", options.tls_client_ca));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return ssl;
}

// A --data-root that is not a directory is a mistake the operator should hear of at start, not
// as "no such directory" on some user's job later. Roots that are links are followed.
static absl::Status CheckDataRoots(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    std::error_code error;
    if (!std::filesystem::is_directory(root, error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data-root: ", root, ": ",
          std::filesystem::exists(root, error) ? "not a directory" : "no such directory"));
    }
  }
  return absl::OkStatus();
}

// What a program must not see of traind's: its state (database, tokens, jobs, uploads) and the
// files its flags name that hold secrets.
static std::vector<std::string> PrivatePaths(const DaemonOptions& options) {
  std::vector<std::string> paths = {options.state_dir, options.token_file, options.tls_key};
  paths.insert(paths.end(), options.private_files.begin(), options.private_files.end());
  return paths;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  std::unique_ptr<Daemon> daemon(new Daemon());
  if (options.state_dir.empty()) return absl::InvalidArgumentError("state_dir: required");
  if (options.worker_path.empty()) options.worker_path = DefaultWorkerPath();
  if (options.listen.empty())
    options.listen.push_back("unix:" + options.state_dir + "/traind.sock");
  const bool tls = !options.tls_cert.empty() || !options.tls_key.empty();
  RETURN_IF_ERROR(CheckListeners(options, tls));
  RETURN_IF_ERROR(CheckDataRoots(options.data_roots));
  std::optional<grpc::SslServerCredentialsOptions> ssl;
  if (tls) {
    ASSIGN_OR_RETURN(ssl, ReadServerTls(options));
  }
  ASSIGN_OR_RETURN(daemon->access_, AccessControl::Create(options.token_file, options.limits));
  daemon->options_ = options;
  ASSIGN_OR_RETURN(daemon->sandbox_, ChooseSandbox(options.script_sandbox, PrivatePaths(options),
                                                   DataRoots(options.data_roots)));
  ASSIGN_OR_RETURN(trainer::v1::ListDevicesResponse devices, daemon->OpenState());
  daemon->CreateServices(devices);
  // The dashboard's in-process calls for local browser sessions carry this secret.
  const std::string local_session_secret = options.http.empty() ? "" : RandomSecret();
  daemon->access_->set_local_session_secret(local_session_secret);
  RETURN_IF_ERROR(daemon->Listen(ssl));
  if (!options.http.empty()) RETURN_IF_ERROR(daemon->StartDashboard(devices, local_session_secret));
  RETURN_IF_ERROR(daemon->scheduler_->Start());
  daemon->searches_->Start();
  if (options.retain_finished_days > 0) {
    daemon->retention_ = std::make_unique<Retention>(
        daemon->store_.get(), daemon->blobs_.get(),
        Retention::Options{absl::Seconds(options.retain_finished_days * 86400), absl::Hours(1),
                           options.state_dir + "/jobs"});
    daemon->retention_->Start();
  }
  return daemon;
}

absl::StatusOr<trainer::v1::ListDevicesResponse> Daemon::OpenState() {
  // The device listing starts first and is collected last: a restart costs the longer of the
  // two, not their sum (docs/architecture.md).
  ASSIGN_OR_RETURN(std::unique_ptr<DeviceProbe> probe, DeviceProbe::Start(options_.worker_path));
  RETURN_IF_ERROR(PreparePrivateDir(options_.state_dir));
  ASSIGN_OR_RETURN(lock_fd_, LockStateDir(options_.state_dir));
  disk_reserve_ = std::make_unique<DiskReserve>(options_.state_dir + "/reserve");
  if (!disk_reserve_->Restore()) {
    LogAt(LogPriority::kWarning)
        << "traind: WARNING: no room for " << DiskReserve::kDefaultBytes / (1 << 20)
        << " MiB of reserve in " << options_.state_dir
        << ": if this disk fills, a job's end may wait until there is room\n";
  }
  ASSIGN_OR_RETURN(store_, Store::Open(options_.state_dir + "/traind.db"));
  ASSIGN_OR_RETURN(blobs_, BlobStore::Open(options_.state_dir + "/blobs"));
  // Before any worker starts: a dataset copy a killed worker was writing.
  RemoveStaleTemporaries(options_.state_dir + "/cache");
  return probe->Finish();
}

ProcessLauncher::Options Daemon::LauncherOptions(const JobPrograms& programs,
                                                 const std::vector<std::string>& gpus) {
  ProcessLauncher::Options launching;
  launching.programs = programs;
  const auto cpu_slots = options_.slots.find("cpu");
  launching.worker_environment = WorkerEnvironment(
      options_.state_dir + "/cache", cpu_slots == options_.slots.end() ? 1 : cpu_slots->second,
      options_.worker_nice);
  launching.warm_workers = options_.warm_workers;
  if (!gpus.empty()) launching.prepare_device = gpus[0];
  if (!gpus.empty() && options_.mps) {
    if (const std::string control = FindOnPath("nvidia-cuda-mps-control"); !control.empty()) {
      mps_ =
          std::make_unique<MpsControl>(MpsControl::Options{control, options_.state_dir + "/mps"});
      launching.packed_gpu_environment = [mps = mps_.get()] { return mps->ClientEnvironment(); };
    }
  }
  // TRAIND_WORKER_FORK=0 starts every worker as a program (as before the fork server): the A/B
  // of bench/pack_trials_gpu.sh's part prefix spawn-, and a way out should forking ever misbehave.
  if (const char* fork = std::getenv("TRAIND_WORKER_FORK");
      fork != nullptr && fork == std::string("0")) {
    launching.fork_workers = false;
  }
  // TRAIND_WORKER_REUSE=0: each packed trial's worker exits after it (bench/pack_trials_gpu.sh's
  // part prefix fresh-).
  if (const char* reuse = std::getenv("TRAIND_WORKER_REUSE");
      reuse != nullptr && reuse == std::string("0")) {
    launching.reuse_packed_workers = false;
  }
  launching.slurm_address = options_.slurm_address;
  launching.hosts_environment = options_.hosts_environment;
  // CreateServices makes the scheduler right after the launcher, before its loop can take a warm
  // worker.
  launching.on_warm_taken = [this] { scheduler_->Wake(); };
  return launching;
}

void Daemon::CreateServices(const trainer::v1::ListDevicesResponse& devices) {
  hub_ = std::make_unique<EventHub>();
  store_->SetEventListener(
      [hub = hub_.get()](int64_t job_id, int64_t seq) { hub->Publish(job_id, seq); });
  executor_ = std::make_unique<Executor>(options_.executor_threads);
  const std::vector<std::string> data_roots = DataRoots(options_.data_roots);
  const JobPrograms programs = JobPrograms::Beside(options_.worker_path);
  // Workers open a job's data beneath these: the roots, and the blob directory, where an uploaded
  // data_file's data_path points (traind's own, written under a digest; no user names a path in it,
  // admission checks user paths against the data roots alone).
  WorkerRequestOptions requests;
  requests.blobs = blobs_.get();
  requests.interpreters = Interpreters(options_.interpreters);
  requests.script_memory_bytes = options_.script_memory_bytes;
  requests.script_file_size_bytes = options_.script_file_size_bytes;
  requests.script_sandbox = sandbox_.sandbox;
  requests.data_roots = data_roots;
  requests.data_roots.push_back(
      std::filesystem::absolute(options_.state_dir + "/blobs").lexically_normal().string());
  requests.checkpoint_interval_seconds = options_.checkpoint_minutes * 60;
  requests.jobs_dir = options_.state_dir + "/jobs";
  Scheduler::Options scheduling;
  for (const auto& device : devices.devices()) {
    if (absl::StartsWith(device.name(), "cuda:")) scheduling.gpus.push_back(device.name());
  }
  launcher_ = std::make_unique<ProcessLauncher>(LauncherOptions(programs, scheduling.gpus));
  scheduling.launcher = launcher_.get();
  scheduling.requests = requests;
  scheduling.cancel_grace = options_.cancel_grace;
  scheduling.slots = options_.slots;
  scheduling.host_wait = options_.host_wait;
  scheduling.disk_reserve = disk_reserve_.get();
  scheduling.may_start = [access = access_.get()](const trainer::v1::Job& job) {
    return access->MayStart(job.owner(), IsScriptJob(job.spec()));
  };
  // A trial of a search that paused or ended: the search decides what comes next.
  scheduling.on_job_ended = [this] {
    if (searches_) searches_->Wake();
  };
  scheduler_ = std::make_unique<Scheduler>(store_.get(), hub_.get(), std::move(scheduling));
  SearchDriver::Options searching;
  searching.lanes = [scheduler = scheduler_.get()](const trainer::v1::JobSpec& spec) {
    return scheduler->Lanes(spec);
  };
  searching.on_queued = [scheduler = scheduler_.get()] { scheduler->Wake(); };
  searching.set_pack_width = [scheduler = scheduler_.get()](int64_t sweep_id, int width,
                                                            PackedTrials trials) {
    scheduler->SetPackWidth(sweep_id, width, trials);
  };
  // A bound on how many trials share a GPU (each trial's worker launches its kernels from a host
  // thread of its own) or the CPU lane (each takes a core at least).
  searching.host_cores = UsableCores(ReadCpuFacts());
  if (mps_) {
    searching.gpu_side_by_side = [mps = mps_.get()] { return !mps->ClientEnvironment().empty(); };
  }
  searches_ = std::make_unique<SearchDriver>(store_.get(), std::move(searching));
  Admission::Options admitting;
  admitting.devices = devices;
  admitting.data_roots = data_roots;
  admitting.jobs_dir = options_.state_dir + "/jobs";
  admitting.enable_fault_injection = options_.enable_fault_injection;
  admitting.slurm_available = OnPath("sbatch") && OnPath("squeue") && OnPath("scancel") &&
                              access(programs.slurm_launcher.c_str(), X_OK) == 0;
  admitting.host_name = options_.host_name;
  admitting.peer_names = options_.peer_names;
  admitting.interpreters = Interpreters(options_.interpreters);
  admission_ = std::make_unique<Admission>(store_.get(), blobs_.get(), std::move(admitting));
  service_ = std::make_unique<TrainerService>(
      store_.get(), hub_.get(), executor_.get(), scheduler_.get(), access_.get(), admission_.get(),
      TrainerService::Files{blobs_.get(), options_.state_dir + "/jobs", options_.worker_path,
                            options_.max_upload_bytes, options_.max_storage_per_token});
  service_->set_shutdown_hook(options_.shutdown_hook);
  service_->set_search_driver(searches_.get());
  peer_service_ = std::make_unique<PeerService>(
      scheduler_.get(), access_.get(), admission_.get(),
      PeerService::Options{programs.worker, launcher_->worker_environment(), requests,
                           options_.state_dir + "/peer-jobs", options_.max_upload_bytes,
                           options_.cancel_grace});
}

absl::Status Daemon::Listen(const std::optional<grpc::SslServerCredentialsOptions>& ssl) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();  // before the builder: it copies them
  grpc::ServerBuilder builder;
  // Over TCP an unauthenticated caller may see health only; reflection (for grpcurl) is offered
  // when every listener is a Unix socket. Linking grpc++_reflection registers its plugin for every
  // server at static initialisation, whether or not InitProtoReflectionServerBuilderPlugin() is
  // called, so the plugin has to be taken out again where it must not serve.
  const std::vector<std::string>& listen = options_.listen;
  const bool any_tcp = std::any_of(listen.begin(), listen.end(), [](const std::string& a) {
    return !absl::StartsWith(a, "unix:");
  });
  if (any_tcp) builder.SetOption(std::make_unique<WithoutReflection>());
  std::vector<int> ports(listen.size(), 0);
  for (size_t i = 0; i < listen.size(); ++i) {
    const bool unix_socket = absl::StartsWith(listen[i], "unix:");
    if (unix_socket) RETURN_IF_ERROR(ClaimSocketPath(listen[i].substr(5)));
    builder.AddListeningPort(listen[i],
                             ssl.has_value() && !unix_socket ? grpc::SslServerCredentials(*ssl)
                                                             : grpc::InsecureServerCredentials(),
                             &ports[i]);
  }
  builder.RegisterService(service_.get());
  builder.RegisterService(peer_service_.get());
  // Peers' launchers ping every 2 s to notice a host that went away (hosts/peer_config.cc):
  // allowed, as is pinging callers here every 10 s to notice a coordinator that did.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 1000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  builder.SetMaxReceiveMessageSize(options_.max_request_bytes);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError("cannot listen on the requested addresses (in use?)");
  }
  for (size_t i = 0; i < listen.size(); ++i) {
    if (absl::StartsWith(listen[i], "unix:")) {
      ASSIGN_OR_RETURN(BoundSocket socket, AdoptBoundSocket(listen[i].substr(5)));
      sockets_.push_back(std::move(socket));
      addresses_.push_back(listen[i]);
    } else {
      addresses_.push_back(absl::StrCat(listen[i].substr(0, listen[i].rfind(':')), ":", ports[i]));
    }
  }
  return absl::OkStatus();
}

absl::Status Daemon::StartDashboard(const trainer::v1::ListDevicesResponse& devices,
                                    const std::string& local_session_secret) {
  DashboardServer::Options http;
  http.address = options_.http;
  http.tls_cert = options_.tls_cert;
  http.tls_key = options_.tls_key;
  http.token_path = options_.state_dir + "/http.token";
  // Bodies are read before the caller is known: at most 1 MiB (a JSON sweep of a few thousand
  // configurations), or less with a smaller --max-request-bytes.
  http.max_request_bytes = std::min(options_.max_request_bytes, 1 << 20);
  ASSIGN_OR_RETURN(dashboard_,
                   DashboardServer::Start(
                       http, server_->InProcessChannel(grpc::ChannelArguments()), access_.get(),
                       local_session_secret,
                       std::make_unique<PrometheusMetrics>(store_.get(), scheduler_.get(), devices,
                                                           options_.state_dir, &hub_->latency())));
  return absl::OkStatus();
}

void Daemon::Shutdown() {
  absl::MutexLock lock(&shutdown_mu_);
  if (shut_down_.HasBeenNotified()) return;
  // Stop taking calls first (the dashboard's streams end within a second; open gRPC watches are
  // cancelled after a short grace), then the queue.
  if (dashboard_) dashboard_->Stop();
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  retention_.reset();                // a pass in progress ends after its batch
  if (searches_) searches_->Stop();  // before the queue: it queues trials
  if (scheduler_) scheduler_->Shutdown();
  executor_.reset();  // runs what is left: every reactor finishes
  if (hub_) {
    // How fast events reached watchers over this daemon's life (docs/benchmarks-history.md, soak).
    std::cerr << hub_->latency().Summary(PriorityPrefix(LogPriority::kInfo) + "traind: ");
  }
  for (const BoundSocket& socket : sockets_) RemoveBoundSocket(socket);
  shut_down_.Notify();
}

void Daemon::Wait() { shut_down_.WaitForNotification(); }

Daemon::~Daemon() {
  Shutdown();
  if (server_) server_->Wait();
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace traind
