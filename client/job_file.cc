#include "client/job_file.h"

#include <yaml-cpp/yaml.h>

#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"
#include "common/paths.h"
#include "common/status_macros.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrCat("\\u00", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Job files are a few levels deep and a few KiB. The limits stop an alias that contains itself
// (`a: &x [*x]`: endless recursion) and aliases of aliases (`b: [*a, *a, ...]`, `c: [*b, *b, ...]`:
// exponential output) from exhausting the stack or the memory.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxJsonBytes = 1 << 20;

absl::Status Emit(const YAML::Node& node, int depth, std::string* json) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("nested more than ", kMaxDepth, " levels deep"));
  }
  if (json->size() > kMaxJsonBytes) {
    return absl::InvalidArgumentError("more than 1 MiB once its aliases are expanded");
  }
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      *json += "{";
      bool first = true;
      for (const auto& kv : node) {
        if (!first) *json += ",";
        first = false;
        *json += Quote(kv.first.as<std::string>()) + ":";
        RETURN_IF_ERROR(Emit(kv.second, depth + 1, json));
      }
      *json += "}";
      break;
    }
    case YAML::NodeType::Sequence: {
      *json += "[";
      for (size_t i = 0; i < node.size(); ++i) {
        if (i) *json += ",";
        RETURN_IF_ERROR(Emit(node[i], depth + 1, json));
      }
      *json += "]";
      break;
    }
    case YAML::NodeType::Scalar: {
      const std::string value = node.Scalar();
      double number;
      const bool quoted = node.Tag() == "!";  // '...' or "..." in the file
      if (!quoted && (value == "true" || value == "false")) {
        *json += value;
      } else if (!quoted && absl::SimpleAtod(value, &number) && !absl::StrContains(value, "x")) {
        *json += value;
      } else {
        *json += Quote(value);
      }
      break;
    }
    default:
      *json += "null";
  }
  return absl::OkStatus();
}

// A key written twice in one mapping (YAML and JSON parsers keep one of them without a word).
// `budget` counts the nodes looked at: aliases of aliases would make the walk exponential, as
// they would make Emit's output (kMaxJsonBytes), so it is bounded the same way.
constexpr int kMaxNodes = 100000;
absl::Status CheckNoDuplicateKeys(const YAML::Node& node, int depth, int* budget) {
  if (depth > kMaxDepth) {
    return absl::InvalidArgumentError(absl::StrCat("nested more than ", kMaxDepth, " levels deep"));
  }
  if (--*budget < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("more than ", kMaxNodes, " values once its aliases are expanded"));
  }
  if (node.IsMap()) {
    std::set<std::string> keys;
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      if (!keys.insert(key).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("line ", kv.first.Mark().line + 1, ": duplicate key '", key, "'"));
      }
      RETURN_IF_ERROR(CheckNoDuplicateKeys(kv.second, depth + 1, budget));
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) RETURN_IF_ERROR(CheckNoDuplicateKeys(item, depth + 1, budget));
  }
  return absl::OkStatus();
}

// One job (or sweep) a file: a second document (`---`) would be dropped without a word.
absl::StatusOr<YAML::Node> LoadOneDocument(const std::string& text) {
  std::vector<YAML::Node> documents = YAML::LoadAll(text);
  if (documents.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        documents.size(), " documents (separated by ---); a file holds one: split it"));
  }
  YAML::Node root = documents.empty() ? YAML::Node() : documents.front();
  int budget = kMaxNodes;
  RETURN_IF_ERROR(CheckNoDuplicateKeys(root, 0, &budget));
  return root;
}

}  // namespace

absl::Status YamlToJson(const std::string& yaml, std::string* json) {
  try {
    ASSIGN_OR_RETURN(YAML::Node root, LoadOneDocument(yaml));
    if (!root.IsMap()) return absl::InvalidArgumentError("expected a mapping of JobSpec fields");
    json->clear();
    return Emit(root, 0, json);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

absl::Status ParseJobFile(const std::string& text, trainer::v1::JobSpec* spec) {
  std::string json;
  const std::string* input = &text;
  if (!absl::StartsWith(absl::StripLeadingAsciiWhitespace(text), "{")) {
    RETURN_IF_ERROR(YamlToJson(text, &json));
    input = &json;
  } else {
    // JSON is read by protobuf's own parser (its number and escape rules), after the checks that
    // parser does not make: JSON is YAML, so yaml-cpp finds repeated keys and extra documents.
    // (JSON that yaml-cpp cannot read, e.g. tab-indented, is left to protobuf's parser alone.)
    try {
      RETURN_IF_ERROR(LoadOneDocument(text).status());
    } catch (const YAML::Exception&) {
    }
  }
  return ParseJobSpecJson(*input, spec);
}

absl::Status ParseSweepFile(const std::string& text, trainer::v1::SweepSpec* spec) {
  std::string json;
  try {  // conversions throw too: `grid: {device: [cpu, {a: b}]}` has a value that is no string
    ASSIGN_OR_RETURN(YAML::Node root, LoadOneDocument(text));
    if (!root.IsMap()) return absl::InvalidArgumentError("expected a mapping");
    // `grid: {field: [values]}` is friendlier to write than SweepSpec's list of axes.
    if (root["grid"]) {
      YAML::Node axes(YAML::NodeType::Sequence);
      for (const auto& kv : root["grid"]) {
        YAML::Node axis;
        axis["field"] = kv.first.as<std::string>();
        YAML::Node values(YAML::NodeType::Sequence);
        if (kv.second.IsSequence()) {
          for (const auto& v : kv.second) values.push_back(v.as<std::string>());
        } else {
          values.push_back(kv.second.as<std::string>());
        }
        axis["values"] = values;
        axes.push_back(axis);
      }
      root.remove("grid");
      root["axes"] = axes;
    }
    // `search: {params: {lr: "loguniform:1e-4:1e-1"}}` likewise, for SearchSpec's params.
    if (root["search"] && root["search"].IsMap() && root["search"]["params"] &&
        root["search"]["params"].IsMap()) {
      YAML::Node params(YAML::NodeType::Sequence);
      for (const auto& kv : root["search"]["params"]) {
        YAML::Node param;
        param["field"] = kv.first.as<std::string>();
        param["distribution"] = kv.second.as<std::string>();
        params.push_back(param);
      }
      root["search"]["params"] = params;
    }
    YAML::Emitter emitter;
    emitter << YAML::DoubleQuoted << root;  // quoted: values reach SweepAxis as strings
    RETURN_IF_ERROR(YamlToJson(emitter.c_str(), &json));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
  google::protobuf::util::JsonParseOptions options;
  auto status = google::protobuf::util::JsonStringToMessage(json, spec, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        std::string(status.message().data(), status.message().size()));
  }
  return absl::OkStatus();
}

namespace {

// The file's text, or INVALID_ARGUMENT naming the file and what it is ("job", "sweep").
absl::StatusOr<std::string> ReadFile(const std::string& path, const char* what) {
  absl::StatusOr<std::string> text = ReadTextFile(path);
  if (!text.ok())
    return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read the ", what, " file"));
  return text;
}

absl::Status NameFile(const std::string& path, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", status.message()));
}

}  // namespace

absl::Status LoadJobFile(const std::string& path, trainer::v1::JobSpec* spec) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, "job"));
  return NameFile(path, ParseJobFile(text, spec));
}

absl::Status LoadSweepFile(const std::string& path, trainer::v1::SweepSpec* spec) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path, "sweep"));
  return NameFile(path, ParseSweepFile(text, spec));
}

}  // namespace traind
