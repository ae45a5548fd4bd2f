// What a script job may ask (Admission::CheckScript): running a program is code execution as
// traind's user, so only callers granted it may; the interpreter is one the operator allowed;
// and every file of its working directory is an upload the caller may use, as a model file is.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/script_spec.h"
#include "server/admission.h"

namespace traind {

absl::Status Admission::CheckScript(const trainer::v1::JobSpec& spec, const Caller& caller) const {
  if (!caller.may_run_code) {
    return absl::PermissionDeniedError(absl::StrCat(
        "script: '", caller.owner,
        "' may not run programs on this traind (running a program is code execution as the "
        "daemon's user); its operator can grant it: `TOKEN NAME user,run-code` in --token-file"));
  }
  const std::string& name =
      spec.script().interpreter().empty() ? kDefaultInterpreter : spec.script().interpreter();
  if (options_.interpreters.count(name) == 0) {
    std::vector<std::string> allowed;
    for (const auto& [allowed_name, path] : options_.interpreters) allowed.push_back(allowed_name);
    return absl::InvalidArgumentError(
        absl::StrCat("script.interpreter: '", name, "' is not one this traind allows (",
                     allowed.empty() ? "none: its operator adds them with traind --python NAME=PATH"
                                     : absl::StrJoin(allowed, ", "),
                     ")"));
  }
  for (int i = 0; i < spec.script().files_size(); ++i) {
    const trainer::v1::ScriptFile& file = spec.script().files(i);
    absl::StatusOr<trainer::v1::Blob> blob = UsableBlob(caller, file.digest());
    if (!blob.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("script.files[", i, "]: ", file.path(), " (", file.digest(),
                       ") is not stored on this daemon; upload it first (trainctl run does)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace traind
