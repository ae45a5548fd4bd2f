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

UploadReactor* UploadReactor::Start(BlobStore* blobs, Executor* executor, QuotaLedger* ledger,
                                    Options options, trainer::v1::Blob* response) {
  absl::StatusOr<std::unique_ptr<QuotaLedger::Reservation>> reservation =
      ledger->Open(options.owner, options.limited);  // no I/O
  auto* reactor = new UploadReactor(blobs, executor, std::move(options), response);
  if (!reservation.ok()) {
    reactor->Finish(ToGrpcStatus(reservation.status()));
    return reactor;
  }
  reactor->reservation_ = *std::move(reservation);
  reactor->StartRead(&reactor->request_);
  return reactor;
}

void UploadReactor::OnReadDone(bool ok) {
  if (!ok) {  // the client finished sending (or the call ended)
    executor_->Schedule([this] { End(Complete()); });
    return;
  }
  executor_->Schedule([this] {
    if (absl::Status status = Consume(); !status.ok()) {
      End(status);
      return;
    }
    StartRead(&request_);
  });
}

void UploadReactor::End(const absl::Status& status) {
  upload_.reset();       // an uncommitted upload's file goes
  reservation_.reset();  // its slot and unsettled bytes go back before the client hears
  Finish(ToGrpcStatus(status));
}

absl::Status UploadReactor::Consume() {
  if (request_.has_header()) {
    if (upload_ != nullptr) return absl::InvalidArgumentError("header: only in the first message");
    RETURN_IF_ERROR(CheckMessageBounds(request_));
    // The announced size counts against the quota from here until the upload ends (Append
    // refuses bytes beyond it, so the reservation bounds what this upload can store); checked
    // before anything is created, so a refused upload leaves no file behind.
    RETURN_IF_ERROR(
        reservation_->ReserveBytes(request_.header().size_bytes(), options_.measure_stored));
    // Validates the header (and --max-upload-bytes), then creates the upload's temporary file.
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
  reservation_->Settle();  // stored now: MeasureStorage counts it from here
  return absl::OkStatus();
}

}  // namespace traind
