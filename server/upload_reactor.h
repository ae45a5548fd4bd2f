// UploadBlob: one ServerReadReactor per call. A header, then chunks, each written (and hashed) on
// the executor before the next read is started: one read or one write in flight, so a fast client
// cannot make traind buffer the file, and no reaction touches the disk. When the client has sent
// everything, the upload is verified, a model is inspected (model_inspector.h), and only then is
// the content moved into the BlobStore. Any failure — and a cancelled call — leaves no blob.
// Deletes itself in OnDone.
#ifndef TRAIND_SERVER_UPLOAD_REACTOR_H_
#define TRAIND_SERVER_UPLOAD_REACTOR_H_

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "server/blob_store.h"
#include "server/executor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class UploadReactor : public grpc::ServerReadReactor<trainer::v1::UploadBlobRequest> {
 public:
  struct Options {
    std::string worker_path;  // inspects models
    int64_t max_bytes = 0;    // traind --max-upload-bytes
    std::string owner;        // the authenticated caller, recorded with the blob
    // Run on the executor with the announced size before anything is stored (storage quota).
    std::function<absl::Status(int64_t bytes)> admit;
  };
  // Starts reading; the reactor owns itself from here.
  static UploadReactor* Start(BlobStore* blobs, Executor* executor, Options options,
                              trainer::v1::Blob* response);

  void OnReadDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  UploadReactor(BlobStore* blobs, Executor* executor, Options options, trainer::v1::Blob* response)
      : blobs_(blobs), executor_(executor), options_(std::move(options)), response_(response) {}
  // On the executor: consume request_ (header or chunk).
  absl::Status Consume();
  // On the executor, after the client's last message: verify, inspect, commit.
  absl::Status Complete();

  BlobStore* const blobs_;
  Executor* const executor_;
  const Options options_;
  trainer::v1::Blob* const response_;
  // Used by one operation at a time (read -> executor -> read): no lock needed.
  trainer::v1::UploadBlobRequest request_;
  std::unique_ptr<BlobStore::Upload> upload_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_UPLOAD_REACTOR_H_
