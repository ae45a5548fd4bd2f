#include "engine/blas_threads.h"

#include <dlfcn.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace traind {

namespace {

// OpenBLAS's C interface (cblas.h), looked up at run time: the BLAS behind libblas.so.3 is the
// system's choice (Debian's alternatives), not ours, and may not be OpenBLAS at all.
using SetNumThreads = void (*)(int);
using GetNumThreads = int (*)();
using GetConfig = char* (*)();
using GetParallel = int (*)();

template <typename Function>
Function Find(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_DEFAULT, name));
}

std::string OpenBlasName() {
  std::string name = "OpenBLAS";
  if (auto config = Find<GetConfig>("openblas_get_config"); config != nullptr) {
    // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64": the name and version.
    const std::string text = config();
    const size_t second_space = text.find(' ', text.find(' ') + 1);
    name = std::string(absl::StripAsciiWhitespace(text.substr(0, second_space)));
  }
  if (auto parallel = Find<GetParallel>("openblas_get_parallel"); parallel != nullptr) {
    switch (parallel()) {
      case 0:
        absl::StrAppend(&name, " (sequential)");
        break;
      case 1:
        absl::StrAppend(&name, " (pthreads)");
        break;
      case 2:
        absl::StrAppend(&name, " (OpenMP)");
        break;
      default:
        break;
    }
  }
  return name;
}

}  // namespace

BlasThreads SetBlasThreads(int threads) {
  BlasThreads blas;
  auto set = Find<SetNumThreads>("openblas_set_num_threads");
  auto get = Find<GetNumThreads>("openblas_get_num_threads");
  if (set == nullptr || get == nullptr) return blas;
  blas.settable = true;
  blas.library = OpenBlasName();
  blas.before = get();
  set(threads < 1 ? 1 : threads);
  blas.after = get();
  return blas;
}

std::string DescribeBlasThreads(const BlasThreads& blas) {
  if (!blas.settable) return "";
  std::string text =
      absl::StrFormat("%s: %d thread%s", blas.library, blas.after, blas.after == 1 ? "" : "s");
  if (blas.before != blas.after) absl::StrAppend(&text, " (was ", blas.before, ")");
  return text;
}

}  // namespace traind
