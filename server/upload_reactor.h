// UploadBlob: one ServerReadReactor per call. A header, then chunks, each written (and hashed) on
// the executor before the next read is started: one read or one write in flight, so a fast client
// cannot make traind buffer the file, and no reaction touches the disk. When the client has sent
// everything, the upload is verified, a model is inspected (model_inspector.h), and only then is
// the content moved into the BlobStore. Any failure — and a cancelled call — leaves no blob.
//
// Quotas hold for the upload while it is in flight (quota_ledger.h): Start takes one of the
// owner's upload slots before the first read (a caller at --max-uploads-per-token is refused
// without a byte read), and the header's size is reserved against the storage quota before
// BlobStore stores anything. The reservation becomes stored bytes when the blob is committed,
// and is given back — however the upload ends — before the call's status is sent, so a client
// that saw one upload end may start the next at once.
// Deletes itself in OnDone.
#ifndef TRAIND_SERVER_UPLOAD_REACTOR_H_
#define TRAIND_SERVER_UPLOAD_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/blob_store.h"
#include "server/executor.h"
#include "server/quota_ledger.h"
#include "server/storage_quota.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class UploadReactor : public grpc::ServerReadReactor<trainer::v1::UploadBlobRequest> {
 public:
  struct Options {
    std::string worker_path;  // inspects models
    int64_t max_bytes = 0;    // traind --max-upload-bytes
    std::string owner;        // the authenticated caller, recorded with the blob
    bool limited = false;     // Caller::limited: the ledger's limits apply to `owner`
    // What `owner` holds now (MeasureStorage); run on the executor when the header arrives, for
    // a limited owner under a storage quota only. Required then.
    std::function<StorageUse()> measure_stored;
  };
  // Takes an upload slot for `options.owner` in `ledger` and starts reading, or finishes at once
  // with RESOURCE_EXHAUSTED. The reactor owns itself from here. `blobs`, `executor` and `ledger`
  // must outlive the call.
  static UploadReactor* Start(BlobStore* blobs, Executor* executor, QuotaLedger* ledger,
                              Options options, trainer::v1::Blob* response);

  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  UploadReactor(BlobStore* blobs, Executor* executor, Options options, trainer::v1::Blob* response)
      : blobs_(blobs), executor_(executor), options_(std::move(options)), response_(response) {}
  // On the executor: consume request_ (header or chunk).
  absl::Status Consume();
  // On the executor, after the client's last message: verify, inspect, commit.
  absl::Status Complete();
  // On the executor: drops the upload and the reservation, then finishes the call with `status`.
  void End(const absl::Status& status);

  BlobStore* const blobs_;
  Executor* const executor_;
  const Options options_;
  trainer::v1::Blob* const response_;
  // Used by one operation at a time (Start -> read -> executor -> read ... -> End): no lock needed.
  trainer::v1::UploadBlobRequest request_;
  std::unique_ptr<QuotaLedger::Reservation> reservation_;  // from Start until End
  std::unique_ptr<BlobStore::Upload> upload_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_UPLOAD_REACTOR_H_
