// A script job's working directory, made from the uploaded files (WorkerRequest.script_sources)
// where the program runs. Built privately and renamed into place at once, so the ranks of one
// job, which all make it, share one whole copy (torchrun's ranks share a directory too) and a
// reader never sees half of it. It is kept across the job's starts: a job resumed after traind
// restarted runs in the directory it left, with what it wrote there.
#ifndef TRAIND_SCRIPT_WORKING_COPY_H_
#define TRAIND_SCRIPT_WORKING_COPY_H_

#include <string>

#include "absl/status/status.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "trainer/v1/worker.pb.h"

namespace traind {

// Makes `dir` from `sources` unless it exists: folders 0700, files 0600 (0700 executable), each a
// copy of its blob (not a link: a program that rewrites a file in place must not change the
// upload others use). Each path is checked again (ValidateScriptPath); a source is opened without
// following a symlink. INVALID_ARGUMENT for a bad path, INTERNAL for what the file system refused.
absl::Status MakeWorkingCopy(
    const google::protobuf::RepeatedPtrField<trainer::v1::ScriptSource>& sources,
    const std::string& dir);

}  // namespace traind

#endif  // TRAIND_SCRIPT_WORKING_COPY_H_
