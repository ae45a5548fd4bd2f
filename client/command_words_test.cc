#include "client/command_words.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "client/exit_codes.h"
#include "client/trainctl.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

// trainctl's real app, as RunTrainctl builds it.
class CommandWordsTest : public ::testing::Test {
 protected:
  CommandWordsTest() : ctx_(out_, err_, false), app_(MakeTrainctlApp(ctx_, &exit_code_)) {}

  // The message ReadCommandWords gives `line` (words split at spaces), "" when it passes.
  std::string Check(const std::string& line) {
    std::vector<std::string> args = absl::StrSplit(line, ' ', absl::SkipEmpty());
    absl::Status status = ReadCommandWords(*app_, args).status();
    if (!status.ok()) EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  }

  std::ostringstream out_, err_;
  Context ctx_;
  int exit_code_ = 0;
  std::unique_ptr<CLI::App> app_;
};

TEST_F(CommandWordsTest, AMistypedOptionIsNamedWithTheNearestOne) {
  EXPECT_EQ(Check("trainctl submit --modle mlp --dataset fashion-mnist"),
            "submit: unknown option --modle; did you mean --model?");
  EXPECT_EQ(Check("trainctl submit --model=mlp --datset=fashion-mnist"),
            "submit: unknown option --datset; did you mean --dataset?");
  EXPECT_EQ(Check("trainctl sweep --learning-rate 1e-3,1e-2"),
            "sweep: unknown option --learning-rate (`trainctl sweep --help` lists them)");
  EXPECT_EQ(Check("trainctl list --stat running"),
            "list: unknown option --stat; did you mean --state?");
  EXPECT_EQ(Check("trainctl --ouptut json list"),
            "unknown option --ouptut; did you mean --output?");
  EXPECT_EQ(Check("trainctl submit --lr-sched cosine"),
            "submit: unknown option --lr-sched; did you mean --lr-schedule?");
  EXPECT_EQ(Check("trainctl logs 3 -x"),
            "logs: unknown option -x (`trainctl logs --help` lists them)");
}

TEST_F(CommandWordsTest, AMistypedVerbIsNamedWithTheNearestOne) {
  EXPECT_EQ(Check("trainctl sbumit --model mlp"),
            "unknown command 'sbumit'; did you mean 'submit'?");
  EXPECT_EQ(Check("trainctl lsit"), "unknown command 'lsit'; did you mean 'list'?");
  EXPECT_EQ(Check("trainctl context ad lab --addr h:1"),
            "unknown context command 'ad'; did you mean 'add'?");
  const std::string far = Check("trainctl frobnicate");
  EXPECT_EQ(far.rfind("unknown command 'frobnicate' (`trainctl --help` lists them: ", 0), 0u)
      << far;
}

TEST_F(CommandWordsTest, AProgramsOptionsBeforeTheSeparatorAreExplained) {
  EXPECT_EQ(Check("trainctl run python3 train.py --epochs 3"),
            "run: unknown option --epochs; a program's own options go after --, e.g. trainctl run "
            "-- python3 train.py --epochs ...");
}

TEST_F(CommandWordsTest, TheVerbNamedIsFoundAfterGlobalOptions) {
  const std::vector<std::string> args = {"trainctl", "-o",  "json",   "context",
                                         "add",      "lab", "--addr", "h:1"};
  const absl::StatusOr<VerbAt> named = ReadCommandWords(*app_, args);
  ASSERT_TRUE(named.ok()) << named.status();
  EXPECT_EQ(named->verb->get_name(), "add");
  EXPECT_EQ(named->after, 5u);
  EXPECT_EQ(ReadCommandWords(*app_, {"trainctl", "--version"})->verb, app_.get());
}

TEST_F(CommandWordsTest, ValidLinesPass) {
  for (const char* line : {
           "trainctl submit --model mlp --dataset fashion-mnist --lr 1e-3 --watch",
           "trainctl submit --lr -1e-3",  // a value, refused later with its range
           "trainctl priority 5 -1",
           "trainctl --output json list",
           "trainctl list -o json --state running",
           "trainctl devices --addr unix:/tmp/x",
           "trainctl run --device cpu -- python3 train.py --epochs 3 --modle x",
           "trainctl sweep --param lr=1e-3 --param lr=1e-2 -- python3 train.py --lr {lr}",
           "trainctl context add lab --addr h:1",
           "trainctl submit --help",
           "trainctl --version",
       }) {
    EXPECT_EQ(Check(line), "") << line;
  }
}

// Every example in every verb's --help must run as written: none may use an option that does not
// exist (`submit --help` once showed `--learning-rate`).
TEST_F(CommandWordsTest, EveryHelpExampleUsesRealVerbsAndOptions) {
  int examples = 0;
  std::vector<const CLI::App*> apps = {app_.get()};
  while (!apps.empty()) {
    const CLI::App* app = apps.back();
    apps.pop_back();
    for (const CLI::App* sub : app->get_subcommands([](const CLI::App*) { return true; })) {
      apps.push_back(sub);
    }
    for (absl::string_view line : absl::StrSplit(app->get_footer(), '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!absl::ConsumePrefix(&line, "trainctl ")) continue;
      // "trainctl run --processes 2 -- python3 ddp.py     (torchrun's environment)"
      line = line.substr(0, std::min(line.find("  ("), line.find("  #")));
      const std::string example = absl::StrCat("trainctl ", line);
      EXPECT_EQ(Check(example), "") << "in `" << app->get_name() << " --help`: " << example;
      ++examples;
    }
  }
  EXPECT_GT(examples, 20);
}

// The same for every trainctl line in the docs' code blocks (README.md, docs/*.md): a user copies
// them. Shell around it (`> file`, `| jq`, a `\` continuation) is cut or joined first; a synopsis
// with [optional] parts is not an example, nor is a typo shown with trainctl's refusal under it.
TEST_F(CommandWordsTest, EveryTrainctlLineInTheDocsUsesRealVerbsAndOptions) {
  std::vector<std::filesystem::path> pages = {std::filesystem::path(TRAIND_SOURCE_DIR) /
                                              "README.md"};
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(TRAIND_SOURCE_DIR) / "docs")) {
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  }
  int lines_checked = 0;
  for (const std::filesystem::path& page : pages) {
    std::ifstream in(page);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::string command;
    bool in_code = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "```")) {
        in_code = !in_code;
        continue;
      }
      if (!in_code) continue;
      absl::string_view text = absl::StripAsciiWhitespace(line);
      if (command.empty()) {
        absl::ConsumePrefix(&text, "$ ");
        // "trainctl submit ...", "trainctl --addr ...": not prose, nor a diagram's "trainctl ──▶".
        if (!absl::StartsWith(text, "trainctl ") || text.size() < 10 ||
            !(absl::ascii_isalpha(text[9]) || text[9] == '-')) {
          continue;
        }
      }
      const bool continued = absl::ConsumeSuffix(&text, "\\");
      absl::StrAppend(&command, " ", text);
      if (continued) continue;
      for (const char* shell : {" #", " > ", " | ", " && ", "; ", " 2>", " &"}) {
        command = command.substr(0, command.find(shell));
      }
      // An example shown with its refusal ("trainctl: unknown option ...") is wrong on purpose.
      const bool refused = i + 1 < lines.size() && absl::StartsWith(lines[i + 1], "trainctl: ");
      if (!refused && command.find('[') == std::string::npos &&
          command.find('$') == std::string::npos) {
        EXPECT_EQ(Check(command), "") << page.filename() << ": " << command;
        ++lines_checked;
      }
      command.clear();
    }
  }
  EXPECT_GT(lines_checked, 40);
}

TEST_F(CommandWordsTest, NumbersAreTypedAndFlagsGroupedInHelp) {
  std::ostringstream out, err;
  EXPECT_EQ(RunTrainctl({"trainctl", "submit", "--help"}, out, err), kExitOk);
  const std::string help = out.str();
  for (const char* expected : {"--epochs INT", "--lr NUMBER", "--batch-size INT|auto",
                               "--model NAME", "Optimiser and learning rate:", "Model and data:"}) {
    EXPECT_NE(help.find(expected), std::string::npos) << expected << " in\n" << help;
  }
  EXPECT_EQ(help.find("--epochs TEXT"), std::string::npos) << help;
}

TEST(RunTrainctlTest, ATypoIsAUsageErrorWithOneLine) {
  std::ostringstream out, err;
  EXPECT_EQ(
      RunTrainctl({"trainctl", "submit", "--modle", "mlp", "--dataset", "fashion-mnist"}, out, err),
      kExitUsage);
  EXPECT_EQ(err.str(), "trainctl: submit: unknown option --modle; did you mean --model?\n");
  std::ostringstream out2, err2;
  EXPECT_EQ(RunTrainctl({"trainctl", "wacth", "3"}, out2, err2), kExitUsage);
  EXPECT_EQ(err2.str(), "trainctl: unknown command 'wacth'; did you mean 'watch'?\n");
}

// A value out of a flag's range: one line naming the verb and the flag, as every usage error is.
TEST(RunTrainctlTest, AValueOutOfRangeIsOneLineNamingTheVerb) {
  // What trainctl ARGS says on stderr; it must exit 2.
  auto refused = [](std::vector<std::string> args) {
    std::ostringstream out, err;
    args.insert(args.begin(), "trainctl");
    EXPECT_EQ(RunTrainctl(args, out, err), kExitUsage) << err.str();
    return err.str();
  };
  const std::vector<std::string> search = {
      "sweep", "--model", "mlp", "--search", "random", "--lr", "loguniform:1e-3:1e-1"};
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = search;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  EXPECT_EQ(refused(with({"--trials", "0"})),
            "trainctl: sweep: --trials: Value 0 not in range 1 to 100000 (see `trainctl sweep "
            "--help`)\n");
  EXPECT_EQ(refused(with({"--trials", "4", "--device-hours", "0"})),
            "trainctl: sweep: --device-hours: more than 0 and at most 100000 (leave it out for no "
            "budget); got 0 (see `trainctl sweep --help`)\n");
  const std::string missing = refused({"context", "add", "lab", "--addr"});
  EXPECT_EQ(missing.rfind("trainctl: context add: --addr", 0), 0u) << missing;
  EXPECT_EQ(std::count(missing.begin(), missing.end(), '\n'), 1) << missing;
}

// A model's name where submit takes a job file: not "File does not exist", but what was meant.
TEST(RunTrainctlTest, AModelsNameGivenAsTheJobFileIsNamedAsAFlag) {
  std::ostringstream out, err;
  EXPECT_EQ(RunTrainctl({"trainctl", "submit", "mlp", "--dataset", "fashion-mnist"}, out, err),
            kExitUsage);
  EXPECT_EQ(err.str(),
            "trainctl: submit: mlp: no such job file (the one word submit takes is a job file; "
            "options are --flags) (did you mean --model mlp?)\n");
}

TEST(NearestWordTest, OnlyNearWordsAreSuggested) {
  EXPECT_EQ(NearestWord("--modle", {"--model", "--mode"}), "--model");
  EXPECT_EQ(NearestWord("--xyz", {"--model", "--lr"}), "");
  EXPECT_EQ(NearestWord("--lr", {"--lr-schedule", "--lr-step-epochs"}), "");  // two begin with it
  EXPECT_EQ(NearestWord("--warmup", {"--warmup-epochs", "--lr"}), "--warmup-epochs");
}

}  // namespace
}  // namespace traind
