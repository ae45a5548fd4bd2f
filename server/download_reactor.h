// DownloadArtifact: one ServerWriteReactor per call. The artifact's description (with its SHA-256)
// first, then the file in 1 MiB chunks, each read on the executor while no write is in flight:
// a slow client holds one chunk of memory and no thread. Deletes itself in OnDone.
#ifndef TRAIND_SERVER_DOWNLOAD_REACTOR_H_
#define TRAIND_SERVER_DOWNLOAD_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "server/executor.h"
#include "trainer/v1/trainer.pb.h"

namespace traind {

class DownloadReactor : public grpc::ServerWriteReactor<trainer::v1::DownloadArtifactResponse> {
 public:
  // What to send: the artifact's description and the file's path, or why not.
  struct Source {
    trainer::v1::Artifact artifact;
    std::string path;
  };
  // Runs `resolve` (it may read the store) on the executor, then streams what it names. The
  // reactor owns itself from here.
  static DownloadReactor* Start(Executor* executor,
                                std::function<absl::StatusOr<Source>()> resolve);

  void OnWriteDone(bool ok) override;
  void OnDone() override { delete this; }

 private:
  explicit DownloadReactor(Executor* executor) : executor_(executor) {}
  // On the executor: the next chunk, or Finish at the end.
  void WriteNext();

  Executor* const executor_;
  std::string path_;  // set once, before the first write
  // Used by one operation at a time (write -> executor -> write).
  std::ifstream file_;
  trainer::v1::DownloadArtifactResponse message_;
};

}  // namespace traind

#endif  // TRAIND_SERVER_DOWNLOAD_REACTOR_H_
