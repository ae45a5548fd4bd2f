#include "client/spec_flags.h"

#include <filesystem>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/job_spec.h"

namespace traind {

namespace {
bool Given(const SpecFlags& f, const char* flag) {
  CLI::Option* option = f.app->get_option_no_throw(flag);
  return option != nullptr && option->count() > 0;
}
}  // namespace

void AddSpecFlags(CLI::App* app, SpecFlags* f, bool training) {
  f->app = app;
  app->add_option("--model", f->model, "lenet5 | mlp | vgg16 | resnet18");
  app->add_option("--dataset", f->dataset, "fashion-mnist | mnist | cifar10 | fake");
  app->add_option("--data-dir", f->data_dir,
                  "Directory with the dataset's files (default for fashion-mnist: the Debian "
                  "package's)");
  app->add_option("--device", f->device, "cpu | cuda | cuda:N | mps (default: best available)");
  app->add_option("--batch-size", f->batch_size,
                  "Default 128; `auto`: the largest that fits in 80% of free device memory");
  app->add_option("--image-size", f->image_size, "Resize images to N x N (fake: generate N x N)");
  app->add_option("--num-samples", f->num_samples, "fake: training images (default 1000)");
  app->add_option("--channels", f->channels, "fake: image channels (default 3)");
  app->add_option("--classes", f->classes, "fake: classes (default 10)");
  app->add_flag("--cifar-stem", f->cifar_stem, "resnet18: 3x3 stem without max-pool");
  app->add_option("--amp", f->amp, "Mixed precision: bf16 | fp16 (autocast)");
  app->add_option("--tf32", f->tf32,
                  "CUDA fp32 math: on (TF32 for convolutions and matrix products) | off (strict "
                  "fp32); default: LibTorch's (TF32 convolutions only)");
  app->add_option("--threads", f->threads, "Intra-op CPU threads of the worker");
  app->add_flag("--device-resident", f->device_resident,
                "Copy the whole dataset to the device once");
  app->add_flag("--cuda-graph", f->cuda_graph,
                "CUDA: capture the training step in a CUDA graph and replay it");
  app->add_option("--optimizer", f->optimizer, "adam (default) | adamw | sgd");
  app->add_option("--lr", f->lr, "Learning rate, default 1e-3");
  app->add_option("--momentum", f->momentum, "SGD momentum, default 0");
  app->add_flag("--nesterov", f->nesterov, "SGD with Nesterov momentum");
  app->add_option("--weight-decay", f->weight_decay, "Default 0 (adamw: 0.01)");
  app->add_option("--accumulate", f->accumulate,
                  "Gradient accumulation over N batches (loss / N), default 1");
  app->add_option("--seed", f->seed, "Default 123");
  app->add_option("--limit-train", f->limit_train,
                  "Use only the first N training images (10% of them validate)");
  app->add_option("--name", f->name, "A label for `trainctl list`");
  if (!training) return;
  app->add_option("--epochs", f->epochs, "Default 1");
  app->add_option("--limit-test", f->limit_test, "Use only the first N test images");
  app->add_option("--log-every", f->log_every, "Report every N batches, default 100");
  app->add_option("--eval-every", f->eval_every, "Evaluate every N epochs (and after the last)");
  app->add_option("--checkpoint-every", f->checkpoint_every, "Checkpoint every N epochs");
  app->add_option("--random-crop", f->random_crop,
                  "Training augmentation: random crop after padding by N pixels");
  app->add_flag("--hflip", f->hflip, "Training augmentation: random horizontal flip");
  app->add_option("--profile-steps", f->profile_steps, "Profile N training steps: top operators in `show`, a Chrome trace in the job's directory");
}

absl::Status ApplySpecFlags(const SpecFlags& f, trainer::v1::JobSpec* spec) {
  if (Given(f, "--model")) spec->set_model(f.model);
  if (Given(f, "--dataset")) spec->set_dataset(f.dataset);
  if (Given(f, "--data-dir")) spec->set_data_dir(f.data_dir);
  if (Given(f, "--device")) spec->set_device(f.device);
  if (Given(f, "--optimizer")) spec->set_optimizer(f.optimizer);
  if (Given(f, "--name")) spec->set_name(f.name);
  if (Given(f, "--amp")) spec->set_amp(f.amp);
  if (Given(f, "--tf32")) spec->set_tf32(f.tf32);
  if (Given(f, "--epochs")) spec->set_epochs(f.epochs);
  if (Given(f, "--batch-size")) {
    int batch_size = 0;
    if (f.batch_size == "auto") {
      spec->set_batch_size_auto(true);
    } else if (absl::SimpleAtoi(f.batch_size, &batch_size)) {
      spec->set_batch_size(batch_size);
      spec->set_batch_size_auto(false);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("batch_size: expected a number or 'auto', got '", f.batch_size, "'"));
    }
  }
  if (Given(f, "--lr")) spec->set_learning_rate(f.lr);
  if (Given(f, "--momentum")) spec->set_momentum(f.momentum);
  if (Given(f, "--nesterov")) spec->set_nesterov(f.nesterov);
  if (Given(f, "--weight-decay")) spec->set_weight_decay(f.weight_decay);
  if (Given(f, "--seed")) spec->set_seed(f.seed);
  if (Given(f, "--limit-train")) spec->set_limit_train(f.limit_train);
  if (Given(f, "--limit-test")) spec->set_limit_test(f.limit_test);
  if (Given(f, "--log-every")) spec->set_log_every(f.log_every);
  if (Given(f, "--threads")) spec->set_threads(f.threads);
  if (Given(f, "--accumulate")) spec->set_accumulate(f.accumulate);
  if (Given(f, "--eval-every")) spec->set_eval_every(f.eval_every);
  if (Given(f, "--checkpoint-every")) spec->set_checkpoint_every(f.checkpoint_every);
  if (Given(f, "--image-size")) spec->set_image_size(f.image_size);
  if (Given(f, "--num-samples")) spec->set_num_samples(f.num_samples);
  if (Given(f, "--channels")) spec->set_channels(f.channels);
  if (Given(f, "--classes")) spec->set_classes(f.classes);
  if (Given(f, "--random-crop")) spec->set_random_crop_padding(f.random_crop);
  if (Given(f, "--hflip")) spec->set_horizontal_flip(f.hflip);
  if (Given(f, "--device-resident")) spec->set_device_resident(f.device_resident);
  if (Given(f, "--cifar-stem")) spec->set_cifar_stem(f.cifar_stem);
  if (Given(f, "--cuda-graph")) spec->set_cuda_graph(f.cuda_graph);
  if (Given(f, "--profile-steps")) spec->set_profile_steps(f.profile_steps);
  // The daemon needs an absolute path; relative ones mean "from here" for a local user.
  if (!spec->data_dir().empty() && spec->data_dir()[0] != '/') {
    spec->set_data_dir(std::filesystem::absolute(spec->data_dir()).lexically_normal().string());
  }
  trainer::v1::JobSpec checked = *spec;
  ApplyDefaults(&checked);
  return ValidateJobSpec(checked);
}

}  // namespace traind
