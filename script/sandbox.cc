#include "script/sandbox.h"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/match.h"

namespace traind {

namespace {

namespace fs = std::filesystem;

// `path` is `root` or lies beneath it.
bool Within(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path == root || absl::StartsWith(path, root + "/");
}

bool WithinAny(const std::string& path, const std::vector<std::string>& roots) {
  return std::any_of(roots.begin(), roots.end(),
                     [&](const std::string& root) { return Within(path, root); });
}

class Args {
 public:
  void Add(std::initializer_list<std::string> words) {
    args_.insert(args_.end(), words.begin(), words.end());
  }
  std::vector<std::string> Take() { return std::move(args_); }

 private:
  std::vector<std::string> args_;
};

// The system's folders, read-only: merged-/usr links (/bin -> usr/bin) stay links.
void AddSystem(Args& args, std::vector<std::string>* seen) {
  args.Add({"--ro-bind", "/usr", "/usr"});
  seen->push_back("/usr");
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}) {
    std::error_code error;
    const fs::file_status status = fs::symlink_status(top, error);
    if (error || !fs::exists(status)) continue;
    if (fs::is_symlink(status)) {
      args.Add({"--symlink", fs::read_symlink(top, error).string(), top});
    } else {
      args.Add({"--ro-bind", top, top});
      seen->push_back(top);
    }
  }
  args.Add({"--ro-bind-try", "/sys", "/sys", "--proc", "/proc", "--dev", "/dev"});
  seen->push_back("/sys");
}

// The GPUs' device files (the NVIDIA driver's control, UVM and per-GPU nodes). All of them:
// CUDA_VISIBLE_DEVICES keeps a program on its job's GPUs (it is not a wall, docs/security.md).
void AddGpuDevices(Args& args) {
  glob_t found{};
  if (glob("/dev/nvidia*", 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      args.Add({"--dev-bind", found.gl_pathv[i], found.gl_pathv[i]});
    }
  }
  globfree(&found);
}

}  // namespace

std::vector<std::string> SandboxCommand(const trainer::v1::ProgramSandbox& sandbox,
                                        const SandboxView& view) {
  Args args;
  args.Add({sandbox.bwrap_path(), "--die-with-parent", "--unshare-pid", "--cap-drop", "ALL"});
  std::vector<std::string> seen;  // what the program sees of the machine's folders
  AddSystem(args, &seen);
  AddGpuDevices(args);
  if (view.share_dev_shm) {
    args.Add({"--bind", "/dev/shm", "/dev/shm"});
  } else {
    args.Add({"--tmpfs", "/dev/shm"});
  }
  args.Add({"--tmpfs", "/tmp"});
  if (!view.home.empty() && view.home != "/") args.Add({"--tmpfs", view.home});
  std::vector<std::string> read_only(sandbox.read_only().begin(), sandbox.read_only().end());
  read_only.insert(read_only.end(), view.read_only.begin(), view.read_only.end());
  const std::vector<std::string> hidden(sandbox.hidden().begin(), sandbox.hidden().end());
  // A read-only folder inside a hidden one (a data root in traind's state directory) is shown
  // again after the hiding.
  std::vector<std::string> shown_after;
  for (const std::string& path : read_only) {
    if (WithinAny(path, hidden)) {
      shown_after.push_back(path);
    } else {
      args.Add({"--ro-bind-try", path, path});
      seen.push_back(path);
    }
  }
  for (const std::string& path : hidden) {
    std::error_code error;
    if (!WithinAny(path, seen) || WithinAny(path, view.writable)) continue;
    if (fs::is_directory(path, error)) {
      args.Add({"--tmpfs", path});
    } else if (fs::exists(path, error)) {
      args.Add({"--ro-bind", "/dev/null", path});
    }
  }
  for (const std::string& path : shown_after) args.Add({"--ro-bind-try", path, path});
  for (const std::string& path : view.writable) args.Add({"--bind", path, path});
  args.Add({"--chdir", view.working_dir, "--"});
  return args.Take();
}

std::vector<std::string> InterpreterTrees(const std::string& interpreter_path) {
  std::vector<std::string> trees;
  std::error_code error;
  for (const fs::path& path :
       {fs::path(interpreter_path).lexically_normal(), fs::canonical(interpreter_path, error)}) {
    if (path.empty() || Within(path.string(), "/usr")) continue;
    fs::path tree = path.parent_path();
    if (tree.filename() == "bin") tree = tree.parent_path();  // a prefix: bin/, lib/, ...
    if (tree.empty() || tree == "/" ||
        std::find(trees.begin(), trees.end(), tree.string()) != trees.end()) {
      continue;
    }
    trees.push_back(tree.string());
  }
  return trees;
}

}  // namespace traind
