#include "client/working_dir.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/script_spec.h"

namespace traind {

namespace {

namespace fs = std::filesystem;

// `text` against a gitignore glob: `*` and `?` within one part, `[...]` one character, `**`
// across parts ("**/x" at any depth, "a/**" everything inside a), a backslash escapes. Patterns are
// short: plain backtracking is enough.
bool GlobMatches(absl::string_view glob, absl::string_view text) {
  if (glob.empty()) return text.empty();
  if (absl::StartsWith(glob, "**")) {
    absl::string_view rest = glob.substr(2);
    const bool slash = absl::ConsumePrefix(&rest, "/");
    for (size_t i = 0; i <= text.size(); ++i) {
      if (slash && i > 0 && text[i - 1] != '/') continue;  // "**/x": x starts a part
      if (GlobMatches(rest, text.substr(i))) return true;
    }
    return false;
  }
  switch (glob[0]) {
    case '*':
      for (size_t i = 0; i <= text.size(); ++i) {
        if (GlobMatches(glob.substr(1), text.substr(i))) return true;
        if (i < text.size() && text[i] == '/') break;
      }
      return false;
    case '?':
      return !text.empty() && text[0] != '/' && GlobMatches(glob.substr(1), text.substr(1));
    case '[': {
      const size_t close = glob.find(']', 2);
      if (close == absl::string_view::npos) break;  // a literal '['
      if (text.empty() || text[0] == '/') return false;
      const std::string one_class(glob.substr(0, close + 1));
      const std::string one_char(1, text[0]);
      return fnmatch(one_class.c_str(), one_char.c_str(), 0) == 0 &&
             GlobMatches(glob.substr(close + 1), text.substr(1));
    }
    case '\\':
      if (glob.size() > 1) {
        return !text.empty() && text[0] == glob[1] && GlobMatches(glob.substr(2), text.substr(1));
      }
      break;
  }
  return !text.empty() && text[0] == glob[0] && GlobMatches(glob.substr(1), text.substr(1));
}

constexpr const char* kDefaultIgnores[] = {
    ".git/",  ".hg/",  ".svn/",        "__pycache__/",   "*.pyc",     ".ipynb_checkpoints/",
    ".venv/", "venv/", ".mypy_cache/", ".pytest_cache/", ".DS_Store", ".traind/"};

}  // namespace

void IgnoreRules::AddDefaults() {
  for (const char* line : kDefaultIgnores) AddLines(line);
}

void IgnoreRules::AddLines(absl::string_view text) {
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    std::string line(absl::StripTrailingAsciiWhitespace(raw));
    if (line.empty() || line[0] == '#') continue;
    Rule rule;
    if (line[0] == '!') {
      rule.negated = true;
      line.erase(0, 1);
    } else if (absl::StartsWith(line, "\\!") || absl::StartsWith(line, "\\#")) {
      line.erase(0, 1);
    }
    if (absl::EndsWith(line, "/")) {
      rule.dir_only = true;
      line.pop_back();
    }
    if (absl::StartsWith(line, "/")) {
      rule.anchored = true;
      line.erase(0, 1);
    } else if (line.find('/') != std::string::npos) {
      rule.anchored = true;  // git: a slash inside anchors the pattern too
    }
    if (line.empty()) continue;
    rule.pattern = std::move(line);
    rules_.push_back(std::move(rule));
  }
}

bool IgnoreRules::Ignored(absl::string_view path, bool is_dir) const {
  const size_t slash = path.rfind('/');
  const absl::string_view name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  bool ignored = false;
  for (const Rule& rule : rules_) {  // the last rule that matches decides
    if (rule.dir_only && !is_dir) continue;
    if (GlobMatches(rule.pattern, rule.anchored ? path : name)) ignored = !rule.negated;
  }
  return ignored;
}

absl::StatusOr<std::vector<WorkingFile>> ScanWorkingDir(const std::string& dir,
                                                        int64_t max_total_bytes) {
  std::error_code error;
  const fs::path top = fs::canonical(dir, error);
  if (error || !fs::is_directory(top)) {
    return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  }
  IgnoreRules rules;
  rules.AddDefaults();
  for (const char* name : {".gitignore", ".traindignore"}) {
    std::ifstream in(top / name);
    std::stringstream text;
    text << in.rdbuf();
    rules.AddLines(text.str());
  }
  std::vector<WorkingFile> files;
  std::vector<std::string> ignored_links;
  int64_t total = 0;
  fs::recursive_directory_iterator it(top, fs::directory_options::none, error);
  if (error) return absl::NotFoundError(absl::StrCat(dir, ": ", error.message()));
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (error) {
      return absl::InvalidArgumentError(absl::StrCat(dir, ": ", error.message()));
    }
    const fs::path relative = it->path().lexically_relative(top);
    const std::string path = relative.generic_string();
    const fs::file_status link = it->symlink_status();
    const bool is_dir = fs::is_directory(link);
    if (rules.Ignored(path, is_dir)) {
      if (is_dir) it.disable_recursion_pending();
      continue;
    }
    if (is_dir) continue;
    std::string absolute = it->path().string();
    if (fs::is_symlink(link)) {
      const fs::path target = fs::canonical(it->path(), error);
      const std::string inside = (top / "").string();
      if (error || !absl::StartsWith(target.string(), inside) || !fs::is_regular_file(target)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, " is a symlink ",
            error                                        ? "that leads nowhere"
            : !absl::StartsWith(target.string(), inside) ? "that leads out of the working directory"
                                                         : "to a folder",
            "; the job gets only what is inside it: copy the file in, or ignore it in "
            ".traindignore"));
      }
      absolute = target.string();
    } else if (!fs::is_regular_file(link)) {
      continue;  // sockets, pipes, devices: nothing a program reads as a file
    }
    if (absl::Status valid = ValidateScriptPath(path, path); !valid.ok()) return valid;
    struct stat st;
    if (stat(absolute.c_str(), &st) != 0) continue;  // gone while we looked
    files.push_back({path, absolute, st.st_size, (st.st_mode & S_IXUSR) != 0});
    total += st.st_size;
  }
  std::sort(files.begin(), files.end(),
            [](const WorkingFile& a, const WorkingFile& b) { return a.path < b.path; });
  if (total > max_total_bytes || files.size() > static_cast<size_t>(kMaxScriptFiles)) {
    std::vector<WorkingFile> largest = files;
    std::sort(largest.begin(), largest.end(),
              [](const WorkingFile& a, const WorkingFile& b) { return a.size > b.size; });
    largest.resize(std::min<size_t>(largest.size(), 3));
    std::vector<std::string> named;
    for (const WorkingFile& file : largest) {
      named.push_back(absl::StrCat(file.path, " (", file.size >> 20, " MiB)"));
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "the working directory has ", files.size(), " files, ", total >> 20,
        " MiB: over the limit of ", kMaxScriptFiles, " files and ", max_total_bytes >> 20,
        " MiB (--max-upload-mib); the largest: ", absl::StrJoin(named, ", "),
        ". Leave data out (.traindignore; read it under a --data-root instead) or raise the "
        "limit"));
  }
  return files;
}

}  // namespace traind
