// The Trainer service's handlers for files: uploads (blobs) and a job's artifacts.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/artifact_names.h"
#include "common/script_spec.h"
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
        ASSIGN_OR_RETURN(Job job, admission_->OwnJob(caller, id));
        const bool script_job = IsScriptJob(job.spec());
        RETURN_IF_ERROR(ValidateArtifactName(script_job, name));
        std::vector<std::string> names;
        for (const trainer::v1::Artifact& artifact : job.result().artifacts()) {
          if (artifact.name() == name) {
            // Weights are NAME.pt in the job's directory; a program's files stay where it wrote
            // them (outputs/NAME). Either is opened beneath the job's directory: a link the
            // program left, or the outputs folder itself swapped for one, leads nowhere outside it.
            ASSIGN_OR_RETURN(UniqueFd file,
                             DownloadReactor::OpenArtifactFile(
                                 absl::StrCat(files_.jobs_dir, "/", id),
                                 script_job ? absl::StrCat(kScriptOutputsFolder, "/", name)
                                            : absl::StrCat(name, ".pt"),
                                 id, name));
            return DownloadReactor::Source{artifact, std::move(file)};
          }
          names.push_back(artifact.name());
        }
        // A status message travels in a header: a few short names, not a list of any size.
        constexpr size_t kNamesShown = 20;
        std::string has = names.empty() ? "none (yet)" : "";
        for (size_t i = 0; i < std::min(names.size(), kNamesShown); ++i) {
          absl::StrAppend(&has, i > 0 ? ", " : "", names[i].substr(0, 80));
        }
        if (names.size() > kNamesShown) {
          absl::StrAppend(&has, " and ", names.size() - kNamesShown, " more (trainctl artifacts ",
                          id, ")");
        }
        return absl::NotFoundError(
            absl::StrCat("job ", id, " has no artifact '", name.substr(0, 80), "'; it has: ", has));
      });
}

}  // namespace traind
