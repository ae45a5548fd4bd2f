// Moving files between trainctl and traind over gRPC: uploads (models, datasets) as UploadBlob
// streams, content-addressed, so content the daemon already holds is not sent again; downloads of
// a job's artifacts, checked against their SHA-256 and written only when complete (a temporary
// file renamed into place). Progress goes to `progress` for files over 64 MiB.
#ifndef TRAIND_CLIENT_FILE_TRANSFER_H_
#define TRAIND_CLIENT_FILE_TRANSFER_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

struct UploadResult {
  trainer::v1::Blob blob;
  bool sent = false;  // false: the daemon had the content already
};

// Hashes `path` (or takes its digest from the cache, digest_cache.h), asks the daemon (GetBlob) and
// uploads only if it does not hold the content.
// `kind`: model | data. NOT_FOUND for a missing file; the daemon's refusal as its status.
absl::StatusOr<UploadResult> UploadFile(trainer::v1::Trainer::Stub& stub, const std::string& path,
                                        const std::string& kind, std::ostream& progress);

// Downloads artifact `name` of job `id` to `output` (refusing to overwrite unless `force`).
// DATA_LOSS when the bytes do not match the announced SHA-256 (nothing is written then).
absl::StatusOr<trainer::v1::Artifact> DownloadArtifact(trainer::v1::Trainer::Stub& stub, int64_t id,
                                                       const std::string& name,
                                                       const std::string& output, bool force,
                                                       std::ostream& progress);

}  // namespace traind

#endif  // TRAIND_CLIENT_FILE_TRANSFER_H_
