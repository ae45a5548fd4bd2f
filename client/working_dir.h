// The working directory `trainctl run` sends: every file under it that the ignore rules keep, as
// relative paths. Ignored: version-control and cache folders (.git, __pycache__, .venv, ...),
// and the patterns of .gitignore and .traindignore at its top (git's syntax: `#` comments,
// `!` re-includes, a trailing `/` matches folders only, a leading or inner `/` anchors to the
// top, `*`, `?`, `[...]` and `**`). A symlink to a file inside the directory is sent as that
// file's content; one that leads out of it, or to a folder, is refused with its name (what ran
// would not be what is here). Over `max_total_bytes` or kMaxScriptFiles: refused, naming the
// largest files and how to leave them out.
#ifndef TRAIND_CLIENT_WORKING_DIR_H_
#define TRAIND_CLIENT_WORKING_DIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

struct WorkingFile {
  std::string path;      // relative, '/'-separated (ScriptFile.path)
  std::string absolute;  // where it is read from
  int64_t size = 0;
  bool executable = false;
};

// INVALID_ARGUMENT (with what to do) for a refusal above; NOT_FOUND when `dir` is not a folder.
// Sorted by path.
absl::StatusOr<std::vector<WorkingFile>> ScanWorkingDir(const std::string& dir,
                                                        int64_t max_total_bytes);

// One .gitignore-style rule set, for ScanWorkingDir and its tests.
class IgnoreRules {
 public:
  void AddDefaults();
  // The lines of an ignore file.
  void AddLines(absl::string_view text);
  // Whether `path` (relative; a folder when `is_dir`) is ignored. A folder's files are asked
  // only if the folder is not ignored (as git does).
  bool Ignored(absl::string_view path, bool is_dir) const;

 private:
  struct Rule {
    std::string pattern;
    bool negated = false;
    bool dir_only = false;
    bool anchored = false;  // matches the whole path, not only the last part
  };
  std::vector<Rule> rules_;
};

}  // namespace traind

#endif  // TRAIND_CLIENT_WORKING_DIR_H_
