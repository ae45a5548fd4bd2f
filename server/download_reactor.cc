#include "server/download_reactor.h"

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
    reactor->path_ = source->path;
    reactor->file_.open(reactor->path_, std::ios::binary);
    if (!reactor->file_) {
      reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                   absl::StrCat("artifact file is missing: ", reactor->path_)));
      return;
    }
    *reactor->message_.mutable_artifact() = std::move(source->artifact);
    reactor->StartWrite(&reactor->message_);
  });
  return reactor;
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
  file_.read(chunk->data(), static_cast<std::streamsize>(kChunk));
  chunk->resize(static_cast<size_t>(file_.gcount()));
  if (file_.bad()) {
    Finish(grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat("cannot read ", path_)));
    return;
  }
  if (chunk->empty()) {
    Finish(grpc::Status::OK);
    return;
  }
  StartWrite(&message_);
}

}  // namespace traind
