#include "client/command_words.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/catalog.h"
#include "common/nearest_word.h"

namespace traind {

namespace {

// The verbs and options in force at one point of the command line: those of the verb named last
// and of every verb above it (trainctl's apps fall through to their parents).
class Scope {
 public:
  explicit Scope(const CLI::App& root) { chain_.push_back(&root); }

  const CLI::App& verb() const { return *chain_.back(); }

  // The named subcommand of the current verb, or nullptr.
  const CLI::App* Subcommand(const std::string& name) const {
    return SubcommandNamed(verb(), name);
  }
  bool HasSubcommands() const { return !SubcommandNames(verb()).empty(); }
  void Enter(const CLI::App* sub) { chain_.push_back(sub); }

  // The option called `name` ("--model" or "-o"), or nullptr.
  const CLI::Option* Option(const std::string& name) const {
    for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
      for (const CLI::Option* option : (*it)->get_options()) {
        if (!option->get_positional() && option->check_name(name)) return option;
      }
    }
    return nullptr;
  }
  std::vector<std::string> LongOptionNames() const {
    std::vector<std::string> names;
    for (const CLI::App* app : chain_) {
      for (const CLI::Option* option : app->get_options()) {
        for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
      }
    }
    return names;
  }
  // "trainctl submit": how to name the verb in a message.
  std::string Path() const {
    std::vector<std::string> names;
    for (const CLI::App* app : chain_) names.push_back(app->get_name());
    return absl::StrJoin(names, " ");
  }
  bool AtRoot() const { return chain_.size() == 1; }

 private:
  std::vector<const CLI::App*> chain_;
};

// `after_word`: a positional came before it in this verb. In a verb that runs a program that
// begins the program's command, whose own options belong after "--".
absl::Status UnknownOption(const Scope& scope, const std::string& name, bool after_word) {
  // The verbs that run a program (`run`, `sweep`) are those that send its working directory.
  const bool takes_command = scope.verb().get_option_no_throw("--workdir") != nullptr;
  if (after_word && takes_command) {
    return absl::InvalidArgumentError(
        absl::StrCat(scope.verb().get_name(), ": unknown option ", name,
                     "; a program's own options go after --, e.g. ", scope.Path(),
                     " -- python3 train.py ", name, " ..."));
  }
  const std::string nearest = NearestWord(name, scope.LongOptionNames());
  const std::string where = scope.AtRoot() ? "" : absl::StrCat(scope.verb().get_name(), ": ");
  return absl::InvalidArgumentError(
      nearest.empty()
          ? absl::StrCat(where, "unknown option ", name, " (`", scope.Path(),
                         " --help` lists them)")
          : absl::StrCat(where, "unknown option ", name, "; did you mean ", nearest, "?"));
}

absl::Status UnknownVerb(const Scope& scope, const std::string& word) {
  const std::vector<std::string> verbs = SubcommandNames(scope.verb());
  const std::string nearest = NearestWord(word, verbs);
  const std::string what =
      scope.AtRoot() ? "command" : absl::StrCat(scope.verb().get_name(), " command");
  return absl::InvalidArgumentError(
      nearest.empty()
          ? absl::StrCat("unknown ", what, " '", word, "' (`", scope.Path(),
                         " --help` lists them: ", absl::StrJoin(verbs, ", "), ")")
          : absl::StrCat("unknown ", what, " '", word, "'; did you mean '", nearest, "'?"));
}

// "-1e-3" and "-5" are values (a negative learning rate or priority), not short options.
bool IsShortOption(const std::string& word) {
  return word.size() >= 2 && word[0] == '-' && word[1] != '-' &&
         std::isalpha(static_cast<unsigned char>(word[1]));
}

}  // namespace

const CLI::App* SubcommandNamed(const CLI::App& parent, const std::string& name) {
  for (const CLI::App* sub : parent.get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty() && sub->check_name(name)) return sub;
  }
  return nullptr;
}

std::vector<std::string> SubcommandNames(const CLI::App& parent) {
  std::vector<std::string> names;
  for (const CLI::App* sub : parent.get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty()) names.push_back(sub->get_name());
  }
  return names;
}

const CLI::Option* LongOptionNamed(const CLI::App& app, const std::string& flag) {
  for (const CLI::Option* option : app.get_options()) {
    if (!option->get_positional() && option->check_lname(flag)) return option;
  }
  return nullptr;
}

bool TakesValue(const CLI::Option& option) { return option.get_items_expected_max() > 0; }

std::string FlagForName(const std::string& word) {
  for (const auto& [flag, names] :
       {std::pair{"--model", ModelNames()}, std::pair{"--dataset", DatasetNames()}}) {
    if (std::find(names.begin(), names.end(), word) != names.end()) {
      return absl::StrCat(" (did you mean ", flag, " ", word, "?)");
    }
  }
  return "";
}

absl::StatusOr<VerbAt> ReadCommandWords(const CLI::App& app, const std::vector<std::string>& args) {
  Scope scope(app);
  VerbAt named{&app, 1};
  bool value_next = false;  // the word after an option that takes one is its value
  bool after_word = false;  // a positional came before, in the current verb
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;  // the rest is a user's program and its arguments
    if (value_next) {
      value_next = false;
      continue;
    }
    if (absl::StartsWith(word, "--") && word.size() > 2) {
      const size_t equals = word.find('=');
      const std::string name = word.substr(0, equals);
      const CLI::Option* option = scope.Option(name);
      if (option == nullptr) return UnknownOption(scope, name, after_word);
      value_next = equals == std::string::npos && TakesValue(*option);
      continue;
    }
    if (IsShortOption(word)) {
      const std::string name = word.substr(0, 2);
      const CLI::Option* option = scope.Option(name);
      if (option == nullptr) return UnknownOption(scope, name, after_word);
      value_next = word.size() == 2 && TakesValue(*option);
      continue;
    }
    // A word: the next verb while the current one has verbs below it, else a positional.
    const CLI::App* sub = scope.Subcommand(word);
    if (sub != nullptr) {
      scope.Enter(sub);
      named = {sub, i + 1};
      after_word = false;
    } else if (!scope.HasSubcommands()) {
      after_word = true;
    } else if (scope.verb()
                   .get_options([](const CLI::Option* o) { return o->get_positional(); })
                   .empty()) {
      return UnknownVerb(scope, word);
    } else {
      after_word = true;
    }
  }
  return named;
}

}  // namespace traind
