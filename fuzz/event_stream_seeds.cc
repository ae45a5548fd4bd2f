// Writes the seed corpus of event_stream_fuzzer: event streams like the ones traind-worker writes
// (common/event_pipe.cc), one file each, into the directory given (created if need be), and the
// inputs of past findings.
//   event_stream_seeds DIR
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "trainer/v1/trainer.pb.h"

namespace {

using trainer::v1::JobEvent;

void Add(std::string* stream, const JobEvent& event) {
  google::protobuf::io::StringOutputStream out(stream);
  google::protobuf::util::SerializeDelimitedToZeroCopyStream(event, &out);
}

JobEvent Log(trainer::v1::LogLine::Severity severity, const std::string& text) {
  JobEvent e;
  e.mutable_log()->set_severity(severity);
  e.mutable_log()->set_text(text);
  return e;
}

JobEvent Step(int epoch, int batch) {
  JobEvent e;
  trainer::v1::StepMetrics* s = e.mutable_step();
  s->set_epoch(epoch);
  s->set_epochs(2);
  s->set_batch(batch);
  s->set_batches_per_epoch(469);
  s->set_loss(2.3 / (1 + batch));
  s->set_learning_rate(1e-3);
  s->set_samples_per_second(12000);
  s->set_current_allocated_bytes(1 << 20);
  s->set_peak_current_allocated_bytes(2 << 20);
  return e;
}

JobEvent Epoch(int epoch) {
  JobEvent e;
  trainer::v1::EpochSummary* s = e.mutable_epoch_summary();
  s->set_evaluated(true);
  s->set_epoch(epoch);
  s->set_epochs(2);
  s->set_train_accuracy(0.8);
  s->set_validation_accuracy(0.82);
  s->set_best_validation_accuracy(0.82);
  s->set_best_epoch(epoch);
  s->set_epoch_seconds_no_eval(4.5);
  s->set_train_loss(0.45);
  e.mutable_time()->set_seconds(1700000000 + epoch);
  return e;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: event_stream_seeds DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    std::cerr << dir << ": " << error.message() << "\n";
    return 1;
  }
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  };

  std::string training;  // a short training job
  Add(&training, Log(trainer::v1::LogLine::INFO, "device cpu, 60000 training images"));
  for (int epoch = 1; epoch <= 2; ++epoch) {
    Add(&training, Step(epoch, 0));
    Add(&training, Step(epoch, 100));
    Add(&training, Epoch(epoch));
  }
  JobEvent final_result;
  final_result.mutable_final_result()->set_test_accuracy(0.84);
  final_result.mutable_final_result()->set_total_training_seconds(9.5);
  final_result.mutable_final_result()->set_batch_size(128);
  Add(&training, final_result);
  write("training", training);
  write("training_cut", training.substr(0, training.size() - 7));  // the worker died mid-write

  std::string bench;  // a matmul benchmark
  JobEvent result;
  trainer::v1::BenchResult* b = result.mutable_bench();
  b->set_kind("matmul");
  b->set_seconds(0.01);
  b->set_tflops(13.7);
  b->set_device("cpu");
  b->set_size(4096);
  b->set_dtype("fp32");
  b->set_repeat(10);
  Add(&bench, result);
  write("bench", bench);

  std::string profile;  // profile_steps, then a failure
  JobEvent p;
  p.mutable_profile()->set_trace_path("/var/lib/traind/jobs/3/trace.json");
  p.mutable_profile()->set_steps(5);
  trainer::v1::OperatorTime* op = p.mutable_profile()->add_top_operators();
  op->set_name("aten::convolution_backward");
  op->set_self_seconds(0.25);
  op->set_calls(5);
  Add(&profile, p);
  Add(&profile, Log(trainer::v1::LogLine::ERROR, "CUDA out of memory"));
  write("profile_error", profile);

  std::string forged;  // a worker claiming a state change and a seq (the daemon drops them)
  JobEvent state;
  state.set_seq(99);
  state.mutable_state_change()->set_state(trainer::v1::Job::SUCCEEDED);
  Add(&forged, state);
  state.mutable_state_change()->set_state(trainer::v1::Job::QUEUED);
  Add(&forged, state);
  write("state_changes", forged);

  // Finding: an EpochSummary with epoch 2^31 - 1 made the fold grow the job's
  // epoch_seconds_no_eval to 2^31 - 1 entries (16 GiB) (server/job_fold.cc).
  write("regress_epoch_huge", std::string("\x08\x62\x06\x08\xff\xff\xff\xff\x07", 9));
  return 0;
}
