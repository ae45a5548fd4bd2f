// PartFile: a file written in full before it takes its name, so a reader never sees half of it and
// an interrupted write leaves nothing at the name (downloads, exports).
//   PartFile part(output);  if (!part.ok()) ...;  part.Write(bytes);  part.KeepAs(output, force);
// It is created next to `output` with a random name (mkstemp: O_EXCL, never through a link,
// nobody else's file) and removed when destroyed unless kept.
#ifndef TRAIND_CLIENT_PART_FILE_H_
#define TRAIND_CLIENT_PART_FILE_H_

#include <string>

#include "absl/status/status.h"

namespace traind {

class PartFile {
 public:
  explicit PartFile(const std::string& output);
  ~PartFile();
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }
  bool Write(const std::string& bytes);
  // Puts the file at `output`: replacing what is there with `force`, else only if nothing is
  // there even now (link fails on an existing name; a plain rename would overwrite a file that
  // appeared meanwhile).
  absl::Status KeepAs(const std::string& output, bool force);

 private:
  int fd_ = -1;
  std::string path_;
};

}  // namespace traind

#endif  // TRAIND_CLIENT_PART_FILE_H_
