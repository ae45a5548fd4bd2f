#include "common/artifact_names.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/script_spec.h"

namespace traind {

namespace {

bool PlainNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

}  // namespace

absl::Status ValidateArtifactName(bool script_job, absl::string_view name) {
  if (script_job) {
    if (name.size() > kMaxArtifactNameBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("name: at most ", kMaxArtifactNameBytes, " bytes, got ", name.size()));
    }
    return ValidateScriptPath("name", name);
  }
  if (!name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), PlainNameChar)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("name: '", name.substr(0, 64),
                   "' is not an artifact name (letters, digits, '-' and '_'; e.g. best, final)"));
}

std::string DefaultDownloadName(int64_t job_id, absl::string_view name) {
  const size_t slash = name.rfind('/');
  std::string last(slash == absl::string_view::npos ? name : name.substr(slash + 1));
  if (last.size() > 128) last.erase(0, last.size() - 128);  // keep the extension
  const bool weights = name == "best" || name == "final";
  for (char& c : last) {
    if (!PlainNameChar(c) && c != '.') c = '_';
  }
  if (last.empty() || last[0] == '.') last.insert(0, "_");  // never a hidden file
  return absl::StrCat("job", job_id, "-", last, weights ? ".pt" : "");
}

}  // namespace traind
