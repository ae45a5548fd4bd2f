// DownloadArtifact: one ServerWriteReactor per call. The artifact's description (with its SHA-256)
// first, then the file in 1 MiB chunks, each read on the executor while no write is in flight:
// a slow client holds one chunk of memory and no thread. Deletes itself in OnDone.
#ifndef TRAIND_SERVER_DOWNLOAD_REACTOR_H_
#define TRAIND_SERVER_DOWNLOAD_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "common/beneath.h"
#include "server/executor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class DownloadReactor : public grpc::ServerWriteReactor<trainer::v1::DownloadArtifactResponse> {
 public:
  // What to send: the artifact's description and its file, opened (read-only, a regular file;
  // see OpenArtifactFile), or why not.
  struct Source {
    trainer::v1::Artifact artifact;
    UniqueFd file;
  };
  // Runs `resolve` (it may read the store) on the executor, then streams what it names. The
  // reactor owns itself from here.
  static DownloadReactor* Start(Executor* executor,
                                std::function<absl::StatusOr<Source>()> resolve);

  // `relative` opened beneath `root` (common/beneath.h: no link or '..' leads out, a FIFO does not
  // block), a regular file. The error names the artifact, never a path of the daemon's machine:
  // NOT_FOUND "job ID's artifact 'NAME' is no longer on the daemon".
  static absl::StatusOr<UniqueFd> OpenArtifactFile(const std::string& root,
                                                   const std::string& relative, int64_t job_id,
                                                   const std::string& name);

  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  explicit DownloadReactor(Executor* executor) : executor_(executor) {}
  // On the executor: the next chunk, or Finish at the end.
  void WriteNext();

  Executor* const executor_;
  // Used by one operation at a time (write -> executor -> write).
  UniqueFd file_;
  trainer::v1::DownloadArtifactResponse message_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_DOWNLOAD_REACTOR_H_
