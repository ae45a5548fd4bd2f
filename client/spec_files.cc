#include "client/spec_files.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/file_transfer.h"
#include "client/spec_flags.h"
#include "common/terminal_text.h"

namespace traind {

namespace {

absl::StatusOr<std::string> Upload(trainer::v1::Trainer::Stub& stub, const std::string& path,
                                   const char* kind, std::ostream& progress) {
  absl::StatusOr<UploadResult> uploaded = UploadFile(stub, path, kind, progress);
  if (!uploaded.ok()) return uploaded.status();
  const trainer::v1::Blob& blob = uploaded->blob;
  progress << absl::StrFormat(
      "%s %s (%s, %.1f MB)%s\n", uploaded->sent ? "uploaded" : "already on the daemon:", path,
      TerminalSafe(blob.digest().substr(0, 19)), blob.size_bytes() / 1e6,
      blob.description().empty() ? "" : ": " + TerminalSafe(blob.description()));
  return blob.digest();
}

}  // namespace

absl::Status ResolveSpecFiles(trainer::v1::Trainer::Stub& stub, bool upload_data,
                              trainer::v1::JobSpec* spec, std::ostream& progress) {
  if (IsLocalFile(spec->model_file())) {
    absl::StatusOr<std::string> digest = Upload(stub, spec->model_file(), "model", progress);
    if (!digest.ok()) return digest.status();
    spec->set_model_file(*digest);
  }
  if (IsLocalWeights(spec->init_from())) {
    absl::StatusOr<std::string> digest = Upload(stub, spec->init_from(), "weights", progress);
    if (!digest.ok()) return digest.status();
    spec->set_init_from(*digest);
  }
  if (!IsLocalFile(spec->data_file())) return absl::OkStatus();
  if (upload_data) {
    absl::StatusOr<std::string> digest = Upload(stub, spec->data_file(), "data", progress);
    if (!digest.ok()) return digest.status();
    spec->set_data_file(*digest);
  } else if (spec->data_file()[0] != '/') {
    spec->set_data_file(std::filesystem::absolute(spec->data_file()).lexically_normal().string());
  }
  return absl::OkStatus();
}

}  // namespace traind
