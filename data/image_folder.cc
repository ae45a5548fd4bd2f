#include "data/image_folder.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#ifdef TRAIND_HAVE_STB
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>
#endif

namespace traind {

#ifdef TRAIND_HAVE_STB

namespace {

// `status` (from opening something under data_dir) in the field's words.
absl::Status DataDirError(const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("data_dir: ", status.message()));
}

// Sorted names of the entries of `dir` that are directories (want_dirs) or regular files. A
// symlink counts as what it leads to, opened beneath the roots; one that leads out of its root
// fails the read (it is not skipped: skipping would tell the job's owner whether something is
// there outside).
// NOT_FOUND when `dir` is missing or not a directory.
absl::StatusOr<std::vector<std::string>> Entries(const std::string& dir, bool want_dirs,
                                                 const BeneathRoots& roots) {
  absl::StatusOr<UniqueFd> handle = roots.OpenDirectory(dir);
  if (!handle.ok()) return DataDirError(handle.status());
  absl::StatusOr<std::vector<DirectoryEntry>> entries = ListDirectory(handle->get(), dir);
  if (!entries.ok()) return DataDirError(entries.status());
  std::vector<std::string> names;
  for (const DirectoryEntry& entry : *entries) {
    if (entry.name.empty() || entry.name[0] == '.') continue;
    bool is_directory = entry.is_directory;
    bool is_regular = entry.is_regular;
    if (entry.is_symlink) {
      absl::StatusOr<UniqueFd> target = roots.Open(dir + "/" + entry.name, O_RDONLY | O_NONBLOCK);
      if (!target.ok()) {
        if (target.status().code() == absl::StatusCode::kPermissionDenied) {
          return DataDirError(target.status());
        }
        continue;  // a dangling link inside the root: nothing there
      }
      struct stat st;
      if (fstat(target->get(), &st) != 0) continue;
      is_directory = S_ISDIR(st.st_mode);
      is_regular = S_ISREG(st.st_mode);
    }
    if (want_dirs ? is_directory : is_regular) names.push_back(entry.name);
  }
  return names;  // ListDirectory sorted them
}

bool IsImageName(const std::string& name) {
  const std::string lower = absl::AsciiStrToLower(name);
  return absl::EndsWith(lower, ".png") || absl::EndsWith(lower, ".jpg") ||
         absl::EndsWith(lower, ".jpeg");
}

struct Decoder {
  int64_t size;      // resize target, 0: keep
  int channels = 0;  // chosen by the first image
  int64_t height = 0, width = 0;

  // Opened beneath `roots` again, whatever the listing saw: the file may have changed since.
  absl::StatusOr<torch::Tensor> Decode(const std::string& path, const BeneathRoots& roots) {
    absl::StatusOr<UniqueFd> fd = roots.OpenFile(path);
    if (!fd.ok()) return DataDirError(fd.status());
    std::unique_ptr<FILE, int (*)(FILE*)> file(fdopen(fd->get(), "rb"), fclose);
    if (file == nullptr) {
      return absl::InternalError(absl::StrCat("data_dir: ", path, ": ", std::strerror(errno)));
    }
    (void)fd->Release();  // the FILE closes it now
    int w = 0, h = 0, c = 0;
    if (channels == 0) {
      if (!stbi_info_from_file(file.get(), &w, &h, &c)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "data_dir: ", path, ": not a PNG or JPEG image (", stbi_failure_reason(), ")"));
      }
      channels = c >= 3 ? 3 : 1;
    }
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
        stbi_load_from_file(file.get(), &w, &h, &c, channels), stbi_image_free);
    if (!pixels) {
      return absl::InvalidArgumentError(
          absl::StrCat("data_dir: ", path, ": cannot decode (", stbi_failure_reason(), ")"));
    }
    torch::Tensor image = torch::from_blob(pixels.get(), {h, w, channels}, torch::kUInt8)
                              .permute({2, 0, 1})
                              .to(torch::kFloat32)
                              .div_(255.0)
                              .unsqueeze(0);
    if (size > 0 && (h != size || w != size)) {
      image =
          torch::nn::functional::interpolate(image, torch::nn::functional::InterpolateFuncOptions()
                                                        .size(std::vector<int64_t>{size, size})
                                                        .mode(torch::kBilinear)
                                                        .align_corners(false));
    }
    if (height == 0) {
      height = image.size(2);
      width = image.size(3);
    } else if (image.size(2) != height || image.size(3) != width) {
      return absl::InvalidArgumentError(absl::StrCat("data_dir: ", path, " is ", w, "x", h,
                                                     ", the first image ", width, "x", height,
                                                     "; give --image-size N to resize them all"));
    }
    return image.squeeze(0).contiguous();
  }
};

absl::StatusOr<Split> ReadSplit(const std::string& dir, const std::vector<std::string>& classes,
                                Decoder& decoder, bool require_every_class,
                                const BeneathRoots& roots) {
  std::vector<torch::Tensor> images;
  std::vector<int64_t> labels;
  for (size_t label = 0; label < classes.size(); ++label) {
    const std::string class_dir = dir + "/" + classes[label];
    absl::StatusOr<std::vector<std::string>> files = Entries(class_dir, /*want_dirs=*/false, roots);
    if (files.status().code() == absl::StatusCode::kNotFound) {
      if (require_every_class) {
        return absl::InvalidArgumentError(absl::StrCat("data_dir: no folder ", class_dir));
      }
      continue;
    }
    if (!files.ok()) return files.status();
    for (const std::string& file : *files) {
      if (!IsImageName(file)) continue;
      absl::StatusOr<torch::Tensor> image = decoder.Decode(class_dir + "/" + file, roots);
      if (!image.ok()) return image.status();
      images.push_back(*std::move(image));
      labels.push_back(static_cast<int64_t>(label));
    }
  }
  if (images.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_dir: no .png, .jpg or .jpeg images under ", dir, "/CLASS/"));
  }
  Split split;
  split.inputs = torch::stack(images);
  split.labels = torch::tensor(labels, torch::kInt64);
  return split;
}

}  // namespace

absl::StatusOr<TrainTest> ReadImageFolder(const std::string& dir, int64_t size,
                                          const BeneathRoots& roots) {
  absl::StatusOr<std::vector<std::string>> classes =
      Entries(dir + "/train", /*want_dirs=*/true, roots);
  if (classes.status().code() == absl::StatusCode::kPermissionDenied) return classes.status();
  if (!classes.ok() || classes->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_dir: ", dir,
                     " has no train/CLASS/ folders (expected torchvision's ImageFolder "
                     "layout: train/CLASS/*.png and test/CLASS/*.png)"));
  }
  absl::StatusOr<std::vector<std::string>> test_classes = Entries(dir + "/test", true, roots);
  if (test_classes.status().code() == absl::StatusCode::kPermissionDenied) {
    return test_classes.status();
  }
  if (!test_classes.ok() || test_classes->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data_dir: ", dir, " has no test/CLASS/ folders"));
  }
  for (const std::string& name : *test_classes) {
    if (!std::binary_search(classes->begin(), classes->end(), name)) {
      return absl::InvalidArgumentError(absl::StrCat("data_dir: test/", name,
                                                     " is not a class of train/ (",
                                                     absl::StrJoin(*classes, ", "), ")"));
    }
  }
  Decoder decoder{size};
  TrainTest data;
  absl::StatusOr<Split> train = ReadSplit(dir + "/train", *classes, decoder, true, roots);
  if (!train.ok()) return train.status();
  absl::StatusOr<Split> test = ReadSplit(dir + "/test", *classes, decoder, false, roots);
  if (!test.ok()) return test.status();
  data.train = *std::move(train);
  data.test = *std::move(test);
  data.num_classes = static_cast<int64_t>(classes->size());
  // Shuffled once with a fixed seed: the folders come class by class, and the validation split is
  // the training set's last 10%.
  torch::Generator rng = at::detail::createCPUGenerator(20261130);
  const torch::Tensor order = torch::randperm(data.train.size(), rng);
  data.train =
      Split{data.train.inputs.index_select(0, order), data.train.labels.index_select(0, order)};
  return data;
}

#else

absl::StatusOr<TrainTest> ReadImageFolder(const std::string& dir, int64_t size,
                                          const BeneathRoots& roots) {
  (void)dir, (void)size, (void)roots;
  return absl::FailedPreconditionError(
      "dataset: imagefolder needs a traind-worker built with stb_image (Debian: libstb-dev)");
}

#endif  // TRAIND_HAVE_STB

}  // namespace traind
