#include "client/job_file.h"

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"

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

void Emit(const YAML::Node& node, std::string* json) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      *json += "{";
      bool first = true;
      for (const auto& kv : node) {
        if (!first) *json += ",";
        first = false;
        *json += Quote(kv.first.as<std::string>()) + ":";
        Emit(kv.second, json);
      }
      *json += "}";
      break;
    }
    case YAML::NodeType::Sequence: {
      *json += "[";
      for (size_t i = 0; i < node.size(); ++i) {
        if (i) *json += ",";
        Emit(node[i], json);
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
}

}  // namespace

absl::Status YamlToJson(const std::string& yaml, std::string* json) {
  try {
    YAML::Node root = YAML::Load(yaml);
    if (!root.IsMap()) return absl::InvalidArgumentError("expected a mapping of JobSpec fields");
    json->clear();
    Emit(root, json);
    return absl::OkStatus();
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

absl::Status LoadJobFile(const std::string& path, trainer::v1::JobSpec* spec) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read the job file"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const std::string trimmed(absl::StripLeadingAsciiWhitespace(text));
  if (!absl::StartsWith(trimmed, "{")) {
    std::string json;
    if (absl::Status s = YamlToJson(text, &json); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
    }
    text = std::move(json);
  }
  if (absl::Status s = ParseJobSpecJson(text, spec); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  return absl::OkStatus();
}

}  // namespace traind
