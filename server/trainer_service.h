// The Trainer gRPC service (callback API): handlers only, grouped by resource
// (trainer_service_jobs.cc, _sweeps.cc, _files.cc; the queue, devices and shutdown here). Unary
// handlers hand their work to the executor and finish from there; WatchJob is a WatchReactor. No
// reaction touches SQLite or blocks. Every call is admitted first (AccessControl::Admit: token and
// the RPC's row in rpc_policy.cc); what a spec may ask for and who may act on what is Admission's
// (admission.h); jobs, sweeps and uploads record their submitter as owner. Thread-safe.
#ifndef TRAIND_SERVER_TRAINER_SERVICE_H_
#define TRAIND_SERVER_TRAINER_SERVICE_H_

#include <functional>

#include "absl/status/statusor.h"
#include "server/access_control.h"
#include "server/admission.h"
#include "server/blob_store.h"
#include "server/checked_request.h"
#include "server/event_hub.h"
#include "server/executor.h"
#include "server/quota_ledger.h"
#include "server/scheduler.h"
#include "server/search_driver.h"
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
  // `admission` decides what a spec may ask for (and lists the devices this machine has).
  TrainerService(Store* store, EventHub* hub, Executor* executor, Scheduler* scheduler,
                 AccessControl* access, const Admission* admission, Files files);

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
  grpc::ServerUnaryReactor* ListSweeps(grpc::CallbackServerContext* context,
                                       const trainer::v1::ListSweepsRequest* request,
                                       trainer::v1::ListSweepsResponse* response) override;
  grpc::ServerUnaryReactor* CancelSweep(grpc::CallbackServerContext* context,
                                        const trainer::v1::CancelSweepRequest* request,
                                        trainer::v1::Sweep* response) override;
  grpc::ServerUnaryReactor* ExtendSearch(grpc::CallbackServerContext* context,
                                         const trainer::v1::ExtendSearchRequest* request,
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
  // Runs the searches SubmitSweep creates (SweepSpec.search). Unset: they are refused.
  void set_search_driver(SearchDriver* searches) { searches_ = searches; }
  grpc::ServerUnaryReactor* ListArtifacts(grpc::CallbackServerContext* context,
                                          const trainer::v1::ListArtifactsRequest* request,
                                          trainer::v1::ListArtifactsResponse* response) override;
  grpc::ServerWriteReactor<trainer::v1::DownloadArtifactResponse>* DownloadArtifact(
      grpc::CallbackServerContext* context,
      const trainer::v1::DownloadArtifactRequest* request) override;

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
  absl::Status Submit(const trainer::v1::SubmitJobRequest& request, const Caller& caller,
                      trainer::v1::Job* response);
  absl::Status Retry(const trainer::v1::RetryJobRequest& request, const Caller& caller,
                     trainer::v1::Job* response);
  // A search's sweep (SweepSpec.search): checked, its base prepared as a job's is, stored with
  // no member; the search driver proposes them.
  absl::Status CreateSearch(const trainer::v1::SubmitSweepRequest& request, const Caller& caller,
                            trainer::v1::Sweep* response);
  absl::Status CreateSweep(const trainer::v1::SubmitSweepRequest& request, const Caller& caller,
                           trainer::v1::Sweep* response);
  // The queued-jobs limit that applies to `caller` (0: none).
  int QueueLimitFor(const Caller& caller) const;
  absl::Status Report(const trainer::v1::GetSweepReportRequest& request, const Caller& caller,
                      trainer::v1::SweepReport* response);
  absl::Status List(const trainer::v1::ListJobsRequest& request, const Caller& caller,
                    trainer::v1::ListJobsResponse* response);
  absl::Status Sweeps(const trainer::v1::ListSweepsRequest& request, const Caller& caller,
                      trainer::v1::ListSweepsResponse* response);

  Store* const store_;
  EventHub* const hub_;
  Executor* const executor_;
  Scheduler* const scheduler_;
  AccessControl* const access_;
  const Admission* const admission_;
  const google::protobuf::Timestamp devices_time_;  // when the worker listed the devices
  const Files files_;
  // Uploads in flight per owner: their slots and announced bytes, so that the storage quota
  // and --max-uploads-per-token hold while uploads are in progress (quota_ledger.h).
  QuotaLedger uploads_;
  std::function<void()> shutdown_hook_;  // set before the server starts
  SearchDriver* searches_ = nullptr;     // set before the server starts
};

}  // namespace traind

#endif  // TRAIND_SERVER_TRAINER_SERVICE_H_
