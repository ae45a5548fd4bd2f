#include "worker/heap_retention.h"

#include <cstdlib>
#include <cstring>
#include <initializer_list>

#ifdef __GLIBC__  // defined by the C++ headers above
#include <malloc.h>
#endif

#include <gtest/gtest.h>

namespace traind {
namespace {

void* volatile g_sink;  // keeps the compiler from eliding the allocation

void ClearMallocVariables() {
  for (const char* name :
       {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES"}) {
    unsetenv(name);
  }
}

TEST(HeapRetentionTest, TheUsersMallocSettingsWin) {
  setenv("MALLOC_TRIM_THRESHOLD_", "1048576", 1);
  EXPECT_FALSE(RetainFreedHeapMemory());
  ClearMallocVariables();
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
// What the worker relies on: a 64 MiB block (a large activation) comes from the heap rather than
// its own mapping, and once freed it stays in the process for the next step.
TEST(HeapRetentionTest, LargeBlocksComeFromTheHeapAndStayAfterFree) {
  ClearMallocVariables();
  ASSERT_TRUE(RetainFreedHeapMemory());
  constexpr size_t kSize = size_t{64} << 20;
  const size_t mapped_before = mallinfo2().hblkhd;
  g_sink = std::malloc(kSize);
  ASSERT_NE(g_sink, nullptr);
  std::memset(g_sink, 1, kSize);
  EXPECT_EQ(mallinfo2().hblkhd, mapped_before) << "the block got a mapping of its own";
  std::free(g_sink);
  EXPECT_GE(mallinfo2().fordblks, kSize) << "the freed block was given back to the kernel";
}
#endif

}  // namespace
}  // namespace traind
