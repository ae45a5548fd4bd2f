// A temporary directory for tests of torch-linked code, made and removed with POSIX calls.
// Not std::filesystem: the PyTorch wheel's libtorch_cpu.so exports its own copy of libstdc++'s
// filesystem symbols (pytorch/pytorch#133437), which binaries linking it pick up and crash in.
#ifndef TRAIND_COMMON_TEMP_DIR_FOR_TESTS_H_
#define TRAIND_COMMON_TEMP_DIR_FOR_TESTS_H_

#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace traind {

class TempDirForTests {
 public:
  TempDirForTests() {
    std::string pattern = "/tmp/traind-test.XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDirForTests() {
    if (path_.empty()) return;
    nftw(
        path_.c_str(),
        [](const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }, 16,
        FTW_DEPTH | FTW_PHYS);
  }
  TempDirForTests(const TempDirForTests&) = delete;
  TempDirForTests& operator=(const TempDirForTests&) = delete;

  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace traind

#endif  // TRAIND_COMMON_TEMP_DIR_FOR_TESTS_H_
