#include "client/config_defaults.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/command_words.h"

namespace traind {

namespace {

std::vector<std::string> LongNames(const CLI::App& verb) {
  std::vector<std::string> names;
  for (const CLI::Option* option : verb.get_options()) {
    for (const std::string& name : option->get_lnames()) names.push_back(name);
  }
  return names;
}

}  // namespace

absl::Status CheckConfigDefaults(const CLI::App& app, const std::vector<DefaultFlag>& defaults,
                                 const std::string& path) {
  for (const DefaultFlag& entry : defaults) {
    const std::string at = absl::StrCat(path, ":", entry.line, ": defaults.", entry.verb);
    const CLI::App* verb = SubcommandNamed(app, entry.verb);
    if (verb == nullptr) {
      const std::string near = NearestWord(entry.verb, SubcommandNames(app));
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": trainctl has no command ", entry.verb,
                       near.empty() ? "" : absl::StrCat(" (did you mean [defaults.", near, "]?)")));
    }
    const CLI::Option* option = LongOptionNamed(*verb, entry.flag);
    if (option == nullptr || option->get_name() == "--help") {
      const std::string near = NearestWord(entry.flag, LongNames(*verb));
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".", entry.flag, ": ", entry.verb, " has no option --", entry.flag,
                       near.empty() ? "" : absl::StrCat(" (did you mean ", near, "?)")));
    }
    if (!TakesValue(*option) && entry.kind != DefaultFlag::Kind::kBoolean) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ".", entry.flag, ": --", entry.flag, " is a switch: true or false"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> WithConfigDefaults(const CLI::App& app, const VerbAt& named,
                                            const std::vector<DefaultFlag>& defaults,
                                            std::vector<std::string> args) {
  if (named.verb == &app) return args;
  const auto program_at = std::find(args.begin(), args.end(), "--");
  auto given = [&](const CLI::Option& option) {
    return std::any_of(args.begin(), program_at, [&](const std::string& word) {
      const std::string name = word.substr(0, word.find('='));
      return absl::StartsWith(name, "-") && option.check_name(name);
    });
  };
  std::vector<std::string> inserted;
  for (const DefaultFlag& entry : defaults) {
    if (!named.verb->check_name(entry.verb)) continue;
    const CLI::Option* option = LongOptionNamed(*named.verb, entry.flag);
    if (option == nullptr || given(*option)) continue;
    if (!TakesValue(*option)) {
      if (entry.value == "true") inserted.push_back("--" + entry.flag);
    } else {
      inserted.push_back(absl::StrCat("--", entry.flag, "=", entry.value));
    }
  }
  args.insert(args.begin() + static_cast<std::ptrdiff_t>(named.after), inserted.begin(),
              inserted.end());
  return args;
}

}  // namespace traind
