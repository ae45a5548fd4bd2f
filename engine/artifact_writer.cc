#include "engine/artifact_writer.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "engine/artifacts.h"

namespace traind {

ArtifactWriter::ArtifactWriter(std::string job_dir) : job_dir_(std::move(job_dir)) {}

ArtifactWriter::~ArtifactWriter() {
  if (!pending_.valid()) return;
  const absl::StatusOr<StagedArtifact> staged = pending_.get();
  if (staged.ok()) unlink(staged->temp.c_str());
}

absl::Status ArtifactWriter::Keep(torch::nn::AnyModule& model, const std::string& name, int epoch,
                                  std::optional<double> validation_accuracy) {
  RETURN_IF_ERROR(Collect(/*wait=*/true));
  const auto describe = [epoch, validation_accuracy](trainer::v1::Artifact& artifact) {
    artifact.set_epoch(epoch);
    if (validation_accuracy.has_value()) artifact.set_validation_accuracy(*validation_accuracy);
  };
  if (!HasStateDict(model)) {
    ASSIGN_OR_RETURN(trainer::v1::Artifact artifact, SaveArtifact(model, job_dir_, name));
    describe(artifact);
    written_.push_back(std::move(artifact));
    return absl::OkStatus();
  }
  // The copy is made here, on the training thread, between steps.
  c10::Dict<std::string, torch::Tensor> weights = StateDict(*model.ptr());
  pending_ = std::async(
      std::launch::async,
      [weights = std::move(weights), dir = job_dir_, name,
       describe]() -> absl::StatusOr<StagedArtifact> {
        try {
          absl::StatusOr<StagedArtifact> staged = StageStateDict(weights, dir, name);
          if (staged.ok()) describe(staged->artifact);
          return staged;
        } catch (const std::exception& e) {  // c10::Error from the pickler, std::bad_alloc
          return absl::InternalError(absl::StrCat("cannot write ", name, ".pt: ", e.what()));
        }
      });
  return absl::OkStatus();
}

absl::Status ArtifactWriter::Collect(bool wait) {
  if (!pending_.valid()) return absl::OkStatus();
  if (!wait && pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return absl::OkStatus();
  }
  absl::StatusOr<StagedArtifact> staged = pending_.get();  // leaves pending_ invalid
  RETURN_IF_ERROR(staged.status());
  ASSIGN_OR_RETURN(trainer::v1::Artifact artifact, CommitArtifact(*staged));
  written_.push_back(std::move(artifact));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<trainer::v1::Artifact>> ArtifactWriter::Finished() {
  RETURN_IF_ERROR(Collect(/*wait=*/false));
  return std::exchange(written_, {});
}

absl::StatusOr<std::vector<trainer::v1::Artifact>> ArtifactWriter::Drain() {
  RETURN_IF_ERROR(Collect(/*wait=*/true));
  return std::exchange(written_, {});
}

}  // namespace traind
