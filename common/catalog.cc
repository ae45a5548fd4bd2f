#include "common/catalog.h"

namespace traind {

const std::vector<ModelInfo>& ModelCatalog() {
  static const auto* models = new std::vector<ModelInfo>{
      {"lenet5", "LeNet-5: 2 conv + 3 linear layers, 32x32 input", 32, 32, false, false},
      {"mlp", "MLP 784-256-128-64-classes (any C*H*W input)", 0, 0, false, false},
      {"resnet18", "torchvision's ResNet-18 (--cifar-stem for 32 px)", 32, 0, true, false},
      {"vgg16", "torchvision's vgg16_bn", 32, 0, true, false},
      {"torchscript", "your TorchScript module (--model-file net.pt)", 0, 0, false, true},
  };
  return *models;
}

const std::vector<DatasetInfo>& DatasetCatalog() {
  using Source = DatasetInfo::Source;
  static const auto* datasets = new std::vector<DatasetInfo>{
      {"cifar10", "CIFAR-10 binary batches", Source::kDirectory, true, false,
       "a directory with data_batch_1.bin ... test_batch.bin"},
      {"csv", "a CSV table: numeric feature columns and a label column", Source::kFile, false,
       false, "a CSV file with a header row"},
      {"fake", "deterministic random images", Source::kGenerated, true, false, ""},
      {"fashion-mnist", "Fashion-MNIST (IDX files)", Source::kDirectory, true, true,
       "a directory with the four IDX files"},
      {"imagefolder", "PNG/JPEG images in train/CLASS/ and test/CLASS/ folders", Source::kDirectory,
       true, false, "a directory with train/CLASS/*.png and test/CLASS/*.png"},
      {"mnist", "MNIST (IDX files)", Source::kDirectory, true, false,
       "a directory with the four IDX files"},
      {"tensors", "tensors saved by torch.save({'train_x', 'train_y', 'test_x', 'test_y'})",
       Source::kFile, false, false, "a file written by torch.save"},
  };
  return *datasets;
}

const ModelInfo* FindModel(const std::string& name) {
  for (const ModelInfo& model : ModelCatalog()) {
    if (model.name == name) return &model;
  }
  return nullptr;
}

const DatasetInfo* FindDataset(const std::string& name) {
  for (const DatasetInfo& dataset : DatasetCatalog()) {
    if (dataset.name == name) return &dataset;
  }
  return nullptr;
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const ModelInfo& model : ModelCatalog()) names.push_back(model.name);
  return names;
}

std::vector<std::string> DatasetNames() {
  std::vector<std::string> names;
  for (const DatasetInfo& dataset : DatasetCatalog()) names.push_back(dataset.name);
  return names;
}

}  // namespace traind
