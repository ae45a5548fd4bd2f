// Default locations shared by traind and trainctl, so both agree on the socket without flags.
#ifndef TRAIND_COMMON_PATHS_H_
#define TRAIND_COMMON_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace traind {

// $XDG_STATE_HOME/traind, else ~/.local/state/traind.
std::string DefaultStateDir();
// trainctl's cache (digests of uploaded files): $XDG_CACHE_HOME/trainctl, else ~/.cache/trainctl.
std::string DefaultCacheDir();
// A user's config file: $OVERRIDE_VARIABLE when set, else $XDG_CONFIG_HOME/RELATIVE (an absolute
// XDG_CONFIG_HOME only, as the XDG spec says), else ~/.config/RELATIVE. trainctl's
// ("TRAINCTL_CONFIG", "trainctl/config.toml") and traind's ("TRAIND_CONFIG", "traind/traind.toml").
std::string UserConfigFile(const char* override_variable, const std::string& relative);
// unix:<state dir>/traind.sock
std::string DefaultAddress(const std::string& state_dir);
// $FASHION_MNIST_DIR when set (hosts without the Debian package), else the package's directory.
std::string DefaultFashionMnistDir();
// Turns "unix:/p", "/p" or "host:port" into a gRPC target.
std::string ToGrpcTarget(const std::string& address);

// Each path absolute as given (lexically normal, no trailing '/') and, where it exists, as its
// links resolve; without repeats, empty ones dropped. A root checked against both forms holds a
// path whichever form it is named by (data roots, a sandbox's binds).
std::vector<std::string> AsGivenAndResolved(const std::vector<std::string>& paths);

// A small file's whole text (certificates, tokens, job files), or INVALID_ARGUMENT
// "cannot read 'PATH': <reason>" for the caller to prefix with what the file is for.
absl::StatusOr<std::string> ReadTextFile(const std::string& path);

}  // namespace traind

#endif  // TRAIND_COMMON_PATHS_H_
