#include "server/daemon_config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/nearest_word.h"
#include "common/paths.h"
#include "connect/toml_value.h"

namespace traind {

namespace {

// Options that say how to read the configuration or what to do instead of starting: a file that
// named them would be read by them.
bool CommandLineOnly(const CLI::Option& option) {
  for (const char* name : {"help", "version", "config", "print-config", "man-page"}) {
    if (option.check_lname(name)) return true;
  }
  return false;
}

CLI::Option* LongOption(CLI::App& app, const std::string& key) {
  for (CLI::Option* option : app.get_options()) {
    if (!option->get_positional() && option->check_lname(key)) return option;
  }
  return nullptr;
}

bool TakesValue(const CLI::Option& option) { return option.get_items_expected_max() > 0; }
bool TakesList(const CLI::Option& option) { return option.get_items_expected_max() > 1; }

// What CLI11's type name says a value must look like: "INT:POSITIVE", "FLOAT", "TEXT",
// "INT:SIZE" (a size: bytes, or text such as "16GiB").
bool IsNumeric(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  return absl::StartsWith(type, "INT") || absl::StartsWith(type, "UINT") ||
         absl::StartsWith(type, "FLOAT");
}

absl::Status Refuse(const std::string& at, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(at, ": ", what));
}

// The kind of value a key needs, before the option's own validators see its text.
absl::Status CheckKind(const CLI::Option& option, const ConfigEntry& entry, const std::string& at) {
  const std::string kind = TomlKindName(entry.kind);
  if (!TakesValue(option)) {
    if (entry.kind == TomlKind::kBoolean) return absl::OkStatus();
    return Refuse(at, absl::StrCat("--", entry.key, " is a switch: true or false, not ", kind));
  }
  if (entry.kind == TomlKind::kArray) {
    if (TakesList(option)) return absl::OkStatus();
    return Refuse(at, "takes one value, not a list");
  }
  const std::string type = option.get_type_name();
  const bool numeric = IsNumeric(option);
  const bool size = absl::EndsWith(type, "SIZE");
  std::string expected;
  if (entry.kind == TomlKind::kBoolean) {
    expected = numeric ? "a number" : "a string";
  } else if (numeric && !size && entry.kind == TomlKind::kString) {
    expected = "a number";
  } else if (!numeric && entry.kind != TomlKind::kString) {
    expected = "a string (in quotes)";
  } else if (absl::StartsWith(type, "INT") && entry.kind == TomlKind::kFloat) {
    expected = "an integer";
  }
  if (expected.empty()) return absl::OkStatus();
  return Refuse(at, absl::StrCat("expected ", expected, ", not ", kind, " (",
                                 absl::StrJoin(entry.items, ", "), ")"));
}

// CLI11's message without the option's name: the caller names the key.
std::string TidyMessage(std::string message, const std::string& key) {
  const std::string prefix = "--" + key + ": ";
  if (absl::StartsWith(message, prefix)) message = message.substr(prefix.size());
  return message;
}

// Gives `option` the entry's value: the option's own conversion and validators, as if typed.
absl::Status ParseEntry(CLI::App& app, const CLI::Option& option, const ConfigEntry& entry,
                        const std::string& at) {
  std::vector<std::string> args;
  if (!TakesValue(option)) {
    args.push_back(absl::StrCat("--", entry.key, "=", entry.items.at(0)));
  } else {
    for (const std::string& item : entry.items)
      args.push_back(absl::StrCat("--", entry.key, "=", item));
  }
  std::reverse(args.begin(), args.end());  // CLI11 reads a vector from its end
  try {
    app.parse(args);
  } catch (const CLI::ParseError& error) {
    return Refuse(at, TidyMessage(error.what(), entry.key));
  }
  return absl::OkStatus();
}

// Where a file's mode lets others than its owner change what traind runs.
absl::Status CheckOwnership(const std::string& path, const struct stat& info) {
  if (!S_ISREG(info.st_mode)) return Refuse(path, "not a regular file");
  if ((info.st_mode & 022) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
    return Refuse(path, absl::StrCat("others than its owner may write it (mode ", mode,
                                     "), and its settings choose the programs traind runs: "
                                     "chmod go-w ",
                                     path));
  }
  if (info.st_uid != 0 && info.st_uid != geteuid()) {
    return Refuse(path, absl::StrCat("owned by uid ", info.st_uid,
                                     ", neither root nor the user traind runs as"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Refuse(path, absl::StrCat("cannot read: ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::vector<ConfigEntry>> ParseEntries(const std::string& path,
                                                      const std::string& text) {
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& error) {
    return Refuse(absl::StrCat(path, ":", error.source().begin.line),
                  std::string(error.description()));
  }
  std::vector<ConfigEntry> entries;
  for (auto&& [key, value] : root) {
    ConfigEntry entry;
    entry.key = std::string(key.str());
    entry.line = static_cast<int>(value.source().begin.line);
    const std::string at = absl::StrCat(path, ":", entry.line, ": ", entry.key);
    if (value.is_table()) {
      return Refuse(at, "a table; traind's config is KEY = VALUE lines, each key a flag's name");
    }
    absl::StatusOr<TomlText> parsed = ValueAsText(value);
    if (!parsed.ok()) return Refuse(at, std::string(parsed.status().message()));
    entry.items = std::move(parsed->items);
    entry.kind = parsed->kind;
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const ConfigEntry& a, const ConfigEntry& b) { return a.line < b.line; });
  return entries;
}

// A value as TOML writes it: a number or switch bare, text in quotes.
std::string TomlItem(const CLI::Option& option, const std::string& item) {
  double number = 0;
  if (!TakesValue(option) || (IsNumeric(option) && absl::SimpleAtod(item, &number))) return item;
  std::string quoted = "\"";
  for (const char c : item) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      snprintf(escaped, sizeof escaped, "\\u%04x", c);
      quoted += escaped;
    } else {
      quoted += c;
    }
  }
  return quoted + "\"";
}

}  // namespace

std::string DefaultDaemonConfigPath() {
  return UserConfigFile("TRAIND_CONFIG", "traind/traind.toml");
}

absl::StatusOr<DaemonConfig> ReadDaemonConfig(const std::string& path, bool must_exist) {
  DaemonConfig config;
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    if (errno == ENOENT && !must_exist) {
      config.none_because = path + " does not exist";
      return config;
    }
    return Refuse(path, absl::StrCat("cannot read: ", std::strerror(errno)));
  }
  if (absl::Status owned = CheckOwnership(path, info); !owned.ok()) return owned;
  absl::StatusOr<std::string> text = ReadWhole(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<std::vector<ConfigEntry>> entries = ParseEntries(path, *text);
  if (!entries.ok()) return entries.status();
  config.path = path;
  config.entries = *std::move(entries);
  return config;
}

absl::StatusOr<std::vector<SettingSource>> ApplyDaemonConfig(CLI::App& app,
                                                             const DaemonConfig& config) {
  std::map<const CLI::Option*, std::vector<std::string>> given;
  std::vector<std::string> keys;
  for (const CLI::Option* option : app.get_options()) {
    if (option->count() > 0) given[option] = option->results();
    if (!CommandLineOnly(*option)) {
      for (const std::string& name : option->get_lnames()) keys.push_back(name);
    }
  }
  std::map<const CLI::Option*, const ConfigEntry*> from_file;
  for (const ConfigEntry& entry : config.entries) {
    const std::string at = absl::StrCat(config.path, ":", entry.line, ": ", entry.key);
    CLI::Option* option = LongOption(app, entry.key);
    if (option != nullptr && CommandLineOnly(*option)) {
      return Refuse(at, absl::StrCat("only the command line takes --", entry.key));
    }
    if (option == nullptr) {
      const std::string near = NearestWord(entry.key, keys);
      return Refuse(at,
                    absl::StrCat("unknown key; the keys are traind's flags without their "
                                 "dashes (`traind --help`)",
                                 near.empty() ? "" : absl::StrCat("; did you mean ", near, "?")));
    }
    if (absl::Status kind = CheckKind(*option, entry, at); !kind.ok()) return kind;
    from_file[option] = &entry;
    if (given.count(option) > 0) continue;  // the command line wins
    if (absl::Status parsed = ParseEntry(app, *option, entry, at); !parsed.ok()) return parsed;
  }
  std::vector<SettingSource> settings;
  for (const CLI::Option* option : app.get_options()) {
    if (CommandLineOnly(*option)) continue;
    SettingSource setting{option, {}, "default"};
    if (auto it = given.find(option); it != given.end()) {
      setting = {option, it->second, "command line"};
      if (!TakesValue(*option)) setting.items = {"true"};
    } else if (auto file = from_file.find(option); file != from_file.end()) {
      setting = {option, file->second->items, absl::StrCat(config.path, ":", file->second->line)};
    } else if (!TakesValue(*option)) {
      setting.items = {"false"};
    } else if (!option->get_default_str().empty()) {
      setting.items = {option->get_default_str()};
    }
    settings.push_back(std::move(setting));
  }
  return settings;
}

std::string RenderSettings(const std::vector<SettingSource>& settings, const DaemonConfig& config,
                           const std::map<std::string, std::string>& unset_meanings) {
  std::string out = absl::StrCat(
      "# What traind starts with: the command line, then ",
      config.path.empty() ? absl::StrCat("no config file (", config.none_because, ")")
                          : config.path,
      ", then traind's defaults.\n# Each line says where its value came from; this output is "
      "itself a valid config file.\n");
  for (const SettingSource& setting : settings) {
    const std::string key = setting.option->get_lnames().at(0);
    std::string line;
    if (setting.items.empty()) {
      line = absl::StrCat("# ", key, " is not set");
      if (auto it = unset_meanings.find(key); it != unset_meanings.end()) {
        absl::StrAppend(&line, ": ", it->second);
      }
    } else if (TakesList(*setting.option)) {
      std::vector<std::string> items;
      for (const std::string& item : setting.items)
        items.push_back(TomlItem(*setting.option, item));
      line = absl::StrCat(key, " = [", absl::StrJoin(items, ", "), "]");
    } else {
      line = absl::StrCat(key, " = ", TomlItem(*setting.option, setting.items.front()));
    }
    if (line.size() < 48) line.resize(48, ' ');
    absl::StrAppend(&out, line, "  # ", setting.source, "\n");
  }
  return out;
}

}  // namespace traind
