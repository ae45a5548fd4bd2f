#include "client/file_transfer.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/digest_cache.h"
#include "client/part_file.h"
#include "common/grpc_status.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "common/status_macros.h"
#include "common/write_all.h"

namespace traind {

namespace {

constexpr size_t kChunk = 1 << 20;
constexpr int64_t kProgressFrom = 64 << 20;

// "sent 512 of 1024 MiB (50%), 310 MB/s" on one line, redrawn; a newline at the end.
class Progress {
 public:
  Progress(std::ostream& out, const std::string& verb, int64_t total)
      : out_(out), verb_(verb), total_(total), start_(std::chrono::steady_clock::now()) {}
  void Update(int64_t done, bool last = false) {
    if (total_ < kProgressFrom) return;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (!last && seconds - shown_ < 0.5) return;
    shown_ = seconds;
    out_ << absl::StrFormat("\r%s %d of %d MiB (%d%%), %.0f MB/s", verb_, done >> 20, total_ >> 20,
                            total_ > 0 ? done * 100 / total_ : 100,
                            seconds > 0 ? done / seconds / 1e6 : 0.0)
         << (last ? "\n" : "") << std::flush;
  }

 private:
  std::ostream& out_;
  const std::string verb_;
  const int64_t total_;
  const std::chrono::steady_clock::time_point start_;
  double shown_ = -1;
};

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

absl::StatusOr<UploadResult> UploadFile(trainer::v1::Trainer::Stub& stub, const std::string& path,
                                        const std::string& kind, std::ostream& progress) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file"));
  }
  absl::StatusOr<std::string> hex = CachedSha256OfFile(path, DefaultCacheDir());
  if (!hex.ok()) return hex.status();
  const std::string digest = absl::StrCat("sha256:", *hex);

  UploadResult result;
  {
    grpc::ClientContext call;
    call.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    trainer::v1::GetBlobRequest request;
    request.set_digest(digest);
    const grpc::Status status = stub.GetBlob(&call, request, &result.blob);
    if (status.ok()) return result;
    if (status.error_code() != grpc::StatusCode::NOT_FOUND) return FromGrpcStatus(status);
  }

  grpc::ClientContext call;  // no deadline: a large file takes as long as the link needs
  std::unique_ptr<grpc::ClientWriter<trainer::v1::UploadBlobRequest>> writer =
      stub.UploadBlob(&call, &result.blob);
  trainer::v1::UploadBlobRequest message;
  auto* header = message.mutable_header();
  header->set_digest(digest);
  header->set_size_bytes(st.st_size);
  header->set_kind(kind);
  header->set_name(BaseName(path));
  bool open = writer->Write(message);
  std::ifstream in(path, std::ios::binary);
  Progress shown(progress, "uploaded", st.st_size);
  int64_t sent = 0;
  std::string* chunk = message.mutable_chunk();
  while (open && in) {
    chunk->resize(kChunk);
    in.read(chunk->data(), static_cast<std::streamsize>(kChunk));
    chunk->resize(static_cast<size_t>(in.gcount()));
    if (chunk->empty()) break;
    open = writer->Write(message);
    sent += static_cast<int64_t>(chunk->size());
    shown.Update(sent);
  }
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) return FromGrpcStatus(status);
  shown.Update(sent, /*last=*/true);
  result.sent = true;
  return result;
}

absl::StatusOr<trainer::v1::Artifact> DownloadArtifact(trainer::v1::Trainer::Stub& stub, int64_t id,
                                                       const std::string& name,
                                                       const std::string& output, bool force,
                                                       std::ostream& progress) {
  if (!force && access(output.c_str(), F_OK) == 0) {
    return absl::AlreadyExistsError(
        absl::StrCat(output, " exists; --force overwrites it, -o PATH writes elsewhere"));
  }
  grpc::ClientContext call;
  trainer::v1::DownloadArtifactRequest request;
  request.set_id(id);
  request.set_name(name);
  std::unique_ptr<grpc::ClientReader<trainer::v1::DownloadArtifactResponse>> reader =
      stub.DownloadArtifact(&call, request);
  std::unique_ptr<PartFile> part;
  trainer::v1::DownloadArtifactResponse message;
  trainer::v1::Artifact artifact;
  Sha256 hash;
  int64_t received = 0;
  bool written = true;
  std::unique_ptr<Progress> shown;
  while (reader->Read(&message)) {
    if (message.has_artifact()) {
      artifact = message.artifact();
      part = std::make_unique<PartFile>(output);
      if (!part->ok()) {
        const int error = errno;
        call.TryCancel();
        (void)reader->Finish();
        return absl::PermissionDeniedError(
            absl::StrCat("cannot write next to ", output, ": ", std::strerror(error)));
      }
      shown = std::make_unique<Progress>(progress, "downloaded", artifact.size_bytes());
      continue;
    }
    hash.Update(message.chunk());
    if (part != nullptr) written = written && part->Write(message.chunk());
    received += static_cast<int64_t>(message.chunk().size());
    if (shown) shown->Update(received);
  }
  const grpc::Status status = reader->Finish();
  if (!status.ok()) return FromGrpcStatus(status);  // the part file (if any) goes with `part`
  const std::string actual = hash.HexDigest();
  if (part == nullptr || actual != artifact.sha256() || received != artifact.size_bytes() ||
      !written) {
    return absl::DataLossError(absl::StrCat(
        "download of ", name, " is corrupt: ", received, " bytes with SHA-256 ", actual,
        "; expected ", artifact.size_bytes(), " bytes with ", artifact.sha256(),
        written ? " (the job may have written a newer file meanwhile: try again)"
                : " (writing it failed: is the disk full?)"));
  }
  RETURN_IF_ERROR(part->KeepAs(output, force));
  if (shown) shown->Update(received, /*last=*/true);
  return artifact;
}

}  // namespace traind
