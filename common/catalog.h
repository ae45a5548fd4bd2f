// The one registry of what traind can train: models and datasets, with what each needs. trainctl's
// flags and help, the spec validation (common/job_spec.cc) and the worker (models/, data/) all read
// it, so a new kind is one entry here plus its implementation. Constant data; thread-safe.
#ifndef TRAIND_COMMON_CATALOG_H_
#define TRAIND_COMMON_CATALOG_H_

#include <string>
#include <vector>

namespace traind {

struct ModelInfo {
  std::string name;
  std::string summary;     // one line, for --help and docs
  int min_image_size = 0;  // the smallest square input it takes; 0: any input
  int image_size = 0;      // images are resized to this by default (lenet5: 32); 0: keep
  bool channels_last_on_cuda = false;  // weights kept NHWC on CUDA (cuDNN's tensor-core convs)
  bool needs_model_file = false;  // JobSpec.model_file: the network comes from an uploaded file
};

struct DatasetInfo {
  enum class Source {
    kGenerated,  // made from the seed; no files
    kDirectory,  // JobSpec.data_dir
    kFile,       // JobSpec.data_file (a path under a --data-root, or an uploaded blob)
  };
  std::string name;
  std::string summary;
  Source source = Source::kGenerated;
  bool images = true;            // [N, C, H, W] images: resizing, normalisation, augmentation apply
  bool has_default_dir = false;  // fashion-mnist: the Debian package's directory
  std::string expects;           // what the directory or file must hold, for error messages
};

const std::vector<ModelInfo>& ModelCatalog();
const std::vector<DatasetInfo>& DatasetCatalog();

// nullptr for an unknown name.
const ModelInfo* FindModel(const std::string& name);
const DatasetInfo* FindDataset(const std::string& name);

// The names, in catalog order: for "allowed: ..." messages and --help.
std::vector<std::string> ModelNames();
std::vector<std::string> DatasetNames();

}  // namespace traind

#endif  // TRAIND_COMMON_CATALOG_H_
