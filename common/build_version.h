// The commit traind and trainctl were built from, for `--version` and the daemon's start-up line:
// "commit 9711ee9", "commit 9711ee9+changes" (built with uncommitted changes), "commit unknown"
// (not built from a git checkout). Written at build time by cmake/write_version.cmake.
#ifndef TRAIND_COMMON_BUILD_VERSION_H_
#define TRAIND_COMMON_BUILD_VERSION_H_

namespace traind {

const char* BuildVersion();

}  // namespace traind

#endif  // TRAIND_COMMON_BUILD_VERSION_H_
