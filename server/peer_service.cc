#include "server/peer_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/durable_file.h"
#include "common/grpc_status.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/write_all.h"
#include "supervise/rank_launch.h"
#include "supervise/worker_exit.h"
#include "supervise/worker_process.h"

namespace traind {

using trainer::v1::JobSpec;
using trainer::v1::RankReport;

namespace {

constexpr absl::Duration kDefaultLease = absl::Seconds(30);
constexpr absl::Duration kMaxLease = absl::Minutes(10);

grpc::Status Invalid(const std::string& message) {
  return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message);
}

// torchrun's MASTER_ADDR as given by a caller: a host name or an IP address, nothing a shell or
// a URL would read differently.
bool PlausibleAddress(const std::string& address) {
  return !address.empty() && address.size() <= 253 &&
         address.find_first_not_of(
             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
             "0123456789.-:") == std::string::npos;
}

}  // namespace

std::string AddressOfPeer(const std::string& peer) {
  std::string rest;
  if (absl::StartsWith(peer, "ipv4:")) {
    rest = peer.substr(5);
    return rest.substr(0, rest.rfind(':'));
  }
  if (absl::StartsWith(peer, "ipv6:")) {
    rest = peer.substr(5);
    // "[::1]:5", or URI-escaped "%5B::1%5D:5" (newer gRPC).
    const std::pair<std::string, std::string> brackets[] = {{"[", "]"}, {"%5B", "%5D"}};
    for (const auto& [open, close] : brackets) {
      if (absl::StartsWith(rest, open)) {
        const size_t end = rest.find(close);
        if (end != std::string::npos) return rest.substr(open.size(), end - open.size());
      }
    }
  }
  return "";
}

PeerService::PeerService(Scheduler* scheduler, AccessControl* access, const Admission* admission,
                         Options options)
    : scheduler_(scheduler), access_(access), admission_(admission), options_(std::move(options)) {
  // Left by a traind that died with ranks running: nobody will claim them.
  std::error_code ignored;
  std::filesystem::remove_all(options_.peer_jobs_dir, ignored);
}

absl::Status PeerService::Admit(const grpc::ServerContext& context, const char* method,
                                const google::protobuf::Message* request) const {
  return access_->Admit(context, method, request).status();
}

std::string PeerService::DirOf(const std::string& id) const {
  return absl::StrCat(options_.peer_jobs_dir, "/", id);
}

void PeerService::ExpireSessions() {
  const absl::Time now = absl::Now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (!it->second.claimed && it->second.expires < now) {
      std::error_code ignored;
      std::filesystem::remove_all(it->second.dir, ignored);
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

void PeerService::Forget(const std::string& id) {
  scheduler_->ReleaseReservation(id);
  std::string dir;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return;
    dir = it->second.dir;
    sessions_.erase(it);
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

grpc::Status PeerService::Reserve(grpc::ServerContext* context,
                                  const trainer::v1::ReserveRequest* request,
                                  trainer::v1::Reservation* response) {
  if (absl::Status admitted = Admit(*context, "Peers.Reserve", request); !admitted.ok()) {
    return ToGrpcStatus(admitted);
  }
  if (request->ranks() < 1 || request->ranks() > kMaxProcesses) {
    return Invalid(absl::StrCat("ranks: 1 to ", kMaxProcesses, ", got ", request->ranks()));
  }
  if (request->lease_seconds() < 0 || request->lease_seconds() > absl::ToDoubleSeconds(kMaxLease)) {
    return Invalid(absl::StrCat("lease_seconds: 0 (30 s) to ", absl::ToDoubleSeconds(kMaxLease),
                                ", got ", request->lease_seconds()));
  }
  if (absl::Status name = ValidateHostName("coordinator", request->coordinator()); !name.ok()) {
    return ToGrpcStatus(name);
  }
  const JobSpec& submitted = request->spec();
  if (submitted.hosts().empty()) return Invalid("spec.hosts: a job on several hosts names them");
  // This host's ranks, checked as a one-process job would be here (model, dataset where it says,
  // device this machine has), then placed as the coordinator places its own: the devices whole.
  JobSpec here = submitted;
  here.clear_hosts();
  here.set_nodes(0);
  here.set_processes(0);
  here.clear_gradient_allreduce();  // a rule about several ranks: checked on `placed` below
  absl::StatusOr<JobSpec> prepared =
      admission_->PrepareSpec(here, Caller{"peer", false, Role::kAdmin});
  if (!prepared.ok()) {
    return ToGrpcStatus(
        absl::Status(prepared.status().code(), absl::StrCat("spec.", prepared.status().message())));
  }
  JobSpec placed = *prepared;
  placed.set_hosts(submitted.hosts());
  placed.set_processes(submitted.processes());
  placed.set_device(submitted.device());
  if (absl::Status valid = ValidateJobSpec(placed); !valid.ok()) {
    return ToGrpcStatus(absl::Status(valid.code(), absl::StrCat("spec.", valid.message())));
  }
  if (RanksPerHost(placed) != request->ranks()) {
    return Invalid(absl::StrCat("ranks: ", request->ranks(), ", but the spec has ",
                                RanksPerHost(placed), " rank(s) on each host"));
  }
  const std::string caller_address = AddressOfPeer(context->peer());
  const std::string what = absl::StrCat("job ", request->job_id(), " of ", request->coordinator(),
                                        " (", context->peer(), ")");
  const absl::Duration lease =
      request->lease_seconds() > 0 ? absl::Seconds(request->lease_seconds()) : kDefaultLease;
  absl::StatusOr<Scheduler::PeerReservation> reserved =
      scheduler_->ReserveForPeer(placed, what, lease);
  if (!reserved.ok()) return ToGrpcStatus(reserved.status());
  {
    absl::MutexLock lock(&mu_);
    ExpireSessions();
    Session& session = sessions_[reserved->id];
    session.lease = lease;
    session.spec = std::move(placed);
    session.ranks = request->ranks();
    session.job_id = request->job_id();
    session.what = what;
    session.dir = DirOf(reserved->id);
    session.expires = absl::Now() + lease;
  }
  response->set_id(reserved->id);
  for (const std::string& device : reserved->devices) response->add_devices(device);
  response->set_caller_address(caller_address);
  return grpc::Status::OK;
}

grpc::Status PeerService::Release(grpc::ServerContext* context,
                                  const trainer::v1::ReleaseRequest* request,
                                  trainer::v1::ReleaseResponse*) {
  if (absl::Status admitted = Admit(*context, "Peers.Release", request); !admitted.ok()) {
    return ToGrpcStatus(admitted);
  }
  std::string dir;
  {
    absl::MutexLock lock(&mu_);
    ExpireSessions();
    auto it = sessions_.find(request->id());
    // A running reservation ends with its RunRanks call, not behind its back. Decided under
    // mu_, where RunRanks claims: one of the two wins.
    if (it == sessions_.end() || it->second.claimed) return grpc::Status::OK;
    dir = it->second.dir;
    sessions_.erase(it);
  }
  scheduler_->ReleaseReservation(request->id());
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return grpc::Status::OK;
}

grpc::Status PeerService::PutCheckpoint(grpc::ServerContext* context,
                                        grpc::ServerReader<trainer::v1::CheckpointChunk>* reader,
                                        trainer::v1::PutCheckpointResponse* response) {
  if (absl::Status admitted = Admit(*context, "Peers.PutCheckpoint", nullptr); !admitted.ok()) {
    return ToGrpcStatus(admitted);
  }
  trainer::v1::CheckpointChunk chunk;
  if (!reader->Read(&chunk)) return Invalid("no chunks");
  std::string dir;
  absl::Duration lease;
  const std::string id = chunk.reservation_id();
  {
    absl::MutexLock lock(&mu_);
    ExpireSessions();
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.claimed) {
      return grpc::Status(
          grpc::StatusCode::NOT_FOUND,
          "reservation_id: no such reservation waiting to run (its lease ran out?)");
    }
    dir = it->second.dir;
    lease = it->second.lease;
  }
  // A checkpoint on its way keeps the reservation: its lease starts again with each second of
  // chunks, and once more when the file is whole.
  auto renew = [&] {
    scheduler_->RenewReservation(id, lease);
    absl::MutexLock lock(&mu_);
    if (auto it = sessions_.find(id); it != sessions_.end())
      it->second.expires = absl::Now() + lease;
  };
  absl::Time renewed = absl::Now();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const std::string partial = dir + "/checkpoint.pt.part";
  const int fd = open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return grpc::Status(grpc::StatusCode::INTERNAL, "cannot write the checkpoint");
  int64_t bytes = 0;
  bool written = true;
  do {
    if (chunk.data().size() > (1u << 20)) {
      close(fd);
      return Invalid("data: at most 1 MiB per chunk");
    }
    bytes += static_cast<int64_t>(chunk.data().size());
    if (options_.max_checkpoint_bytes > 0 && bytes > options_.max_checkpoint_bytes) {
      close(fd);
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat("data: over this traind's --max-upload-bytes (",
                                       options_.max_checkpoint_bytes, ")"));
    }
    written = written && WriteAll(fd, chunk.data());
    if (absl::Now() - renewed > absl::Seconds(1)) {
      renew();
      renewed = absl::Now();
    }
  } while (written && reader->Read(&chunk));
  close(fd);
  if (!written) {
    unlink(partial.c_str());
    return grpc::Status(grpc::StatusCode::INTERNAL, "cannot write the checkpoint");
  }
  if (absl::Status kept =
          CommitDurably(partial, dir + "/checkpoint.pt", IfPresent::kReplace, "the checkpoint");
      !kept.ok()) {
    return ToGrpcStatus(kept);
  }
  renew();
  response->set_bytes(bytes);
  return grpc::Status::OK;
}

absl::StatusOr<PeerService::Session> PeerService::WaitingSession(const std::string& id,
                                                                 bool claim) {
  absl::MutexLock lock(&mu_);
  ExpireSessions();
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second.claimed) {
    return absl::NotFoundError(
        "reservation_id: no such reservation waiting to run (its lease ran out?)");
  }
  // Claimed under mu_, where Release decides: one of the two wins.
  if (claim) it->second.claimed = true;
  return it->second;
}

// Where the coordinator places a peer's ranks: a world with rank 0 on the coordinator (it serves
// the rendezvous), these ranks inside it, a real port and address.
static absl::Status CheckPlacement(const trainer::v1::RunRanksRequest& request, int ranks,
                                   const std::string& master_addr) {
  if (request.world_size() < ranks + 1 || request.world_size() > kMaxProcesses) {
    return absl::InvalidArgumentError(absl::StrCat("world_size: ", ranks + 1, " to ", kMaxProcesses,
                                                   ", got ", request.world_size()));
  }
  if (request.first_rank() < 1 || request.first_rank() > request.world_size() - ranks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "first_rank: 1 to ", request.world_size() - ranks, ", got ", request.first_rank()));
  }
  if (request.master_port() < 1 || request.master_port() > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("master_port: 1 to 65535, got ", request.master_port()));
  }
  if (!PlausibleAddress(master_addr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("master_addr: a host name or IP address, got '", master_addr, "'"));
  }
  return absl::OkStatus();
}

grpc::Status PeerService::RunRanks(grpc::ServerContext* context,
                                   const trainer::v1::RunRanksRequest* request,
                                   grpc::ServerWriter<RankReport>* writer) {
  if (absl::Status admitted = Admit(*context, "Peers.RunRanks", request); !admitted.ok()) {
    return ToGrpcStatus(admitted);
  }
  absl::StatusOr<Session> session = WaitingSession(request->reservation_id(), /*claim=*/false);
  if (!session.ok()) return ToGrpcStatus(session.status());
  const std::string master_addr =
      request->master_addr().empty() ? AddressOfPeer(context->peer()) : request->master_addr();
  if (absl::Status placed = CheckPlacement(*request, session->ranks, master_addr); !placed.ok()) {
    return ToGrpcStatus(placed);
  }
  session = WaitingSession(request->reservation_id(), /*claim=*/true);
  if (!session.ok()) return ToGrpcStatus(session.status());
  absl::StatusOr<std::vector<std::string>> devices =
      scheduler_->ClaimReservation(request->reservation_id());
  if (!devices.ok()) {
    Forget(request->reservation_id());
    return ToGrpcStatus(devices.status());
  }
  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> workers =
      StartRanks(*session, *request, *devices, master_addr);
  if (!workers.ok()) {
    Forget(request->reservation_id());
    return ToGrpcStatus(workers.status());
  }
  LogAt(LogPriority::kInfo) << "traind: running ranks " << request->first_rank() << " to "
                            << request->first_rank() + session->ranks - 1 << " of " << session->what
                            << " on " << absl::StrJoin(*devices, ", ") << "\n";
  RankGroup ranks(*std::move(workers));
  const bool stopped = PumpRanks(context, writer, ranks, request->first_rank());
  LogAt(LogPriority::kInfo) << "traind: ranks of " << session->what << " ended"
                            << (stopped ? " (stopped: the coordinator cancelled or went away)" : "")
                            << "\n";
  Forget(request->reservation_id());
  return grpc::Status::OK;
}

absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> PeerService::StartRanks(
    const Session& session, const trainer::v1::RunRanksRequest& request,
    const std::vector<std::string>& devices, const std::string& master_addr) {
  std::error_code error;
  std::filesystem::create_directories(session.dir, error);
  trainer::v1::Job job;
  job.set_id(session.job_id);  // the coordinator's id
  *job.mutable_spec() = session.spec;
  RankLaunch launch;
  launch.program = options_.worker_path;
  launch.request = BuildWorkerRequest(job, session.dir, options_.requests);
  launch.devices = devices;
  launch.first_rank = request.first_rank();
  launch.world_size = request.world_size();
  launch.master_addr = master_addr;
  launch.master_port = request.master_port();
  launch.environment = options_.worker_environment;
  return traind::StartRanks(launch);
}

bool PeerService::PumpRanks(grpc::ServerContext* context, grpc::ServerWriter<RankReport>* writer,
                            RankGroup& ranks, int first_rank) {
  bool stopping = false;
  absl::Time kill_at = absl::InfiniteFuture();
  RankReport report;
  RankGroup::Callbacks callbacks;
  callbacks.on_event = [&](int r, trainer::v1::JobEvent event) {
    report.set_rank(first_rank + r);
    *report.mutable_event() = std::move(event);
    if (!stopping && !writer->Write(report)) context->TryCancel();
  };
  callbacks.on_exit = [&](int r, const WorkerProcess::Exit& exit) {
    report.set_rank(first_rank + r);
    *report.mutable_exit() = exit.ToProto();
    if (!stopping) writer->Write(report);
  };
  while (ranks.alive() > 0) {
    if (!stopping && context->IsCancelled()) {
      // The coordinator cancelled, went away, or this traind is shutting down.
      stopping = true;
      kill_at = absl::Now() + options_.cancel_grace;
      ranks.TerminateAll();
    }
    if (absl::Now() > kill_at) ranks.KillAll();
    ranks.PumpRound(callbacks);
  }
  return stopping;
}

}  // namespace traind
