#include "common/paths.h"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace traind {

namespace {
std::string HomeDir() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') return home;
  if (const passwd* pw = getpwuid(getuid()); pw != nullptr) return pw->pw_dir;
  return "/tmp";
}
}  // namespace

std::string DefaultStateDir() {
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/traind";
  }
  return HomeDir() + "/.local/state/traind";
}

std::string DefaultCacheDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/trainctl";
  }
  return HomeDir() + "/.cache/trainctl";
}

std::string UserConfigFile(const char* override_variable, const std::string& relative) {
  if (const char* path = std::getenv(override_variable); path != nullptr && *path != '\0') {
    return path;
  }
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/" + relative;
  }
  return HomeDir() + "/.config/" + relative;
}

std::string DefaultAddress(const std::string& state_dir) {
  return "unix:" + state_dir + "/traind.sock";
}

std::string DefaultFashionMnistDir() {
  if (const char* dir = std::getenv("FASHION_MNIST_DIR"); dir != nullptr && *dir != '\0')
    return dir;
  return "/usr/share/datasets/fashion-mnist";
}

std::string ToGrpcTarget(const std::string& address) {
  if (absl::StartsWith(address, "/")) return "unix:" + address;
  return address;
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read '", path, "': ", std::strerror(errno)));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> AsGivenAndResolved(const std::vector<std::string>& paths) {
  std::vector<std::string> both;
  auto add = [&](std::string path) {
    while (path.size() > 1 && path.back() == '/') path.pop_back();  // "/data/" names "/data"
    if (std::find(both.begin(), both.end(), path) == both.end()) both.push_back(std::move(path));
  };
  for (const std::string& path : paths) {
    if (path.empty()) continue;
    std::error_code error;
    add(std::filesystem::absolute(path, error).lexically_normal().string());
    const std::filesystem::path canonical = std::filesystem::canonical(path, error);
    if (!error) add(canonical.string());
  }
  return both;
}

}  // namespace traind
