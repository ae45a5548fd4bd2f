// Daemon: traind as a library with a lifecycle, so tests start a real one on a temp socket.
//   auto daemon = Daemon::Start(options);   // listening when this returns
//   (*daemon)->Shutdown();                  // stop accepting, stop the running worker, re-queue it
//   (*daemon)->Wait();                      // until shut down (e.g. from a signal handler thread)
// Thread-safe.
#ifndef TRAIND_SERVER_DAEMON_H_
#define TRAIND_SERVER_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/access_control.h"
#include "server/admission.h"
#include "server/disk_reserve.h"
#include "server/event_hub.h"
#include "server/executor.h"
#include "server/http/dashboard_server.h"
#include "server/job_launcher.h"
#include "server/mps_control.h"
#include "server/owned_paths.h"
#include "server/peer_service.h"
#include "server/program_sandbox.h"
#include "server/retention.h"
#include "server/scheduler.h"
#include "server/search_driver.h"
#include "server/store.h"
#include "server/trainer_service.h"

namespace traind {

struct DaemonOptions {
  std::string state_dir;            // required; created 0700 if missing (PreparePrivateDir)
  std::vector<std::string> listen;  // "unix:PATH" or "HOST:PORT"; default unix:<state>/traind.sock
  bool allow_insecure_tcp = false;  // plaintext TCP, loopback only
  // TCP listeners other than plaintext loopback need a server certificate and key (PEM files)
  // and a token file; a client CA makes clients present a certificate it signed.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string token_file;  // one bearer token per line; see AccessControl
  AccessControl::Limits limits;
  int max_request_bytes = 4 << 20;
  int64_t max_upload_bytes = int64_t{8} << 30;  // one uploaded file (model, dataset)
  // What one token may hold (its uploads and its jobs' files); 0: no limit. Local callers: none.
  int64_t max_storage_per_token = int64_t{50} << 30;
  std::string worker_path;  // default: traind-worker beside this executable
  absl::Duration cancel_grace = absl::Seconds(10);
  double checkpoint_minutes = 10;   // running jobs checkpoint at least this often; 0: off
  double retain_finished_days = 0;  // delete what ended longer ago than this; 0: keep all
  int executor_threads = 4;
  std::map<std::string, int> slots;  // jobs at once per device; default 1
  // The host name Slurm tasks reach this machine at, for jobs with backend slurm (empty: this
  // machine's name, as gethostname gives it).
  std::string slurm_address;
  // Jobs on several hosts (JobSpec.hosts): this traind's name in them and its peers' names (a
  // job may name these), the environment traind-hosts gets (hosts/peer_config.h: how to reach
  // each peer), and how long such a job waits for its hosts before it fails.
  std::string host_name;
  std::vector<std::string> peer_names;
  std::vector<std::string> hosts_environment;
  absl::Duration host_wait = absl::Minutes(10);
  int warm_workers = 1;  // traind-worker processes started ahead of their jobs
  // Run an MPS control daemon of traind's own for a search's trials packed on a GPU
  // (server/mps_control.h), where nvidia-cuda-mps-control is on PATH (traind --mps auto|off).
  bool mps = true;
  int worker_nice = 10;                 // workers' nice increment over traind's own (0-19)
  bool enable_fault_injection = false;  // accept JobSpec.debug (tests only)
  // Called by the Shutdown RPC (trainctl shutdown); unset: that RPC is refused.
  std::function<void()> shutdown_hook;
  // Jobs may read datasets only under these directories (plus the default Fashion-MNIST one).
  std::vector<std::string> data_roots;
  // The interpreters script jobs may name (traind --python NAME=PATH), by name. Empty: Debian's
  // python3 as "python3" where /usr/bin/python3 exists (DefaultInterpreters).
  std::map<std::string, std::string> interpreters;
  // What each process of a script job's program may use (setrlimit: RLIMIT_DATA, RLIMIT_FSIZE);
  // 0: no limit. traind --script-memory-limit, --script-file-size-limit.
  int64_t script_memory_bytes = 0;
  int64_t script_file_size_bytes = 0;
  // Where programs run (traind --script-sandbox; server/program_sandbox.h), and files of traind's
  // own besides its state directory, token file and TLS key that they must not see (the peers'
  // token file and key, the trainctl configuration naming the contexts peers are reached by).
  SandboxMode script_sandbox = SandboxMode::kAuto;
  std::vector<std::string> private_files;
  // HOST:PORT of the dashboard, JSON API and /metrics (server/http/); empty: nothing listens.
  // Plain HTTP on loopback only; with tls_cert/tls_key it is HTTPS and may listen anywhere.
  std::string http;
};

class Daemon {
 public:
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(DaemonOptions options);
  ~Daemon();

  void Shutdown();
  void Wait();

  // Where it listens, e.g. "unix:/tmp/x/traind.sock" or "127.0.0.1:43127" (the bound port).
  const std::vector<std::string>& addresses() const { return addresses_; }
  // The dashboard (options.http), or null.
  DashboardServer* dashboard() const { return dashboard_.get(); }
  // How programs are confined, in a line for traind's start; whether that line is a warning.
  const SandboxChoice& sandbox() const { return sandbox_; }

 private:
  // Start's steps, in order. The state directory (locked), the store and the blobs; returns the
  // machine's devices.
  absl::StatusOr<trainer::v1::ListDevicesResponse> OpenState();
  // The event hub, executor, scheduler and both gRPC services.
  void CreateServices(const trainer::v1::ListDevicesResponse& devices);
  // How the scheduler's launcher starts workers (and traind's MPS daemon, mps_, where `gpus` may
  // share one).
  ProcessLauncher::Options LauncherOptions(const JobPrograms& programs,
                                           const std::vector<std::string>& gpus);
  // The gRPC server on every --listen address (TLS on TCP when `ssl` is set).
  absl::Status Listen(const std::optional<grpc::SslServerCredentialsOptions>& ssl);
  absl::Status StartDashboard(const trainer::v1::ListDevicesResponse& devices,
                              const std::string& local_session_secret);

  Daemon() = default;

  DaemonOptions options_;
  SandboxChoice sandbox_;
  int lock_fd_ = -1;
  std::unique_ptr<DiskReserve> disk_reserve_;  // space for jobs' ends when the disk fills
  std::unique_ptr<Store> store_;
  std::unique_ptr<BlobStore> blobs_;
  std::unique_ptr<EventHub> hub_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<MpsControl> mps_;            // outlives the workers that connect to it
  std::unique_ptr<ProcessLauncher> launcher_;  // outlives the scheduler, which uses it
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<SearchDriver> searches_;  // after the scheduler, whose Wake it calls
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<Admission> admission_;
  std::unique_ptr<TrainerService> service_;
  std::unique_ptr<PeerService> peer_service_;
  std::unique_ptr<Retention> retention_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<DashboardServer> dashboard_;
  std::vector<std::string> addresses_;
  std::vector<BoundSocket> sockets_;  // removed at shutdown if still ours
  absl::Notification shut_down_;
  absl::Mutex shutdown_mu_;
};

// traind-worker next to the running executable.
std::string DefaultWorkerPath();

}  // namespace traind

#endif  // TRAIND_SERVER_DAEMON_H_
