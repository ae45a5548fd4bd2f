// Fuzz target: the bytes of a gRPC request as traind's service receives them. The first byte picks
// one of the Trainer service's methods (by its descriptor, so a new RPC is fuzzed without a change
// here); the rest is parsed as that method's request message, then goes where the service sends it
// before touching the store: the bounds on every field (common/message_bounds.cc), then for
// submissions the defaults and validation of the spec (common/job_spec.cc) and the expansion of a
// sweep (server/sweep_expansion.cc), for reports the baseline (server/sweep_report.cc). Any input
// must give a Status; a crash, a leak or undefined behaviour is a finding.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/message_bounds.h"
#include "fuzz/spec_checks.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "server/sweep_report.h"
#include "trainer/v1/trainer.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const google::protobuf::ServiceDescriptor* service =
      trainer::v1::SubmitJobRequest::descriptor()->file()->FindServiceByName("Trainer");
  const google::protobuf::MethodDescriptor* method =
      service->method(data[0] % service->method_count());
  std::unique_ptr<google::protobuf::Message> request(
      google::protobuf::MessageFactory::generated_factory()
          ->GetPrototype(method->input_type())
          ->New());
  if (!request->ParseFromArray(data + 1, static_cast<int>(size - 1))) return 0;  // gRPC refuses it
  if (!traind::CheckMessageBounds(*request).ok()) return 0;

  if (auto* submit = dynamic_cast<trainer::v1::SubmitJobRequest*>(request.get())) {
    traind::CheckSpec(submit->spec());
  } else if (auto* sweep = dynamic_cast<trainer::v1::SubmitSweepRequest*>(request.get())) {
    traind::CheckSweep(sweep->spec());
  } else if (auto* report = dynamic_cast<trainer::v1::GetSweepReportRequest*>(request.get())) {
    traind::SweepReportOptions options;
    (void)traind::ParseBaseline(report->baseline(), &options);
  }
  return 0;
}
