// The files a spec names on the user's machine: model_file is always uploaded (the daemon stores
// it by content, so a sweep or a second submit sends it once); data_file is uploaded with
// --upload, else taken as a path on the daemon's machine (made absolute). Messages about what was
// sent go to `progress`.
#ifndef TRAIND_CLIENT_SPEC_FILES_H_
#define TRAIND_CLIENT_SPEC_FILES_H_

#include <ostream>

#include "absl/status/status.h"
#include "trainer/v1/trainer.grpc.pb.h"

namespace traind {

absl::Status ResolveSpecFiles(trainer::v1::Trainer::Stub& stub, bool upload_data,
                              trainer::v1::JobSpec* spec, std::ostream& progress);

}  // namespace traind

#endif  // TRAIND_CLIENT_SPEC_FILES_H_
