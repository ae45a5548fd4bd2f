#include "server/download_reactor.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"

namespace traind {

namespace {
constexpr size_t kChunk = 1 << 20;
}  // namespace

DownloadReactor* DownloadReactor::Start(Executor* executor,
                                        std::function<absl::StatusOr<Source>()> resolve) {
  auto* reactor = new DownloadReactor(executor);
  executor->Schedule([reactor, resolve = std::move(resolve)] {
    absl::StatusOr<Source> source = resolve();
    if (!source.ok()) {
      reactor->Finish(ToGrpcStatus(source.status()));
      return;
    }
    reactor->file_ = std::move(source->file);
    *reactor->message_.mutable_artifact() = std::move(source->artifact);
    reactor->StartWrite(&reactor->message_);
  });
  return reactor;
}

absl::StatusOr<UniqueFd> DownloadReactor::OpenArtifactFile(const std::string& root,
                                                           const std::string& relative,
                                                           int64_t job_id,
                                                           const std::string& name) {
  absl::StatusOr<UniqueFd> file = BeneathRoots({root}).OpenFile(root + "/" + relative);
  if (file.ok()) return file;
  return absl::NotFoundError(absl::StrCat("job ", job_id, "'s artifact '", name,
                                          "' is no longer on the daemon (its file is missing or "
                                          "is not a plain file)"));
}

void DownloadReactor::OnWriteDone(bool ok) {
  if (!ok) {  // the client went away
    Finish(grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled"));
    return;
  }
  executor_->Schedule([this] { WriteNext(); });
}

void DownloadReactor::WriteNext() {
  std::string* chunk = message_.mutable_chunk();
  chunk->resize(kChunk);
  size_t filled = 0;
  while (filled < kChunk) {
    const ssize_t got = read(file_.get(), chunk->data() + filled, kChunk - filled);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      Finish(grpc::Status(grpc::StatusCode::INTERNAL,
                          absl::StrCat("cannot read the artifact: ", strerror(errno))));
      return;
    }
    if (got == 0) break;
    filled += static_cast<size_t>(got);
  }
  chunk->resize(filled);
  if (chunk->empty()) {
    Finish(grpc::Status::OK);
    return;
  }
  StartWrite(&message_);
}

}  // namespace traind
