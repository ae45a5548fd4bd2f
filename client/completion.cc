#include "client/completion.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/command_words.h"
#include "client/context.h"
#include "client/rpc.h"
#include "common/catalog.h"

namespace traind {

namespace {

constexpr char kBash[] = R"(# trainctl completion for bash: source <(trainctl completion bash)
_trainctl() {
  local IFS=$'\n'
  COMPREPLY=($(trainctl __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _trainctl trainctl
)";

// zsh's own completion system: `source <(trainctl completion zsh)` after compinit defines it, and
// the same text as _trainctl in a directory of $fpath (the Debian package's vendor-completions)
// is autoloaded by it.
constexpr char kZsh[] = R"(#compdef trainctl
# trainctl completion for zsh: source <(trainctl completion zsh) in ~/.zshrc after compinit, or
# this text as _trainctl in a directory of $fpath.
_trainctl() {
  local -a candidates
  candidates=("${(@f)$(trainctl __complete -- "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -Q -- "${(@)candidates:#}"
}
if [[ "${funcstack[1]}" == _trainctl ]]; then
  _trainctl "$@"
else
  compdef _trainctl trainctl
fi
)";

constexpr char kFish[] =
    R"(# trainctl completion for fish: trainctl completion fish | source
complete -c trainctl -f -a '(trainctl __complete -- (commandline -opc)[2..-1] (commandline -ct))'
)";

// Verbs whose positional words are job ids.
const std::set<std::string>& JobVerbs() {
  static const auto* verbs =
      new std::set<std::string>{"show", "watch",  "logs",     "cancel",    "retry",    "delete",
                                "wait", "export", "download", "artifacts", "evaluate", "priority"};
  return *verbs;
}

// The long option `word` names (--name or --name=value) in `verb` or the root app.
const CLI::Option* OptionOf(const CLI::App& root, const CLI::App& verb, const std::string& word) {
  if (!absl::StartsWith(word, "--")) return nullptr;
  const std::string name = word.substr(2, word.find('=') - 2);
  const CLI::Option* option = LongOptionNamed(verb, name);
  return option != nullptr ? option : LongOptionNamed(root, name);
}

// Values that follow an option, where they are a known set.
std::vector<std::string> ValuesOf(const CLI::Option& option) {
  const std::vector<std::string>& names = option.get_lnames();
  auto named = [&](const char* name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  if (named("model")) return ModelNames();
  if (named("dataset")) return DatasetNames();
  if (named("device")) return {"cpu", "cuda", "mps"};
  if (named("output")) return {"table", "json"};
  return {};
}

std::vector<std::string> LongOptions(const CLI::App& app) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : app.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  }
  return flags;
}

}  // namespace

std::string CompletionScript(const std::string& shell) {
  if (shell == "zsh") return kZsh;
  if (shell == "fish") return kFish;
  return kBash;
}

std::vector<std::string> CompletionCandidates(
    const CLI::App& app, const std::vector<std::string>& words,
    const std::function<std::vector<std::string>()>& job_ids) {
  if (words.empty()) return {};
  const CLI::App* verb = &app;
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--") return {};  // a program's own words
    if (const CLI::Option* option = OptionOf(app, *verb, word)) {
      if (TakesValue(*option) && word.find('=') == std::string::npos) ++i;
      continue;
    }
    if (const CLI::App* sub = SubcommandNamed(*verb, word)) verb = sub;
  }
  const std::string& current = words.back();
  std::vector<std::string> found;
  if (words.size() >= 2) {
    const CLI::Option* option = OptionOf(app, *verb, words[words.size() - 2]);
    if (option != nullptr && TakesValue(*option) &&
        words[words.size() - 2].find('=') == std::string::npos) {
      found = ValuesOf(*option);
      if (found.empty()) return {};  // a file or a number: the shell's own completion
    }
  }
  if (found.empty()) {
    if (absl::StartsWith(current, "-")) {
      found = LongOptions(*verb);
      if (verb != &app) {
        for (std::string& flag : LongOptions(app)) found.push_back(std::move(flag));
      }
    } else if (!SubcommandNames(*verb).empty()) {
      found = SubcommandNames(*verb);
    } else if (JobVerbs().count(verb->get_name())) {
      found = job_ids();
    }
  }
  std::vector<std::string> matching;
  for (std::string& word : found) {
    if (absl::StartsWith(word, current) && !absl::StartsWith(word, "__")) {
      matching.push_back(std::move(word));
    }
  }
  std::sort(matching.begin(), matching.end());
  matching.erase(std::unique(matching.begin(), matching.end()), matching.end());
  return matching;
}

void AddCompletionCommands(CLI::App& app, Context& ctx, int* exit_code) {
  (void)exit_code;
  CLI::App* cmd = app.add_subcommand("completion", "Print a shell completion script");
  auto shell = std::make_shared<std::string>();  // as long as the callback that reads it
  cmd->add_option("shell", *shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  cmd->footer(
      "Examples:\n  source <(trainctl completion bash)     # in ~/.bashrc\n"
      "  source <(trainctl completion zsh)      # in ~/.zshrc\n"
      "  trainctl completion fish | source      # in ~/.config/fish/config.fish");
  cmd->callback([&ctx, shell] { ctx.out() << CompletionScript(*shell); });
  CLI::App* complete = app.add_subcommand("__complete", "");
  complete->group("");  // hidden: the completion scripts' own
  auto words = std::make_shared<std::vector<std::string>>();
  complete->add_option("words", *words)->allow_extra_args();
  complete->callback([&ctx, &app, words] {
    const auto job_ids = [&ctx] {
      std::vector<std::string> ids;
      trainer::v1::ListJobsRequest request;
      request.set_page_size(50);
      trainer::v1::ListJobsResponse page;
      auto call = UnaryCall();
      call->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      if (ctx.stub().ListJobs(call.get(), request, &page).ok()) {
        for (const auto& job : page.jobs()) ids.push_back(std::to_string(job.id()));
      }
      return ids;
    };
    std::vector<std::string> given = *words;
    if (given.empty()) given.push_back("");
    for (const std::string& word : CompletionCandidates(app, given, job_ids)) {
      ctx.out() << word << "\n";
    }
  });
}

}  // namespace traind
