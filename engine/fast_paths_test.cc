#include "engine/fast_paths.h"

#include "common/job_spec.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

using trainer::v1::JobSpec;

JobSpec Spec() {
  JobSpec spec;
  spec.set_model("lenet5");
  spec.set_dataset("fashion-mnist");
  ApplyDefaults(&spec);  // adam, accumulate 1, fp32
  return spec;
}

FastPathFacts Cuda() {
  FastPathFacts facts;
  facts.cuda = true;
  facts.dataset_bytes = int64_t{219} << 20;  // Fashion-MNIST as floats
  facts.free_device_bytes = int64_t{140} << 30;
  facts.graphs_built = true;
  return facts;
}

TEST(FastPathsTest, BothOnByDefaultOnCudaAndTheLogSaysSo) {
  const FastPaths paths = ChooseFastPaths(Spec(), Cuda());
  EXPECT_TRUE(paths.device_resident);
  EXPECT_TRUE(paths.cuda_graph);
  EXPECT_EQ(paths.explanation, "Fast paths: device-resident data (219 MiB), CUDA graph");
}

TEST(FastPathsTest, NothingOnTheCpuAndNoLogLine) {
  FastPathFacts cpu = Cuda();
  cpu.cuda = false;
  const FastPaths paths = ChooseFastPaths(Spec(), cpu);
  EXPECT_FALSE(paths.device_resident);
  EXPECT_FALSE(paths.cuda_graph);
  EXPECT_EQ(paths.explanation, "");
  // Asked for, a graph is attempted (and the step refuses it, naming the device).
  JobSpec asked = Spec();
  asked.set_cuda_graph(true);
  EXPECT_TRUE(ChooseFastPaths(asked, cpu).cuda_graph);
}

TEST(FastPathsTest, ExplicitFalseTurnsEachOffAndSaysItWasAsked) {
  JobSpec spec = Spec();
  spec.set_device_resident(false);
  spec.set_cuda_graph(false);
  const FastPaths paths = ChooseFastPaths(spec, Cuda());
  EXPECT_FALSE(paths.device_resident);
  EXPECT_FALSE(paths.cuda_graph);
  EXPECT_EQ(paths.explanation,
            "Fast paths: none; no device-resident data (asked); no CUDA graph (asked)");
}

// Asked for, the graph is attempted even where the default would leave it off (submit refuses
// the combinations it cannot run; the worker does not second-guess the rest).
TEST(FastPathsTest, ExplicitTrueIsHonoured) {
  JobSpec spec = Spec();
  spec.set_model("torchscript");
  spec.set_cuda_graph(true);
  EXPECT_TRUE(ChooseFastPaths(spec, Cuda()).cuda_graph);
}

TEST(FastPathsTest, ADatasetOverAQuarterOfFreeMemoryStaysOnTheHost) {
  FastPathFacts facts = Cuda();
  facts.free_device_bytes = int64_t{800} << 20;  // a quarter: 200 MiB < 219 MiB
  const FastPaths paths = ChooseFastPaths(Spec(), facts);
  EXPECT_FALSE(paths.device_resident);
  EXPECT_TRUE(paths.cuda_graph) << "the graph copies each batch in; it does not need residency";
  EXPECT_EQ(paths.explanation,
            "Fast paths: CUDA graph; no device-resident data (the dataset's 219 MiB exceed a "
            "quarter of the device's 800 MiB free)");
  // Asked for, it is honoured (the user knows their memory).
  JobSpec spec = Spec();
  spec.set_device_resident(true);
  EXPECT_TRUE(ChooseFastPaths(spec, facts).device_resident);
}

TEST(FastPathsTest, EachJobTheGraphCannotRunSaysWhy) {
  struct Case {
    void (*change)(JobSpec*, FastPathFacts*);
    const char* why;
  };
  const Case cases[] = {
      {[](JobSpec* s, FastPathFacts*) { s->set_optimizer("sgd"); },
       "no CUDA graph: optimizer sgd (the captured update is the fused Adam/AdamW)"},
      {[](JobSpec* s, FastPathFacts*) { s->set_accumulate(4); }, "no CUDA graph: accumulate > 1"},
      {[](JobSpec* s, FastPathFacts*) { s->set_amp("fp16"); },
       "no CUDA graph: amp fp16 (its loss scaling reads the gradients on the host)"},
      {[](JobSpec* s, FastPathFacts*) { s->set_horizontal_flip(true); },
       "no CUDA graph: augmentation (random crop, flip)"},
      {[](JobSpec* s, FastPathFacts*) { s->set_random_crop_padding(4); },
       "no CUDA graph: augmentation (random crop, flip)"},
      {[](JobSpec*, FastPathFacts* f) { f->data_parallel = true; },
       "no CUDA graph: data parallel (the ranks all-reduce between steps)"},
      {[](JobSpec* s, FastPathFacts*) { s->set_batch_size_auto(true); },
       "no CUDA graph: batch size auto (the batch was sized for the eager step's memory)"},
      {[](JobSpec*, FastPathFacts* f) { f->graphs_built = false; },
       "no CUDA graph: this traind's LibTorch cannot capture CUDA graphs"},
      {[](JobSpec* s, FastPathFacts*) { s->mutable_benchmark()->set_kind("train"); },
       "no CUDA graph: a benchmark (it times the eager step)"},
      {[](JobSpec* s, FastPathFacts*) { s->set_evaluate_only(true); },
       "no CUDA graph: evaluation only"},
      {[](JobSpec* s, FastPathFacts*) { s->set_model("torchscript"); },
       "no CUDA graph: a TorchScript module is captured only when asked (--cuda-graph)"},
  };
  for (const Case& c : cases) {
    JobSpec spec = Spec();
    FastPathFacts facts = Cuda();
    c.change(&spec, &facts);
    const FastPaths paths = ChooseFastPaths(spec, facts);
    EXPECT_FALSE(paths.cuda_graph) << c.why;
    EXPECT_TRUE(paths.device_resident) << c.why;
    EXPECT_EQ(paths.explanation,
              std::string("Fast paths: device-resident data (219 MiB); ") + c.why);
  }
}

// Schedules, label smoothing and clipping are captured with the step now: they keep the graph.
TEST(FastPathsTest, SchedulesSmoothingAndClippingKeepTheGraph) {
  JobSpec spec = Spec();
  spec.set_lr_schedule("onecycle");
  spec.set_warmup_epochs(0.5);
  spec.set_label_smoothing(0.1);
  spec.set_clip_grad_norm(1.0);
  EXPECT_TRUE(ChooseFastPaths(spec, Cuda()).cuda_graph);
  spec.set_device("cuda:0");
  spec.set_cuda_graph(true);
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
}

}  // namespace
}  // namespace traind
