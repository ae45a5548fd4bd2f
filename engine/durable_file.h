// Files a job writes that must survive a crash whole or not at all (checkpoints, artifacts):
// written to PATH.tmp, fsynced, renamed over PATH, and the directory fsynced, so a crash at any
// moment leaves the previous file or the new one, never a torn one.
#ifndef TRAIND_ENGINE_DURABLE_FILE_H_
#define TRAIND_ENGINE_DURABLE_FILE_H_

#include <functional>
#include <string>

#include "absl/status/status.h"

namespace traind {

// `write` writes the whole content to the path it is given (the temporary file).
absl::Status WriteDurably(const std::function<void(const std::string&)>& write,
                          const std::string& path);

}  // namespace traind

#endif  // TRAIND_ENGINE_DURABLE_FILE_H_
