#include "data/dataset.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/catalog.h"
#include "common/status_macros.h"
#include "data/csv_file.h"
#include "data/idx_file.h"
#include "data/image_folder.h"
#include "data/tensor_file.h"

namespace traind {

namespace {

// A uint8 tensor over `bytes` (its first elements), which it keeps alive: no copy of the images.
torch::Tensor OwningTensor(std::vector<uint8_t> bytes, std::vector<int64_t> sizes) {
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  return torch::from_blob(
      owner->data(), sizes, [owner](void*) mutable { owner.reset(); }, torch::kUInt8);
}

// Reads one IDX images/labels pair and checks that they agree.
absl::StatusOr<Split> ReadIdxSplit(const std::string& dir, const std::string& prefix, int64_t limit,
                                   const BeneathRoots& roots) {
  ASSIGN_OR_RETURN(IdxFile images_file, OpenIdxFile(dir, prefix + "-images-idx3-ubyte", roots));
  ASSIGN_OR_RETURN(IdxFile labels_file, OpenIdxFile(dir, prefix + "-labels-idx1-ubyte", roots));
  const std::string& images_path = images_file.path;
  const std::string& labels_path = labels_file.path;
  // traind gives its workers a cache of decompressed copies (STATE/cache): traind's own files,
  // read only for a source opened above.
  const char* cache = std::getenv("TRAIND_CACHE_DIR");
  const std::string cache_dir = cache == nullptr ? "" : cache;
  ASSIGN_OR_RETURN(IdxArray images,
                   ReadIdxFileCached(images_file.fd.get(), images_path, cache_dir));
  ASSIGN_OR_RETURN(IdxArray labels,
                   ReadIdxFileCached(labels_file.fd.get(), labels_path, cache_dir));
  if (images.dims.size() != 3) {
    return absl::DataLossError(
        absl::StrCat(images_path, ": expected 3 dimensions, found ", images.dims.size()));
  }
  if (labels.dims.size() != 1 || labels.dims[0] != images.dims[0]) {
    return absl::DataLossError(
        absl::StrCat(labels_path, ": label count does not match ", images_path));
  }
  for (uint8_t label : labels.data) {
    if (label > 9) {
      return absl::DataLossError(
          absl::StrCat(labels_path, ": label ", int{label}, " outside 0..9"));
    }
  }
  int64_t n = images.dims[0];
  if (limit > 0 && limit < n) n = limit;
  const int64_t h = images.dims[1], w = images.dims[2];
  Split split;
  split.inputs = OwningTensor(std::move(images.data), {n, 1, h, w});
  split.labels = torch::from_blob(labels.data.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return split;
}

Split Slice(const Split& s, int64_t begin, int64_t end) {
  return Split{s.inputs.slice(0, begin, end), s.labels.slice(0, begin, end)};
}

// On `device`: bytes to floats in 0..1 (ToTensor), Resize (bilinear), then Normalize(0.5, 0.5), as
// the reference's torchvision pipeline.
void Transform(Split& split, int64_t size, torch::Device device) {
  torch::Tensor x = split.inputs.to(device);
  if (x.scalar_type() == torch::kUInt8) x = x.to(torch::kFloat32).div_(255.0);
  if (size > 0 && (x.size(2) != size || x.size(3) != size)) {
    x = torch::nn::functional::interpolate(x, torch::nn::functional::InterpolateFuncOptions()
                                                  .size(std::vector<int64_t>{size, size})
                                                  .mode(torch::kBilinear)
                                                  .align_corners(false));
  }
  split.inputs = x.sub(0.5).div_(0.5).contiguous();
  split.labels = split.labels.to(device);
}

// The job's data file, opened beneath the roots. Messages name spec.data_file(), the user's path
// or an upload's digest, never `data_path` where that is an upload's place in traind's state
// directory.
absl::StatusOr<UniqueFd> OpenDataFile(const trainer::v1::JobSpec& spec,
                                      const std::string& data_path, const BeneathRoots& roots) {
  absl::StatusOr<UniqueFd> file = roots.OpenFile(data_path);
  if (file.ok()) return file;
  if (!data_path.empty() && data_path != spec.data_file()) {
    // An upload: the message is made from its digest and the reason, not from the path's text,
    // which would show where traind keeps it (however the state directory is spelled).
    const char* why = file.status().code() == absl::StatusCode::kNotFound
                          ? "no such file or directory"
                          : "cannot be read";
    return absl::Status(file.status().code(),
                        absl::StrCat("data_file: ", spec.data_file(), ": ", why));
  }
  return absl::Status(file.status().code(), absl::StrCat("data_file: ", file.status().message()));
}

bool IsImageDataset(const trainer::v1::JobSpec& spec) {
  const DatasetInfo* info = FindDataset(spec.dataset());
  return info != nullptr && info->images;
}

}  // namespace

absl::StatusOr<Split> ReadCifar10Split(const std::string& dir, bool train, int64_t limit,
                                       const BeneathRoots& roots) {
  constexpr int64_t kRecord = 1 + 3 * 32 * 32;
  std::vector<std::string> files;
  if (train) {
    for (int i = 1; i <= 5; ++i) files.push_back(absl::StrCat(dir, "/data_batch_", i, ".bin"));
  } else {
    files.push_back(dir + "/test_batch.bin");
  }
  std::vector<uint8_t> labels;
  std::vector<uint8_t> pixels;
  for (const std::string& path : files) {
    if (limit > 0 && static_cast<int64_t>(labels.size()) >= limit) break;
    absl::StatusOr<UniqueFd> file = roots.OpenFile(path);
    if (file.status().code() == absl::StatusCode::kNotFound) {
      return absl::NotFoundError(absl::StrCat("dataset file not found: ", path));
    }
    if (!file.ok()) {
      return absl::Status(file.status().code(),
                          absl::StrCat("data_dir: ", file.status().message()));
    }
    ASSIGN_OR_RETURN(std::vector<char> bytes, ReadAll(file->get(), path));
    if (bytes.empty() || bytes.size() % kRecord != 0) {
      return absl::DataLossError(absl::StrCat(path, ": truncated or corrupt: ", bytes.size(),
                                              " bytes is not a whole number of ", kRecord,
                                              "-byte records"));
    }
    for (size_t offset = 0; offset < bytes.size(); offset += kRecord) {
      const uint8_t label = static_cast<uint8_t>(bytes[offset]);
      if (label > 9) {
        return absl::DataLossError(absl::StrCat(path, ": label ", int{label},
                                                " outside 0..9 in record ", offset / kRecord));
      }
      labels.push_back(label);
      pixels.insert(pixels.end(), bytes.begin() + offset + 1, bytes.begin() + offset + kRecord);
    }
  }
  int64_t n = static_cast<int64_t>(labels.size());
  if (limit > 0 && limit < n) n = limit;
  Split split;
  split.inputs = OwningTensor(std::move(pixels), {n, 3, 32, 32});
  split.labels = torch::from_blob(labels.data(), {n}, torch::kUInt8).to(torch::kInt64);
  return split;
}

Split MakeFakeSplit(int64_t n, int64_t channels, int64_t size, int64_t classes, uint64_t seed) {
  torch::Generator rng = at::detail::createCPUGenerator(seed);
  Split split;
  split.inputs = torch::rand({n, channels, size, size}, rng);
  split.labels = torch::randint(classes, {n}, rng, torch::kInt64);
  return split;
}

absl::StatusOr<Dataset> ReadDataset(const trainer::v1::JobSpec& spec, int64_t size,
                                    const std::string& data_path,
                                    const std::vector<std::string>& data_roots) {
  const BeneathRoots roots(data_roots);
  Dataset data;
  Split full_train, test;
  const bool regression = spec.loss() == "mse";
  if (spec.dataset() == "fashion-mnist" || spec.dataset() == "mnist") {
    ASSIGN_OR_RETURN(full_train, ReadIdxSplit(spec.data_dir(), "train", spec.limit_train(), roots));
    ASSIGN_OR_RETURN(test, ReadIdxSplit(spec.data_dir(), "t10k", spec.limit_test(), roots));
  } else if (spec.dataset() == "cifar10") {
    ASSIGN_OR_RETURN(full_train,
                     ReadCifar10Split(spec.data_dir(), true, spec.limit_train(), roots));
    ASSIGN_OR_RETURN(test, ReadCifar10Split(spec.data_dir(), false, spec.limit_test(), roots));
  } else if (spec.dataset() == "fake") {
    int64_t n = spec.num_samples();
    if (spec.limit_train() > 0) n = std::min<int64_t>(n, spec.limit_train());
    int64_t n_test = std::max<int64_t>(1, spec.num_samples() / 5);
    if (spec.limit_test() > 0) n_test = std::min<int64_t>(n_test, spec.limit_test());
    // Generated at the requested size: nothing to resize.
    full_train = MakeFakeSplit(n, spec.channels(), spec.image_size(), spec.classes(), spec.seed());
    test =
        MakeFakeSplit(n_test, spec.channels(), spec.image_size(), spec.classes(), spec.seed() + 1);
    data.num_classes = spec.classes();
  } else if (spec.dataset() == "imagefolder") {
    ASSIGN_OR_RETURN(TrainTest files, ReadImageFolder(spec.data_dir(), size, roots));
    full_train = std::move(files.train);
    test = std::move(files.test);
    data.num_classes = files.num_classes;
  } else if (spec.dataset() == "tensors" || spec.dataset() == "csv") {
    ASSIGN_OR_RETURN(UniqueFd file, OpenDataFile(spec, data_path, roots));
    ASSIGN_OR_RETURN(TrainTest files,
                     spec.dataset() == "tensors"
                         ? ReadTensorFile(file.get(), regression)
                         : ReadCsvFile(file.get(), spec.label_column(), regression));
    full_train = std::move(files.train);
    test = std::move(files.test);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset: unknown value '", spec.dataset(), "'"));
  }
  const bool from_file = spec.dataset() == "tensors" || spec.dataset() == "csv";
  if (from_file) {  // the IDX and CIFAR readers stop early; these read whole files
    if (spec.limit_train() > 0 && spec.limit_train() < full_train.size()) {
      full_train = Slice(full_train, 0, spec.limit_train());
    }
    if (spec.limit_test() > 0 && spec.limit_test() < test.size()) {
      test = Slice(test, 0, spec.limit_test());
    }
  }
  const int64_t n = full_train.size();
  const int64_t n_validation = n / 10;
  if (n - n_validation < 1) {
    return absl::InvalidArgumentError("limit_train: leaves no training samples");
  }
  data.train = Slice(full_train, 0, n - n_validation);
  data.validation = Slice(full_train, n - n_validation, n);
  data.test = std::move(test);
  if (regression) {
    data.num_classes = data.train.labels[0].numel();
  } else if (from_file) {
    ASSIGN_OR_RETURN(data.num_classes, CountClasses(full_train.labels, data.test.labels));
  }
  return data;
}

absl::StatusOr<int64_t> CountClasses(const torch::Tensor& train_labels,
                                     const torch::Tensor& test_labels) {
  const torch::Tensor labels = torch::cat({train_labels.reshape(-1), test_labels.reshape(-1)});
  if (labels.numel() == 0) return 0;
  const int64_t largest = labels.max().item<int64_t>();
  const int64_t classes = largest + 1;
  if (classes > kMaxClasses) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_file: its largest label is ", largest, ", so ", classes,
                     " classes; a job trains at most ", kMaxClasses,
                     " (labels are class indices 0..K-1; numeric targets need loss mse)"));
  }
  const int64_t present = std::get<0>(at::_unique(labels)).numel();
  if (classes > 10 && present * 2 < classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data_file: only ", present, " of its ", classes, " classes (0..", largest,
        ") appear in its labels: labels are class indices numbered from 0 without gaps"));
  }
  return classes;
}

int64_t PreparedBytes(const Dataset& data, const trainer::v1::JobSpec& spec, int64_t size) {
  int64_t total = 0;
  for (const Split* split : {&data.train, &data.validation, &data.test}) {
    const torch::Tensor& x = split->inputs;
    total += split->labels.nbytes();
    if (IsImageDataset(spec) && x.dim() == 4) {
      const int64_t h = size > 0 ? size : x.size(2), w = size > 0 ? size : x.size(3);
      total += x.size(0) * x.size(1) * h * w * static_cast<int64_t>(sizeof(float));
    } else {
      total += x.nbytes();
    }
  }
  return total;
}

void PrepareImages(Dataset& data, const trainer::v1::JobSpec& spec, int64_t size,
                   torch::Device device) {
  data.channels = data.height = data.width = 0;
  if (IsImageDataset(spec)) {
    for (Split* split : {&data.train, &data.validation, &data.test}) {
      Transform(*split, size, device);
    }
  } else {
    for (Split* split : {&data.train, &data.validation, &data.test}) {
      split->inputs = split->inputs.to(device);
      split->labels = split->labels.to(device);
    }
  }
  if (data.train.inputs.dim() == 4) {  // images, or tensors that are images all the same
    data.channels = data.train.inputs.size(1);
    data.height = data.train.inputs.size(2);
    data.width = data.train.inputs.size(3);
  }
}

absl::StatusOr<Dataset> LoadDataset(const trainer::v1::JobSpec& spec, int64_t size,
                                    const std::string& data_path,
                                    const std::vector<std::string>& data_roots) {
  ASSIGN_OR_RETURN(Dataset data, ReadDataset(spec, size, data_path, data_roots));
  PrepareImages(data, spec, size, torch::kCPU);
  return data;
}

}  // namespace traind
