// The Trainer service's handlers for files: uploads (blobs) and a job's artifacts.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/download_reactor.h"
#include "server/storage_quota.h"
#include "server/trainer_service.h"
#include "server/trainer_service_offload.h"
#include "server/upload_reactor.h"

namespace traind {

using trainer::v1::Job;

namespace {

// A grpc::ServerReadReactor refused before it starts (authentication).
class RejectedUpload : public grpc::ServerReadReactor<trainer::v1::UploadBlobRequest> {
 public:
  explicit RejectedUpload(const grpc::Status& status) { Finish(status); }
  void OnDone() override { delete this; }
};

// Download names are file names in the job's directory: nothing that could climb out of it.
absl::Status ValidateArtifactName(const std::string& name) {
  const bool plain =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      });
  if (plain) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("name: '", name.substr(0, 64),
                   "' is not an artifact name (letters, digits, '-' and '_'; "
                   "e.g. best, final)"));
}

}  // namespace

grpc::ServerReadReactor<trainer::v1::UploadBlobRequest>* TrainerService::UploadBlob(
    grpc::CallbackServerContext* context, trainer::v1::Blob* response) {
  absl::StatusOr<Caller> caller = access_->Admit(*context, "UploadBlob", nullptr);
  if (!caller.ok()) return new RejectedUpload(ToGrpcStatus(caller.status()));
  UploadReactor::Options options{files_.worker_path, files_.max_upload_bytes, caller->owner,
                                 caller->limited};
  options.measure_stored = [this, owner = caller->owner] {
    return MeasureStorage(*store_, *files_.blobs, files_.jobs_dir, owner);
  };
  return UploadReactor::Start(files_.blobs, executor_, &uploads_, std::move(options), response);
}

grpc::ServerUnaryReactor* TrainerService::GetBlob(grpc::CallbackServerContext* context,
                                                  const trainer::v1::GetBlobRequest* request,
                                                  trainer::v1::Blob* response) {
  return Offload(context, "GetBlob", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(*response, admission_->UsableBlob(caller, request->digest()));
                   return absl::OkStatus();
                 });
}

grpc::ServerUnaryReactor* TrainerService::ListArtifacts(
    grpc::CallbackServerContext* context, const trainer::v1::ListArtifactsRequest* request,
    trainer::v1::ListArtifactsResponse* response) {
  return Offload(context, "ListArtifacts", request,
                 [this, request, response](const Caller& caller) -> absl::Status {
                   ASSIGN_OR_RETURN(Job job, admission_->OwnJob(caller, request->id()));
                   *response->mutable_artifacts() = job.result().artifacts();
                   return absl::OkStatus();
                 });
}

grpc::ServerWriteReactor<trainer::v1::DownloadArtifactResponse>* TrainerService::DownloadArtifact(
    grpc::CallbackServerContext* context, const trainer::v1::DownloadArtifactRequest* request) {
  absl::StatusOr<Caller> caller = access_->Admit(*context, "DownloadArtifact", request);
  if (!caller.ok()) {
    return DownloadReactor::Start(
        executor_,
        [status = caller.status()]() -> absl::StatusOr<DownloadReactor::Source> { return status; });
  }
  return DownloadReactor::Start(
      executor_,
      [this, id = request->id(), caller = *caller,
       name = request->name().empty()
                  ? std::string("best")
                  : request->name()]() -> absl::StatusOr<DownloadReactor::Source> {
        RETURN_IF_ERROR(ValidateArtifactName(name));
        ASSIGN_OR_RETURN(Job job, admission_->OwnJob(caller, id));
        std::vector<std::string> names;
        for (const trainer::v1::Artifact& artifact : job.result().artifacts()) {
          if (artifact.name() == name) {
            return DownloadReactor::Source{
                artifact, absl::StrCat(files_.jobs_dir, "/", id, "/", name, ".pt")};
          }
          names.push_back(artifact.name());
        }
        return absl::NotFoundError(
            absl::StrCat("job ", id, " has no artifact '", name,
                         "'; it has: ", names.empty() ? "none (yet)" : absl::StrJoin(names, ", ")));
      });
}

}  // namespace traind
