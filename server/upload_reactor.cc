#include "server/upload_reactor.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/message_bounds.h"
#include "common/status_macros.h"
#include "server/model_inspector.h"

namespace traind {

namespace {
constexpr size_t kMaxChunk = 4 << 20;
}  // namespace

UploadReactor* UploadReactor::Start(BlobStore* blobs, Executor* executor, Options options,
                                    trainer::v1::Blob* response) {
  auto* reactor = new UploadReactor(blobs, executor, std::move(options), response);
  reactor->StartRead(&reactor->request_);
  return reactor;
}

void UploadReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client finished sending (or the call ended)
    executor_->Schedule([this] { Finish(ToGrpcStatus(Complete())); });
    return;
  }
  executor_->Schedule([this] {
    if (absl::Status status = Consume(); !status.ok()) {
      upload_.reset();
      Finish(ToGrpcStatus(status));
      return;
    }
    StartRead(&request_);
  });
}

absl::Status UploadReactor::Consume() {
  if (request_.has_header()) {
    if (upload_ != nullptr) return absl::InvalidArgumentError("header: only in the first message");
    RETURN_IF_ERROR(CheckMessageBounds(request_));
    if (options_.admit) RETURN_IF_ERROR(options_.admit(request_.header().size_bytes()));
    ASSIGN_OR_RETURN(upload_,
                     blobs_->BeginUpload(request_.header(), options_.max_bytes, options_.owner));
    return absl::OkStatus();
  }
  if (upload_ == nullptr) {
    return absl::InvalidArgumentError("header: the first message must be the header");
  }
  if (request_.chunk().size() > kMaxChunk) {
    return absl::InvalidArgumentError(absl::StrCat("chunk: at most ", kMaxChunk, " bytes"));
  }
  return upload_->Append(request_.chunk());
}

absl::Status UploadReactor::Complete() {
  if (upload_ == nullptr) return absl::InvalidArgumentError("header: no header was sent");
  // A cancelled call (client gone, deadline) ends here too: its upload is short and fails.
  RETURN_IF_ERROR(upload_->Verify());
  std::string description;
  if (upload_->header().kind() == "model") {
    ASSIGN_OR_RETURN(description, InspectModel(options_.worker_path, upload_->temp_path()));
  }
  ASSIGN_OR_RETURN(*response_, upload_->Commit(description));
  upload_.reset();
  return absl::OkStatus();
}

}  // namespace traind
