// The Trainer gRPC service (callback API). Unary handlers hand their work to the executor and
// finish from there; WatchJob is a WatchReactor. No reaction touches SQLite or blocks. Every call
// is admitted first (AccessControl::Admit: token and the RPC's row in rpc_policy.cc); jobs,
// sweeps and uploads record their submitter as owner, and a user token acts only on its own.
// Thread-safe.
#ifndef TRAIND_SERVER_TRAINER_SERVICE_H_
#define TRAIND_SERVER_TRAINER_SERVICE_H_

#include <functional>

#include "absl/status/statusor.h"
#include "server/access_control.h"
#include "server/blob_store.h"
#include "server/checked_request.h"
#include "server/event_hub.h"
#include "server/executor.h"
#include "server/quota_ledger.h"
#include "server/scheduler.h"
#include "server/store.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

// The RPCs whose requests have 32-bit integer, enum or bool fields take their request as bytes,
// checked by CheckVarintWidths before protobuf parses them (server/checked_request.h says why).
using TrainerServiceBase = trainer::v1::Trainer::WithRawCallbackMethod_SubmitJob<
    trainer::v1::Trainer::WithRawCallbackMethod_SubmitSweep<
        trainer::v1::Trainer::WithRawCallbackMethod_ListJobs<
            trainer::v1::Trainer::WithRawCallbackMethod_ListJobEvents<
                trainer::v1::Trainer::WithRawCallbackMethod_SetQueueState<
                    trainer::v1::Trainer::WithRawCallbackMethod_SetJobPriority<
                        trainer::v1::Trainer::WithRawCallbackMethod_DeleteJob<
                            trainer::v1::Trainer::CallbackService>>>>>>>;

class TrainerService final : public TrainerServiceBase {
 public:
  // Uploaded files and the jobs' own files.
  struct Files {
    BlobStore* blobs = nullptr;
    std::string jobs_dir;               // <state-dir>/jobs: each job's artifacts
    std::string worker_path;            // traind-worker, which inspects uploaded models
    int64_t max_upload_bytes = 0;       // traind --max-upload-bytes
    int64_t max_storage_per_token = 0;  // traind --max-storage-per-token; 0: none
  };
  // `devices` is what traind-worker found at start: the devices jobs may ask for.
  TrainerService(Store* store, EventHub* hub, Executor* executor, Scheduler* scheduler,
                 AccessControl* access, trainer::v1::ListDevicesResponse devices, Files files,
                 bool enable_fault_injection = false, std::vector<std::string> data_roots = {});

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const trainer::v1::GetJobRequest* request,
                                   trainer::v1::Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const trainer::v1::CancelJobRequest* request,
                                      trainer::v1::Job* response) override;
  grpc::ServerWriteReactor<trainer::v1::JobEvent>* WatchJob(
      grpc::CallbackServerContext* context, const trainer::v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* ListJobEvents(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerUnaryReactor* ListDevices(grpc::CallbackServerContext* context,
                                        const trainer::v1::ListDevicesRequest* request,
                                        trainer::v1::ListDevicesResponse* response) override;

  grpc::ServerUnaryReactor* RetryJob(grpc::CallbackServerContext* context,
                                     const trainer::v1::RetryJobRequest* request,
                                     trainer::v1::Job* response) override;
  grpc::ServerUnaryReactor* SubmitSweep(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerUnaryReactor* GetSweep(grpc::CallbackServerContext* context,
                                     const trainer::v1::GetSweepRequest* request,
                                     trainer::v1::Sweep* response) override;
  grpc::ServerUnaryReactor* GetSweepReport(grpc::CallbackServerContext* context,
                                           const trainer::v1::GetSweepReportRequest* request,
                                           trainer::v1::SweepReport* response) override;
  grpc::ServerUnaryReactor* SetQueueState(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerReadReactor<trainer::v1::UploadBlobRequest>* UploadBlob(
      grpc::CallbackServerContext* context, trainer::v1::Blob* response) override;
  grpc::ServerUnaryReactor* GetBlob(grpc::CallbackServerContext* context,
                                    const trainer::v1::GetBlobRequest* request,
                                    trainer::v1::Blob* response) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerUnaryReactor* SetJobPriority(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;  // checked bytes
  grpc::ServerUnaryReactor* Shutdown(grpc::CallbackServerContext* context,
                                     const trainer::v1::ShutdownRequest* request,
                                     trainer::v1::ShutdownResponse* response) override;

  // What the Shutdown RPC does (traind: raise SIGTERM, which its main thread waits for). Unset:
  // the RPC is refused (a daemon embedded in another program, e.g. a test).
  void set_shutdown_hook(std::function<void()> hook) { shutdown_hook_ = std::move(hook); }
  // Whether jobs may ask for backend slurm (Slurm's commands and traind-slurm were found).
  void set_slurm_available(bool available) { slurm_available_ = available; }
  // This traind's name and its peers' (traind --name, --peer): the hosts a job may name.
  void set_hosts(std::string self, std::vector<std::string> peers) {
    host_name_ = std::move(self);
    peer_names_ = std::move(peers);
  }
  grpc::ServerUnaryReactor* ListArtifacts(grpc::CallbackServerContext* context,
                                          const trainer::v1::ListArtifactsRequest* request,
                                          trainer::v1::ListArtifactsResponse* response) override;
  grpc::ServerWriteReactor<trainer::v1::DownloadArtifactResponse>* DownloadArtifact(
      grpc::CallbackServerContext* context,
      const trainer::v1::DownloadArtifactRequest* request) override;

  // Validation and resolution of a submitted spec (defaults, device, data directory, and the
  // jobs and uploads it names, which must be `caller`'s).
  absl::StatusOr<trainer::v1::JobSpec> PrepareSpec(trainer::v1::JobSpec spec,
                                                   const Caller& caller) const;

 private:
  // Admits the caller and the request for `method` (AccessControl::Admit: token, policy,
  // bounds), then runs `work` on the executor.
  template <typename Work>
  grpc::ServerUnaryReactor* Offload(grpc::CallbackServerContext* context, const char* method,
                                    const google::protobuf::Message* request, Work work);
  // Offload for a raw (byte) request: parsed by CheckedCall (server/checked_request.h) first, a
  // request whose bytes fail the check finished at once; then `work(request, reply, caller)`.
  template <typename Request, typename Reply, typename Work>
  grpc::ServerUnaryReactor* OffloadChecked(grpc::CallbackServerContext* context, const char* method,
                                           const grpc::ByteBuffer* request_bytes,
                                           grpc::ByteBuffer* reply_bytes, Work work);
  // The job, sweep or blob if `caller` may act on it: PERMISSION_DENIED for someone else's job
  // or sweep; NOT_FOUND for someone else's blob (its digest alone proves nothing).
  absl::StatusOr<trainer::v1::Job> OwnJob(const Caller& caller, int64_t id) const;
  absl::StatusOr<trainer::v1::Sweep> OwnSweep(const Caller& caller, int64_t id) const;
  absl::StatusOr<trainer::v1::Blob> UsableBlob(const Caller& caller,
                                               const std::string& digest) const;

  // Whether `resolved` is one of traind's own files in its state directory (database, tokens,
  // uploads, jobs' files, cache), which no job may read by path even under a data root.
  bool IsDaemonsOwn(const std::string& resolved) const;
  // A job `after` names: it must exist and be `caller`'s (INVALID_ARGUMENT, PERMISSION_DENIED).
  absl::Status CheckDependency(const Caller& caller, int64_t after) const;
  absl::Status Submit(const trainer::v1::SubmitJobRequest& request, const Caller& caller,
                      trainer::v1::Job* response);
  absl::Status Retry(const trainer::v1::RetryJobRequest& request, const Caller& caller,
                     trainer::v1::Job* response);
  absl::Status CreateSweep(const trainer::v1::SubmitSweepRequest& request, const Caller& caller,
                           trainer::v1::Sweep* response);
  // The queued-jobs limit that applies to `caller` (0: none).
  int QueueLimitFor(const Caller& caller) const;
  absl::Status Report(const trainer::v1::GetSweepReportRequest& request, const Caller& caller,
                      trainer::v1::SweepReport* response);
  absl::Status List(const trainer::v1::ListJobsRequest& request, const Caller& caller,
                    trainer::v1::ListJobsResponse* response);
  // model_file / data_file: a blob `caller` uploaded, or (data_file) a path under a data root.
  absl::Status ResolveFiles(trainer::v1::JobSpec* spec, const Caller& caller) const;
  // The resolved path of `path` (a directory, or a regular file) if it lies under a data root,
  // by name and without a symlink or `..` leading out; INVALID_ARGUMENT naming `field`, with one
  // message for every path outside the roots, there or not, that lists the roots to local
  // callers only.
  absl::StatusOr<std::string> UnderDataRoot(const char* field, const std::string& path,
                                            bool directory, const Caller& caller) const;

  Store* const store_;
  EventHub* const hub_;
  Executor* const executor_;
  Scheduler* const scheduler_;
  AccessControl* const access_;
  const trainer::v1::ListDevicesResponse devices_;  // as the worker listed them at start-up
  const google::protobuf::Timestamp devices_time_;  // when
  const Files files_;
  // Uploads in flight per owner: their slots and announced bytes, so that the storage quota
  // and --max-uploads-per-token hold while uploads are in progress (quota_ledger.h).
  QuotaLedger uploads_;
  const bool enable_fault_injection_;
  bool slurm_available_ = false;
  std::string host_name_;
  std::vector<std::string> peer_names_;
  // JobSpec.nodes without Slurm becomes hosts (this one and the first peers); then every host
  // named must be this one or a peer.
  absl::Status ResolveHosts(trainer::v1::JobSpec* spec) const;
  const std::vector<std::string> data_roots_;  // as named and resolved (daemon.cc DataRoots)
  std::function<void()> shutdown_hook_;        // set before the server starts
};

}  // namespace traind

#endif  // TRAIND_SERVER_TRAINER_SERVICE_H_
