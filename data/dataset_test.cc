#include "data/dataset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "common/temp_dir_for_tests.h"

namespace traind {
namespace {

using trainer::v1::JobSpec;

// CIFAR-10's binary layout, `records` images per file, each file's image r all bytes (r % 11) * 25.
JobSpec WriteCifar10(const std::string& dir, int records) {
  auto write = [&](const std::string& name) {
    std::string bytes;
    for (int r = 0; r < records; ++r) {
      bytes += static_cast<char>(r % 10);
      bytes += std::string(3072, static_cast<char>((r % 11) * 25));
    }
    std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  };
  for (int i = 1; i <= 5; ++i) write("data_batch_" + std::to_string(i) + ".bin");
  write("test_batch.bin");
  JobSpec spec;
  spec.set_dataset("cifar10");
  spec.set_data_dir(dir);
  return spec;
}

TEST(DatasetTest, ImagesStayBytesUntilPreparedAndPreparedBytesIsExact) {
  TempDirForTests temp;
  const JobSpec spec = WriteCifar10(temp.path(), 10);
  auto data = ReadDataset(spec, 40);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->train.inputs.scalar_type(), torch::kUInt8);
  EXPECT_EQ(data->train.size(), 45);
  EXPECT_EQ(data->validation.size(), 5);
  const int64_t predicted = PreparedBytes(*data, spec, 40);

  PrepareImages(*data, spec, 40, torch::kCPU);
  int64_t actual = 0;
  for (const Split* split : {&data->train, &data->validation, &data->test}) {
    EXPECT_EQ(split->inputs.scalar_type(), torch::kFloat32);
    actual += split->inputs.nbytes() + split->labels.nbytes();
  }
  EXPECT_EQ(predicted, actual);
  EXPECT_EQ(data->train.inputs.sizes(), (std::vector<int64_t>{45, 3, 40, 40}));
  EXPECT_EQ(data->height, 40);
  // Normalize(0.5, 0.5) of ToTensor: byte 0 is -1, byte 225 is 225/255*2-1 (uniform images keep
  // their value through the bilinear resize).
  EXPECT_FLOAT_EQ(data->train.inputs[0].min().item<float>(), -1.0f);
  EXPECT_NEAR(data->train.inputs[9].max().item<float>(), 225.0 / 255.0 * 2 - 1, 1e-6);
}

TEST(DatasetTest, PreparedOnCudaMatchesTheCpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  TempDirForTests temp;
  const JobSpec spec = WriteCifar10(temp.path(), 10);
  auto on_cpu = LoadDataset(spec, 40);
  auto on_gpu = ReadDataset(spec, 40);
  ASSERT_TRUE(on_cpu.ok() && on_gpu.ok());
  PrepareImages(*on_gpu, spec, 40, torch::Device(torch::kCUDA, 0));
  EXPECT_TRUE(on_gpu->train.inputs.is_cuda());
  EXPECT_TRUE(on_gpu->test.labels.is_cuda());
  EXPECT_TRUE(torch::allclose(on_gpu->train.inputs.cpu(), on_cpu->train.inputs, 1e-5, 1e-5));
  EXPECT_TRUE(torch::equal(on_gpu->validation.labels.cpu(), on_cpu->validation.labels));
}

// What the worker says when a path leads out of the roots: the field, then the path as named.
void ExpectOutside(const absl::Status& status, const std::string& field) {
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
  EXPECT_EQ(status.message().substr(0, field.size() + 2), field + ": ") << status;
  EXPECT_NE(status.message().find("is outside the daemon's data roots"), absl::string_view::npos)
      << status;
}

void MakeDir(const std::string& path) { ASSERT_EQ(mkdir(path.c_str(), 0700), 0) << path; }
void Link(const std::string& target, const std::string& path) {
  ASSERT_EQ(symlink(target.c_str(), path.c_str()), 0) << path;
}

// A 2x2 grey PNG.
const std::string kPng(
    "\x89\x50\x4e\x47\x0d\x0a\x1a\x0a\x00\x00\x00\x0d\x49\x48\x44\x52\x00\x00\x00\x02\x00\x00"
    "\x00\x02\x08\x00\x00\x00\x00\x57\xdd\x52\xf8\x00\x00\x00\x0e\x49\x44\x41\x54\x78\x9c\x63"
    "\x68\x68\x60\x68\x68\x00\x00\x06\x06\x02\x01\x2c\xc1\x50\xd7\x00\x00\x00\x00\x49\x45\x4e"
    "\x44\xae\x42\x60\x82",
    71);

// DIR/train/CLASS/N.png and DIR/test/CLASS/N.png, two images each, for `classes`.
void WriteImageFolder(const std::string& dir, const std::vector<std::string>& classes) {
  MakeDir(dir);
  for (const char* split : {"train", "test"}) {
    MakeDir(dir + "/" + split);
    for (const std::string& name : classes) {
      MakeDir(dir + "/" + split + "/" + name);
      for (const char* image : {"1.png", "2.png"}) {
        std::ofstream(dir + "/" + split + "/" + name + "/" + image, std::ios::binary) << kPng;
      }
    }
  }
}

// A job's files are checked when it is submitted; the worker opens them beneath the roots again,
// so what changed since (or what admission never looked at: the folders and images inside) cannot
// lead out.
TEST(DatasetTest, AnImageFolderWhoseClassFolderOrImageLinksOutOfTheRootIsRefused) {
  TempDirForTests temp;
  const std::string root = temp / "root";
  MakeDir(root);
  WriteImageFolder(temp / "outside", {"cat"});
  WriteImageFolder(root + "/images", {"ant", "bee"});
  JobSpec spec;
  spec.set_dataset("imagefolder");
  spec.set_data_dir(root + "/images");
  absl::StatusOr<Dataset> plain = ReadDataset(spec, 0, "", {root});
  if (plain.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << plain.status();  // built without stb_image
  }
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->train.size() + plain->validation.size(), 4);

  // A link that stays inside the root is followed: a class folder shared between two datasets.
  Link(root + "/images/train/bee", root + "/images/train/cow");
  EXPECT_TRUE(ReadDataset(spec, 0, "", {root}).ok());

  // A class folder that is a link out of the root.
  Link(temp / "outside/train/cat", root + "/images/train/cat");
  ExpectOutside(ReadDataset(spec, 0, "", {root}).status(), "data_dir");
  EXPECT_TRUE(ReadDataset(spec, 0).ok()) << "unconfined (no roots): read as named";
  ASSERT_EQ(unlink((root + "/images/train/cat").c_str()), 0);

  // An image that is a link out of the root, absolute or relative, its target there or not.
  for (const std::string& target : {temp / "outside/train/cat/1.png", temp / "nothing.png",
                                    std::string("../../../../outside/train/cat/2.png")}) {
    const std::string image = root + "/images/train/ant/3.png";
    Link(target, image);
    const absl::Status status = ReadDataset(spec, 0, "", {root}).status();
    ExpectOutside(status, "data_dir");
    EXPECT_NE(status.message().find(image), absl::string_view::npos) << status;
    ASSERT_EQ(unlink(image.c_str()), 0);
  }
}

// IDX files: N images of 2x2 bytes and N labels, plain.
void WriteIdx(const std::string& dir, const std::string& prefix, uint8_t n) {
  std::ofstream(dir + "/" + prefix + "-images-idx3-ubyte", std::ios::binary)
      << std::string{0, 0, 0x08, 3, 0, 0, 0, static_cast<char>(n), 0, 0, 0, 2, 0, 0, 0, 2}
      << std::string(n * 4u, '\x7f');
  std::ofstream(dir + "/" + prefix + "-labels-idx1-ubyte", std::ios::binary)
      << std::string{0, 0, 0x08, 1, 0, 0, 0, static_cast<char>(n)} << std::string(n, '\x01');
}

TEST(DatasetTest, AnIdxDirectorySwappedForASymlinkAfterAdmissionIsRefused) {
  TempDirForTests temp;
  const std::string root = temp / "root";
  MakeDir(root);
  for (const std::string& dir : {root + "/mnist", temp / "outside"}) {
    MakeDir(dir);
    WriteIdx(dir, "train", 20);
    WriteIdx(dir, "t10k", 10);
  }
  JobSpec spec;
  spec.set_dataset("mnist");
  spec.set_data_dir(root + "/mnist");  // as admission resolved it
  absl::StatusOr<Dataset> admitted = ReadDataset(spec, 0, "", {root});
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_EQ(admitted->test.size(), 10);

  // While the job waited, the directory became a link out of the root.
  ASSERT_EQ(rename((root + "/mnist").c_str(), (root + "/mnist.old").c_str()), 0);
  Link(temp / "outside", root + "/mnist");
  ExpectOutside(ReadDataset(spec, 0, "", {root}).status(), "data_dir");
  // Or one file in it did.
  ASSERT_EQ(unlink((root + "/mnist").c_str()), 0);
  ASSERT_EQ(rename((root + "/mnist.old").c_str(), (root + "/mnist").c_str()), 0);
  ASSERT_EQ(unlink((root + "/mnist/t10k-labels-idx1-ubyte").c_str()), 0);
  Link(temp / "outside/t10k-labels-idx1-ubyte", root + "/mnist/t10k-labels-idx1-ubyte");
  ExpectOutside(ReadDataset(spec, 0, "", {root}).status(), "data_dir");

  // CIFAR-10 the same.
  const JobSpec cifar = WriteCifar10(temp / "outside", 2);
  Link(temp / "outside", root + "/cifar");
  JobSpec linked = cifar;
  linked.set_data_dir(root + "/cifar");
  ExpectOutside(ReadDataset(linked, 0, "", {root}).status(), "data_dir");
}

TEST(DatasetTest, ADataFileThatLinksOutIsRefusedAndAnUploadIsNamedByItsDigest) {
  TempDirForTests temp;
  const std::string root = temp / "root";
  MakeDir(root);
  std::ofstream(temp / "outside.csv") << "a,b,label\n1,2,0\n3,4,1\n5,6,0\n";
  Link(temp / "outside.csv", root + "/data.csv");
  JobSpec spec;
  spec.set_dataset("csv");
  spec.set_data_file(root + "/data.csv");
  ExpectOutside(ReadDataset(spec, 0, spec.data_file(), {root}).status(), "data_file");
  EXPECT_TRUE(ReadDataset(spec, 0, spec.data_file()).ok()) << "unconfined: read as named";

  // An upload's file lives in the daemon's state directory: its messages say the digest.
  spec.set_data_file("sha256:0123");
  const absl::Status gone = ReadDataset(spec, 0, root + "/blobs/sha256/0123", {root}).status();
  EXPECT_EQ(gone.code(), absl::StatusCode::kNotFound) << gone;
  EXPECT_EQ(gone.message(), "data_file: sha256:0123: no such file or directory");
}

}  // namespace
}  // namespace traind
