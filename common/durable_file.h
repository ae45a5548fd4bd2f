// The one way traind, its worker and trainctl write a file that must survive a crash whole or not
// at all (checkpoints, artifacts, traces, uploaded blobs and their descriptions, checkpoints sent
// by a peer, the dataset cache, downloads and exports, the CLI's config file): the content goes
// to a temporary file beside PATH, which is fsynced, then takes PATH's name (a rename; or a link,
// never to replace a file that appeared meanwhile), and the directory is fsynced. A crash at any
// moment leaves the previous file or the new one, never a torn one; a failure removes the
// temporary file and leaves PATH as it was. The calls that matter go through Files()
// (common/file_ops.h), so a test can make any of them fail.
#ifndef TRAIND_COMMON_DURABLE_FILE_H_
#define TRAIND_COMMON_DURABLE_FILE_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace traind {

// What becomes of a file already at PATH.
enum class IfPresent { kReplace, kRefuse };

// The second half of a durable write: `temp`, written whole by the caller in PATH's directory
// (or elsewhere on its file system; closed), is fsynced and takes PATH's name. Errors say "cannot
// write NAMED: <cause>" (NAMED: `named`, or PATH when empty; a daemon names its files without its
// paths), with a code that follows the cause: RESOURCE_EXHAUSTED (disk full, quota),
// PERMISSION_DENIED (permissions, a read-only file system), ALREADY_EXISTS (kRefuse and PATH
// exists), INTERNAL.
absl::Status CommitDurably(const std::string& temp, const std::string& path,
                           IfPresent if_present = IfPresent::kReplace,
                           const std::string& named = "");

// A whole durable write: a fresh temporary file beside PATH (mode 0600, a hidden name no other
// writer uses: ".NAME.tmp-XXXXXX") which `write` fills by name (LibTorch's writers take a path);
// then CommitDurably. An error `write` returns (or its writer's missing file) comes back as it is.
absl::Status WriteDurably(const std::string& path,
                          const std::function<absl::Status(const std::string& temp)>& write,
                          const std::string& named = "");

// The first half of WriteFileDurably, for a writer that commits later or on another thread:
// `contents` in a fresh temporary file beside PATH (WriteDurably's hidden name), fsynced and
// closed. Returns its path, for CommitDurably (whose fsync then finds nothing left to write) or
// for unlink; until then PATH is as it was, and a crash leaves a temporary file that
// RemoveStaleTemporaries takes. On an error nothing is left.
absl::StatusOr<std::string> StageFileDurably(const std::string& path, absl::string_view contents,
                                             const std::string& named = "");

// What a crash between WriteDurably's first write and its rename leaves: its temporary files in
// `dir` (not in its folders), removed, so that a killed writer does not leave a half checkpoint's
// bytes on the disk for good. A temporary file whose writer is still alive is left: WriteDurably
// holds a lock on it until it commits (and one only just made, younger than 10 s, is left too).
// Called where a leftover's writer is gone or finishing (a job's directory before its next run
// starts, the dataset cache at daemon start). Returns how many were removed.
int RemoveStaleTemporaries(const std::string& dir);

// WriteDurably of `contents`.
absl::Status WriteFileDurably(const std::string& path, absl::string_view contents,
                              const std::string& named = "");

}  // namespace traind

#endif  // TRAIND_COMMON_DURABLE_FILE_H_
