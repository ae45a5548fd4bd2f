// Keeps a job's weights as artifacts (engine/artifacts.h) without making training wait for the
// disk: the weights are copied to the CPU when kept (the next step changes them), and pickling
// them, writing and syncing the file beside its place, and its SHA-256 run on a thread of their
// own. An epoch whose validation improved used to wait for all of that: for LeNet5 on an H200 a
// good part of the time it spends outside training, for a VGG16 the write of 0.5 GB.
//
// The written file takes its name (best.pt) only when the caller collects it (Finished, Drain),
// on the caller's thread, just before it reports the artifact: the file and the event that
// describes it (its SHA-256) change together. A write never collected (the job failed, threw or
// was killed first) leaves the previous best.pt and its event as they were; the destructor
// removes the staged file, and a crash leaves only a temporary file that the job's next run
// clears (RemoveStaleTemporaries).
//
// One write at a time: a Keep while one is pending waits for it first, so memory holds at most
// one copy of the weights besides the model's. TorchScript modules are written at once, on the
// caller's thread: their serialisation reads the module itself. Thread-compatible: one caller.
#ifndef TRAIND_ENGINE_ARTIFACT_WRITER_H_
#define TRAIND_ENGINE_ARTIFACT_WRITER_H_

#include <torch/torch.h>

#include <future>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/artifacts.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class ArtifactWriter {
 public:
  explicit ArtifactWriter(std::string job_dir);
  ~ArtifactWriter();  // waits for a pending write and removes its staged file: never reported
  ArtifactWriter(const ArtifactWriter&) = delete;
  ArtifactWriter& operator=(const ArtifactWriter&) = delete;

  // Starts writing `model`'s current weights as <job_dir>/<name>.pt, described with `epoch` and,
  // when given, the validation accuracy they reached. An error is a pending write's, or this
  // one's (TorchScript); a failed write is reported by the next call.
  absl::Status Keep(torch::nn::AnyModule& model, const std::string& name, int epoch,
                    std::optional<double> validation_accuracy);
  // The artifacts written since the last call, without waiting for one still being written.
  absl::StatusOr<std::vector<trainer::v1::Artifact>> Finished();
  // Waits for the pending write, then as Finished: afterwards the files on disk are all reported.
  absl::StatusOr<std::vector<trainer::v1::Artifact>> Drain();

 private:
  absl::Status Collect(bool wait);

  const std::string job_dir_;
  std::future<absl::StatusOr<StagedArtifact>> pending_;
  std::vector<trainer::v1::Artifact> written_;
};

}  // namespace traind

#endif  // TRAIND_ENGINE_ARTIFACT_WRITER_H_
