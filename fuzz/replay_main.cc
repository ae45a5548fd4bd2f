// main() for a fuzz target outside libFuzzer: runs LLVMFuzzerTestOneInput once on each file named
// on the command line, or on every file in a directory named there (sorted), so the seed corpus
// and the inputs of past findings run as ordinary tests. A finding aborts, as in libFuzzer.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

// ASan and TSan reserve terabytes of address space for their shadow memory.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TRAIND_REPLAY_SHADOW_MEMORY 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TRAIND_REPLAY_SHADOW_MEMORY 1
#endif

int main(int argc, char** argv) {
#ifndef TRAIND_REPLAY_SHADOW_MEMORY
  // libFuzzer stops an input at 2 GiB; here a runaway allocation fails instead of taking the
  // machine (only without a sanitizer's shadow memory, which an address-space limit breaks).
  const rlimit limit{8ull << 30, 8ull << 30};
  setrlimit(RLIMIT_AS, &limit);
#endif
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (std::filesystem::is_directory(argv[i])) {
      for (const auto& entry : std::filesystem::directory_iterator(argv[i])) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else {
      inputs.emplace_back(argv[i]);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::cerr << "usage: " << argv[0] << " FILE_OR_DIR...: no inputs found\n";
    return 2;
  }
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::cerr << path << ": cannot read\n";
      return 2;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cerr << "replaying " << path.filename() << " (" << bytes.size() << " bytes)\n";
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << "replayed " << inputs.size() << " inputs\n";
  return 0;
}
