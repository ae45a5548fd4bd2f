#include "connect/config_file.h"

#include <sys/stat.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/durable_file.h"
#include "common/paths.h"
#include "common/status_macros.h"

namespace traind {
namespace {

constexpr const char* kFields[] = {"addr", "tls-ca", "tls-cert", "tls-key", "token-file"};

std::string* FieldOf(ContextEntry& entry, std::string_view key) {
  if (key == "addr") return &entry.addr;
  if (key == "tls-ca") return &entry.tls_ca;
  if (key == "tls-cert") return &entry.tls_cert;
  if (key == "tls-key") return &entry.tls_key;
  if (key == "token-file") return &entry.token_file;
  return nullptr;
}

}  // namespace

const ContextEntry* ClientConfig::Find(const std::string& name) const {
  for (const ContextEntry& entry : contexts) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::string DefaultConfigPath() {
  return UserConfigFile("TRAINCTL_CONFIG", "trainctl/config.toml");
}

namespace {

// [defaults.VERB] tables into `defaults`: each value as text, its kind and its line. Which verbs
// and flags exist is trainctl's to check (client/config_defaults.h); here only the shape.
absl::Status LoadDefaults(const std::string& path, const toml::table& root,
                          std::vector<DefaultFlag>* defaults) {
  const toml::node* node = root.get("defaults");
  if (node == nullptr) return absl::OkStatus();
  auto at = [&](const toml::node& n, const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", n.source().begin.line, ": ", what));
  };
  const toml::table* verbs = node->as_table();
  if (verbs == nullptr) return at(*node, "defaults: must be [defaults.VERB] tables");
  for (auto&& [verb, table_node] : *verbs) {
    const toml::table* table = table_node.as_table();
    if (table == nullptr) {
      return at(table_node, absl::StrCat("defaults.", std::string(verb.str()),
                                         ": must be a table of FLAG = VALUE"));
    }
    for (auto&& [flag, value] : *table) {
      DefaultFlag entry;
      entry.verb = std::string(verb.str());
      entry.flag = std::string(flag.str());
      entry.line = static_cast<int>(value.source().begin.line);
      absl::StatusOr<TomlText> text = ValueAsText(value);
      if (!text.ok()) {
        return at(value, absl::StrCat("defaults.", entry.verb, ".", entry.flag, ": ",
                                      text.status().message()));
      }
      entry.kind = text->kind;
      entry.value = absl::StrJoin(text->items, ",");
      defaults->push_back(std::move(entry));
    }
  }
  return absl::OkStatus();
}

// The defaults back into a table, each value of the kind it was read as.
toml::table DefaultsTable(const std::vector<DefaultFlag>& defaults) {
  toml::table verbs;
  for (const DefaultFlag& entry : defaults) {
    if (!verbs.contains(entry.verb)) verbs.insert(entry.verb, toml::table{});
    toml::table& table = *verbs[entry.verb].as_table();
    int64_t integer = 0;
    double real = 0;
    switch (entry.kind) {
      case DefaultFlag::Kind::kInteger:
        if (absl::SimpleAtoi(entry.value, &integer)) table.insert(entry.flag, integer);
        break;
      case DefaultFlag::Kind::kFloat:
        if (absl::SimpleAtod(entry.value, &real)) table.insert(entry.flag, real);
        break;
      case DefaultFlag::Kind::kBoolean:
        table.insert(entry.flag, entry.value == "true");
        break;
      case DefaultFlag::Kind::kArray: {
        toml::array items;
        for (absl::string_view item : absl::StrSplit(entry.value, ',')) {
          items.push_back(std::string(item));
        }
        table.insert(entry.flag, std::move(items));
        break;
      }
      default:
        table.insert(entry.flag, entry.value);
    }
  }
  return verbs;
}

}  // namespace

absl::StatusOr<ClientConfig> LoadClientConfig(const std::string& path) {
  ClientConfig config;
  if (!std::filesystem::exists(path)) return config;
  toml::table root;
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", error.source().begin.line, ": ", std::string(error.description())));
  }
  auto invalid = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  for (auto&& [key, value] : root) {
    if (key.str() == "current-context") {
      if (!value.is_string()) return invalid("current-context: must be a string");
      config.current_context = *value.value<std::string>();
    } else if (key.str() != "contexts" && key.str() != "defaults") {
      return invalid(absl::StrCat("unknown key '", std::string(key.str()),
                                  "'; expected current-context, [contexts.NAME] and "
                                  "[defaults.VERB] tables"));
    }
  }
  RETURN_IF_ERROR(LoadDefaults(path, root, &config.defaults));
  if (const toml::table* contexts = root["contexts"].as_table()) {
    for (auto&& [name, node] : *contexts) {
      const toml::table* table = node.as_table();
      if (table == nullptr)
        return invalid(absl::StrCat("contexts.", std::string(name.str()), ": must be a table"));
      ContextEntry entry;
      entry.name = std::string(name.str());
      for (auto&& [key, value] : *table) {
        std::string* field = FieldOf(entry, key.str());
        if (field == nullptr || !value.is_string()) {
          return invalid(absl::StrCat("contexts.", entry.name, ".", std::string(key.str()),
                                      ": unknown key or not a string; keys: addr, tls-ca, "
                                      "tls-cert, tls-key, token-file"));
        }
        *field = *value.value<std::string>();
      }
      config.contexts.push_back(std::move(entry));
    }
  } else if (root.contains("contexts")) {
    return invalid("contexts: must be a table of [contexts.NAME] tables");
  }
  std::sort(config.contexts.begin(), config.contexts.end(),
            [](const ContextEntry& a, const ContextEntry& b) { return a.name < b.name; });
  return config;
}

absl::Status SaveClientConfig(const std::string& path, const ClientConfig& config) {
  toml::table root;
  if (!config.current_context.empty()) root.insert("current-context", config.current_context);
  toml::table contexts;
  for (ContextEntry entry : config.contexts) {
    toml::table table;
    for (const char* key : kFields) {
      const std::string* value = FieldOf(entry, key);
      if (!value->empty()) table.insert(key, *value);
    }
    contexts.insert(entry.name, std::move(table));
  }
  root.insert("contexts", std::move(contexts));
  if (!config.defaults.empty()) root.insert("defaults", DefaultsTable(config.defaults));

  const std::filesystem::path target(path);
  std::error_code error;
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), error);
    if (error) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", target.parent_path().string(), ": ", error.message()));
    }
  }
  std::ostringstream text;
  text << "# trainctl contexts: `trainctl context add|use|list|remove` edits this file.\n"
       << root << "\n";
  // Durably, 0600 (it may hold tokens): a crash leaves the old file or the new one.
  if (absl::Status written = WriteFileDurably(path, text.str()); !written.ok()) {
    return absl::PermissionDeniedError(written.message());
  }
  return absl::OkStatus();
}

}  // namespace traind
