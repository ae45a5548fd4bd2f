// Writes the seed corpus of request_fuzzer into the directory given (created if need be): one file
// per request, its first byte the method's index in the Trainer service, then the serialized
// request (binary, so generated rather than checked in).
//   request_seeds DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "google/protobuf/descriptor.h"
#include "trainer/v1/trainer.pb.h"

namespace {

void Write(const std::string& dir, const std::string& name,
           const google::protobuf::Message& request, const char* method) {
  const google::protobuf::ServiceDescriptor* service =
      trainer::v1::SubmitJobRequest::descriptor()->file()->FindServiceByName("Trainer");
  const google::protobuf::MethodDescriptor* m = service->FindMethodByName(method);
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out << static_cast<char>(m->index()) << request.SerializeAsString();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: request_seeds DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::filesystem::create_directories(dir);

  trainer::v1::SubmitJobRequest submit;
  submit.mutable_spec()->set_model("lenet5");
  submit.mutable_spec()->set_dataset("fashion-mnist");
  submit.mutable_spec()->set_epochs(2);
  submit.mutable_spec()->set_learning_rate(0.001);
  submit.add_after(1);
  submit.set_idempotency_key("nightly");
  Write(dir, "submit", submit, "SubmitJob");

  trainer::v1::SubmitJobRequest csv;
  csv.mutable_spec()->set_model("torchscript");
  csv.mutable_spec()->set_model_file("sha256:" + std::string(64, 'a'));
  csv.mutable_spec()->set_dataset("csv");
  csv.mutable_spec()->set_data_file("/data/table.csv");
  csv.mutable_spec()->set_label_column("label");
  csv.mutable_spec()->set_init_from("3:best");
  Write(dir, "submit_csv", csv, "SubmitJob");

  trainer::v1::SubmitSweepRequest sweep;
  sweep.mutable_spec()->mutable_base()->set_model("mlp");
  sweep.mutable_spec()->mutable_base()->set_dataset("fake");
  auto* axis = sweep.mutable_spec()->add_axes();
  axis->set_field("batch_size");
  axis->add_values("32");
  axis->add_values("64");
  sweep.mutable_spec()->set_repeat(2);
  Write(dir, "sweep", sweep, "SubmitSweep");

  trainer::v1::GetSweepReportRequest report;
  report.set_id(1);
  report.set_baseline("amp=fp32");
  Write(dir, "report", report, "GetSweepReport");

  trainer::v1::ListJobsRequest list;
  list.add_states(trainer::v1::Job::QUEUED);
  list.set_page_size(10);
  list.set_page_token("42");
  Write(dir, "list", list, "ListJobs");

  trainer::v1::DownloadArtifactRequest download;
  download.set_id(1);
  download.set_name("best");
  Write(dir, "download", download, "DownloadArtifact");
  return 0;
}
