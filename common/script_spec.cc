#include "common/script_spec.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/job_spec.h"
#include "common/status_macros.h"

namespace traind {

namespace {

using trainer::v1::JobSpec;

// The JobSpec fields a program's job may set: where and how wide it runs, what it is called, when
// traind stops it, and the epochs it trains (its own flag sets them; a search's rungs are made
// of them). The rest configure the built-in trainer.
constexpr absl::string_view kScriptFields[] = {
    "script",  "name",    "device",           "processes",  "gpus",
    "devices", "threads", "stop_at_accuracy", "time_limit", "epochs"};

absl::Status OnlyScriptFields(const JobSpec& spec) {
  std::vector<const google::protobuf::FieldDescriptor*> set;
  spec.GetReflection()->ListFields(spec, &set);
  for (const google::protobuf::FieldDescriptor* field : set) {
    if (std::find(std::begin(kScriptFields), std::end(kScriptFields), field->name()) ==
        std::end(kScriptFields)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field->name(),
          ": not for a script job (the program decides its own training; a script job takes "
          "name, device, processes, gpus, devices, threads, stop_at_accuracy, time_limit and "
          "epochs)"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateArgs(const trainer::v1::ScriptSpec& script) {
  if (script.args().empty()) {
    return absl::InvalidArgumentError(
        "script.args: give the program to run and its arguments, e.g. train.py --epochs 10");
  }
  if (script.args_size() > kMaxScriptArgs) {
    return absl::InvalidArgumentError(
        absl::StrCat("script.args: at most ", kMaxScriptArgs, " words, got ", script.args_size()));
  }
  for (int i = 0; i < script.args_size(); ++i) {
    const std::string& arg = script.args(i);
    if (arg.size() > kMaxScriptArgBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "script.args[", i, "]: at most ", kMaxScriptArgBytes, " bytes, got ", arg.size()));
    }
    // execve ends a word at its first NUL: what ran would not be what was asked.
    if (arg.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("script.args[", i, "]: contains a NUL byte"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateFiles(const trainer::v1::ScriptSpec& script) {
  if (script.files_size() > kMaxScriptFiles) {
    return absl::InvalidArgumentError(absl::StrCat("script.files: at most ", kMaxScriptFiles,
                                                   " files, got ", script.files_size()));
  }
  absl::flat_hash_set<std::string> files;
  for (int i = 0; i < script.files_size(); ++i) {
    const std::string field = absl::StrCat("script.files[", i, "]");
    const trainer::v1::ScriptFile& file = script.files(i);
    RETURN_IF_ERROR(ValidateScriptPath(field + ".path", file.path()));
    RETURN_IF_ERROR(ValidateBlobDigest((field + ".digest").c_str(), file.digest()));
    if (!files.insert(file.path()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".path: '", file.path(), "' is listed twice"));
    }
  }
  // The program: `python3 train.py` runs a file of the working directory (`python3 -m pkg` and
  // `python3 -c CODE` name none).
  const std::string& program = script.args(0);
  if (!program.empty() && program[0] != '-' && !files.contains(program)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "script.args[0]: '", program.substr(0, 80), "' is not a file of the working directory (",
        script.files_size(), " files uploaded); run it from the directory that holds it"));
  }
  // "a" cannot be a file and also hold "a/b".
  for (const std::string& path : files) {
    for (size_t slash = path.find('/'); slash != std::string::npos;
         slash = path.find('/', slash + 1)) {
      if (files.contains(path.substr(0, slash))) {
        return absl::InvalidArgumentError(absl::StrCat("script.files: '", path.substr(0, slash),
                                                       "' is a file and also a folder of '", path,
                                                       "'"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateScriptPath(absl::string_view field, absl::string_view path) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": '", path.substr(0, 80), "' ", why));
  };
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  if (path.size() > kMaxScriptPathBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": at most ", kMaxScriptPathBytes, " bytes, got ", path.size()));
  }
  if (path.find('\0') != absl::string_view::npos) return bad("contains a NUL byte");
  if (path.front() == '/') return bad("must be relative to the working directory");
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == "." || part == "..") {
      return bad(
          "must not have empty, '.' or '..' parts (it must stay inside the working "
          "directory)");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateInterpreterName(absl::string_view field, absl::string_view name) {
  const bool valid =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
      });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, ": '", name.substr(0, 80),
                   "' is not an interpreter's name (1-64 letters, digits, '.', '_', '-')"));
}

bool IsScriptJobField(absl::string_view field) {
  return std::find(std::begin(kScriptFields), std::end(kScriptFields), field) !=
         std::end(kScriptFields);
}

absl::Status ValidateParamName(absl::string_view field, absl::string_view name) {
  const bool valid = !name.empty() && name.size() <= 64 &&
                     (absl::ascii_isalpha(name[0]) || name[0] == '_') &&
                     std::all_of(name.begin(), name.end(),
                                 [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
  if (valid) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": '", name.substr(0, 80),
      "' is not a placeholder's name (a letter or '_', then letters, digits or '_'; 64 at most)"));
}

std::vector<std::string> ExpandScriptArgs(const trainer::v1::ScriptSpec& script,
                                          absl::string_view device_kind) {
  std::vector<std::pair<std::string, std::string>> replacements = {
      {"{device}", std::string(device_kind)}};
  for (const auto& [name, value] : script.params()) {
    replacements.emplace_back(absl::StrCat("{", name, "}"), value);
  }
  std::vector<std::string> args;
  for (const std::string& arg : script.args()) {
    args.push_back(absl::StrReplaceAll(arg, replacements));
  }
  return args;
}

absl::Status ValidateScriptJob(const JobSpec& spec) {
  RETURN_IF_ERROR(OnlyScriptFields(spec));
  const trainer::v1::ScriptSpec& script = spec.script();
  if (!script.interpreter().empty()) {
    RETURN_IF_ERROR(ValidateInterpreterName("script.interpreter", script.interpreter()));
  }
  RETURN_IF_ERROR(ValidateArgs(script));  // args(0) exists after this
  for (const auto& [name, value] : script.params()) {
    RETURN_IF_ERROR(ValidateParamName("script.params", name));
    if (value.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("script.params[", name, "]: contains a NUL byte"));
    }
    const std::string placeholder = absl::StrCat("{", name, "}");
    if (std::none_of(script.args().begin(), script.args().end(),
                     [&](const std::string& arg) { return absl::StrContains(arg, placeholder); })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "script.params: '", name, "' is not used: put ", placeholder,
          " in the program's arguments, e.g. -- python3 train.py --", name, " ", placeholder));
    }
  }
  return ValidateFiles(script);
}

}  // namespace traind
