// Default locations shared by traind and trainctl, so both agree on the socket without flags.
#ifndef TRAIND_COMMON_PATHS_H_
#define TRAIND_COMMON_PATHS_H_

#include <string>

namespace traind {

// $XDG_STATE_HOME/traind, else ~/.local/state/traind.
std::string DefaultStateDir();
// unix:<state dir>/traind.sock
std::string DefaultAddress(const std::string& state_dir);
// $FASHION_MNIST_DIR when set (hosts without the Debian package), else the package's directory.
std::string DefaultFashionMnistDir();
// Turns "unix:/p", "/p" or "host:port" into a gRPC target.
std::string ToGrpcTarget(const std::string& address);

}  // namespace traind

#endif  // TRAIND_COMMON_PATHS_H_
