// PeerService: this traind's side of jobs on several hosts that another traind coordinates (a job
// submitted there with --hosts naming this one). Serves trainer.v1.Peers (peers.proto), to admin
// tokens only (rpc_policy.cc): Reserve holds this machine's devices for the job's ranks here
// (Scheduler::ReserveForPeer, the first phase of the coordinator's two), PutCheckpoint stages the
// job's checkpoint for ranks that resume, RunRanks starts one traind-worker per rank with
// torchrun's environment and streams their events back for as long as they run. The call is the
// ranks' lifeline both ways: a coordinator that cancels it or goes away (its traind killed, the
// network gone: keepalive notices) stops them; this traind going away ends the stream, which the
// coordinator sees. Sync API: each RunRanks holds one of gRPC's threads while its ranks run.
// Thread-safe.
#ifndef TRAIND_SERVER_PEER_SERVICE_H_
#define TRAIND_SERVER_PEER_SERVICE_H_

#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/access_control.h"
#include "server/admission.h"
#include "server/scheduler.h"
#include "server/worker_request.h"
#include "supervise/rank_group.h"
#include "trainer/v1/peers.grpc.pb.h"

namespace traind {

class PeerService final : public trainer::v1::Peers::Service {
 public:
  struct Options {
    std::string worker_path;  // traind-worker
    // What every worker of this traind gets in its environment (server/job_launcher.h), and this
    // host's side of a rank's request (its blob store, data roots, ...).
    std::vector<std::string> worker_environment;
    WorkerRequestOptions requests;
    std::string peer_jobs_dir;         // <state-dir>/peer-jobs: one directory per reservation
    int64_t max_checkpoint_bytes = 0;  // traind --max-upload-bytes
    absl::Duration cancel_grace = absl::Seconds(10);  // SIGTERM -> SIGKILL for its ranks
  };
  // `admission` checks the job's spec as it would a submitted one (Admission::PrepareSpec).
  PeerService(Scheduler* scheduler, AccessControl* access, const Admission* admission,
              Options options);

  grpc::Status Reserve(grpc::ServerContext* context, const trainer::v1::ReserveRequest* request,
                       trainer::v1::Reservation* response) override;
  grpc::Status Release(grpc::ServerContext* context, const trainer::v1::ReleaseRequest* request,
                       trainer::v1::ReleaseResponse* response) override;
  grpc::Status PutCheckpoint(grpc::ServerContext* context,
                             grpc::ServerReader<trainer::v1::CheckpointChunk>* reader,
                             trainer::v1::PutCheckpointResponse* response) override;
  grpc::Status RunRanks(grpc::ServerContext* context, const trainer::v1::RunRanksRequest* request,
                        grpc::ServerWriter<trainer::v1::RankReport>* writer) override;

 private:
  // What Reserve accepted, until RunRanks ends or the reservation is released or expires.
  struct Session {
    trainer::v1::JobSpec spec;  // prepared for this machine
    int ranks = 0;
    int64_t job_id = 0;
    std::string what;      // "job 5 of a (ipv4:10.0.0.1:43210)"
    std::string dir;       // the ranks' job directory here
    absl::Duration lease;  // as asked for
    absl::Time expires;    // unless claimed
    bool claimed = false;
  };
  absl::Status Admit(const grpc::ServerContext& context, const char* method,
                     const google::protobuf::Message* request) const;
  // Forgets sessions whose lease ran out unclaimed (their directories too).
  void ExpireSessions() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(const std::string& id);
  std::string DirOf(const std::string& id) const;
  // RunRanks' steps. The session of a reservation still waiting to run (NOT_FOUND otherwise),
  // claimed for this caller when `claim`.
  absl::StatusOr<Session> WaitingSession(const std::string& id, bool claim);
  // The session's ranks, each a worker with torchrun's environment.
  absl::StatusOr<std::vector<std::unique_ptr<WorkerProcess>>> StartRanks(
      const Session& session, const trainer::v1::RunRanksRequest& request,
      const std::vector<std::string>& devices, const std::string& master_addr);
  // Streams the ranks' events and exits to the coordinator until all have ended (RankGroup's
  // policy: a rank that ends badly takes the others down). Returns whether they were stopped
  // (the call cancelled).
  bool PumpRanks(grpc::ServerContext* context, grpc::ServerWriter<trainer::v1::RankReport>* writer,
                 RankGroup& ranks, int first_rank);

  Scheduler* const scheduler_;
  AccessControl* const access_;
  const Admission* const admission_;
  const Options options_;
  absl::Mutex mu_;
  std::map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);  // by reservation id
};

// The IP address in a gRPC peer string ("ipv4:10.0.0.1:43210" -> "10.0.0.1", "ipv6:[::1]:5" ->
// "::1"); empty for anything else (a Unix socket).
std::string AddressOfPeer(const std::string& peer);

}  // namespace traind

#endif  // TRAIND_SERVER_PEER_SERVICE_H_
