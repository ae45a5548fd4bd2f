// traind-hosts: runs one job on several traind hosts (JobSpec.hosts), started by the traind the
// job was submitted to (the coordinator) in a worker's place. To traind it is a worker: the
// WorkerRequest on stdin, the job's events on stdout, an exit status from supervise/worker_exit.h,
// SIGTERM to cancel and SIGUSR1 to checkpoint and stop. Behind that:
//   1. reserves the job's devices on every peer at once (Peers.Reserve, 10 s each, in parallel),
//      or on none: one that refuses or does not answer has the others released, and the job
//      goes back to the queue to try again (kWorkerHostsUnavailable) unless the peer refused
//      the job itself (then it fails);
//   2. sends each peer the job's checkpoint when there is one (every rank resumes from it);
//   3. runs this host's ranks on the devices traind placed (TRAIND_HOST_DEVICES) and the others
//      through the peers (Peers.RunRanks), all with torchrun's environment: rank 0 here, whose
//      rendezvous store listens on a free port on every interface, at the address the peers
//      see this host at;
//   4. relays every rank's events into the job's one stream, and when any rank ends badly or a
//      host goes away (its stream breaks), stops all the others at once.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/free_port.h"
#include "common/job_spec.h"
#include "hosts/peer_config.h"
#include "hosts/remote_host.h"
#include "supervise/rank_events.h"
#include "supervise/rank_group.h"
#include "supervise/rank_launch.h"
#include "supervise/shared_event_pipe.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_process.h"
#include "supervise/worker_side.h"

namespace {

using trainer::v1::JobEvent;

// Whether a peer's answer is about the job itself (it can never run there as asked), rather
// than about the host right now (unreachable, busy, shutting down).
bool RefusesTheJob(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsFailedPrecondition(status) ||
         absl::IsPermissionDenied(status) || absl::IsUnauthenticated(status) ||
         absl::IsUnimplemented(status);
}

// Where each rank runs, for messages: "rank 1 (b)".
struct RankPlace {
  std::string host;
  std::string device;
};

class Launcher {
 public:
  Launcher(int events_fd, const traind::StopFlags& stop, traind::PeersConfig peers,
           std::vector<std::string> local_devices)
      : events_(events_fd),
        stop_(stop),
        peers_(std::move(peers)),
        local_devices_(std::move(local_devices)) {}

  int Run(const trainer::v1::WorkerRequest& request) {
    const trainer::v1::JobSpec& spec = request.spec();
    std::vector<std::string> hosts = traind::HostNames(spec);
    if (std::find(hosts.begin(), hosts.end(), peers_.self) == hosts.end()) {
      return Fail(absl::StrCat("hosts: ", spec.hosts(), " does not name this traind (", peers_.self,
                               "), where rank 0 runs"));
    }
    // Rank 0 (and this host's other ranks) here, then each peer's in the order given.
    std::stable_partition(hosts.begin(), hosts.end(),
                          [&](const std::string& h) { return h == peers_.self; });
    const int per_host = traind::RanksPerHost(spec);
    if (static_cast<int>(local_devices_.size()) != per_host) {
      return Fail(absl::StrCat("traind placed ", local_devices_.size(), " device(s) for ", per_host,
                               " rank(s) here"));
    }
    if (std::optional<int> failed = ConnectPeers(hosts); failed) return *failed;
    if (std::optional<int> failed = ReserveOnPeers(request, per_host); failed) return *failed;
    if (std::optional<int> failed = SendCheckpoint(request); failed) return *failed;

    absl::StatusOr<int> port = traind::FreePortOnAllInterfaces();
    if (!port.ok()) return Fail(std::string(port.status().message()));
    // This host as the first peer sees it: where rank 0's store listens for the others.
    const std::string master_addr = remotes_.front()->reservation().caller_address();
    if (master_addr.empty())
      return Fail("the peers did not say at which address they see this host");
    const int world = per_host * static_cast<int>(hosts.size());
    for (int i = 0; i < per_host; ++i) places_.push_back({peers_.self, local_devices_[i]});
    for (auto& remote : remotes_) {
      for (const std::string& device : remote->reservation().devices()) {
        places_.push_back({remote->name(), device});
      }
    }

    absl::StatusOr<std::vector<std::unique_ptr<traind::WorkerProcess>>> locals =
        StartLocalRanks(request, world, master_addr, *port);
    if (!locals.ok()) return Fail(std::string(locals.status().message()));
    StartRemoteRanks(per_host, world, *port);
    std::vector<std::string> described;
    for (int r = 0; r < world; ++r) {
      described.push_back(
          absl::StrCat("rank ", r, " on ", places_[r].host, " (", places_[r].device, ")"));
    }
    events_.Log(absl::StrCat("Started ", world, " ranks on ", hosts.size(), " hosts (",
                             absl::StrJoin(hosts, ", "), "; rendezvous at ", master_addr, ":",
                             *port, "): ", absl::StrJoin(described, ", ")));

    traind::RankGroup ranks(*std::move(locals));
    Supervise(ranks);
    remotes_.clear();  // joins the relay threads (their calls have ended or are cancelled)
    return Outcome(world);
  }

 private:
  // Run's steps. Each returns the launcher's exit code when the job cannot go on, else nothing.
  // A channel to each peer the job names (hosts[0] is this one).
  std::optional<int> ConnectPeers(const std::vector<std::string>& hosts) {
    for (size_t h = 1; h < hosts.size(); ++h) {
      auto peer = std::find_if(peers_.peers.begin(), peers_.peers.end(),
                               [&](const traind::PeerConfig& p) { return p.name == hosts[h]; });
      if (peer == peers_.peers.end()) {
        return Fail(absl::StrCat("hosts: '", hosts[h], "' is not a peer of this traind (",
                                 peers_.self, "); traind --peer NAME=HOST:PORT names them"));
      }
      absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
          traind::OpenPeerChannel(peers_, *peer);
      if (!channel.ok())
        return Fail(absl::StrCat("host ", hosts[h], ": ", channel.status().message()));
      remotes_.push_back(std::make_unique<traind::RemoteHost>(hosts[h], *std::move(channel)));
    }
    return std::nullopt;
  }

  // Phase one, on every peer at once: all reserve their devices, or none keeps them.
  std::optional<int> ReserveOnPeers(const trainer::v1::WorkerRequest& request, int per_host) {
    trainer::v1::ReserveRequest reserve;
    reserve.set_coordinator(peers_.self);
    reserve.set_job_id(request.job_id());
    *reserve.mutable_spec() = request.spec();
    reserve.set_ranks(per_host);
    reserve.set_lease_seconds(60);  // the checkpoint may take a while to send
    std::vector<absl::Status> reserved(remotes_.size());
    {
      std::vector<std::thread> calls;
      for (size_t i = 0; i < remotes_.size(); ++i) {
        calls.emplace_back(
            [&, i] { reserved[i] = remotes_[i]->Reserve(reserve, absl::Seconds(10)); });
      }
      for (std::thread& call : calls) call.join();
    }
    for (size_t i = 0; i < remotes_.size(); ++i) {
      if (reserved[i].ok() &&
          remotes_[i]->reservation().devices_size() != per_host) {  // a peer of another version?
        reserved[i] =
            absl::InternalError(absl::StrCat("reserved ", remotes_[i]->reservation().devices_size(),
                                             " device(s) for ", per_host, " rank(s)"));
      }
      if (reserved[i].ok()) continue;
      for (auto& remote : remotes_) remote->Release();  // all or none
      const std::string why =
          absl::StrCat("host ", remotes_[i]->name(), ": ",
                       absl::StatusCodeToString(reserved[i].code()), ": ", reserved[i].message());
      if (RefusesTheJob(reserved[i])) return Fail(why);
      events_.Log(why, trainer::v1::LogLine::ERROR);
      return traind::kWorkerHostsUnavailable;
    }
    if (stop_.stop.load()) {
      for (auto& remote : remotes_) remote->Release();
      return traind::kWorkerStopped;
    }
    return std::nullopt;
  }

  // Every rank resumes from the one checkpoint rank 0 wrote here: sent to every peer at once
  // (each peer renews its reservation's lease as the chunks come).
  std::optional<int> SendCheckpoint(const trainer::v1::WorkerRequest& request) {
    const std::string checkpoint = request.job_dir() + "/checkpoint.pt";
    if (access(checkpoint.c_str(), R_OK) != 0) return std::nullopt;
    std::vector<absl::Status> sent(remotes_.size());
    std::vector<std::thread> sends;
    for (size_t i = 0; i < remotes_.size(); ++i) {
      sends.emplace_back([&, i] { sent[i] = remotes_[i]->PutCheckpoint(checkpoint); });
    }
    for (std::thread& send : sends) send.join();
    for (size_t i = 0; i < remotes_.size(); ++i) {
      if (sent[i].ok()) continue;
      const std::string why = absl::StrCat("host ", remotes_[i]->name(),
                                           ": cannot send it the checkpoint: ", sent[i].message());
      // Too large for that host (its --max-upload-bytes) will not change by waiting.
      if (absl::IsResourceExhausted(sent[i]) || RefusesTheJob(sent[i])) return Fail(why);
      events_.Log(why, trainer::v1::LogLine::ERROR);
      return traind::kWorkerHostsUnavailable;  // ~RemoteHost releases the reservations
    }
    return std::nullopt;
  }

  // This host's ranks (0 .. per_host - 1), a traind-worker beside this program each.
  absl::StatusOr<std::vector<std::unique_ptr<traind::WorkerProcess>>> StartLocalRanks(
      const trainer::v1::WorkerRequest& request, int world, const std::string& master_addr,
      int port) {
    // Beside this program; the ranks inherit its environment (what traind gives every worker).
    traind::RankLaunch launch;
    launch.program =
        traind::JobPrograms::In(std::filesystem::read_symlink("/proc/self/exe").parent_path())
            .worker;
    launch.request = request;
    launch.devices = local_devices_;
    launch.world_size = world;
    launch.master_addr = master_addr;
    launch.master_port = port;
    absl::StatusOr<std::vector<std::unique_ptr<traind::WorkerProcess>>> locals =
        traind::StartRanks(launch);
    if (!locals.ok()) return absl::InternalError(locals.status().message());
    return locals;
  }

  // The peers' ranks, each peer's after the previous one's; their reports arrive on the
  // RemoteHosts' threads.
  void StartRemoteRanks(int per_host, int world, int port) {
    int first_rank = per_host;
    for (auto& remote : remotes_) {
      trainer::v1::RunRanksRequest run;
      run.set_reservation_id(remote->reservation().id());
      run.set_first_rank(first_rank);
      run.set_world_size(world);
      run.set_master_port(port);  // master_addr: as that peer sees this host
      first_rank += per_host;
      traind::RemoteHost* host = remote.get();
      const int first = run.first_rank(), last = first + per_host - 1;
      host->Run(
          run,
          [this, first, last](const trainer::v1::RankReport& report) {
            // A peer reports for its own ranks only.
            if (report.rank() >= first && report.rank() <= last) OnRemoteReport(report);
          },
          [this, host](const grpc::Status& status, bool cancelled_here) {
            OnRemoteEnd(*host, status, cancelled_here);
          });
    }
  }

  // Until every rank here has ended and every peer's call has: relays this host's ranks' events;
  // stops everything when a rank ends badly (RankGroup's policy stops the others here), a host
  // goes away or traind says so.
  void Supervise(traind::RankGroup& locals) {
    traind::RankGroup::Callbacks callbacks;
    callbacks.on_event = [this](int r, JobEvent event) { Relay(r, std::move(event)); };
    callbacks.on_exit = [this](int r, const traind::WorkerProcess::Exit& exit) {
      RecordExit(r, exit.ToProto());
    };
    bool stopping = false;
    absl::Time cancel_remotes_at = absl::InfiniteFuture();
    absl::Time kill_at = absl::InfiniteFuture();
    while (true) {
      const absl::Time now = absl::Now();
      if (stop_.stop.load() && !stopping) {
        stopping = true;
        if (stop_.suspend.load()) {
          // Every rank agrees to checkpoint and stop at its next step (rank 0 writes it); the
          // peers' ranks are cancelled if they have not ended by then.
          locals.SuspendAll();
          cancel_remotes_at = now + absl::Seconds(6);
        } else {
          locals.TerminateAll();
          cancel_remotes_at = now;
        }
        kill_at = now + absl::Seconds(8);  // traind kills us after its --cancel-grace (10 s)
      }
      if (Failed() && cancel_remotes_at == absl::InfiniteFuture()) {
        // A rank that failed, or a host gone: the others would wait for it in a collective.
        locals.KillAll();
        cancel_remotes_at = now;
      }
      if (now >= cancel_remotes_at) {
        for (auto& remote : remotes_) remote->Cancel();
      }
      if (now >= kill_at) locals.KillAll();
      if (locals.alive() > 0) {
        locals.PumpRound(callbacks);
      } else if (AllRemotesEnded(now)) {
        return;
      }
    }
  }

  // Waits up to 200 ms for the peers' calls to end; cancels them when they outlive this host's
  // ranks for long (they are stuck).
  bool AllRemotesEnded(absl::Time now) {
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(
                                 +[](Launcher* l) ABSL_EXCLUSIVE_LOCKS_REQUIRED(l->mu_) {
                                   return l->remotes_ended_ == l->remotes_.size();
                                 },
                                 this),
                             absl::Milliseconds(200))) {
      return true;
    }
    if (all_local_ended_at_ == absl::InfiniteFuture()) all_local_ended_at_ = now;
    if (now - all_local_ended_at_ > absl::Seconds(10)) {
      for (auto& remote : remotes_) remote->Cancel();
    }
    return false;
  }

  // Every rank's events go to traind as one job's; the daemon decides states. Errors say which
  // rank and host.
  void Relay(int rank, JobEvent event) {
    {
      absl::MutexLock lock(&mu_);
      if (!events_seen_.Accept(&event,
                               absl::StrCat("rank ", rank, " (", places_[rank].host, "): "))) {
        return;
      }
    }
    events_.Write(event);
  }

  void RecordExit(int rank, const trainer::v1::ProcessExit& exit) {
    absl::MutexLock lock(&mu_);
    exits_[rank] = exit;
    if (!traind::WorkerProcess::Exit::FromProto(exit).clean()) failed_ = true;
  }

  void OnRemoteReport(const trainer::v1::RankReport& report) {
    if (report.rank() < 0 || report.rank() >= static_cast<int>(places_.size())) return;
    if (report.has_exit()) {
      RecordExit(report.rank(), report.exit());
    } else if (report.has_event()) {
      Relay(report.rank(), report.event());
    }
  }

  void OnRemoteEnd(const traind::RemoteHost& host, const grpc::Status& status,
                   bool cancelled_here) {
    absl::MutexLock lock(&mu_);
    ++remotes_ended_;
    // Not cancelled from here: the host died, dropped off the network, or shut down (its traind
    // cancels the calls it serves when it stops).
    if (!status.ok() && !cancelled_here) {
      lost_.push_back(absl::StrCat("host ", host.name(), " went away while the job ran (",
                                   status.error_message(), ")"));
      failed_ = true;
    }
  }

  bool Failed() {
    absl::MutexLock lock(&mu_);
    return failed_;
  }

  int Outcome(int world) {
    if (stop_.stop.load()) return traind::kWorkerStopped;
    absl::MutexLock lock(&mu_);
    // Every rank ended well and rank 0 reported: done, whatever a stream did afterwards.
    bool all_succeeded = events_seen_.got_result();
    for (int rank = 0; rank < world && all_succeeded; ++rank) {
      auto it = exits_.find(rank);
      all_succeeded =
          it != exits_.end() && traind::WorkerProcess::Exit::FromProto(it->second).clean();
    }
    if (all_succeeded) return traind::kWorkerSucceeded;
    if (!lost_.empty()) {
      events_.Log(absl::StrCat(absl::StrJoin(lost_, "; "), "; the job's other ranks were stopped"),
                  trainer::v1::LogLine::ERROR);
      return traind::kWorkerHostLost;
    }
    for (int rank = 0; rank < world; ++rank) {
      auto it = exits_.find(rank);
      if (it == exits_.end()) {
        return FailLocked(
            absl::StrCat("rank ", rank, " (", places_[rank].host, ") ended without saying how"));
      }
      const trainer::v1::ProcessExit& exit = it->second;
      if (traind::WorkerProcess::Exit::FromProto(exit).clean()) continue;
      if (!events_seen_.first_error().empty()) return traind::kWorkerJobFailed;  // reported
      return FailLocked(absl::StrCat("rank ", rank, " (", places_[rank].host, "): ",
                                     exit.signal() != 0
                                         ? absl::StrCat("killed by signal ", exit.signal())
                                         : absl::StrCat("exit code ", exit.exit_code()),
                                     exit.stderr_tail().empty() ? "" : ": " + exit.stderr_tail()));
    }
    if (!events_seen_.got_result()) {
      return FailLocked("the ranks ended without rank 0 reporting a result");
    }
    return traind::kWorkerSucceeded;
  }

  int Fail(const std::string& why) {
    events_.Log(why, trainer::v1::LogLine::ERROR);
    std::fprintf(stderr, "traind-hosts: %s\n", why.c_str());
    return traind::kWorkerJobFailed;
  }
  int FailLocked(const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return Fail(why); }

  traind::SharedEventPipe events_;
  const traind::StopFlags& stop_;
  const traind::PeersConfig peers_;
  const std::vector<std::string> local_devices_;
  std::vector<RankPlace> places_;  // by rank; set before any relay thread starts
  absl::Time all_local_ended_at_ = absl::InfiniteFuture();

  absl::Mutex mu_;
  std::map<int, trainer::v1::ProcessExit> exits_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> lost_ ABSL_GUARDED_BY(mu_);
  size_t remotes_ended_ ABSL_GUARDED_BY(mu_) = 0;
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
  traind::RankEvents events_seen_ ABSL_GUARDED_BY(mu_);
  // The peers, in rank order. Last: destroyed first, so their relay threads (which lock mu_ and
  // read places_) are joined while everything they touch is still there.
  std::vector<std::unique_ptr<traind::RemoteHost>> remotes_;
};

}  // namespace

int main(int argc, char**) {
  const int events_fd = traind::TakeStdoutForEvents();
  if (argc != 1) {
    std::fprintf(stderr, "usage: traind-hosts  (started by traind for a job with --hosts)\n");
    return traind::kWorkerBadRequest;
  }
  // traind gone (even kill -9): stop the ranks here and, by closing their calls, the peers'.
  const traind::StopFlags& stop = traind::InstallStopSignals();
  if (!traind::StopWithParent(SIGTERM)) return traind::kWorkerStopped;

  absl::StatusOr<traind::PeersConfig> peers = traind::PeersFromEnvironment();
  if (!peers.ok()) {
    std::fprintf(stderr, "traind-hosts: %s\n", std::string(peers.status().message()).c_str());
    return traind::kWorkerBadRequest;
  }
  const char* devices = std::getenv("TRAIND_HOST_DEVICES");
  std::vector<std::string> local_devices;
  if (devices != nullptr && *devices != '\0') local_devices = absl::StrSplit(devices, ',');

  trainer::v1::WorkerRequest request;
  switch (traind::ReadWorkerRequest(&request)) {
    case traind::RequestRead::kRead:
      return Launcher(events_fd, stop, *std::move(peers), std::move(local_devices)).Run(request);
    case traind::RequestRead::kClosed:
      return traind::kWorkerStopped;
    case traind::RequestRead::kUnreadable:
      break;
  }
  std::fprintf(stderr, "traind-hosts: could not read a WorkerRequest on stdin\n");
  return traind::kWorkerBadRequest;
}
